"""Tests of bert_tf.training.objectives.base: the defaults an objective gets
from `Objective`, on the worked example of docs/architecture.md (its two
modules run as the page shows them, registered as the page says, and its
flag as `--help` lists it, so the page cannot go stale)."""

import os
import re
import sys
import types

import numpy as np
import pytest
import tensorflow as tf
from absl import app

from bert_tf import cli
from bert_tf import run_pretraining
from bert_tf.experiments import arms
from bert_tf.training import checkpoints
from bert_tf.training import objective_names as names
from bert_tf.training import objectives
from bert_tf.training import train_config
from bert_tf.training.objectives import base
from bert_tf.training.objectives import checkpoint_tag
from bert_tf.training.objectives import registry

from helpers.objective_batches import BATCH, random_batch
from helpers.pretraining import tiny_bert_config

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "architecture.md")


def _section():
  with open(DOC, encoding="utf-8") as f:
    page = f.read()
  return page[page.index("### Adding an objective"):page.index("## Comparing objectives")]


def _module(name, code, monkeypatch):
  module = types.ModuleType(name)
  # In sys.modules, as an import leaves it (dataclasses read it there).
  monkeypatch.setitem(sys.modules, name, module)
  exec(compile(code, "docs/architecture.md", "exec"), module.__dict__)  # pylint: disable=exec-used
  return module


@pytest.fixture(name="smoothed")
def _worked_example(monkeypatch):
  """The page's "Adding an objective" modules: its options module (as
  bert_tf.training.objectives.smoothed_options, which the objective's module
  imports) and its objective's module."""
  options_code, objective_code = re.findall(r"```python\n(.*?)```", _section(), re.S)
  options_module = _module("bert_tf.training.objectives.smoothed_options", options_code,
                           monkeypatch)
  module = _module("smoothed", objective_code, monkeypatch)
  module.SmoothingOptions = options_module.SmoothingOptions
  return module


@pytest.fixture(name="registered")
def _registered(smoothed, monkeypatch):
  """The worked example with the page's three entries made."""
  monkeypatch.setattr(names, "FAMILIES", names.FAMILIES + ("mlm_smooth",))
  monkeypatch.setattr(names, "OBJECTIVE_NAMES", names.OBJECTIVE_NAMES + ("mlm_smooth",))
  monkeypatch.setitem(names.FAMILY_OF, "mlm_smooth", "mlm_smooth")
  monkeypatch.setitem(registry.FAMILY_CLASSES, "mlm_smooth", smoothed.SmoothedMlmObjective)
  monkeypatch.setitem(registry.OBJECTIVES, "mlm_smooth", smoothed.SmoothedMlmObjective())
  monkeypatch.setitem(objectives.OPTIONS, "mlm_smooth", smoothed.SmoothingOptions)
  return smoothed


def test_the_worked_example_trains_with_the_base_defaults(smoothed):
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


def test_the_worked_examples_options_travel_with_the_checkpoint(smoothed, tmp_path):
  objective = smoothed.SmoothedMlmObjective(smoothed.SmoothingOptions(smoothing=0.3))
  tf.train.Checkpoint(**objectives.checkpoint_variables(objective)).save(str(tmp_path / "c"))
  name, options_json = checkpoint_tag.read_tag(tf.train.latest_checkpoint(str(tmp_path)))
  assert (name, options_json) == ("mlm_smooth", '{"smoothing": 0.3}')
  again = smoothed.SmoothedMlmObjective().with_options_json(options_json)
  assert again.options == objective.options
  # An objective without options takes none from a checkpoint.
  assert objectives.get("mlm").with_options_json(None) is objectives.get("mlm")


def test_the_worked_examples_options_are_flags_as_the_page_shows(registered, capsys):
  flag_values = cli.parse(run_pretraining.define_flags,
                          ["run_pretraining", "--objective=mlm_smooth", "--label_smoothing=0.2"])
  # `--help` lists the flag as the page shows it.
  listed = re.search(r"\n```\n(  --label_smoothing.*?)```", _section(), re.S).group(1)
  assert listed in flag_values.get_help(include_special_flags=False)
  # The flag becomes the run's TrainConfig.objective_options, and its objective's.
  config = train_config.TrainConfig(
      objective="mlm_smooth", input_file="x", output_dir="y", do_train=True,
      objective_options=cli.objective_options("mlm_smooth", flag_values))
  config.validate()
  assert config.objective_options == registered.SmoothingOptions(smoothing=0.2)
  objective = objectives.resolve("mlm_smooth", "none", options=config)
  assert isinstance(objective, registered.SmoothedMlmObjective)
  assert objective.options.smoothing == 0.2
  # A bad value, or the flag with another objective: one-line errors.
  bad = cli.parse(run_pretraining.define_flags,
                  ["run_pretraining", "--objective=mlm_smooth", "--label_smoothing=1.5"])
  with pytest.raises(app.UsageError, match=r"^label_smoothing=1.5 must lie in \[0, 1\)$"):
    cli.objective_options("mlm_smooth", bad)
  other = cli.parse(run_pretraining.define_flags,
                    ["run_pretraining", "--objective=mlm", "--label_smoothing=0.2"])
  with pytest.raises(app.UsageError, match="--label_smoothing is an option of objective "
                     "mlm_smooth; this run's objective is mlm"):
    cli.objective_options("mlm", other)
  # A comparison's arm takes it too.
  arm = arms.Arm.parse("smooth2:objective=mlm_smooth,label_smoothing=0.2")
  assert arm.training_options() == {"objective_options": registered.SmoothingOptions(0.2)}


def test_the_page_lists_every_member_of_the_base_and_why():
  # docs/architecture.md's table of the base's members: each member in one
  # group with who asks for it, the count in its title, nothing left out.
  with open(DOC, encoding="utf-8") as f:
    page = f.read()
  title = re.search(r"The base's members \((\d+)\), by what asks for them", page)
  table = page[title.end():page.index("Options and Settings:", title.end())]
  listed = [m for row in re.findall(r"^\| [a-z ]+ \| (.*?) \|", table, re.M)
            for m in re.findall(r"`(\w+)`", row)]
  members = [k for k in vars(base.Objective) if not k.startswith("_")]
  assert sorted(listed) == sorted(members)
  assert int(title.group(1)) == len(members)
