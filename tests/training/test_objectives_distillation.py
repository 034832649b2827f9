"""Tests of bert_tf.training.objectives.distillation: DistilBERT's loss terms,
its options and its teacher."""

import dataclasses

import numpy as np
import pytest

from bert_tf.training import objectives
from bert_tf.training import train_config

from helpers.objective_batches import BATCH, PREDS, SEQ, random_batch as _batch
from helpers.pretraining import tiny_bert_config


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
  options = objectives.DistillSettings(alpha_ce=5.0, alpha_mlm=2.0, alpha_cos=1.0,
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


def _reference_kl(student_logits, teacher_logits, temperature):
  """The soft-target KL as it was written before its one-pass form (the
  oracle of `soft_target_kl`): two log-softmaxes and automatic gradients."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  t = tf.cast(temperature, tf.float32)
  student_log_p = tf.nn.log_softmax(tf.cast(student_logits, tf.float32) / t, axis=-1)
  teacher_log_p = tf.nn.log_softmax(tf.cast(teacher_logits, tf.float32) / t, axis=-1)
  return tf.reduce_sum(tf.exp(teacher_log_p) * (teacher_log_p - student_log_p), axis=-1) * t * t


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
def test_soft_target_kl_and_its_gradient_are_the_reference(temperature):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert_tf.training.objectives import distillation  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(3)
  student = tf.constant(rng.normal(0, 3, (4, 5, 300)), tf.float32)
  teacher = tf.constant(rng.normal(0, 3, (4, 5, 300)), tf.float32)
  upstream = tf.constant(rng.uniform(0, 1, (4, 5)), tf.float32)
  results = []
  for kl_fn in (distillation.soft_target_kl, _reference_kl):
    with tf.GradientTape() as tape:
      tape.watch(student)
      kl = kl_fn(student, teacher, temperature)
      total = tf.reduce_sum(kl * upstream)
    results.append((kl.numpy(), tape.gradient(total, student).numpy()))
  (kl, grad), (want_kl, want_grad) = results
  np.testing.assert_allclose(kl, want_kl, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(grad, want_grad, rtol=1e-4, atol=1e-7)
  # Inside a tf.function (where the graph optimizer shares its first passes
  # with the masked-LM sums) the same numbers.
  compiled = tf.function(distillation.soft_target_kl)(student, teacher, temperature)
  np.testing.assert_allclose(compiled.numpy(), kl, rtol=1e-6, atol=1e-6)
  same = distillation.soft_target_kl(teacher, teacher, temperature).numpy()
  assert np.abs(same).max() < 1e-5


def test_distillation_replica_shares_add_up_to_the_loss_of_the_whole_batch():
  objective = objectives.DistillationObjective(
      objectives.get("mlm_nsp"), objectives.DistillSettings(alpha_sentence=0.5))
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
  options = objectives.DistillSettings(teacher_config=tiny_bert_config(),
                                       teacher_checkpoint="x")
  assert objectives.resolve("distill", "nsp", options).name == "distill_mlm"
  with_nsp = objectives.resolve("distill", "nsp", dataclasses.replace(options, alpha_sentence=1))
  assert with_nsp.name == "distill_mlm_nsp"
  assert with_nsp.student_objective is objectives.get("mlm_nsp")
  with pytest.raises(ValueError, match="temperature must be positive, got 0"):
    dataclasses.replace(options, temperature=0)
  # A checkpoint of a distillation run names the student's heads for export.
  assert objectives.get("distill_mlm").student_objective is objectives.get("mlm")
  assert objectives.get("distill_mlm").checkpoint_root == ("model", "student")


def test_a_keras_hub_preset_teacher_initializes_the_student(tmp_path):
  from helpers.keras_hub_presets import write_masked_lm_preset  # pylint: disable=g-import-not-at-top
  teacher_config = dataclasses.replace(tiny_bert_config(dropout=0.0), num_hidden_layers=4)
  write_masked_lm_preset(tmp_path / "preset", teacher_config)
  # No teacher config file: the preset holds it.
  config = train_config.TrainConfig(objective="distill", objective_options=(
      objectives.DistillOptions(teacher_checkpoint=str(tmp_path / "preset"))))
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


def test_the_kl_on_every_real_token_as_the_distillers_default():
  """kl_tokens="all": the KL at every real token (padding skipped), mean
  over their count (the distiller's KLDivLoss "batchmean" of the selected
  tokens); the masked-LM term stays at the masked positions."""
  options = objectives.DistillSettings(alpha_ce=5.0, alpha_mlm=2.0, alpha_cos=1.0,
                                       temperature=2.0, kl_tokens="all")
  objective = objectives.DistillationObjective(objectives.get("mlm"), options)
  outputs, features = _distill_outputs(vocab_size=30)
  rng = np.random.default_rng(5)
  outputs["mlm_logits_all"] = rng.normal(size=(BATCH, SEQ, 30)).astype(np.float32) * 3
  outputs["teacher_mlm_logits_all"] = rng.normal(size=(BATCH, SEQ, 30)).astype(np.float32) * 3
  sums = objective.loss_sums(outputs, features)
  metrics = objective.metrics(sums, mlm_epsilon=0)
  t = 2.0
  ps = _log_softmax(outputs["mlm_logits_all"] / t)
  pt = _log_softmax(outputs["teacher_mlm_logits_all"] / t)
  kl = (np.exp(pt) * (pt - ps)).sum(-1) * t * t
  m = features["input_mask"].astype(bool)
  np.testing.assert_allclose(float(metrics["kl_loss"]), kl[m].mean(), rtol=1e-5)
  counts = {"weight_sum": float(features["masked_lm_weights"].sum()), "batch_size": BATCH,
            "token_count": float(m.sum())}
  np.testing.assert_allclose(float(objective.replica_loss(sums, counts)),
                             float(metrics["loss"]), rtol=1e-5)


def test_kl_tokens_reaches_the_options_and_a_bad_value_is_refused(tmp_path):
  config = train_config.TrainConfig(
      objective="distill", objective_options=objectives.DistillOptions(kl_tokens="all"),
      output_dir=str(tmp_path), input_file="x", do_train=True)
  config.validate()
  with pytest.raises(ValueError, match="kl_tokens='some' is not one of masked, all"):
    dataclasses.replace(config.objective_options, kl_tokens="some")
  assert objectives.DistillSettings.from_dict(
      dict(objectives.DistillSettings(kl_tokens="all").to_dict())).kl_tokens == "all"
  # Older checkpoints' options have no kl_tokens: the default.
  old = objectives.DistillSettings().to_dict()
  del old["kl_tokens"]
  assert objectives.DistillSettings.from_dict(old).kl_tokens == "masked"
