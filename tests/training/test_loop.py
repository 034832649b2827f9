"""Tests of bert_tf.training.loop.run on a tiny model and tiny random records:
training and eval outputs, resume with identical optimizer state, NaN stop,
gradient accumulation equivalence, mixed precision, the eval metrics against
a direct computation, and what the run tells the user (plan line, warnings,
no empty output_dir after a failure)."""

import logging
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training import loop

from helpers.checkpoints import optimizer_iterations, optimizer_state
from helpers.pretraining import (ORIGINAL_EVAL_KEYS, PREDS, SEQ, tiny_bert_config,
                                 tiny_train_config, write_records, writer_records)


@pytest.fixture
def data(tmp_path):
  write_records(tmp_path / "train.tfrecord", 64, seed=1)
  write_records(tmp_path / "heldout.tfrecord", 24, seed=2)
  return tmp_path


def test_train_eval_then_resume_restores_identical_optimizer_state(data, monkeypatch):
  train_inputs = []

  class RecordedTrainInput(loop._TrainInput):  # pylint: disable=protected-access
    def __init__(self, iterator):
      super().__init__(iterator)
      train_inputs.append(self)

  monkeypatch.setattr(loop, "_TrainInput", RecordedTrainInput)
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
  assert keys == list(ORIGINAL_EVAL_KEYS)
  # The training input was handed to another thread, which destroyed
  # it (the run did not wait for tf.data's threads to stop).
  [train_input] = train_inputs
  assert train_input.iterator is None
  # Not a daemon: Python joins it before exiting (a daemon thread still in
  # TensorFlow's destructor at exit aborted the process).
  assert train_input.thread.name == "release-train-input" and not train_input.thread.daemon
  train_input.thread.join(timeout=120)
  assert not train_input.thread.is_alive() and train_input.seconds >= 0.0

  # The same command again: resumes at step 6 with the same weights, trains
  # nothing more and writes no checkpoint.
  second = loop.run(config, tiny_bert_config())
  assert second["global_step"] == 6 and len(train_inputs) == 1
  for v1, v2 in zip(first["model"].weights, second["model"].weights):
    np.testing.assert_array_equal(v1.numpy(), v2.numpy(), err_msg=v1.path)
  assert sorted(tf.io.gfile.glob(str(data / "out/ckpt-*.index")))[-1].endswith("ckpt-6.index")

  # Training further continues from step 6 with the saved optimizer state:
  # its slots and schedule position (the optimizer's own step counter
  # reaches 8, not 2), each updated by the two new steps.
  saved = optimizer_state(str(data / "out" / "ckpt-6"))
  assert len(saved) > 2 and optimizer_iterations(str(data / "out" / "ckpt-6")) == 6
  third = loop.run(tiny_train_config(data, num_train_steps=8), tiny_bert_config())
  assert third["global_step"] == 8
  assert optimizer_iterations(str(data / "out" / "ckpt-8")) == 8
  assert optimizer_state(str(data / "out" / "ckpt-8")).keys() == saved.keys()


def test_nan_loss_stops_naming_the_step_and_keeps_last_good_checkpoint(data):
  loop.run(tiny_train_config(data, num_train_steps=4, save_checkpoints_steps=2),
               tiny_bert_config())
  write_records(data / "bad.tfrecord", 32, nan_weights=True)
  # Continuing the run on other records is refused (run_identity) unless the
  # folder records no identity: resume it unchecked, as a folder of a run
  # that wrote none.
  (data / "out" / "run_identity.json").unlink()
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


@pytest.mark.parametrize("precision", ["float16", "bfloat16"])
def test_mixed_precision_trains(data, precision):
  # float16 exercises dynamic loss scaling; bfloat16 computes in bfloat16
  # (on CPU too) without it; the heads stay float32 in both.
  config = tiny_train_config(data, output_dir=str(data / precision), num_train_steps=2,
                             mixed_precision=precision)
  result = loop.run(config, tiny_bert_config())
  assert result["global_step"] == 2
  assert np.isfinite(result["train"]["loss"])
  assert ("loss_scale" in result["train"]) == (precision == "float16")
  if precision == "float16":
    assert result["train"]["loss_scale"] > 1.0
  model = result["model"]
  assert all(w.dtype == "float32" for w in model.trainable_weights)
  assert model.encoder.transformer_layers[0].compute_dtype == precision


def test_xla_compiled_step_runs_in_bfloat16_on_cpu(data, caplog):
  # jit_compile on one replica compiles the whole step (optimizer update
  # included); under mixed_bfloat16 it must compile and train on CPU too.
  config = tiny_train_config(data, output_dir=str(data / "xla_bf16"), num_train_steps=2,
                             mixed_precision="bfloat16", jit_compile=True)
  with caplog.at_level(logging.INFO, logger="absl"):
    result = loop.run(config, tiny_bert_config())
  assert result["global_step"] == 2
  assert optimizer_iterations(config.output_dir) == 2
  assert np.isfinite(result["train"]["loss"])
  assert result["model"].encoder.transformer_layers[0].compute_dtype == "bfloat16"
  assert not any("compiling the forward/backward only" in r.getMessage() for r in caplog.records)


def test_bad_settings_are_one_line_errors(data):
  with pytest.raises(ValueError, match="not divisible"):
    loop.run(tiny_train_config(data, train_batch_size=6, grad_accum_steps=4),
                 tiny_bert_config())
  with pytest.raises(FileNotFoundError, match="matches no files"):
    loop.run(tiny_train_config(data, input_file=str(data / "missing-*.tfrecord")),
                 tiny_bert_config())
  with pytest.raises(ValueError, match="--max_seq_length=64 but"):
    loop.run(tiny_train_config(data, max_seq_length=64), tiny_bert_config())
  # Checked before output_dir is created: nothing is left behind.
  assert not os.path.exists(data / "out")


def test_a_run_that_fails_before_saving_leaves_no_output_dir(data):
  write_records(data / "bad.tfrecord", 16, nan_weights=True)
  bad = dict(input_file=str(data / "bad.tfrecord"), num_train_steps=4)
  with pytest.raises(loop.TrainingDivergedError, match=r"at step 1\b"):
    loop.run(tiny_train_config(data, **bad), tiny_bert_config())
  assert not os.path.exists(data / "out")
  # A directory that was there before is the user's: it stays.
  (data / "mine").mkdir()
  with pytest.raises(loop.TrainingDivergedError):
    loop.run(tiny_train_config(data, output_dir=str(data / "mine"), **bad), tiny_bert_config())
  assert os.path.isdir(data / "mine")


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
    assert result["global_step"] == 0 and result["eval"]["global_step"] == 0
    for a, b in zip(source.weights, result["model"].weights):
      np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=f"{init}: {a.path}")
  with pytest.raises(FileNotFoundError, match="no checkpoint"):
    loop.run(tiny_train_config(data, output_dir=str(data / "x"),
                                   init_checkpoint=str(data / "nothing")), tiny_bert_config())


def test_eval_metrics_are_the_original_streaming_means(data):
  # An eval-only run from a checkpoint, against the same metrics computed
  # here in numpy from the model's logits on the same two batches.
  from bert_tf.data.input import pipeline
  from bert_tf.models import modeling
  source = modeling.BertPretrainer(tiny_bert_config())
  tf.train.Checkpoint(model=source).save(str(data / "src" / "ckpt"))
  config = tiny_train_config(data, do_train=False, do_eval=True, max_eval_steps=2,
                             eval_input_file=str(data / "heldout.tfrecord"),
                             init_checkpoint=str(data / "src"))
  got = loop.run(config, tiny_bert_config())["eval"]

  batches = pipeline.make_dataset([str(data / "heldout.tfrecord")], 8, SEQ, PREDS,
                                  is_training=False).take(2)
  ce_w, w_sum, hits_w, nsp_ce, nsp_hits, batch_losses = 0.0, 0.0, 0.0, [], [], []
  for batch in batches:
    out = source(batch, training=False)
    lp = tf.nn.log_softmax(out["mlm_logits"]).numpy().astype(np.float64)
    ids, w = batch["masked_lm_ids"].numpy(), batch["masked_lm_weights"].numpy()
    ce = -np.take_along_axis(lp, ids[..., None], axis=-1)[..., 0]
    labels = batch["next_sentence_labels"].numpy().reshape(-1)
    nlp = tf.nn.log_softmax(out["nsp_logits"]).numpy().astype(np.float64)
    nce = -nlp[np.arange(len(labels)), labels]
    ce_w += (w * ce).sum()
    w_sum += w.sum()
    hits_w += (w * (lp.argmax(-1) == ids)).sum()
    nsp_ce.extend(nce)
    nsp_hits.extend(nlp.argmax(-1) == labels)
    # The original's per-batch training loss, whose mean is eval "loss".
    batch_losses.append((w * ce).sum() / (w.sum() + 1e-5) + nce.mean())
  assert got["global_step"] == 0
  assert got["masked_lm_loss"] == pytest.approx(ce_w / w_sum, rel=1e-5)
  assert got["masked_lm_accuracy"] == pytest.approx(hits_w / w_sum, abs=1e-6)
  assert got["next_sentence_loss"] == pytest.approx(np.mean(nsp_ce), rel=1e-5)
  assert got["next_sentence_accuracy"] == pytest.approx(np.mean(nsp_hits), abs=1e-6)
  assert got["loss"] == pytest.approx(np.mean(batch_losses), rel=1e-5)


def test_one_plan_line_and_warnings_about_settings(data, caplog):
  caplog.set_level(logging.INFO, logger="absl")
  config = tiny_train_config(data, num_train_steps=2, num_warmup_steps=2, do_eval=True,
                             max_eval_steps=1, save_checkpoints_steps=2)
  loop.run(config, tiny_bert_config())
  messages = [r.getMessage() for r in caplog.records if r.name == "absl"]
  warnings = [r.getMessage() for r in caplog.records
              if r.name == "absl" and r.levelno == logging.WARNING]
  assert any(m.startswith("num_warmup_steps=2 >= num_train_steps=2: ") and
             "--num_warmup_steps" in m for m in warnings), warnings
  assert any(m.startswith("no --eval_input_file: eval reads the training data") and
             "training data, not held out" in m for m in warnings), warnings
  plan = [m for m in messages if m.startswith("Plan: ")]
  assert len(plan) == 1, messages
  for part in ("BERT 0.", "M params (2 layers, hidden 32)", "train 2 steps x batch 8 x 32 tokens",
               "lr 0.001 warmup 2", "train data 1 file", "eval up to 1 x 8 on the TRAINING data",
               "OneDeviceStrategy x 1 replica", f"output {data / 'out'}"):
    assert part in plan[0], (part, plan[0])
  # The configs themselves are no longer dumped.
  assert not any("TrainConfig(" in m or '"vocab_size"' in m for m in messages)


def test_setting_warnings(caplog):
  from bert_tf.training import train_config
  caplog.set_level(logging.INFO, logger="absl")
  base = loop.TrainConfig(input_file="x", output_dir="y", do_train=True,
                          eval_input_file="h", do_eval=True)
  assert train_config.setting_warnings(base) == []  # the original's defaults: 10000 of 100000
  half = loop.TrainConfig(**dict(base.__dict__, num_train_steps=1000, num_warmup_steps=600))
  train_config.log_setting_warnings(half)
  assert [r.getMessage() for r in caplog.records] == [
      "num_warmup_steps=600 is more than half of num_train_steps=1000: the learning rate "
      "peaks late and decays fast; about 10% of --num_train_steps is usual"]
  assert caplog.records[0].levelno == logging.WARNING
  # Eval only: no warmup warning, whatever the steps.
  eval_only = loop.TrainConfig(**dict(base.__dict__, do_train=False, num_train_steps=1))
  assert train_config.setting_warnings(eval_only) == []


@pytest.mark.parametrize("changes, objective, sentence_keys", [
    ({"sentence_task": "sop"}, "mlm_sop", ("sentence_order_accuracy", "sentence_order_loss")),
    ({"sentence_task": "none", "packing": "full_sentences", "dynamic_masking": True}, "mlm", ()),
])
def test_the_records_choose_the_objective_and_its_metric_names(tmp_path, changes, objective,
                                                                sentence_keys):
  files, bert_config = writer_records(tmp_path, dupe_factor=2, **changes)
  config = tiny_train_config(tmp_path, input_file=files,
                             do_eval=True, num_train_steps=2, num_warmup_steps=1)
  result = loop.run(config, bert_config)
  expected = {"global_step", "loss", "masked_lm_accuracy", "masked_lm_loss"} | set(sentence_keys)
  assert set(result["eval"]) == expected
  with open(tmp_path / "out" / "eval_results.txt") as f:
    assert {line.split(" = ")[0] for line in f} == expected
  assert (result["model"].nsp_head is None) == (objective == "mlm")
  from bert_tf.training import objectives
  assert objectives.from_checkpoint(tf.train.latest_checkpoint(str(tmp_path / "out"))).name \
      == objective
  # Naming another objective than the records hold is refused before training.
  other = "mlm_nsp"
  with pytest.raises(ValueError, match=f"--objective={other} needs records written with "
                     "--sentence_task=nsp"):
    loop.run(tiny_train_config(tmp_path, input_file=str(tmp_path / "rec" / "*.tfrecord"),
                               output_dir=str(tmp_path / "other"), objective=other), bert_config)


def test_mlm_trains_on_nsp_records_without_their_labels(tmp_path):
  # BERT's "No NSP": --objective=mlm on the original's segment-pair records
  # trains the masked LM alone (no sentence head, no NSP metric).
  files, bert_config = writer_records(tmp_path)
  config = tiny_train_config(tmp_path, input_file=files, do_eval=True, num_train_steps=2,
                             num_warmup_steps=1, objective="mlm")
  result = loop.run(config, bert_config)
  assert set(result["eval"]) == {"global_step", "loss", "masked_lm_accuracy",
                                 "masked_lm_loss"}
  assert result["model"].nsp_head is None
  from bert_tf.training import objectives
  assert objectives.from_checkpoint(tf.train.latest_checkpoint(str(tmp_path / "out"))).name \
      == "mlm"


def test_a_weight_the_loss_does_not_reach_is_a_named_error(data, monkeypatch):
  # Without the check the optimizer would take a zero gradient for it and
  # weight decay alone would shrink it, silently.
  import keras
  from bert_tf.training import objectives
  trainable = objectives.BertObjective.trainable_variables

  def with_a_stray_weight(self, model):
    # Called in the strategy's scope, where the run's variables are made.
    if not hasattr(model, "stray"):
      model.stray = keras.Variable(np.zeros([3], np.float32), name="stray_head")
    return trainable(self, model)  # the model tracks it now

  monkeypatch.setattr(objectives.BertObjective, "trainable_variables", with_a_stray_weight)
  with pytest.raises(ValueError, match="objective mlm_nsp: the loss reaches no gradient to "
                                       "stray_head; leave them out of its trainable_variables$"):
    loop.run(tiny_train_config(data), tiny_bert_config())


class _RecordedGradients:
  """An objective whose loss has the original's recorded gradient of update
  t as its gradient (loss = sum_i <v_i, g_i[t]>, t read from the batch), so
  the loop's own update step (all-reduce, clipping, optimizer) runs on the
  original's gradients."""

  name = "recorded_gradients"
  sum_keys = ("loss_sum",)
  metric_keys = ("loss",)

  def __init__(self, variables, grads):
    self.variables = variables
    self.grads = [tf.constant(np.stack(g)) for g in grads]  # [variable][t, ...]

  def trainable_variables(self, model):
    return self.variables

  def global_counts(self, features):
    return {}

  def loss_sums(self, outputs, features):
    t = features["t"][0]
    return {"loss_sum": tf.add_n([tf.reduce_sum(v * tf.stop_gradient(g[t]))
                                  for v, g in zip(self.variables, self.grads)])}

  def replica_loss(self, sums, counts):
    return sums["loss_sum"]

  def metrics(self, sums, mlm_epsilon=0.0):
    return {"loss": sums["loss_sum"]}


def test_the_update_step_follows_the_original_trajectory(shared_dir):
  # The original optimization.py's recorded run (../shared/reference/golden):
  # gradients clipped to global norm 1.0 (every third one is large) and
  # applied by its AdamWeightDecay; our schedule is read one step later (see
  # test_optimization), so the trajectory is the observed one.
  from helpers.golden_optimizer import GOLDEN_STEPS, golden_optimizer_case, variables_named_as_in_bert  # pylint: disable=g-import-not-at-top
  from bert_tf.training import optimization  # pylint: disable=g-import-not-at-top
  golden, names = golden_optimizer_case(shared_dir)
  variables = variables_named_as_in_bert(golden, names)
  objective = _RecordedGradients(
      variables, [[golden[f"grad/{t}/{n}"] for t in range(GOLDEN_STEPS)] for n in names])
  optimizer = optimization.create_optimizer(
      "adamw_original", learning_rate=0.1, num_train_steps=12, num_warmup_steps=4,
      weight_decay=0.01)
  optimizer.build(variables)
  optimizer.iterations.assign(1)
  global_step = tf.Variable(0, dtype=tf.int64, trainable=False)
  trainer = loop.Trainer(tf.distribute.get_strategy(), lambda features, training: {},
                         optimizer, objective, global_step)
  batches = iter(tf.data.Dataset.range(GOLDEN_STEPS).map(lambda t: {"t": [t]}))
  clipped = 0
  for t in range(GOLDEN_STEPS):
    metrics, done, finite = trainer.train_steps(batches, tf.constant(1))
    assert int(done) == 1 and bool(finite)
    clipped += int(float(metrics["gradient_norm"]) > loop.CLIP_NORM)
    for name, variable in zip(names, variables):
      np.testing.assert_allclose(variable.numpy(), golden[f"after/{t}/{name}"], rtol=1e-5,
                                 atol=1e-6, err_msg=f"update {t}, {name}")
  assert clipped >= 3
  assert int(global_step.numpy()) == GOLDEN_STEPS


@pytest.mark.parametrize("clip_norm", [1.0, 5.0])
def test_the_update_step_clips_to_clip_norm(clip_norm):
  """--clip_norm: a gradient of norm 3 is scaled to norm 1 by the original's
  clip, and passes whole under DistilBERT's 5.0 (plain SGD, lr 1, shows the
  applied gradient)."""
  variable = tf.Variable([0.0, 0.0])
  objective = _RecordedGradients([variable], [[np.array([3.0, 0.0], np.float32)]])
  optimizer = keras.optimizers.SGD(learning_rate=1.0)
  optimizer.build([variable])
  trainer = loop.Trainer(tf.distribute.get_strategy(), lambda features, training: {},
                         optimizer, objective, tf.Variable(0, dtype=tf.int64, trainable=False),
                         clip_norm=clip_norm)
  metrics, _, _ = trainer.train_steps(iter(tf.data.Dataset.from_tensors({"t": [0]})),
                                      tf.constant(1))
  assert float(metrics["gradient_norm"]) == pytest.approx(3.0)
  np.testing.assert_allclose(variable.numpy(), [-min(3.0, clip_norm), 0.0], rtol=1e-6)


def test_clip_norm_must_be_positive(tmp_path):
  with pytest.raises(ValueError, match="clip_norm must be positive"):
    tiny_train_config(tmp_path, clip_norm=0.0).validate()


def test_the_run_builds_the_schedule_it_is_told(tmp_path):
  from bert_tf.training import objectives  # pylint: disable=g-import-not-at-top
  _, optimizer, _ = loop.build(tiny_train_config(tmp_path, lr_schedule="electra"),
                               tiny_bert_config(), tf.distribute.get_strategy(),
                               objectives.get("mlm_nsp"))
  assert optimizer._learning_rate.warmup == "electra"  # pylint: disable=protected-access


def test_the_plan_line_names_an_albert_config_albert(data, caplog):
  """The plan's first word is the model's family: ALBERT for a config with
  `embedding_size` (factorized embeddings, shared layers), not BERT."""
  caplog.set_level(logging.INFO, logger="absl")
  albert = tiny_bert_config().replace(embedding_size=16)
  config = tiny_train_config(data, num_train_steps=1, num_warmup_steps=0,
                             save_checkpoints_steps=1)
  loop.run(config, albert)
  plan = [r.getMessage() for r in caplog.records
          if r.name == "absl" and r.getMessage().startswith("Plan: ")]
  assert len(plan) == 1 and plan[0].startswith("Plan: ALBERT 0."), plan
