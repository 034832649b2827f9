"""Tests of bert_tf.downstream.finetune: metrics against hand-computed values,
seeds mean/sd, and tiny fine-tuning runs (random init, from a checkpoint our
pretraining wrote, from an original TF1 checkpoint) on a generated
separable task."""

import contextlib
import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from dataclasses import replace as dataclasses_replace

from bert_tf.downstream.classification import tsv as classification
from bert_tf.models.config import BertConfig
from bert_tf.downstream import finetune
from bert_tf.downstream.classification import finetune_tsv
from bert_tf.training import loop
from helpers import checkpoints
from helpers.checkpoints import load_recorded
from helpers.finetune_task import VOCAB, tiny_config, write_task, write_vocab

VOCAB += [f"w{i}" for i in range(100 - len(VOCAB))]


@pytest.fixture(scope="module")
def task(tmp_path_factory):
  root = tmp_path_factory.mktemp("task")
  return {"root": root, "vocab": write_vocab(root / "vocab.txt"),
          "train": write_task(root / "train.tsv", 160, seed=1),
          "dev": write_task(root / "dev.tsv", 64, seed=2)}


def _config(task, out, **kw):
  values = dict(train_file=task["train"], dev_file=task["dev"], output_dir=str(out),
                vocab_file=task["vocab"], max_seq_length=16, learning_rate=1e-3,
                num_train_epochs=6, train_batch_size=16, text_a_column="sentence")
  values.update(kw)
  return finetune.FinetuneConfig(**values)


# -- metrics -------------------------------------------------------------------


def test_metrics_against_hand_computed_values():
  labels = [1, 1, 1, 0, 0, 0, 0, 1]
  preds = [1, 1, 0, 0, 0, 1, 0, 1]
  # tp=3 fp=1 fn=1 tn=3
  assert finetune_tsv.accuracy(labels, preds) == 6 / 8
  assert finetune_tsv.f1_score(labels, preds) == pytest.approx(2 * 3 / (2 * 3 + 1 + 1))
  # MCC = (tp*tn - fp*fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn)) = (9-1)/sqrt(4*4*4*4) = 0.5
  assert finetune_tsv.matthews_corrcoef(labels, preds, 2) == pytest.approx(0.5)
  assert finetune_tsv.matthews_corrcoef([0, 0, 1], [0, 0, 0], 2) == 0.0  # undefined -> 0
  # Three classes, all right: 1; Gorodkin's R_K for a worked example.
  assert finetune_tsv.matthews_corrcoef([0, 1, 2], [0, 1, 2], 3) == pytest.approx(1.0)
  # confusion [[1,1,0],[0,1,0],[0,0,1]]: c=3 s=4 t=(2,1,1) p=(1,2,1)
  # (3*4 - (2+2+1)) / sqrt((16-6)*(16-6)) = 7/10
  assert finetune_tsv.matthews_corrcoef([0, 0, 1, 2], [0, 1, 1, 2], 3) == pytest.approx(0.7)
  # Pearson of (1,2,3) with (1,2,5): cov 4/.. -> 4 / sqrt(2 * 8.666..)
  assert finetune.pearson([1, 2, 3], [1, 2, 5]) == pytest.approx(
      4 / np.sqrt(2 * (26 / 3)), rel=1e-12)
  # Spearman with a tie: ranks of (1,2,2,3) are (1,2.5,2.5,4).
  assert finetune_tsv.spearman([1, 2, 2, 3], [10, 20, 30, 40]) == pytest.approx(
      finetune.pearson([1, 2.5, 2.5, 4], [1, 2, 3, 4]))
  assert finetune_tsv.spearman([3, 1, 2], [30, 10, 20]) == pytest.approx(1.0)


def test_summarize_means_and_sample_sd():
  out = finetune.summarize([{"accuracy": 0.5}, {"accuracy": 0.7}, {"accuracy": 0.9}])
  assert out["accuracy"] == pytest.approx(0.7)
  assert out["accuracy_sd"] == pytest.approx(0.2)  # sqrt(((.2)^2*2)/2)
  assert finetune.summarize([{"accuracy": 0.5}])["accuracy_sd"] == 0.0


def test_compute_metrics_binary_multiclass_regression():
  binary = classification.LabelSpace(("0", "1"), False)
  m = finetune_tsv.compute_metrics(np.array([[2.0, 1.0], [0.0, 3.0]]), np.array([0, 0]), binary)
  assert m == {"accuracy": 0.5, "mcc": 0.0, "f1": 0.0}
  three = classification.LabelSpace(("a", "b", "c"), False)
  assert "f1" not in finetune_tsv.compute_metrics(np.eye(3), np.arange(3), three)
  regression = classification.LabelSpace((), True)
  m = finetune_tsv.compute_metrics(np.array([[1.0], [2.0], [4.0]]), np.array([1.0, 2.0, 3.0]),
                               regression)
  assert m["spearman"] == pytest.approx(1.0)
  assert m["mse"] == pytest.approx(1 / 3)


def test_config_validation():
  with pytest.raises(ValueError, match="train_file is required"):
    finetune.FinetuneConfig().validate()
  config = finetune.FinetuneConfig(train_file="t", dev_file="d", output_dir="o",
                                   vocab_file="v", seeds=0)
  with pytest.raises(ValueError, match="seeds must be positive, got 0"):
    config.validate()
  config = finetune.FinetuneConfig(train_file="t", dev_file="d", output_dir="o",
                                   vocab_file="v", max_seq_length=64)
  with pytest.raises(ValueError, match="max_position_embeddings=32"):
    config.validate(tiny_config())


# -- runs ----------------------------------------------------------------------


@contextlib.contextmanager
def tensorflow_warnings():
  """The messages TensorFlow's Python logger writes inside the block."""
  messages = []
  handler = logging.Handler(logging.WARNING)
  handler.emit = lambda record: messages.append(record.getMessage())
  logger = logging.getLogger("tensorflow")
  logger.addHandler(handler)
  try:
    yield messages
  finally:
    logger.removeHandler(handler)


def test_random_init_learns_the_separable_task_with_seeds(task, tmp_path):
  with tensorflow_warnings() as warnings:
    results = finetune_tsv.run(_config(task, tmp_path / "out", seeds=2), tiny_config())
  # An evaluation each epoch and a model each seed trace nothing anew.
  assert not [w for w in warnings if "retracing" in w], warnings
  assert results["num_seeds"] == 2 and results["init"].startswith("random")
  for seed in (0, 1):
    assert results[f"seed_{seed}_accuracy"] > 0.8, results
  assert results["accuracy"] == pytest.approx(
      (results["seed_0_accuracy"] + results["seed_1_accuracy"]) / 2)
  assert results["accuracy_sd"] == pytest.approx(
      abs(results["seed_0_accuracy"] - results["seed_1_accuracy"]) / np.sqrt(2))
  assert {"f1", "mcc", "f1_sd", "mcc_sd"} <= set(results)
  # 64 dev examples: the output says the score is noisy.
  assert any("only 64 examples" in note for note in results["notes"])
  lines = (tmp_path / "out" / "eval_results.txt").read_text().splitlines()
  assert f"accuracy = {results['accuracy']}" in lines
  assert lines == sorted(lines)
  assert not [p for p in os.listdir(tmp_path / "out") if ".tmp-" in p]
  # TensorBoard: dev accuracy per epoch for each seed.
  events = tf.io.gfile.glob(str(tmp_path / "out" / "seed_1" / "eval" / "events.*"))
  tags = {v.tag for e in tf.compat.v1.train.summary_iterator(events[0])
          for v in e.summary.value}
  assert {"accuracy", "mcc", "f1"} <= tags
  assert tf.io.gfile.exists(str(tmp_path / "out" / "seed_0" / "model.index"))


def test_same_seed_same_result(task, tmp_path):
  config = _config(task, tmp_path / "a", num_train_epochs=1)
  first = finetune_tsv.run(config, tiny_config())
  second = finetune_tsv.run(_config(task, tmp_path / "b", num_train_epochs=1), tiny_config())
  assert first["seed_0_accuracy"] == second["seed_0_accuracy"]
  assert first["seed_0_mcc"] == second["seed_0_mcc"]
  # 160 examples / batch 16 x 1 epoch: 10 steps, said in the notes.
  assert [n for n in first["notes"] if n.startswith("warning: only 10 optimizer steps")]


def test_too_few_steps_warning_names_the_steps_and_what_to_change():
  # The case: 76 rows with the original recipe (batch 32, 3 epochs).
  config = finetune.FinetuneConfig(train_batch_size=32, num_train_epochs=3)
  message = finetune.too_few_steps_warning(config, 76)
  assert message.startswith("warning: only 7 optimizer steps (76 train examples / batch 32 "
                            "x 3 epochs, 0 of warmup)")
  assert "--num_train_epochs (to 43 for 100 steps)" in message  # 43 x 76 / 32 = 102 steps
  assert "try --learning_rate=0.0001 (now 5e-05;" in message and "\n" not in message
  # Never the rate already in use: at 1e-4 (the case) or above, no higher one.
  for rate in (1e-4, 5e-4):
    message = finetune.too_few_steps_warning(dataclasses_replace(config, learning_rate=rate), 76)
    assert "try --learning_rate" not in message and "try a higher" not in message
    assert f"--learning_rate={rate:g} is already at or above the small-task recipe's" in message
  assert finetune.num_train_steps(dataclasses_replace(config, num_train_epochs=43), 76) >= 100
  assert finetune.too_few_steps_warning(config, 3668) is None  # MRPC: 343 steps


def test_from_a_checkpoint_our_pretraining_wrote(task, tmp_path):
  # A tiny pretraining run writes a checkpoint with our records.
  from helpers import pretraining  # pylint: disable=g-import-not-at-top
  pretraining.write_records(tmp_path / "train.tfrecord", 32, seed=1)
  pre = pretraining.tiny_train_config(tmp_path, num_train_steps=2, num_warmup_steps=0,
                                    save_checkpoints_steps=2)
  pre_config = pretraining.tiny_bert_config()
  assert pre_config.vocab_size == len(VOCAB)
  loop.run(pre, pre_config)
  model, described = finetune.build_classifier(pre_config, 2, str(tmp_path / "out"))
  assert "initialized" in described and "ckpt-2" in described
  # Every encoder weight equals the trained one (read as export reads it).
  out = str(tmp_path / "out")
  trained, _ = load_recorded(pre_config, out)
  for ours, theirs in zip(model.encoder.weights, trained.encoder.weights):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
  fresh, _ = finetune.build_classifier(pre_config, 2)
  assert not np.array_equal(fresh.encoder.weights[0].numpy(),
                            trained.encoder.weights[0].numpy())
  results = finetune_tsv.run(_config(task, tmp_path / "ft", init_checkpoint=str(tmp_path / "out"),
                                 num_train_epochs=10),  # 100 steps: the warning's advice
                         pre_config)
  assert results["init"] == described
  assert results["accuracy"] > 0.8


def test_from_an_original_tf1_checkpoint_and_a_keras_hub_preset(tmp_path):
  from bert_tf.serving import keras_hub_preset  # pylint: disable=g-import-not-at-top
  config = tiny_config()
  source = checkpoints.write_random_release(config, tmp_path / "release")
  model, described = finetune.build_classifier(config, 3, str(tmp_path / "release"))
  assert "original TF1 checkpoint" in described
  for ours, theirs in zip(model.encoder.weights, source.encoder.weights):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
  vocab = write_vocab(tmp_path / "vocab.txt")
  keras_hub_preset.save_keras_hub_preset(source, vocab, True, str(tmp_path / "preset"),
                               max_seq_length=16)
  model, described = finetune.build_classifier(config, 2, str(tmp_path / "preset"))
  assert "keras-hub preset" in described
  for ours, theirs in zip(model.encoder.weights, source.encoder.weights):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
  deeper = BertConfig(**{**config.to_dict(), "num_hidden_layers": 3})
  with pytest.raises(ValueError, match="lacks encoder weights|has no variable"):
    finetune.build_classifier(deeper, 2, str(tmp_path / "release"))
  with pytest.raises(ValueError, match="has no weight|check num_hidden_layers"):
    finetune.build_classifier(deeper, 2, str(tmp_path / "preset"))


def test_regression_pair_task_and_test_predictions(tmp_path):
  vocab = write_vocab(tmp_path / "vocab.txt")
  train = write_task(tmp_path / "train.tsv", 96, seed=3, pair=True, regression=True)
  dev = write_task(tmp_path / "dev.tsv", 32, seed=4, pair=True, regression=True)
  config = finetune.FinetuneConfig(
      train_file=train, dev_file=dev, test_file=dev, output_dir=str(tmp_path / "out"),
      vocab_file=vocab, text_a_column="sentence", text_b_column="other", max_seq_length=16,
      learning_rate=1e-3, num_train_epochs=8, train_batch_size=16)
  results = finetune_tsv.run(config, tiny_config())
  assert results["task_type"] == "regression" and "accuracy" not in results
  assert results["pearson"] > 0.7, results
  lines = (tmp_path / "out" / "test_results.tsv").read_text().splitlines()
  assert lines[0] == "prediction" and len(lines) == 33


def test_bad_label_in_dev_names_file_and_line(task, tmp_path):
  dev = tmp_path / "dev.tsv"
  dev.write_text("id\tsentence\tlabel\n0\tgood movie\t1\n1\tbad movie\tmaybe\n")
  with pytest.raises(ValueError, match=r"dev.tsv:3: label 'maybe' is not among"):
    finetune_tsv.run(_config(task, tmp_path / "out", dev_file=str(dev)), tiny_config())
  assert not (tmp_path / "out").exists()


def test_an_electra_checkpoint_fine_tunes_its_discriminator(tmp_path):
  from bert_tf.training import objectives
  from helpers.pretraining import tiny_bert_config
  config = tiny_bert_config(dropout=0.0)
  electra = objectives.ElectraObjective()
  pretrainer = electra.build_model(config)
  tf.train.Checkpoint(model=pretrainer, **objectives.checkpoint_variables(electra)).save(
      str(tmp_path / "electra" / "ckpt"))
  model, described = finetune.build_classifier(config, 2, str(tmp_path / "electra"), seed=1)
  assert described.startswith("initialized the ELECTRA discriminator's")
  for ours, theirs in zip(model.encoder.weights, pretrainer.encoder.weights):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
  # Its checkpoint reads back into a plain classifier (what the export builds).
  tf.train.Checkpoint(model=model).write(str(tmp_path / "cls" / "model"))
  plain = finetune.classifier_lib.BertClassifier(config, 2)
  tf.train.Checkpoint(model=plain).read(str(tmp_path / "cls" / "model")
                                       ).assert_existing_objects_matched()
  ids = np.full((2, 8), 7, np.int32)
  batch = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
  np.testing.assert_allclose(plain(batch).numpy(), model(batch).numpy(), atol=1e-6)


def test_a_distilled_student_checkpoint_fine_tunes_the_student(tmp_path):
  from bert_tf.models import modeling
  from bert_tf.training import objectives
  from helpers.pretraining import tiny_bert_config
  config = tiny_bert_config(dropout=0.0)
  student = modeling.BertPretrainer(config, sentence_head=False)
  # As a distillation run saves it: the student at model/student, the objective named.
  with tf.device("/cpu:0"):
    name = tf.Variable("distill_mlm", dtype=tf.string)
  tf.train.Checkpoint(model=tf.train.Checkpoint(student=student), objective=name).save(
      str(tmp_path / "student" / "ckpt"))
  model, described = finetune.build_classifier(config, 2, str(tmp_path / "student"), seed=1)
  assert "encoder weights from checkpoint" in described
  for ours, theirs in zip(model.encoder.weights, student.encoder.weights):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
