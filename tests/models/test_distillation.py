"""Tests of bert_tf.models.distillation: the every-other-layer student
initialization copies the teacher's weights exactly, a student the teacher
cannot initialize is a one-line error naming both configs, and the
Distiller runs the teacher frozen and without dropout."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import distillation
from bert_tf.models import modeling
from helpers import model_inputs
from helpers.pretraining import tiny_bert_config
from helpers.keras_hub_presets import write_masked_lm_preset


def _teacher_config():
  return dataclasses.replace(tiny_bert_config(dropout=0.0), num_hidden_layers=4)


def _inputs(config, seed=0):
  rng = np.random.default_rng(seed)
  inputs = model_inputs.dummy_inputs(config, batch_size=2, seq_length=12, num_predictions=3)
  inputs["input_ids"] = rng.integers(5, config.vocab_size, (2, 12)).astype(np.int32)
  return inputs


def test_student_layers_are_every_other_teacher_layer():
  teacher_config = _teacher_config()
  student_config = distillation.default_student_config(teacher_config)
  assert student_config.num_hidden_layers == 2
  teacher = modeling.BertPretrainer(teacher_config)
  student = modeling.BertPretrainer(student_config, sentence_head=False)
  assert distillation.init_student_from_teacher(student, teacher) == [0, 2]
  t_enc, s_enc = teacher.encoder, student.encoder
  for i, j in ((0, 0), (1, 2)):
    t_weights = t_enc.transformer_layers[j].weights
    s_weights = s_enc.transformer_layers[i].weights
    assert len(s_weights) == len(t_weights) == 16
    for s, t in zip(s_weights, t_weights):
      np.testing.assert_array_equal(s.numpy(), t.numpy(), err_msg=s.path)
  # Layer 1 of the student is not teacher layer 1 (which it skips).
  assert not np.array_equal(s_enc.transformer_layers[1].weights[0].numpy(),
                            t_enc.transformer_layers[1].weights[0].numpy())
  for name in ("token_embedding", "position_embedding", "segment_embedding",
               "embeddings_layer_norm", "pooled_dense"):
    for s, t in zip(getattr(s_enc, name).weights, getattr(t_enc, name).weights):
      np.testing.assert_array_equal(s.numpy(), t.numpy(), err_msg=s.path)
  for s, t in zip(student.mlm_head.weights, teacher.mlm_head.weights):
    np.testing.assert_array_equal(s.numpy(), t.numpy(), err_msg=s.path)
  # A student of the teacher's own depth-1 path: layers 0 and 2 of a 4-layer
  # teacher applied in turn give the student's output exactly.
  inputs = _inputs(student_config)
  teacher_embedded = teacher.encoder.embeddings_layer_norm(
      teacher.encoder.token_embedding(inputs["input_ids"])
      + teacher.encoder.position_embedding(teacher.encoder.token_embedding(inputs["input_ids"]))
      + teacher.encoder.segment_embedding(inputs["segment_ids"]))
  hidden = teacher_embedded
  for j in (0, 2):
    hidden = t_enc.transformer_layers[j](hidden, padding_mask=inputs["input_mask"])
  np.testing.assert_allclose(student(inputs)["sequence_output"].numpy(), hidden.numpy(),
                             rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("change, message", [
    (dict(hidden_size=64, intermediate_size=128),
     r"student config cannot be initialized from the teacher's layers: its hidden_size=64 "
     r"but teacher config has hidden_size=32 \(use --student_init=scratch"),
    (dict(num_hidden_layers=3),
     r"it has num_hidden_layers=3 but every other layer of teacher config "
     r"\(num_hidden_layers=4\) gives at most 2"),
    (dict(vocab_size=99), r"its vocab_size=99 but teacher config has vocab_size=100"),
])
def test_a_student_the_teacher_cannot_initialize_is_a_one_line_error(change, message):
  teacher_config = _teacher_config()
  student_config = dataclasses.replace(teacher_config, **change)
  with pytest.raises(ValueError, match=message) as error:
    distillation.check_student_config(teacher_config, student_config)
  assert "\n" not in str(error.value)
  with pytest.raises(ValueError, match=message):
    distillation.init_student_from_teacher(modeling.BertPretrainer(student_config),
                                           modeling.BertPretrainer(teacher_config))


def test_distiller_trains_the_student_only_and_runs_the_teacher_without_dropout():
  teacher_config = dataclasses.replace(_teacher_config(), hidden_dropout_prob=0.5,
                                       attention_probs_dropout_prob=0.5)
  teacher = modeling.BertPretrainer(teacher_config)
  student = modeling.BertPretrainer(distillation.default_student_config(teacher_config),
                                    sentence_head=False)
  model = distillation.Distiller(student, teacher)
  trainable = {id(v) for v in model.trainable_variables}
  assert trainable == {id(v) for v in student.trainable_variables}
  assert not trainable & {id(v) for v in teacher.weights}
  assert model.count_params() == student.count_params()
  inputs = _inputs(teacher_config)
  first = model(inputs, training=True)
  second = model(inputs, training=True)
  # Dropout changes the student's outputs, never the teacher's.
  assert not np.allclose(first["mlm_logits"], second["mlm_logits"])
  np.testing.assert_array_equal(first["teacher_mlm_logits"], second["teacher_mlm_logits"])
  # The teacher's forward runs under XLA: its numbers to float rounding.
  plain = teacher(inputs, training=False)
  np.testing.assert_allclose(first["teacher_mlm_logits"], plain["mlm_logits"], rtol=1e-5,
                             atol=1e-6)
  np.testing.assert_allclose(first["teacher_sequence_output"], plain["sequence_output"],
                             rtol=1e-5, atol=1e-5)
  with tf.GradientTape() as tape:
    out = model(inputs, training=True)
    loss = tf.reduce_sum(out["teacher_mlm_logits"]) + tf.reduce_sum(out["mlm_logits"])
  assert teacher.trainable_weights == []
  grads = tape.gradient(loss, student.trainable_weights)
  # Every student weight but the pooler (no sentence-pair head reads it).
  assert [w.path for w, g in zip(student.trainable_weights, grads) if g is None] == [
      "pooled_dense/kernel", "pooled_dense/bias"]


def test_all_token_logits_are_each_heads_at_every_position():
  """all_token_logits (kl_tokens="all"): both heads score every position;
  at the masked positions they are the masked-LM logits."""
  teacher = modeling.BertPretrainer(_teacher_config())
  student = modeling.BertPretrainer(distillation.default_student_config(_teacher_config()),
                                    sentence_head=False)
  model = distillation.Distiller(student, teacher, all_token_logits=True)
  inputs = _inputs(_teacher_config())
  out = model(inputs, training=False)
  batch, seq = np.shape(inputs["input_ids"])
  assert out["mlm_logits_all"].shape[:2] == out["teacher_mlm_logits_all"].shape[:2] == (
      batch, seq)
  positions = np.asarray(inputs["masked_lm_positions"])
  at = lambda x: np.take_along_axis(np.asarray(x), positions[..., None], axis=1)  # noqa: E731
  np.testing.assert_allclose(at(out["mlm_logits_all"]), out["mlm_logits"], rtol=1e-5,
                             atol=1e-5)
  np.testing.assert_allclose(at(out["teacher_mlm_logits_all"]), out["teacher_mlm_logits"],
                             rtol=1e-5, atol=1e-5)
  assert "mlm_logits_all" not in distillation.Distiller(student, teacher)(inputs)


def test_a_keras_hub_masked_lm_preset_is_a_teacher_and_a_backbone_alone_is_not(tmp_path):
  config = tiny_bert_config(dropout=0.0)
  task = write_masked_lm_preset(tmp_path / "masked_lm", config)
  assert distillation.is_keras_hub_preset(str(tmp_path / "masked_lm"))
  assert distillation.preset_bert_config(str(tmp_path / "masked_lm")) == config
  teacher = distillation.load_keras_hub_teacher(str(tmp_path / "masked_lm"))
  inputs = _inputs(config)
  ours = teacher(inputs)["mlm_logits"].numpy()
  theirs = task({"token_ids": inputs["input_ids"], "segment_ids": inputs["segment_ids"],
                 "padding_mask": inputs["input_mask"],
                 "mask_positions": inputs["masked_lm_positions"]}).numpy()
  # keras-hub's head uses exact GELU, ours the original's tanh approximation.
  np.testing.assert_allclose(ours, theirs, atol=2e-3)
  task.backbone.save_to_preset(str(tmp_path / "backbone"))
  with pytest.raises(ValueError, match=r"has no masked-LM head \(task: none, not "
                     r"BertMaskedLM\)"):
    distillation.load_keras_hub_teacher(str(tmp_path / "backbone"))
