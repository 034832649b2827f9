"""Tests of bert_tf.training.loop.run on a tiny model and tiny random records:
training and eval outputs, resume with identical optimizer state, NaN stop,
gradient accumulation equivalence, mixed precision."""

import os
import random

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import schema
from bert_tf.training import loop
from bert_tf.models.config import BertConfig

SEQ, PREDS, VOCAB = 32, 5, 100


def tiny_bert_config(dropout=0.1):
  return BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                    num_attention_heads=2, intermediate_size=64,
                    hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
                    max_position_embeddings=64)


def write_records(path, n, seed=0, nan_weights=False):
  """n random instances (MLM targets are masked with [MASK]=4 in the input)."""
  rng = random.Random(seed)
  encoder = schema.ExampleEncoder(SEQ, PREDS, VOCAB)
  with tf.io.TFRecordWriter(str(path)) as writer:
    for _ in range(n):
      length = rng.randint(8, SEQ)
      ids = [rng.randrange(5, VOCAB) for _ in range(length)]
      positions = sorted(rng.sample(range(1, length), PREDS))
      targets = [ids[p] for p in positions]
      for p in positions:
        ids[p] = 4
      segments = [0] * (length // 2) + [1] * (length - length // 2)
      record = encoder.encode(ids, segments, positions, targets, rng.randint(0, 1))
      if nan_weights:
        example = tf.train.Example.FromString(record)
        example.features.feature["masked_lm_weights"].float_list.value[:] = [float("nan")] * PREDS
        record = example.SerializeToString()
      writer.write(record)


def tiny_train_config(tmp_path, **kw):
  defaults = dict(input_file=str(tmp_path / "train.tfrecord"),
                  output_dir=str(tmp_path / "out"), do_train=True,
                  max_seq_length=SEQ, max_predictions_per_seq=PREDS, train_batch_size=8,
                  eval_batch_size=8, learning_rate=1e-3, num_train_steps=6,
                  num_warmup_steps=2, save_checkpoints_steps=3, iterations_per_loop=2,
                  log_steps=2, max_eval_steps=3, shuffle_buffer=50)
  defaults.update(kw)
  return loop.TrainConfig(**defaults)


@pytest.fixture
def data(tmp_path):
  write_records(tmp_path / "train.tfrecord", 64, seed=1)
  write_records(tmp_path / "heldout.tfrecord", 24, seed=2)
  return tmp_path


def test_train_eval_then_resume_restores_identical_optimizer_state(data):
  config = tiny_train_config(data, do_eval=True,
                             eval_input_file=str(data / "heldout.tfrecord"))
  first = loop.run(config, tiny_bert_config())
  assert first["global_step"] == 6
  assert sorted(tf.io.gfile.glob(str(data / "out/ckpt-*.index"))) == [
      str(data / "out/ckpt-3.index"), str(data / "out/ckpt-6.index")]
  for key in ("loss", "masked_lm_loss", "next_sentence_loss", "gradient_norm",
              "learning_rate", "examples_per_second", "tokens_per_second"):
    assert np.isfinite(first["train"][key]), key
  assert first["eval"]["global_step"] == 6
  assert 0.0 <= first["eval"]["masked_lm_accuracy"] <= 1.0
  with tf.io.gfile.GFile(str(data / "out/eval_results.txt")) as f:
    keys = [line.split(" = ")[0] for line in f.read().splitlines()]
  assert keys == list(loop.EVAL_KEYS)

  # The same command again: resumes at step 6 with the same optimizer slots
  # and schedule position, trains nothing more.
  second = loop.run(config, tiny_bert_config())
  assert second["global_step"] == 6
  opt1, opt2 = first["optimizer"], second["optimizer"]
  assert int(opt2.iterations.numpy()) == 6
  assert float(opt1.learning_rate) == float(opt2.learning_rate)
  assert len(opt1.variables) == len(opt2.variables) > 2
  for v1, v2 in zip(opt1.variables, opt2.variables):
    np.testing.assert_array_equal(v1.numpy(), v2.numpy(), err_msg=v1.path)
  for v1, v2 in zip(first["model"].weights, second["model"].weights):
    np.testing.assert_array_equal(v1.numpy(), v2.numpy(), err_msg=v1.path)

  # Training further continues from step 6, not from 0.
  third = loop.run(tiny_train_config(data, num_train_steps=8), tiny_bert_config())
  assert third["global_step"] == 8
  assert int(third["optimizer"].iterations.numpy()) == 8


def test_nan_loss_stops_naming_the_step_and_keeps_last_good_checkpoint(data):
  loop.run(tiny_train_config(data, num_train_steps=4, save_checkpoints_steps=2),
               tiny_bert_config())
  write_records(data / "bad.tfrecord", 32, nan_weights=True)
  bad = tiny_train_config(data, input_file=str(data / "bad.tfrecord"), num_train_steps=8,
                          save_checkpoints_steps=2, iterations_per_loop=4, log_steps=4)
  with pytest.raises(loop.TrainingDivergedError, match=r"NaN or Inf at step 5\b"):
    loop.run(bad, tiny_bert_config())
  assert tf.train.latest_checkpoint(str(data / "out")).endswith("ckpt-4")


def test_gradient_accumulation_gives_the_same_update(data):
  # Without dropout, two micro-batches of 4 must update like one batch of 8.
  weights = []
  for accum in (1, 2):
    config = tiny_train_config(data, output_dir=str(data / f"out{accum}"), num_train_steps=2,
                               grad_accum_steps=accum, shuffle_buffer=1)
    result = loop.run(config, tiny_bert_config(dropout=0.0))
    weights.append([w.numpy() for w in result["model"].weights])
  for a, b in zip(*weights):
    np.testing.assert_allclose(a, b, atol=1e-5)


@pytest.mark.parametrize("precision", ["float16"])
def test_mixed_precision_trains(data, precision):
  # float16 exercises dynamic loss scaling (bfloat16 is the same path without).
  config = tiny_train_config(data, output_dir=str(data / precision), num_train_steps=2,
                             mixed_precision=precision)
  result = loop.run(config, tiny_bert_config())
  assert result["global_step"] == 2
  assert np.isfinite(result["train"]["loss"])
  if precision == "float16":
    assert result["train"]["loss_scale"] > 1.0
  assert all(w.dtype == "float32" for w in result["model"].trainable_weights)


def test_bad_settings_are_one_line_errors(data):
  with pytest.raises(ValueError, match="not divisible"):
    loop.run(tiny_train_config(data, train_batch_size=6, grad_accum_steps=4),
                 tiny_bert_config())
  with pytest.raises(FileNotFoundError, match="matches no files"):
    loop.run(tiny_train_config(data, input_file=str(data / "missing-*.tfrecord")),
                 tiny_bert_config())
  with pytest.raises(ValueError, match="--max_seq_length=64 but"):
    loop.run(tiny_train_config(data, max_seq_length=64), tiny_bert_config())
  assert not os.path.exists(data / "out" / "checkpoint")


def test_init_checkpoint_warm_starts_weights_only(data):
  # A source model saved as an original TF1 checkpoint, and as one of ours
  # (a training directory).
  from bert_tf.models import modeling
  from bert_tf.models import tf1_checkpoint
  source = modeling.BertPretrainer(tiny_bert_config())
  for w in source.weights:
    w.assign(np.random.default_rng(0).normal(size=w.shape).astype("float32"))
  tf1_dir = data / "tf1"
  tf1_dir.mkdir()
  tf1_checkpoint.save_tf1_checkpoint(source, str(tf1_dir / "bert_model.ckpt"))
  ours = tf.train.Checkpoint(model=source)
  ours.save(str(data / "ours" / "ckpt"))
  for init in (str(tf1_dir / "bert_model.ckpt"), str(tf1_dir), str(data / "ours")):
    out = data / ("warm" + str(abs(hash(init))))
    result = loop.run(tiny_train_config(data, output_dir=str(out), do_train=False,
                                            do_eval=True, max_eval_steps=1,
                                            init_checkpoint=init), tiny_bert_config())
    assert int(result["optimizer"].iterations.numpy()) == 0
    for a, b in zip(source.weights, result["model"].weights):
      np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=f"{init}: {a.path}")
  with pytest.raises(FileNotFoundError, match="no checkpoint"):
    loop.run(tiny_train_config(data, output_dir=str(data / "x"),
                                   init_checkpoint=str(data / "nothing")), tiny_bert_config())
