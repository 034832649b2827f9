"""Test helper: a random batch of pretraining features for the objectives'
tests (int32 ids, all-real input_mask, masked-LM weights [1, 1, 0])."""

import numpy as np

BATCH, SEQ, PREDS = 4, 16, 3


def random_batch(vocab_size, with_labels=True, seed=0):
  rng = np.random.default_rng(seed)
  features = {
      "input_ids": rng.integers(5, vocab_size, (BATCH, SEQ)).astype(np.int32),
      "input_mask": np.ones((BATCH, SEQ), np.int32),
      "segment_ids": np.zeros((BATCH, SEQ), np.int32),
      "masked_lm_positions": np.tile(np.arange(1, PREDS + 1, dtype=np.int32), (BATCH, 1)),
      "masked_lm_ids": rng.integers(5, vocab_size, (BATCH, PREDS)).astype(np.int32),
      "masked_lm_weights": np.array([[1, 1, 0]] * BATCH, np.float32),
  }
  if with_labels:
    features["next_sentence_labels"] = rng.integers(0, 2, (BATCH, 1)).astype(np.int32)
  return features

