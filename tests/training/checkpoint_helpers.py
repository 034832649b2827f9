"""Test helper: a pretrainer read back from a checkpoint as export reads it."""

from bert_tf.training import checkpoints
from bert_tf.training import objectives


def load_recorded(bert_config, checkpoint):
  """checkpoints.load_pretrainer with the objective the checkpoint records:
  (pretrainer, prefix read)."""
  return checkpoints.load_pretrainer(bert_config, checkpoint,
                                     objectives.from_checkpoint(checkpoint))
