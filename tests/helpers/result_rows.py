"""A small results table of two arms (no training): what the report and
results tests read."""

from bert_tf.experiments import results

PRETRAIN = {"seconds": 61.24, "steps": 100, "train_tokens": 204800, "train_flops": 1.5e12,
            "parameters": 1234, "examples_per_second": 52.345, "flops_per_second": 2.4e10}


def two_arm_rows():
  """Held-out masked LM (one run each) and a fine-tuned probe (3 runs each)
  of arms mlm_nsp and mlm."""
  return [
      results.row("mlm_nsp", "masked_lm_accuracy", 0.20, 0.0, 1, PRETRAIN, se=0.004),
      results.row("mlm", "masked_lm_accuracy", 0.25, 0.0, 1, PRETRAIN, se=0.004),
      results.row("mlm_nsp", "probe_sop_accuracy", 0.60, 0.02, 3, PRETRAIN),
      results.row("mlm", "probe_sop_accuracy", 0.62, 0.03, 3, PRETRAIN),
  ]
