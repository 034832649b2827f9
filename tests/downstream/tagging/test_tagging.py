"""Tests of bert_tf.downstream.tagging.tagging: a tiny tagger trained a few steps on
CoNLL data made here writes eval_results.txt and conlleval-format dev
predictions that score as eval_results says; the frozen encoder trains the
head alone; bad input fails before training."""

import dataclasses
import os
import types

import numpy as np
import pytest

from bert_tf.downstream.tagging import token_head
from bert_tf.downstream.tagging import conlleval
from bert_tf.downstream import finetune
from bert_tf.downstream.tagging import tagging
from bert_tf.downstream.tagging import kind as tagging_kind
from helpers.tagging_task import tiny_config, write_task, write_vocab


@pytest.fixture(scope="module")
def files(tmp_path_factory):
  root = tmp_path_factory.mktemp("tagging")
  return {"root": root, "vocab": write_vocab(root / "vocab.txt"),
          "train": write_task(root / "train.conll", 96, seed=1),
          # Two dev sentences longer than a window: packed in several.
          "dev": write_task(root / "dev.conll", 40, seed=2, length=7)}


def _config(files, out, **overrides):
  values = dict(train_file=files["train"], dev_file=files["dev"], vocab_file=files["vocab"],
                output_dir=str(out), max_seq_length=12, learning_rate=2e-3,
                num_train_epochs=16, train_batch_size=16, warmup_proportion=0.1)
  values.update(overrides)
  return tagging.TaggingConfig(**values)


def _eval_results(path):
  return dict(line.split(" = ") for line in open(path, encoding="utf-8").read().splitlines())


def test_a_tiny_tagger_writes_its_results_and_predictions(files, tmp_path):
  config = _config(files, tmp_path / "out", seeds=2, num_train_epochs=1)
  results = tagging.run(config, tiny_config())
  assert results["labels"] == ["O", "B-LOC", "B-PER", "I-PER"]
  written = _eval_results(tmp_path / "out" / "eval_results.txt")
  for name in tagging.METRICS:
    assert float(written[name]) == pytest.approx(results[name])
    assert f"{name}_sd" in written and f"seed_1_{name}" in written
    values = [results[f"seed_{s}_{name}"] for s in (0, 1)]
    assert results[name] == pytest.approx(np.mean(values))
    assert results[f"{name}_sd"] == pytest.approx(np.std(values, ddof=1))
  assert any("longer than max_seq_length=12" in note for note in results["notes"])
  # The dev predictions: every dev word once, in order, in conlleval's
  # format, and conlleval's counting of them is the first seed's score.
  dev_lines = [line for line in open(files["dev"], encoding="utf-8").read().splitlines()
               if line and not line.startswith("-DOCSTART-")]
  path = tmp_path / "out" / tagging.PREDICTIONS_FILE
  predicted = [line for line in path.read_text(encoding="utf-8").splitlines() if line]
  assert [p.split()[:2] for p in predicted] == [[d.split()[0], d.split()[-1]]
                                                for d in dev_lines]
  rescored = conlleval.evaluate(conlleval.read_predictions(str(path)))
  assert rescored == pytest.approx({k: results[f"seed_0_{k}"] for k in tagging.METRICS})
  assert os.path.exists(tmp_path / "out" / "seed_0" / "model.index")


@pytest.mark.slow
def test_a_tiny_tagger_learns_the_task(files, tmp_path):
  results = tagging.run(_config(files, tmp_path / "out", save_model=False), tiny_config())
  assert results["entity_f1"] > 0.8, results
  assert results["token_accuracy"] > 0.85, results


def test_the_frozen_encoder_trains_the_head_on_the_last_layers(files, tmp_path):
  model = token_head.BertTokenTagger(tiny_config(), 4, frozen_encoder=True)
  # The tiny encoder has 2 layers: the head reads both, concatenated.
  assert tuple(model.head.kernel.shape) == (2 * 32, 4)
  assert {id(w) for w in model.trainable_variables} == {
      id(model.head.kernel), id(model.head.bias)}
  config = _config(files, tmp_path / "out", frozen_encoder=True, num_train_epochs=2,
                   save_model=False)
  results = tagging.run(config, tiny_config())
  assert results["frozen_encoder"] == 1
  assert 0.0 <= results["entity_f1"] <= 1.0
  # A comparison's results.md says what the head is, and what the paper's was.
  line = tagging_kind.KIND.report_lines(types.SimpleNamespace(frozen_learning_rate=1e-3))[0]
  assert "one dense layer over the concatenated outputs of its last four layers" in line
  assert "two-layer BiLSTM over the last four of twelve" in line


def test_the_frozen_encoder_keeps_the_encoder_weights(files, tmp_path):
  config = _config(files, tmp_path / "out", frozen_encoder=True, num_train_epochs=1)
  task = tagging.load_task(config)
  model, _, _, _ = tagging.train_seed(config, tiny_config(), task, 0, str(tmp_path / "s"))
  fresh, _ = finetune.build_classifier(tiny_config(), 4, seed=0,
                                       make_model=tagging.make_tagger(config))
  for trained, initial in zip(model.encoder.weights, fresh.encoder.weights):
    np.testing.assert_array_equal(trained.numpy(), initial.numpy())
  assert not np.array_equal(model.head.kernel.numpy(), fresh.head.kernel.numpy())


def test_an_unseen_dev_label_fails_before_training(files, tmp_path):
  dev = tmp_path / "dev.conll"
  dev.write_text("john B-PER\nparis B-GPE\n", encoding="utf-8")
  config = _config(files, tmp_path / "out", dev_file=str(dev))
  with pytest.raises(ValueError, match=r"dev\.conll:2: label 'B-GPE'"):
    tagging.run(config, tiny_config())
  assert not os.path.exists(tmp_path / "out" / "eval_results.txt")


def test_config_checks(files, tmp_path):
  with pytest.raises(ValueError, match="window_stride=11"):
    _config(files, tmp_path, window_stride=11).validate()
  assert _config(files, tmp_path).stride == 5
  assert dataclasses.replace(_config(files, tmp_path), window_stride=3).stride == 3


def test_the_encoder_comes_from_a_tf1_release_and_a_keras_hub_preset(files, tmp_path):
  from bert_tf.serving import keras_hub_preset  # pylint: disable=g-import-not-at-top
  from helpers import checkpoints  # pylint: disable=g-import-not-at-top
  config = tiny_config()
  source = checkpoints.write_random_release(config, tmp_path / "release")
  keras_hub_preset.save_keras_hub_preset(source, files["vocab"], True,
                                         str(tmp_path / "preset"), max_seq_length=12)
  for init, kind in (("release", "original TF1 checkpoint"), ("preset", "keras-hub preset")):
    for frozen in (False, True):
      tagger_config = _config(files, tmp_path, frozen_encoder=frozen)
      model, described = finetune.build_classifier(
          config, 4, str(tmp_path / init), make_model=tagging.make_tagger(tagger_config))
      assert kind in described and isinstance(model, token_head.BertTokenTagger)
      for ours, theirs in zip(model.encoder.weights, source.encoder.weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_the_frozen_encoder_refuses_albert_and_tags_on_an_albert_encoder_fine_tuned():
  albert_config = dataclasses.replace(tiny_config(), embedding_size=8)
  with pytest.raises(ValueError, match="ALBERT's encoder runs its shared layers"):
    token_head.BertTokenTagger(albert_config, 3, frozen_encoder=True)
  model = token_head.BertTokenTagger(albert_config, 3)
  ids = np.array([[2, 5, 6, 3]], np.int32)
  logits = model({"input_ids": ids, "input_mask": np.ones_like(ids),
                  "segment_ids": np.zeros_like(ids)})
  assert tuple(logits.shape) == (1, 4, 3)


def test_the_encoder_comes_from_a_transformers_folder(files, tmp_path):
  from bert_tf.models import hf_checkpoint  # pylint: disable=g-import-not-at-top
  from helpers.hf_fixtures import fixture  # pylint: disable=g-import-not-at-top
  folder = fixture("bert_for_masked_lm")
  bert_config, _, _, _ = hf_checkpoint.model_files(folder, None, None)
  model, described = finetune.build_classifier(
      bert_config, 3, folder, make_model=tagging.make_tagger(_config(files, tmp_path)))
  assert "transformers folder" in described and isinstance(model, token_head.BertTokenTagger)
