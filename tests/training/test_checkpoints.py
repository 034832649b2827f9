"""Tests of bert_tf.training.checkpoints: finding a checkpoint, warm start as
the original's init_from_checkpoint (whatever matches, logged), the full read
export needs, and errors that name the variable and both shapes."""

import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import modeling
from bert_tf.models import tf1_checkpoint
from bert_tf.training import checkpoints
from helpers.pretraining import tiny_bert_config
from helpers.checkpoints import write_tf1_checkpoint


def _random_model(config, seed):
  model = modeling.BertPretrainer(config)
  rng = np.random.default_rng(seed)
  for w in model.weights:
    w.assign(rng.normal(size=w.shape).astype("float32"))
  return model


def _values(model):
  return {w.path: w.numpy().copy() for w in model.weights}


@pytest.fixture(scope="module")
def source():
  return _random_model(tiny_bert_config(), seed=0)


def test_resolve_checkpoint(source, tmp_path):
  # A training directory: its latest checkpoint.
  manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=source), str(tmp_path / "run"),
                                       max_to_keep=2)
  manager.save(3)
  manager.save(7)
  assert checkpoints.resolve_checkpoint(str(tmp_path / "run")) == str(tmp_path / "run" / "ckpt-7")
  assert checkpoints.resolve_checkpoint(str(tmp_path / "run" / "ckpt-3")).endswith("ckpt-3")
  # An unpacked original release: bert_model.ckpt and no "checkpoint" file.
  release = tmp_path / "uncased_L-2_H-32"
  tf1_checkpoint.save_tf1_checkpoint(source, str(release / "bert_model.ckpt"))
  assert not (release / "checkpoint").exists()
  assert checkpoints.resolve_checkpoint(str(release)) == str(release / "bert_model.ckpt")
  with pytest.raises(FileNotFoundError, match=r"no checkpoint at .*ckpt-5 \(no file .*ckpt-5.index\)"):
    checkpoints.resolve_checkpoint(str(tmp_path / "run" / "ckpt-5"))
  (tmp_path / "empty").mkdir()
  with pytest.raises(FileNotFoundError, match="no checkpoint in directory .*empty"):
    checkpoints.resolve_checkpoint(str(tmp_path / "empty"))


def test_warm_start_from_an_encoder_only_tf1_checkpoint(source, tmp_path, caplog):
  # As a fine-tuned or encoder-only release: bert/ weights (with the
  # original Saver's Adam slots and global_step), no cls/ heads.
  weights = tf1_checkpoint.tf1_weights_from_model(source)
  heads = sorted(n for n in weights if n.startswith("cls/"))
  assert len(heads) == 7
  encoder_only = {n: v for n, v in weights.items() if not n.startswith("cls/")}
  prefix = write_tf1_checkpoint(str(tmp_path / "bert_model.ckpt"), encoder_only)

  model = modeling.BertPretrainer(tiny_bert_config())
  heads_before = model.nsp_head.kernel.numpy().copy()
  caplog.set_level(logging.INFO, logger="absl")
  report = checkpoints.warm_start(model, prefix)
  assert report.format == "tf1" and report.prefix == prefix
  assert len(report.initialized) == len(encoder_only) == len(weights) - 7
  assert list(report.missing) == heads
  np.testing.assert_array_equal(model.encoder.token_embedding.embeddings.numpy(),
                                source.encoder.token_embedding.embeddings.numpy())
  np.testing.assert_array_equal(model.nsp_head.kernel.numpy(), heads_before)
  line = [r.getMessage() for r in caplog.records if "Warm start" in r.getMessage()]
  assert len(line) == 1
  assert (f"initialized {len(weights) - 7} of {len(weights)} variables from original TF1 "
          f"checkpoint {prefix}") in line[0]
  assert "not in the checkpoint (left as initialized): cls/predictions/" in line[0]


def test_warm_start_from_our_training_checkpoint(source, tmp_path, caplog):
  step = tf.Variable(12, dtype=tf.int64)
  prefix = tf.train.Checkpoint(model=source, step=step).save(str(tmp_path / "ckpt"))
  model = modeling.BertPretrainer(tiny_bert_config())
  caplog.set_level(logging.INFO, logger="absl")
  report = checkpoints.warm_start(model, str(tmp_path))
  assert report.format == "bert_tf" and report.prefix == prefix
  assert len(report.initialized) == len(model.weights) and not report.missing
  assert not report.unused
  for path, value in _values(source).items():
    np.testing.assert_array_equal(_values(model)[path], value, err_msg=path)
  assert (f"initialized {len(model.weights)} of {len(model.weights)} variables from checkpoint "
          f"{prefix}") in caplog.text


def test_a_shape_that_differs_is_an_error_naming_the_variable_and_both_shapes(source, tmp_path):
  narrower = tiny_bert_config().replace(intermediate_size=48)
  ours = tf.train.Checkpoint(model=source).save(str(tmp_path / "ours" / "ckpt"))
  tf1 = tf1_checkpoint.save_tf1_checkpoint(source, str(tmp_path / "tf1" / "bert_model.ckpt"))
  model = modeling.BertPretrainer(narrower)
  before = _values(model)
  with pytest.raises(ValueError, match=r"variable transformer_layer_0/feedforward_intermediate_"
                                       r"dense/kernel has shape \(32, 64\) in the checkpoint but "
                                       r"the model needs \(32, 48\)"):
    checkpoints.warm_start(model, ours)
  with pytest.raises(ValueError, match=r"layer_0/intermediate/dense/kernel has shape \[32, 64\] "
                                       r"but the model .* needs \[32, 48\]"):
    checkpoints.warm_start(model, tf1)
  # Checked before anything was assigned.
  for path, value in before.items():
    np.testing.assert_array_equal(_values(model)[path], value, err_msg=path)


def test_full_read_for_export_refuses_a_checkpoint_of_another_depth(source, tmp_path):
  ours = tf.train.Checkpoint(model=source).save(str(tmp_path / "ours" / "ckpt"))
  tf1 = tf1_checkpoint.save_tf1_checkpoint(source, str(tmp_path / "tf1" / "bert_model.ckpt"))
  shallower = tiny_bert_config().replace(num_hidden_layers=1)
  for prefix in (ours, tf1):
    with pytest.raises(ValueError, match="check num_hidden_layers"):
      checkpoints.read_weights(modeling.BertPretrainer(shallower), prefix)
  # A warm start takes what fits, as the original does, and says what it left out.
  # Layer 0, the embeddings, pooler and heads are read (by name, not by the
  # position of the layer in Keras's list of operations); layer 1's 16
  # weights are left over.
  model = modeling.BertPretrainer(shallower)
  report = checkpoints.warm_start(model, ours)
  assert not report.missing and len(report.unused) == 16, report
  ours_values, source_values = _values(model), _values(source)
  assert len(ours_values) == len(source_values) - 16
  for path, value in ours_values.items():
    np.testing.assert_array_equal(value, source_values[path], err_msg=path)
  # A deeper model cannot be filled completely for export either.
  deeper = tiny_bert_config().replace(num_hidden_layers=3)
  with pytest.raises(ValueError, match="not in the checkpoint: transformer_layer_2/"):
    checkpoints.read_weights(modeling.BertPretrainer(deeper), ours)


def test_a_checkpoint_without_model_weights_is_refused(tmp_path):
  prefix = tf.train.Checkpoint(step=tf.Variable(1)).save(str(tmp_path / "ckpt"))
  with pytest.raises(ValueError, match="holds no `model` weights"):
    checkpoints.read_weights(modeling.BertPretrainer(tiny_bert_config()), prefix)
  assert os.path.exists(prefix + ".index")
