"""The softmax's shared first pass over a vocab: the rows and their
exp(logits - row max).

The masked-LM loss (training.losses.sparse_cross_entropy_and_hit) and
ELECTRA's sampler (models.electra.sample_tokens) both need exp(logits -
max) of the generator's [batch, predictions, vocab] logits. Both build it
with these two functions from the same tensor, so the graph holds the same
ops on the same inputs twice, and TensorFlow's graph optimizer (grappler's
deduplication, which runs on every tf.function; XLA's CSE under
jit_compile) computes them once: the sampler's pass over the vocab costs
only its block sums. Run eagerly, each computes its own.
"""

import tensorflow as tf


def rows(logits):
  """float32 logits [..., vocab] as rows [n, vocab] (the same op for every
  caller, so the graph optimizer can merge them)."""
  logits = tf.cast(logits, tf.float32)
  return tf.reshape(logits, [-1, tf.shape(logits)[-1]])


def shifted_exp(flat):
  """(row max [n, 1] without gradient, exp(flat - row max) [n, vocab]) of
  `rows` output: every entry in (0, 1], the row's largest 1."""
  row_max = tf.stop_gradient(tf.reduce_max(flat, axis=-1, keepdims=True))
  return row_max, tf.exp(flat - row_max)
