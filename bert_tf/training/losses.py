"""Pretraining losses and accuracies, with the original's reductions.

  mlm_loss = sum(w * CE) / (sum(w) + 1e-5)   over masked_lm_weights w
  sentence_loss = mean(CE)                   over the batch (NSP or SOP)
  total    = mlm_loss + sentence_loss

The sentence-pair term is the same for NSP and ALBERT's SOP (a 2-way
softmax on the pooled output) and absent for MLM alone (RoBERTa).

Everything starts from one set of additive SUMS (`loss_sums`): the weighted
masked-LM cross-entropy sum, the weight sum, the NSP cross-entropy sum, the
example count and the correct counts. Sums add across replicas,
micro-batches and eval batches, so training and eval share them:

- training differentiates `replica_loss(sums, W, B)`, this replica's share
  sum_r(w * CE) / (W + 1e-5) + sum_r(CE) / B with the GLOBAL weight sum W
  and batch size B (`global_counts`, all-reduced inside `strategy.run`).
  The update step sums the replicas' gradients (one all-reduce, before
  clipping), so the loss and gradient of a global batch are exactly the
  single-device ones whatever the strategy;
- the logged training metrics and the eval metrics are `metrics_from_sums`
  of the all-reduced sums.

All inputs are float32 logits; everything here is float32 (float64 works
for sums accumulated on the host).
"""

import tensorflow as tf

from bert_tf.models import softmax

MLM_EPSILON = 1e-5
# The additive sums of a batch; see `loss_sums`.
SUM_KEYS = ("mlm_ce_sum", "mlm_weight_sum", "mlm_correct", "sentence_ce_sum",
            "sentence_correct", "num_examples")
# The same without a sentence-pair task (MLM alone).
MLM_SUM_KEYS = ("mlm_ce_sum", "mlm_weight_sum", "mlm_correct", "num_examples")


def sparse_cross_entropy(labels, logits):
  """Softmax cross-entropy of integer labels: the value of
  `tf.nn.sparse_softmax_cross_entropy_with_logits`, twice as fast on CPU.

  The fused op spends more time on a [1280, 30522] masked-LM batch than the
  matmul that makes the logits (it is single-pass Eigen code); here the
  forward keeps exp(logits - max) and the gradient is softmax * upstream
  with the upstream subtracted at the label, a few vectorized passes.

  Args:
    labels: int [..., ] ids, each in [0, vocab) (out of range: an error).
    logits: float32 [..., vocab].
  Returns:
    float32 [...], log(sum(exp(logits))) - logits[label], computed as the
    fused op does (shifted by the row max).
  """
  return sparse_cross_entropy_and_hit(labels, logits)[0]


def sparse_cross_entropy_and_hit(labels, logits):
  """`sparse_cross_entropy` and, from the same pass, whether the label's
  logit is the row's maximum (float32 1/0, no gradient): the accuracy
  without another pass over the logits for an argmax (2% of a BERT-tiny
  step). The two differ from argmax == label only when several logits tie
  for the maximum exactly (argmax takes the first; here each counts).
  """
  shape = tf.shape(labels)
  labels = tf.reshape(tf.cast(labels, tf.int32), [-1])

  @tf.custom_gradient
  def per_row(flat):
    row_max, exp = softmax.shifted_exp(flat)  # shared with ELECTRA's sampler
    total = tf.reduce_sum(exp, axis=-1, keepdims=True)
    label_logit = tf.gather(flat, labels, batch_dims=1)
    shifted = label_logit - tf.squeeze(row_max, -1)
    loss = tf.squeeze(tf.math.log(total), -1) - shifted
    hit = tf.cast(tf.greater_equal(shifted, 0.0), tf.float32)

    def grad(upstream, unused_upstream_hit):
      softmax_up = exp * (upstream[:, None] / total)
      index = tf.stack([tf.range(tf.size(labels)), labels], axis=1)
      return tf.tensor_scatter_nd_sub(softmax_up, index, upstream)

    return (loss, hit), grad

  loss, hit = per_row(softmax.rows(logits))
  return tf.reshape(loss, shape), tf.stop_gradient(tf.reshape(hit, shape))


def mlm_sums(mlm_logits, features):
  """The masked-LM sums of a batch: mlm_ce_sum = sum(w * CE), mlm_weight_sum
  = sum(w), mlm_correct = sum(w * [logit of id == max logit]) (float32
  scalars; argmax == id but for exact ties, see sparse_cross_entropy_and_hit).

  Args:
    mlm_logits: float [b, p, vocab] at the masked positions.
    features: int `masked_lm_ids` [b, p], float `masked_lm_weights` [b, p]
      (1 real prediction, 0 padding).
  """
  mlm_logits = tf.cast(mlm_logits, tf.float32)
  ids = tf.cast(features["masked_lm_ids"], tf.int32)
  weights = tf.cast(features["masked_lm_weights"], tf.float32)
  mlm_ce, mlm_hit = sparse_cross_entropy_and_hit(ids, mlm_logits)
  return {
      "mlm_ce_sum": tf.reduce_sum(weights * mlm_ce),
      "mlm_weight_sum": tf.reduce_sum(weights),
      "mlm_correct": tf.reduce_sum(weights * mlm_hit),
  }


def mlm_kind_sums(mlm_logits, features, mask_id):
  """The masked-LM hits split by what the input held at each prediction:
  at_mask_* where it was [MASK] (`mask_id`), kept_* where it was the label
  itself (the 10% the 80/10/10 rule keeps: predictable by copying), as
  float32 sums of 0/1 weights (ids compared as int32, never in floats).

  Args:
    mlm_logits: float [b, p, vocab] at the masked positions.
    features: int `input_ids` [b, seq], `masked_lm_positions`,
      `masked_lm_ids` [b, p], float `masked_lm_weights` [b, p].
  """
  ids = tf.cast(features["masked_lm_ids"], tf.int32)
  weights = tf.cast(features["masked_lm_weights"], tf.float32)
  fed = tf.gather(tf.cast(features["input_ids"], tf.int32),
                  tf.cast(features["masked_lm_positions"], tf.int32), batch_dims=1)
  _, hit = sparse_cross_entropy_and_hit(ids, tf.cast(mlm_logits, tf.float32))
  at_mask = weights * tf.cast(tf.equal(fed, mask_id), tf.float32)
  kept = weights * tf.cast(tf.logical_and(tf.equal(fed, ids), tf.not_equal(fed, mask_id)),
                           tf.float32)
  return {"at_mask_weight_sum": tf.reduce_sum(at_mask),
          "at_mask_correct": tf.reduce_sum(at_mask * hit),
          "kept_weight_sum": tf.reduce_sum(kept),
          "kept_correct": tf.reduce_sum(kept * hit)}


def frozen_mlm_sums(mlm_logits, features):
  """`mlm_sums` of logits no gradient reaches (a distillation teacher's):
  the same sums, the log-normalizer from the fused softmax op
  (`softmax.log_normalizer`, one pass over the vocab where `mlm_sums` makes
  three for its gradient)."""
  flat = tf.stop_gradient(softmax.rows(mlm_logits))
  ids = tf.reshape(tf.cast(features["masked_lm_ids"], tf.int32), [-1])
  weights = tf.reshape(tf.cast(features["masked_lm_weights"], tf.float32), [-1])
  label_logit = tf.gather(flat, ids, batch_dims=1)
  ce = softmax.log_normalizer(flat, tf.nn.softmax(flat, axis=-1)) - label_logit
  hit = tf.cast(tf.greater_equal(label_logit, tf.squeeze(softmax.row_max(flat), -1)), tf.float32)
  return {
      "mlm_ce_sum": tf.reduce_sum(weights * ce),
      "mlm_weight_sum": tf.reduce_sum(weights),
      "mlm_correct": tf.reduce_sum(weights * hit),
  }


def sentence_sums(logits, labels):
  """The sums of a 2-way sentence-pair head (NSP or SOP): sentence_ce_sum =
  sum(CE), sentence_correct = correct predictions (float32 scalars), for
  either task; the metric names (`metrics_from_sums`) name the task.

  Args:
    logits: float [b, 2].
    labels: int [b, 1] or [b].
  """
  logits = tf.cast(logits, tf.float32)
  labels = tf.reshape(tf.cast(labels, tf.int32), [-1])
  ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
  hit = tf.cast(tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int32), labels), tf.float32)
  return {"sentence_ce_sum": tf.reduce_sum(ce), "sentence_correct": tf.reduce_sum(hit)}


def loss_sums(outputs, features, sentence_task=True):
  """The additive sums of one batch (or one replica's slice of it).

  Args:
    outputs: model outputs; float32 (or float16/bfloat16) `mlm_logits`
      [b, p, vocab] and (with sentence_task) `nsp_logits` [b, 2].
    features: the batch; int `masked_lm_ids` [b, p], float32
      `masked_lm_weights` [b, p] (1 real prediction, 0 padding), and with
      sentence_task int `next_sentence_labels` [b, 1] or [b] (NSP: 0 = B
      follows A; SOP: 1 = swapped).
    sentence_task: False for MLM alone (no sentence-pair head).

  Returns:
    dict of float32 scalars: `mlm_sums`, with sentence_task `sentence_sums`,
    and num_examples = b (SUM_KEYS, or MLM_SUM_KEYS without a sentence task).
  """
  sums = mlm_sums(outputs["mlm_logits"], features)
  if sentence_task:
    sums.update(sentence_sums(outputs["nsp_logits"], features["next_sentence_labels"]))
  sums["num_examples"] = tf.cast(tf.shape(features["masked_lm_ids"])[0], tf.float32)
  return sums


def replica_loss(sums, global_weight_sum, global_batch_size):
  """This replica's share of the global batch's total loss (float32 scalar).

  sums["mlm_ce_sum"] / (W + 1e-5) (+ sums["sentence_ce_sum"] / B with a sentence
  task): summed over the replicas (and micro-batches) it is the original's
  total loss of the whole global batch. Differentiate it and let the
  replicas' gradients be SUMMED (not averaged).

  Args:
    sums: `loss_sums` of this replica's slice (or micro-batch).
    global_weight_sum: float32 scalar W, masked_lm_weights summed over the
      global batch (`global_counts`).
    global_batch_size: scalar B, examples in the global batch.
  """
  weight_sum = tf.cast(global_weight_sum, tf.float32)
  loss = sums["mlm_ce_sum"] / (weight_sum + MLM_EPSILON)
  if "sentence_ce_sum" in sums:
    loss += sums["sentence_ce_sum"] / tf.cast(global_batch_size, tf.float32)
  return loss


def metrics_from_sums(sums, mlm_epsilon=MLM_EPSILON, sentence_name="next_sentence"):
  """The logged losses and accuracies from (all-reduced, accumulated) sums.

  Args:
    sums: dict with SUM_KEYS (or MLM_SUM_KEYS), scalars of one float dtype.
    mlm_epsilon: added to the weight sum in masked_lm_loss. The default is
      the original's training loss; 0 gives the original eval metric
      (tf.metrics.mean of the CE weighted by w), 0.0 when no prediction.
    sentence_name: the sentence task's metric prefix ("next_sentence",
      "sentence_order"), used when `sums` has the sentence-pair sums.

  Returns:
    dict of scalars in the dtype of `sums`: loss (masked_lm_loss plus the
    sentence loss), masked_lm_loss, masked_lm_accuracy (over real
    predictions; 0 when none) and, with a sentence task,
    <sentence_name>_loss and <sentence_name>_accuracy.
  """
  if mlm_epsilon:
    mlm_loss = sums["mlm_ce_sum"] / (sums["mlm_weight_sum"] + mlm_epsilon)
  else:
    mlm_loss = tf.math.divide_no_nan(sums["mlm_ce_sum"], sums["mlm_weight_sum"])
  metrics = {
      "loss": mlm_loss,
      "masked_lm_loss": mlm_loss,
      "masked_lm_accuracy": tf.math.divide_no_nan(sums["mlm_correct"], sums["mlm_weight_sum"]),
  }
  if "sentence_ce_sum" in sums:
    sentence_loss = tf.math.divide_no_nan(sums["sentence_ce_sum"], sums["num_examples"])
    metrics["loss"] = mlm_loss + sentence_loss
    metrics[f"{sentence_name}_loss"] = sentence_loss
    metrics[f"{sentence_name}_accuracy"] = tf.math.divide_no_nan(sums["sentence_correct"],
                                                               sums["num_examples"])
  return metrics


def global_counts(features):
  """(W, B): masked_lm_weights summed and examples counted over the global
  batch, all replicas. float32 scalars with no gradient.

  Call it inside `strategy.run` (a replica context); outside any strategy it
  counts the local batch.
  """
  context = tf.distribute.get_replica_context()
  if context is None:
    raise ValueError("global_counts must run in a replica context "
                     "(inside strategy.run or outside any strategy scope)")
  local = tf.stack([tf.reduce_sum(tf.cast(features["masked_lm_weights"], tf.float32)),
                    tf.cast(tf.shape(features["masked_lm_weights"])[0], tf.float32)])
  weight_sum, batch_size = tf.unstack(
      tf.stop_gradient(context.all_reduce(tf.distribute.ReduceOp.SUM, local)))
  return weight_sum, batch_size
