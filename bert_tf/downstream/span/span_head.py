"""A span (question answering) head on the BERT sequence output.

As the original run_squad's `create_model`: every position's final hidden
vector -> one dense layer of 2 outputs (its `cls/squad/output_weights`
[2, hidden], truncated normal with stddev 0.02 whatever the config's
initializer_range, and `cls/squad/output_bias`, zeros) -> start and end
logits. No dropout beyond the encoder's own.

The encoder is `modeling.build_encoder(config)` or another keras-hub
backbone with the same inputs and outputs (ELECTRA's discriminator);
`downstream.finetune.load_encoder_weights` fills it from any checkpoint the
project reads.
"""

import keras
import tensorflow as tf

from bert_tf.models import modeling
from bert_tf.models.config import BertConfig

# The original's fixed initializer of cls/squad/output_weights.
SPAN_HEAD_STDDEV = 0.02


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSpanModel(keras.Model):
  """Encoder + Dense(2) over the sequence.

  Attributes:
    config: the BertConfig.
    encoder: the keras_hub backbone.
    head: keras.layers.Dense(2), float32 (kernel [hidden, 2]: the
      transpose of the original's output_weights).
  """

  def __init__(self, config: BertConfig, dtype=None, encoder=None, **kwargs):
    if isinstance(config, dict):
      config = BertConfig.from_dict(config)
    kwargs.setdefault("name", "bert_span_model")
    super().__init__(**kwargs)
    self.config = config
    self.encoder = encoder if encoder is not None else modeling.build_encoder(config, dtype=dtype)
    self.head = keras.layers.Dense(
        2, kernel_initializer=keras.initializers.TruncatedNormal(stddev=SPAN_HEAD_STDDEV),
        bias_initializer="zeros", dtype="float32", name="span_head")
    self.head.build((None, None, config.hidden_size))
    self.built = True

  def call(self, inputs, training=False):
    """inputs: dict of int [batch, seq] input_ids, input_mask, segment_ids.

    Returns:
      (start_logits, end_logits): float32 [batch, seq] each.
    """
    encoded = modeling.encoder_outputs(
        self.encoder, token_ids=tf.cast(inputs["input_ids"], tf.int32),
        segment_ids=tf.cast(inputs["segment_ids"], tf.int32),
        padding_mask=tf.cast(inputs["input_mask"], tf.int32), training=training)
    logits = self.head(tf.cast(encoded["sequence_output"], tf.float32))
    return logits[..., 0], logits[..., 1]

  def get_config(self):
    return {"name": self.name, "config": self.config.to_dict()}

  @classmethod
  def from_config(cls, config):
    config = dict(config)
    return cls(BertConfig.from_dict(config.pop("config")), **config)


def span_loss(start_logits, end_logits, start_positions, end_positions):
  """The original's loss: the mean over the batch of the cross-entropy of
  the start and of the end position (softmax over all positions, padding
  included), averaged."""
  def cross_entropy(logits, positions):
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        tf.cast(positions, tf.int32), tf.cast(logits, tf.float32)))
  return (cross_entropy(start_logits, start_positions)
          + cross_entropy(end_logits, end_positions)) / 2.0
