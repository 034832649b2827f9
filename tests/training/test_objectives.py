"""Tests of bert_tf.training.objectives: the registry, how records choose an
objective, what each BERT-family objective builds and computes, and the
objective a checkpoint records."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training import losses
from bert_tf.training import objectives
from bert_tf.training import train_config

from test_loop import tiny_bert_config

BATCH, SEQ, PREDS = 4, 16, 3


def _batch(vocab_size, with_labels=True, seed=0):
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


def test_option_lists_of_train_config_are_the_registry():
  assert train_config.OBJECTIVE_FAMILIES == objectives.FAMILIES
  assert train_config.OBJECTIVE_NAMES == tuple(objectives.OBJECTIVES)


@pytest.mark.parametrize("task, name", [(None, "mlm_nsp"), ("nsp", "mlm_nsp"),
                                        ("sop", "mlm_sop"), ("none", "mlm")])
def test_the_records_sentence_task_picks_the_bert_objective(task, name):
  assert objectives.resolve("bert", task).name == name
  assert objectives.resolve(name, task).name == name


def test_an_objective_the_records_contradict_is_a_one_line_error():
  with pytest.raises(ValueError, match="--objective=mlm_sop needs records written with "
                     "--sentence_task=sop; these records have sentence_task=nsp"):
    objectives.resolve("mlm_sop", "nsp")
  with pytest.raises(ValueError, match="'electric' is not one of bert, electra, "):
    objectives.resolve("electric", "nsp")
  with pytest.raises(ValueError, match="objective='electric' is not one of"):
    train_config.TrainConfig(input_file="x", output_dir="y", do_train=True,
                             objective="electric").validate()


def test_mlm_alone_has_no_sentence_head_and_its_loss_is_the_masked_lm_loss():
  config = tiny_bert_config(dropout=0.0)
  mlm = objectives.get("mlm")
  model = mlm.build_model(config)
  assert model.nsp_head is None
  assert not any("nsp_head" in w.path for w in model.weights)
  features = _batch(config.vocab_size, with_labels=False)
  outputs = model(features)
  assert "nsp_logits" not in outputs
  sums = mlm.loss_sums(outputs, features)
  assert tuple(sums) == losses.MLM_SUM_KEYS
  metrics = mlm.metrics(sums)
  assert tuple(sorted(metrics)) == tuple(sorted(mlm.metric_keys))
  # The masked-LM loss computed directly: weighted mean of the cross-entropy.
  logits = outputs["mlm_logits"].numpy().astype(np.float64)
  log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  ce = -np.take_along_axis(log_probs, features["masked_lm_ids"][..., None], -1)[..., 0]
  w = features["masked_lm_weights"]
  expected = (w * ce).sum() / (w.sum() + losses.MLM_EPSILON)
  np.testing.assert_allclose(float(metrics["loss"]), expected, rtol=1e-5)
  np.testing.assert_allclose(float(metrics["masked_lm_loss"]), expected, rtol=1e-5)
  assert [label for label, _ in mlm.progress_fields()] == ["loss", "mlm", "mlm_acc"]
  assert mlm.signatures == ("fill_mask",)


def test_sentence_order_reports_under_its_own_name_with_the_same_loss():
  config = tiny_bert_config(dropout=0.0)
  sop, nsp = objectives.get("mlm_sop"), objectives.get("mlm_nsp")
  model = sop.build_model(config)
  features = _batch(config.vocab_size)
  outputs = model(features)
  sop_metrics = sop.metrics(sop.loss_sums(outputs, features))
  nsp_metrics = nsp.metrics(nsp.loss_sums(outputs, features))
  assert set(sop_metrics) == {"loss", "masked_lm_loss", "masked_lm_accuracy",
                              "sentence_order_loss", "sentence_order_accuracy"}
  np.testing.assert_allclose(float(sop_metrics["sentence_order_loss"]),
                             float(nsp_metrics["next_sentence_loss"]))
  np.testing.assert_allclose(float(sop_metrics["loss"]), float(nsp_metrics["loss"]))
  assert ("sop_acc", "sentence_order_accuracy") in sop.progress_fields()
  assert sop.signatures == ("fill_mask", "sentence_order")
  assert objectives.of_model(model) is sop


@pytest.mark.parametrize("name", ["mlm_nsp", "mlm"])
def test_replica_shares_add_up_to_the_loss_of_the_whole_batch(name):
  objective = objectives.get(name)
  config = tiny_bert_config(dropout=0.0)
  model = objective.build_model(config)
  features = _batch(config.vocab_size, with_labels=name != "mlm", seed=3)
  whole = objective.metrics(objective.loss_sums(model(features), features))["loss"]
  counts = objective.global_counts(features)  # outside a strategy: the whole batch
  shares = 0.0
  for part in (slice(0, 1), slice(1, BATCH)):
    piece = {k: v[part] for k, v in features.items()}
    shares += objective.replica_loss(objective.loss_sums(model(piece), piece), counts)
  np.testing.assert_allclose(float(shares), float(whole), rtol=1e-5)


def test_a_checkpoint_records_its_objective(tmp_path):
  sop = objectives.get("mlm_sop")
  tf.train.Checkpoint(objective=objectives.checkpoint_variable(sop)).save(str(tmp_path / "ckpt"))
  prefix = tf.train.latest_checkpoint(str(tmp_path))
  assert objectives.from_checkpoint(prefix) is sop
  objectives.check_objective(str(tmp_path), sop)
  with pytest.raises(ValueError, match="holds a checkpoint trained for objective mlm_sop .*"
                     "this run's objective is mlm_nsp"):
    objectives.check_objective(str(tmp_path), objectives.get("mlm_nsp"))
  # A checkpoint that does not say (an older run, an original TF1 one) is MLM + NSP.
  older = tmp_path / "older"
  tf.train.Checkpoint(step=tf.Variable(3)).save(str(older / "ckpt"))
  assert objectives.from_checkpoint(tf.train.latest_checkpoint(str(older))).name == "mlm_nsp"


def test_mlm_alone_does_not_train_the_unused_pooler():
  config = tiny_bert_config(dropout=0.0)
  mlm, nsp = objectives.get("mlm"), objectives.get("mlm_nsp")
  model = mlm.build_model(config)
  trained = mlm.trainable_variables(model)
  left_out = {v.path for v in model.trainable_variables} - {v.path for v in trained}
  assert left_out == {"pooled_dense/kernel", "pooled_dense/bias"}
  features = _batch(config.vocab_size, with_labels=False)
  with tf.GradientTape() as tape:
    loss = mlm.metrics(mlm.loss_sums(model(features), features))["loss"]
  assert all(g is not None for g in tape.gradient(loss, trained))
  with_head = nsp.build_model(config)
  assert len(nsp.trainable_variables(with_head)) == len(with_head.trainable_variables)


# --------------------------------------------------------------------------
# Distillation
# --------------------------------------------------------------------------


def _distill_outputs(vocab_size, hidden=8, seed=0):
  """Random student/teacher outputs, and features with padding tokens."""
  rng = np.random.default_rng(seed)
  features = _batch(vocab_size, with_labels=False, seed=seed)
  features["input_mask"][:, SEQ - 5:] = 0  # padding the cosine term must skip
  features["input_mask"][0, 4:] = 0
  outputs = {
      "mlm_logits": rng.normal(size=(BATCH, PREDS, vocab_size)).astype(np.float32) * 3,
      "teacher_mlm_logits": rng.normal(size=(BATCH, PREDS, vocab_size)).astype(np.float32) * 3,
      "sequence_output": rng.normal(size=(BATCH, SEQ, hidden)).astype(np.float32),
      "teacher_sequence_output": rng.normal(size=(BATCH, SEQ, hidden)).astype(np.float32),
  }
  return outputs, features


def _log_softmax(x):
  x = x.astype(np.float64)
  x = x - x.max(-1, keepdims=True)
  return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_distillation_loss_terms_against_numpy():
  options = objectives.DistillOptions(alpha_ce=5.0, alpha_mlm=2.0, alpha_cos=1.0,
                                      temperature=2.0)
  objective = objectives.DistillationObjective(objectives.get("mlm"), options)
  outputs, features = _distill_outputs(vocab_size=30)
  metrics = objective.metrics(objective.loss_sums(outputs, features), mlm_epsilon=0)
  w = features["masked_lm_weights"]
  t = 2.0
  # KL(teacher || student) of the softened distributions, times T^2, mean
  # over the real masked positions.
  ps, pt = _log_softmax(outputs["mlm_logits"] / t), _log_softmax(outputs["teacher_mlm_logits"] / t)
  kl = (np.exp(pt) * (pt - ps)).sum(-1) * t * t
  expected_kl = (w * kl).sum() / w.sum()
  np.testing.assert_allclose(float(metrics["kl_loss"]), expected_kl, rtol=1e-5)
  # Masked-LM cross-entropy on the true tokens (T = 1).
  ce = -np.take_along_axis(_log_softmax(outputs["mlm_logits"]),
                           features["masked_lm_ids"][..., None], -1)[..., 0]
  expected_mlm = (w * ce).sum() / w.sum()
  np.testing.assert_allclose(float(metrics["masked_lm_loss"]), expected_mlm, rtol=1e-5)
  # 1 - cosine between the last hidden states, mean over real tokens only.
  s, h = outputs["sequence_output"], outputs["teacher_sequence_output"]
  cos = (s * h).sum(-1) / np.linalg.norm(s, axis=-1) / np.linalg.norm(h, axis=-1)
  m = features["input_mask"].astype(bool)
  expected_cos = (1 - cos[m]).mean()
  assert m.sum() < m.size  # padding present, and skipped
  np.testing.assert_allclose(float(metrics["cosine_loss"]), expected_cos, rtol=1e-5)
  np.testing.assert_allclose(float(metrics["loss"]),
                             5.0 * expected_kl + 2.0 * expected_mlm + 1.0 * expected_cos,
                             rtol=1e-5)
  # The teacher's accuracy at the same positions.
  hit = outputs["teacher_mlm_logits"].argmax(-1) == features["masked_lm_ids"]
  np.testing.assert_allclose(float(metrics["teacher_masked_lm_accuracy"]),
                             (w * hit).sum() / w.sum(), rtol=1e-6)
  # A student equal to its teacher has no KL and no cosine loss.
  same = dict(outputs, mlm_logits=outputs["teacher_mlm_logits"],
              sequence_output=outputs["teacher_sequence_output"] * 3.0)
  same_metrics = objective.metrics(objective.loss_sums(same, features))
  assert abs(float(same_metrics["kl_loss"])) < 1e-5
  assert abs(float(same_metrics["cosine_loss"])) < 1e-6


def test_distillation_replica_shares_add_up_to_the_loss_of_the_whole_batch():
  objective = objectives.DistillationObjective(
      objectives.get("mlm_nsp"), objectives.DistillOptions(alpha_sentence=0.5))
  outputs, features = _distill_outputs(vocab_size=30, seed=4)
  features["next_sentence_labels"] = np.array([[0], [1], [1], [0]], np.int32)
  outputs["nsp_logits"] = np.random.default_rng(5).normal(size=(BATCH, 2)).astype(np.float32)
  whole = objective.metrics(objective.loss_sums(outputs, features))
  assert set(whole) == set(objective.metric_keys)
  assert "next_sentence_loss" in whole and "teacher_masked_lm_accuracy" in whole
  counts = objective.global_counts(features)
  shares = 0.0
  for part in (slice(0, 1), slice(1, BATCH)):
    piece_out = {k: v[part] for k, v in outputs.items()}
    piece = {k: v[part] for k, v in features.items()}
    shares += objective.replica_loss(objective.loss_sums(piece_out, piece), counts)
  np.testing.assert_allclose(float(shares), float(whole["loss"]), rtol=1e-5)


def test_distillation_resolves_from_its_options():
  config = train_config.TrainConfig(objective="distill")
  with pytest.raises(ValueError, match="objective distill needs --teacher_config_file"):
    objectives.resolve("distill", "nsp", config)
  options = objectives.DistillOptions(teacher_config=tiny_bert_config(),
                                      teacher_checkpoint="x")
  assert objectives.resolve("distill", "nsp", options).name == "distill_mlm"
  with_nsp = objectives.resolve("distill", "nsp", dataclasses.replace(options, alpha_sentence=1))
  assert with_nsp.name == "distill_mlm_nsp"
  assert with_nsp.student_objective is objectives.get("mlm_nsp")
  with pytest.raises(ValueError, match="--temperature must be positive, got 0"):
    objectives.resolve("distill", "nsp", dataclasses.replace(options, temperature=0))
  # A checkpoint of a distillation run names the student's heads for export.
  assert objectives.get("distill_mlm").student_objective is objectives.get("mlm")
  assert objectives.get("distill_mlm").checkpoint_root == ("model", "student")


def test_a_keras_hub_preset_teacher_initializes_the_student(tmp_path):
  from test_distillation import write_masked_lm_preset  # pylint: disable=g-import-not-at-top
  teacher_config = dataclasses.replace(tiny_bert_config(dropout=0.0), num_hidden_layers=4)
  write_masked_lm_preset(tmp_path / "preset", teacher_config)
  # No teacher config file: the preset holds it.
  config = train_config.TrainConfig(objective="distill",
                                    teacher_checkpoint=str(tmp_path / "preset"))
  objective = objectives.resolve("distill", "nsp", config)
  assert objective.options.teacher_config == teacher_config
  student_config = dataclasses.replace(teacher_config, num_hidden_layers=2)
  model = objective.build_model(student_config)
  np.testing.assert_array_equal(model.student.encoder.transformer_layers[1].weights[0].numpy(),
                                model.teacher.encoder.transformer_layers[2].weights[0].numpy())
  np.testing.assert_array_equal(model.student.mlm_head.weights[0].numpy(),
                                model.teacher.mlm_head.weights[0].numpy())
  features = _batch(teacher_config.vocab_size, with_labels=False)
  metrics = objective.metrics(objective.loss_sums(model(features), features))
  assert np.isfinite(float(metrics["loss"]))


# --- ELECTRA -----------------------------------------------------------------


def _electra_batch(vocab_size, seed=0):
  features = _batch(vocab_size, with_labels=True, seed=seed)
  mask = np.ones((BATCH, SEQ), np.int32)
  mask[:, SEQ - 5:] = 0  # padding: no discriminator loss there
  mask[0, SEQ - 9:] = 0
  features["input_mask"] = mask
  return features


def _bce(logits, labels):
  return np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))


def test_electra_loss_is_generator_mlm_plus_50_times_mean_bce_over_real_tokens():
  objective = objectives.resolve("electra", "nsp", options=train_config.TrainConfig())
  assert objective.discriminator_weight == 50.0
  assert objective.options["mask_rule"] == "electra"
  # The [MASK] id comes from the records (none here); ours is 4.
  objective = objectives.ElectraObjective(**dict(objective.options, mask_token_id=4))
  config = tiny_bert_config(dropout=0.0)
  model = objective.build_model(config)
  features = _electra_batch(config.vocab_size)
  outputs = model(features)
  sums = objective.loss_sums(outputs, features)
  assert tuple(sums) == objective.sum_keys
  metrics = objective.metrics(sums)
  assert tuple(metrics) == objective.metric_keys
  # The original's loss from the outputs, in numpy (float64).
  logits = outputs["mlm_logits"].numpy().astype(np.float64)
  log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  ce = -np.take_along_axis(log_probs, features["masked_lm_ids"][..., None], -1)[..., 0]
  w = features["masked_lm_weights"]
  mlm = (w * ce).sum() / (w.sum() + 1e-6)
  d_logits = outputs["discriminator_logits"].numpy().astype(np.float64)
  labels = outputs["replaced_labels"].numpy()
  m = features["input_mask"]
  disc = (m * _bce(d_logits, labels)).sum() / (m.sum() + 1e-6)
  np.testing.assert_allclose(float(metrics["loss"]), mlm + 50 * disc, rtol=1e-5)
  np.testing.assert_allclose(float(metrics["discriminator_loss"]), disc, rtol=1e-5)
  counts = objective.global_counts(features)
  np.testing.assert_allclose(float(objective.replica_loss(sums, counts)), mlm + 50 * disc,
                             rtol=1e-5)
  # Accuracy, precision and recall over real tokens only.
  pred = d_logits > 0
  real = m.astype(bool)
  np.testing.assert_allclose(float(metrics["discriminator_accuracy"]),
                             (pred == labels)[real].mean(), rtol=1e-6)
  if labels[real].sum():
    np.testing.assert_allclose(float(metrics["discriminator_recall"]),
                               (pred & (labels == 1))[real].sum() / labels[real].sum(),
                               rtol=1e-6)
  # No label on padding; the replaced share is over real tokens.
  assert labels[~real].sum() == 0
  np.testing.assert_allclose(float(metrics["replaced_share"]), labels[real].mean(), rtol=1e-6)
  # The kept share is that of sampled == original.
  sampled = outputs["sampled_ids"].numpy()
  np.testing.assert_allclose(float(metrics["sampled_masked_lm_accuracy"]),
                             (w * (sampled == features["masked_lm_ids"])).sum() / w.sum(),
                             rtol=1e-6)


def test_electra_replica_shares_add_up_to_the_loss_of_the_whole_batch():
  objective = objectives.ElectraObjective(mask_token_id=4)
  config = tiny_bert_config(dropout=0.0)
  model = objective.build_model(config)
  features = _electra_batch(config.vocab_size, seed=5)
  outputs = model(features)  # one forward, so the samples are the same
  whole = objective.metrics(objective.loss_sums(outputs, features))["loss"]
  counts = objective.global_counts(features)
  shares = 0.0
  for part in (slice(0, 1), slice(1, BATCH)):
    shares += objective.replica_loss(
        objective.loss_sums({k: v[part] for k, v in outputs.items()},
                            {k: v[part] for k, v in features.items()}), counts)
  np.testing.assert_allclose(float(shares), float(whole), rtol=1e-5)


def test_electra_options_come_from_the_config_and_travel_with_the_checkpoint(tmp_path):
  from bert_tf.models import electra
  assert train_config.ELECTRA_MASK_RULES == tuple(electra.MASK_RULES)
  config = train_config.TrainConfig(generator_hidden_size=0.5, discriminator_weight=20.0,
                                    electra_mask_rule="bert", seed=3)
  objective = objectives.resolve("electra", None, options=config)
  assert objective.options["generator_hidden_size"] == 0.5
  assert objective.options["mask_rule"] == "bert" and objective.discriminator_weight == 20.0
  model = objective.build_model(tiny_bert_config())
  assert model.generator_config.hidden_size == 16
  assert objectives.of_model(model).options == objective.options
  tf.train.Checkpoint(objective=objectives.checkpoint_variable(objective)).save(
      str(tmp_path / "ckpt"))
  assert objectives.from_checkpoint(tf.train.latest_checkpoint(str(tmp_path))).options == (
      objective.options)
  objectives.check_objective(str(tmp_path), objective)
  with pytest.raises(ValueError, match="trained for objective electra with another generator"):
    objectives.check_objective(str(tmp_path), objectives.resolve("electra", None))
  with pytest.raises(ValueError, match="generator_hidden_size=2 must lie in"):
    train_config.TrainConfig(input_file="x", output_dir="y", do_train=True,
                             objective="electra", generator_hidden_size=2.0).validate()


def test_electra_trains_evaluates_and_resumes_through_the_loop(tmp_path):
  from bert_tf.training import loop
  from test_loop import tiny_train_config, write_records
  write_records(tmp_path / "train.tfrecord", 48, seed=1)
  write_records(tmp_path / "heldout.tfrecord", 16, seed=2)
  config = tiny_train_config(tmp_path, objective="electra", do_eval=True,
                             eval_input_file=str(tmp_path / "heldout.tfrecord"),
                             num_train_steps=4, save_checkpoints_steps=4, max_eval_steps=2)
  first = loop.run(config, tiny_bert_config())
  model = first["model"]
  assert objectives.of_model(model).options["mask_token_id"] == 4  # read from the records
  assert int(model.sample_step.numpy()) == 4
  for key in ("loss", "masked_lm_accuracy", "discriminator_accuracy", "gradient_norm"):
    assert np.isfinite(first["train"][key]), key
  with tf.io.gfile.GFile(str(tmp_path / "out/eval_results.txt")) as f:
    keys = [line.split(" = ")[0] for line in f.read().splitlines()]
  assert keys == sorted(("global_step",) + objectives.ElectraObjective.metric_keys)
  assert 0 <= first["eval"]["discriminator_recall"] <= 1
  # The same command resumes every weight, the generator's and the noise
  # counter included; eval draws the same masks and samples again.
  second = loop.run(config, tiny_bert_config())
  for a, b in zip(model.weights, second["model"].weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
  assert second["eval"] == first["eval"]
  # A BERT run cannot resume into it.
  with pytest.raises(ValueError, match="trained for objective electra"):
    loop.run(tiny_train_config(tmp_path, num_train_steps=6), tiny_bert_config())


def _narrow_records(path, n, seed):
  """Records whose text uses only ids 5..19 of the 100 (BERT-masked as
  test_loop's), so a token from 20..99 can only be a replacement."""
  import random
  from bert_tf.data import schema
  from test_loop import SEQ as seq, PREDS as preds, VOCAB as vocab
  rng = random.Random(seed)
  encoder = schema.ExampleEncoder(seq, preds, vocab)
  with tf.io.TFRecordWriter(str(path)) as writer:
    for _ in range(n):
      length = rng.randint(16, seq)
      ids = [rng.randrange(5, 20) for _ in range(length)]
      positions = sorted(rng.sample(range(1, length), preds))
      targets = [ids[p] for p in positions]
      for p in positions:
        ids[p] = 4
      writer.write(encoder.encode(ids, [0] * length, positions, targets, 0))


def test_electra_discriminator_learns_replacements_its_input_gives_away(tmp_path, monkeypatch):
  """A control of the whole ELECTRA path (corrupted input, labels, the
  discriminator's loss, its gradients, the eval metrics): with the
  generator's samples swapped for tokens the text never uses, a token's
  identity tells whether it was replaced, and the discriminator must find
  most replacements within a few hundred steps. (With the real generator a
  tiny discriminator on a real corpus stays near the prior for thousands of
  steps; docs/bert_family.md.)"""
  from bert_tf.models import electra
  from bert_tf.training import loop
  from test_loop import tiny_train_config

  def foreign_tokens(logits, seed):
    del seed
    return tf.random.uniform(tf.shape(logits)[:-1], 20, tf.shape(logits)[-1], dtype=tf.int32)

  monkeypatch.setattr(electra, "gumbel_max_sample", foreign_tokens)
  _narrow_records(tmp_path / "train.tfrecord", 64, seed=1)
  _narrow_records(tmp_path / "heldout.tfrecord", 32, seed=2)
  config = tiny_train_config(tmp_path, objective="electra", do_eval=True,
                             eval_input_file=str(tmp_path / "heldout.tfrecord"),
                             num_train_steps=150, num_warmup_steps=10, learning_rate=3e-3,
                             save_checkpoints_steps=150, iterations_per_loop=50,
                             log_steps=50, max_eval_steps=4)
  result = loop.run(config, tiny_bert_config(dropout=0.0))
  ev = result["eval"]
  assert ev["discriminator_recall"] > 0.9, ev
  assert ev["discriminator_precision"] > 0.9, ev
  assert ev["discriminator_loss"] < 0.1, ev
