"""A token tagging head on the BERT sequence output (the BERT paper's NER
model, section 5.3).

Fine-tuned: the encoder's sequence output -> dropout 0.1 -> one dense
layer (truncated-normal(initializer_range) kernel [hidden, num_labels],
zero bias, named `token_classifier`: the layout of transformers'
BertForTokenClassification `classifier`, transposed) -> logits at every
position.

Feature-based (`frozen_encoder=True`, the paper's Table 7 "concat last
four hidden"): the encoder is frozen (not trained, run without dropout)
and the head reads the concatenation of its last four transformer layers'
outputs (all of them for an encoder of fewer layers): kernel
[min(4, layers) x hidden, num_labels]. The paper fed those features to a
two-layer BiLSTM; here the head stays one dense layer over them.
"""

import keras
import tensorflow as tf

from bert_tf.models import albert
from bert_tf.models import modeling
from bert_tf.downstream.classification import classifier
from bert_tf.models.config import BertConfig

TAGGER_DROPOUT = 0.1
# Table 7's best feature-based setting: the last four hidden layers, concatenated.
FEATURE_LAYERS = 4


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenTagger(classifier.EncoderTaskModel):
  """Encoder + dropout + dense head at every position.

  Attributes:
    config: the BertConfig.
    num_outputs: labels.
    frozen_encoder: whether the head reads the last four layers of a frozen encoder.
    encoder: the keras-hub backbone.
    head: keras.layers.Dense(num_outputs), float32, named token_classifier.
  """

  def __init__(self, config: BertConfig, num_outputs, frozen_encoder=False,
               dropout=TAGGER_DROPOUT, dtype=None, encoder=None, **kwargs):
    kwargs.setdefault("name", "bert_token_tagger")
    super().__init__(config, num_outputs, dropout, dtype=dtype, encoder=encoder, **kwargs)
    self.frozen_encoder = bool(frozen_encoder)
    width = self.config.hidden_size
    # The pooler ([CLS] through tanh) feeds no tag: out of training (and of
    # Keras' warning of variables without gradients); its weights stay.
    pooler = [layer for layer in self.encoder.layers if layer.name == "pooled_dense"]
    for layer in pooler:
      layer.trainable = False
    if self.frozen_encoder:
      if albert.is_albert_encoder(self.encoder):
        raise ValueError("frozen_encoder reads each layer's output, and ALBERT's encoder "
                         "runs its shared layers many times: use a BERT or ELECTRA encoder")
      self.encoder.trainable = False
      layers = list(self.encoder.transformer_layers)[-FEATURE_LAYERS:]
      self._layer_outputs = keras.Model(self.encoder.input, [l.output for l in layers],
                                        name="last_layers")
      width *= len(layers)
    self.dropout = keras.layers.Dropout(self.dropout_rate, name="token_classifier_dropout")
    self.head = self._output_layer("token_classifier")
    self.head.build((None, None, width))
    self.built = True

  def call(self, inputs, training=False):
    """inputs: dict of int [batch, seq] input_ids, input_mask, segment_ids.

    Returns:
      float32 logits [batch, seq, num_outputs].
    """
    encoder_inputs = self._encoder_inputs(inputs)
    if self.frozen_encoder:
      layers = (modeling.causal_sequence_output(  # a left-to-right LM's: as it was trained
          self.encoder, **encoder_inputs, every_layer=True)[-FEATURE_LAYERS:]
                if modeling.is_causal(self.encoder)
                else self._layer_outputs(encoder_inputs, training=False))
      if not isinstance(layers, (list, tuple)):  # Keras gives one output unlisted
        layers = [layers]
      features = tf.concat([tf.cast(x, tf.float32) for x in layers], axis=-1)
    else:
      features = tf.cast(modeling.encoder_outputs(self.encoder, **encoder_inputs,
                                                  training=training)["sequence_output"],
                         tf.float32)
    return tf.cast(self.head(self.dropout(features, training=training)), tf.float32)

  def get_config(self):
    return {**super().get_config(), "frozen_encoder": self.frozen_encoder}
