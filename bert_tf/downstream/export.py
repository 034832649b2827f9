"""Writing a fine-tuned model's SavedModel, for every task kind: where a
run saved its model, and the checks and steps each kind's export shares."""

import os

from bert_tf.downstream import finetune


def finetuned_prefix(config):
  """The checkpoint of the model a fine-tuning run saved: its first seed's,
  output_dir/seed_<seed>/model."""
  return os.path.join(config.output_dir, f"seed_{config.seed}", finetune.CHECKPOINT_NAME)
