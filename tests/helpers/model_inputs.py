"""Inputs for building and tracing models in tests."""

import numpy as np

from bert_tf.models.config import BertConfig


def dummy_inputs(config: BertConfig, batch_size=2, seq_length=8, num_predictions=3):
  """All-valid int32 inputs of the given shape (for building and tracing)."""
  return {
      "input_ids": np.ones((batch_size, seq_length), np.int32),
      "input_mask": np.ones((batch_size, seq_length), np.int32),
      "segment_ids": np.zeros((batch_size, seq_length), np.int32),
      "masked_lm_positions": np.zeros((batch_size, num_predictions), np.int32),
  }
