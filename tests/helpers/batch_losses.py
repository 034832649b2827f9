"""The original's pretraining losses of one whole batch, from `losses`'
sums: the figures the original's model_fn computes (total, masked-LM and
NSP loss, accuracies), for tests that compare a forward pass with it."""

from bert_tf.training import losses


def pretraining_losses(outputs, features):
  """The original pretraining losses of one (whole) batch.

  Args:
    outputs, features: as in `losses.loss_sums`.

  Returns:
    dict of float32 scalars: total, mlm_loss, nsp_loss, mlm_accuracy (over
    real predictions), nsp_accuracy, mlm_weight_sum.
  """
  sums = losses.loss_sums(outputs, features)
  metrics = losses.metrics_from_sums(sums)
  return {
      "total": metrics["loss"],
      "mlm_loss": metrics["masked_lm_loss"],
      "nsp_loss": metrics["next_sentence_loss"],
      "mlm_accuracy": metrics["masked_lm_accuracy"],
      "nsp_accuracy": metrics["next_sentence_accuracy"],
      "mlm_weight_sum": sums["mlm_weight_sum"],
  }
