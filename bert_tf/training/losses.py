"""Pretraining losses and accuracies, with the original's reductions.

  mlm_loss = sum(w * CE) / (sum(w) + 1e-5)   over masked_lm_weights w
  nsp_loss = mean(CE)                        over the batch
  total    = mlm_loss + nsp_loss

Distributed reduction. Under a strategy each replica sees a slice of the
global batch, and the optimizer SUMS the replicas' gradients. For the global
loss (and its gradient) to be exactly the single-device one, each replica
computes its share with the GLOBAL normalizers:

  mlm_share_r = sum_r(w * CE) / (W + 1e-5),   W = all-replica sum of w
  nsp_share_r = sum_r(CE) / B,                B = global batch size

so that sum over replicas of (mlm_share_r + nsp_share_r) == total of the
whole batch on one device. `replica_losses` does this; `global_mlm_weight_sum`
gets W with a cross-replica all-reduce inside `strategy.run`.

All inputs are float32 logits; everything here is float32.
"""

import tensorflow as tf

MLM_EPSILON = 1e-5


def _per_example_terms(outputs, features):
  """CE and correctness per MLM prediction and per NSP example.

  Returns:
    (mlm_ce float32 [b, p], mlm_correct float32 [b, p], weights float32 [b, p],
     nsp_ce float32 [b], nsp_correct float32 [b])
  """
  mlm_logits = tf.cast(outputs["mlm_logits"], tf.float32)
  nsp_logits = tf.cast(outputs["nsp_logits"], tf.float32)
  ids = tf.cast(features["masked_lm_ids"], tf.int32)
  weights = tf.cast(features["masked_lm_weights"], tf.float32)
  labels = tf.reshape(tf.cast(features["next_sentence_labels"], tf.int32), [-1])
  mlm_ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=mlm_logits)
  mlm_correct = tf.cast(
      tf.equal(tf.argmax(mlm_logits, axis=-1, output_type=tf.int32), ids), tf.float32)
  nsp_ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=nsp_logits)
  nsp_correct = tf.cast(
      tf.equal(tf.argmax(nsp_logits, axis=-1, output_type=tf.int32), labels), tf.float32)
  return mlm_ce, mlm_correct, weights, nsp_ce, nsp_correct


def pretraining_losses(outputs, features):
  """The original pretraining losses of one (whole) batch.

  Args:
    outputs: model outputs; float32 `mlm_logits` [b, p, vocab] and
      `nsp_logits` [b, 2].
    features: the batch; int `masked_lm_ids` [b, p], float32
      `masked_lm_weights` [b, p] (1 real prediction, 0 padding), int
      `next_sentence_labels` [b, 1] or [b] (0 = B follows A).

  Returns:
    dict of float32 scalars: total, mlm_loss, nsp_loss, mlm_accuracy (over
    real predictions), nsp_accuracy, mlm_weight_sum.
  """
  mlm_ce, mlm_correct, weights, nsp_ce, nsp_correct = _per_example_terms(
      outputs, features)
  weight_sum = tf.reduce_sum(weights)
  mlm_loss = tf.reduce_sum(weights * mlm_ce) / (weight_sum + MLM_EPSILON)
  nsp_loss = tf.reduce_mean(nsp_ce)
  return {
      "total": mlm_loss + nsp_loss,
      "mlm_loss": mlm_loss,
      "nsp_loss": nsp_loss,
      "mlm_accuracy": tf.math.divide_no_nan(tf.reduce_sum(weights * mlm_correct), weight_sum),
      "nsp_accuracy": tf.reduce_mean(nsp_correct),
      "mlm_weight_sum": weight_sum,
  }


def global_mlm_weight_sum(features):
  """Sum of masked_lm_weights over the global batch (all replicas).

  Call it inside `strategy.run` (a replica context); outside any strategy it
  is the local sum. Returns a float32 scalar with no gradient.
  """
  local = tf.reduce_sum(tf.cast(features["masked_lm_weights"], tf.float32))
  context = tf.distribute.get_replica_context()
  if context is None:
    raise ValueError("global_mlm_weight_sum must run in a replica context "
                     "(inside strategy.run or outside any strategy scope)")
  return tf.stop_gradient(context.all_reduce(tf.distribute.ReduceOp.SUM, local))


def replica_losses(outputs, features, global_weight_sum, global_batch_size):
  """This replica's share of the global-batch losses.

  Summing every output over the replicas gives the single-device
  `pretraining_losses` of the global batch (losses exactly; the accuracy
  counts as sums to divide at the end).

  Args:
    outputs, features: this replica's slice (as in `pretraining_losses`).
    global_weight_sum: float32 scalar, the sum of masked_lm_weights over the
      global batch (`global_mlm_weight_sum(features)` inside strategy.run).
    global_batch_size: int or scalar, examples in the global batch.

  Returns:
    dict of float32 scalars:
      total: mlm_loss + nsp_loss shares; differentiate this and let the
        optimizer sum gradients over replicas (do not divide again);
      mlm_loss: sum(w * CE) / (W + 1e-5) over this replica's predictions;
      nsp_loss: sum(CE) / global_batch_size over this replica's examples;
      mlm_correct: sum(w * correct) here; mlm_weight_sum: sum(w) here;
      nsp_correct: correct NSP predictions here; num_examples: examples here.
    Global metrics: mlm_accuracy = SUM(mlm_correct) / SUM(mlm_weight_sum),
    nsp_accuracy = SUM(nsp_correct) / SUM(num_examples).
  """
  mlm_ce, mlm_correct, weights, nsp_ce, nsp_correct = _per_example_terms(
      outputs, features)
  global_weight_sum = tf.cast(global_weight_sum, tf.float32)
  global_batch_size = tf.cast(global_batch_size, tf.float32)
  mlm_loss = tf.reduce_sum(weights * mlm_ce) / (global_weight_sum + MLM_EPSILON)
  nsp_loss = tf.reduce_sum(nsp_ce) / global_batch_size
  return {
      "total": mlm_loss + nsp_loss,
      "mlm_loss": mlm_loss,
      "nsp_loss": nsp_loss,
      "mlm_correct": tf.reduce_sum(weights * mlm_correct),
      "mlm_weight_sum": tf.reduce_sum(weights),
      "nsp_correct": tf.reduce_sum(nsp_correct),
      "num_examples": tf.cast(tf.size(nsp_ce), tf.float32),
  }
