"""The softmax's shared first passes over a vocab: the rows, their maxima,
logits - row max and its exp.

Several consumers of one [batch, predictions, vocab] logits tensor need
them: the masked-LM loss (training.losses.sparse_cross_entropy_and_hit)
and ELECTRA's sampler on the generator's logits
(models.electra.sample_tokens) share all four; distillation's soft-target
KL (training.objectives.distillation.soft_target_kl) shares the rows and
their maxima with the student's and the teacher's masked-LM sums. Each
builds them with these functions from the same tensor, so the graph holds
the same ops on the same inputs twice, and TensorFlow's graph optimizer
(grappler's deduplication, which runs on every tf.function; XLA's CSE
under jit_compile) computes them once. Run eagerly, each computes its
own. `log_normalizer` gives a row's log-sum-exp from the fused softmax op
(tf.nn.softmax: oneDNN's on CPU, one pass where exp, sum and divide are
three).
"""

import tensorflow as tf


def rows(logits):
  """float32 logits [..., vocab] as rows [n, vocab] (the same op for every
  caller, so the graph optimizer can merge them)."""
  logits = tf.cast(logits, tf.float32)
  return tf.reshape(logits, [-1, tf.shape(logits)[-1]])


def row_max(flat):
  """The rows' maxima [n, 1] of `rows` output, without gradient."""
  return tf.stop_gradient(tf.reduce_max(flat, axis=-1, keepdims=True))


def shifted(flat):
  """(row max [n, 1] without gradient, flat - row max [n, vocab]) of `rows`
  output: every entry <= 0, the row's largest 0."""
  largest = row_max(flat)
  return largest, flat - largest


def log_normalizer(flat, probs, scale=1.0):
  """log sum exp(scale * flat) [n] from probs = softmax(scale * flat) (the
  fused softmax op, one pass): scale * max - log(max probs), as the
  largest probability is exp(0) over the normalizer of exp(scale * (flat -
  max)). `scale` > 0."""
  return tf.squeeze(scale * row_max(flat), -1) - tf.math.log(tf.reduce_max(probs, axis=-1))


def shifted_exp(flat):
  """(row max [n, 1] without gradient, exp(flat - row max) [n, vocab]) of
  `rows` output: every entry in (0, 1], the row's largest 1."""
  row_max, difference = shifted(flat)
  return row_max, tf.exp(difference)
