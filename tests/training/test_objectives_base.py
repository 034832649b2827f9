"""Tests of bert_tf.training.objectives.base: the defaults an objective gets
from `Objective`, on the worked example of docs/architecture.md (run as the
page shows it, so the page cannot go stale)."""

import os
import re
import types

import numpy as np
import tensorflow as tf

from bert_tf.training import checkpoints
from bert_tf.training import objectives
from bert_tf.training.objectives import base
from bert_tf.training.objectives import checkpoint_tag

from helpers.objective_batches import BATCH, random_batch
from helpers.pretraining import tiny_bert_config

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "architecture.md")


def _worked_example():
  """The module of the page's "Adding an objective" code block."""
  with open(DOC, encoding="utf-8") as f:
    page = f.read()
  section = page[page.index("### Adding an objective"):]
  code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
  module = types.ModuleType("smoothed")
  exec(compile(code, "docs/architecture.md", "exec"), module.__dict__)  # pylint: disable=exec-used
  return module


def test_the_worked_example_trains_with_the_base_defaults():
  smoothed = _worked_example()
  objective = smoothed.SmoothedMlmObjective(smoothed.SmoothingOptions(smoothing=0.2))
  assert isinstance(objective, base.Objective)
  config = tiny_bert_config(dropout=0.0)
  model = objective.build_model(config)
  assert objectives.of_model(model) is objective
  # The defaults: its model is its own export, at model/ in a checkpoint.
  assert objective.checkpoint_root == checkpoints.MODEL_ROOT
  assert objective.export_objective is objective and objective.export_model(model) is model
  assert objective.builds_own_encoder is False and objective.networks == ()
  features = random_batch(config.vocab_size, with_labels=False)
  outputs = model(features)
  assert objective.heldout_figures({}) == {}
  assert set(objective.heldout_sums(outputs, features)) == {"mlm_ce_sum", "mlm_weight_sum",
                                                            "mlm_correct"}
  # The loss: the weighted mean of the label-smoothed cross-entropy, in numpy.
  logits = outputs["mlm_logits"].numpy().astype(np.float64)
  log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  vocab = logits.shape[-1]
  target = np.eye(vocab)[features["masked_lm_ids"]] * 0.8 + 0.2 / vocab
  ce = -(target * log_p).sum(-1)
  w = features["masked_lm_weights"]
  counts = objective.global_counts(features)
  with tf.GradientTape() as tape:
    loss = objective.replica_loss(objective.loss_sums(model(features), features), counts)
  np.testing.assert_allclose(float(loss), (w * ce).sum() / (w.sum() + 1e-5), rtol=1e-5)
  trained = objective.trainable_variables(model)
  assert all(g is not None for g in tape.gradient(loss, trained))
  # Replicas' shares add up to the whole batch's loss.
  shares = 0.0
  for part in (slice(0, 1), slice(1, BATCH)):
    piece = {k: v[part] for k, v in features.items()}
    shares += objective.replica_loss(objective.loss_sums(model(piece), piece), counts)
  np.testing.assert_allclose(float(shares), float(loss), rtol=1e-5)


def test_the_worked_examples_options_travel_with_the_checkpoint(tmp_path):
  smoothed = _worked_example()
  objective = smoothed.SmoothedMlmObjective(smoothed.SmoothingOptions(smoothing=0.3))
  tf.train.Checkpoint(**objectives.checkpoint_variables(objective)).save(str(tmp_path / "c"))
  name, options_json = checkpoint_tag.read_tag(tf.train.latest_checkpoint(str(tmp_path)))
  assert (name, options_json) == ("mlm_smooth", '{"smoothing": 0.3}')
  again = smoothed.SmoothedMlmObjective().with_options_json(options_json)
  assert again.options == objective.options
  # An objective without options takes none from a checkpoint.
  assert objectives.get("mlm").with_options_json(None) is objectives.get("mlm")
