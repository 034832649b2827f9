"""A keras-hub preset of a config."""

import numpy as np


def write_masked_lm_preset(path, config):
  """A keras-hub BertMaskedLM preset of `config` with a non-initial head;
  returns the task."""
  import keras_hub  # pylint: disable=g-import-not-at-top
  backbone = keras_hub.models.BertBackbone(
      vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers,
      num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
      intermediate_dim=config.intermediate_size, dropout=config.hidden_dropout_prob,
      max_sequence_length=config.max_position_embeddings,
      num_segments=config.type_vocab_size)
  task = keras_hub.models.BertMaskedLM(backbone=backbone, preprocessor=None)
  # A head that is not at its initial values, so copying it is checked.
  for weight in task.masked_lm_head.weights:
    weight.assign(np.random.default_rng(1).normal(size=weight.shape) * 0.1)
  task.save_to_preset(str(path))
  return task
