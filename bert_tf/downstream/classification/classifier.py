"""A classification / regression head on the BERT pooled output.

As the original run_classifier's `create_model`: the pooled output ([CLS]
through the tanh pooler) -> dropout 0.1 -> a dense layer with a
truncated-normal(initializer_range) kernel and zero bias -> logits (one
output, the predicted value, for regression). keras-hub's
`BertTextClassifier` is the same head, but with Keras' default Glorot
kernel and its own preprocessor; this one keeps the original initializer
and the project's tokenizer (`data.classification`).

The encoder is `modeling.build_encoder(config)`.
`downstream.finetune.load_encoder_weights` fills it from any checkpoint the
project reads (bert_tf, original TF1, keras-hub preset); the preset part is
`copy_from_preset` here, as it needs no training code.
"""

import os

import keras
import tensorflow as tf

from bert_tf.io import file_io
from bert_tf.models import modeling
from bert_tf.models.config import BertConfig

# The original's `tf.nn.dropout(output_layer, keep_prob=0.9)`, fixed whatever
# the config's hidden_dropout_prob.
CLASSIFIER_DROPOUT = 0.1


class EncoderTaskModel(keras.Model):
  """What a fine-tuning task model with `num_outputs` outputs and a dropout
  before its head shares (BertClassifier here, token_head.BertTokenTagger):
  the config, the encoder, the original's output layer and the inputs.

  Args:
    config: a BertConfig (or its dict).
    num_outputs: the head's outputs (>= 1).
    dropout: the rate of the dropout before the head.
    dtype: the encoder's dtype policy.
    encoder: another keras-hub backbone with the same inputs and outputs
      (ELECTRA's discriminator); by default the config's BERT/ALBERT encoder.

  Raises:
    ValueError: num_outputs < 1.
  """

  def __init__(self, config, num_outputs, dropout, dtype=None, encoder=None, **kwargs):
    if isinstance(config, dict):
      config = BertConfig.from_dict(config)
    if num_outputs < 1:
      raise ValueError(f"num_outputs must be >= 1, got {num_outputs}")
    super().__init__(**kwargs)
    self.config = config
    self.num_outputs = int(num_outputs)
    self.dropout_rate = float(dropout)
    self.encoder = encoder if encoder is not None else modeling.build_encoder(config, dtype=dtype)

  def _output_layer(self, name):
    """The original's output layer: Dense(num_outputs), truncated-normal
    (initializer_range) kernel, zero bias, float32."""
    return keras.layers.Dense(
        self.num_outputs,
        kernel_initializer=keras.initializers.TruncatedNormal(
            stddev=self.config.initializer_range),
        bias_initializer="zeros", dtype="float32", name=name)

  @staticmethod
  def _encoder_inputs(inputs):
    """The backbone's inputs from the model's (input_ids, input_mask, segment_ids)."""
    return {"token_ids": tf.cast(inputs["input_ids"], tf.int32),
            "segment_ids": tf.cast(inputs["segment_ids"], tf.int32),
            "padding_mask": tf.cast(inputs["input_mask"], tf.int32)}

  def get_config(self):
    return {"name": self.name, "config": self.config.to_dict(),
            "num_outputs": self.num_outputs, "dropout": self.dropout_rate}

  @classmethod
  def from_config(cls, config):
    config = dict(config)
    return cls(BertConfig.from_dict(config.pop("config")), **config)


@keras.saving.register_keras_serializable(package="bert_tf")
class BertClassifier(EncoderTaskModel):
  """Encoder + dropout + dense head.

  Attributes:
    config: the BertConfig.
    num_outputs: classes (or 1 for regression).
    encoder: the keras_hub BertBackbone.
    head: keras.layers.Dense(num_outputs), float32.
  """

  def __init__(self, config: BertConfig, num_outputs, dropout=CLASSIFIER_DROPOUT,
               dtype=None, encoder=None, **kwargs):
    kwargs.setdefault("name", "bert_classifier")
    super().__init__(config, num_outputs, dropout, dtype=dtype, encoder=encoder, **kwargs)
    self.dropout = keras.layers.Dropout(self.dropout_rate, name="classifier_dropout")
    self.head = self._output_layer("classifier_head")
    self.head.build((None, self.config.hidden_size))
    self.built = True

  def call(self, inputs, training=False):
    """inputs: dict of int [batch, seq] input_ids, input_mask, segment_ids.

    Returns:
      float32 logits [batch, num_outputs] (regression: [batch, 1] values).
    """
    encoded = modeling.encoder_outputs(self.encoder, **self._encoder_inputs(inputs),
                                       training=training)
    pooled = self.dropout(encoded["pooled_output"], training=training)
    return tf.cast(self.head(tf.cast(pooled, tf.float32)), tf.float32)


def is_keras_hub_preset(path):
  """True for a preset directory saved on disk (config.json + model.weights.h5)."""
  return (file_io.isdir(path) and file_io.exists(os.path.join(path, "config.json"))
          and file_io.exists(os.path.join(path, "model.weights.h5")))


def _suffix(weight):
  # A BertBackbone's weight paths are its layers' (token_embedding/embeddings,
  # transformer_layer_0/...), the same whatever the backbone's own name.
  return weight.path


def copy_from_preset(encoder, preset):
  """Copies a keras-hub BertBackbone preset directory's weights into `encoder`.

  Returns the number of weights copied.

  Raises:
    ValueError: a weight the preset lacks, or another shape or depth
      (nothing assigned then).
  """
  import keras_hub  # pylint: disable=g-import-not-at-top
  source = keras_hub.models.BertBackbone.from_preset(preset)
  theirs = {_suffix(w): w for w in source.weights}
  plan = []
  for weight in encoder.weights:
    other = theirs.get(_suffix(weight))
    if other is None:
      raise ValueError(f"keras-hub preset {preset} has no weight {_suffix(weight)} "
                       f"(is it a BERT backbone of this config's depth?)")
    if tuple(other.shape) != tuple(weight.shape):
      raise ValueError(
          f"keras-hub preset {preset} does not match the bert_config: weight "
          f"{_suffix(weight)} has shape {tuple(other.shape)} in the preset but the model "
          f"needs {tuple(weight.shape)}")
    plan.append((weight, other))
  if len(plan) != len(theirs):
    raise ValueError(f"keras-hub preset {preset} holds {len(theirs)} encoder weights but "
                     f"the model of this config has {len(plan)} (check num_hidden_layers)")
  for weight, other in plan:
    weight.assign(other.numpy())
  return len(plan)
