"""Tests of bert_tf.training.objectives.checkpoint_tag (and the registry's
reading of it): the objective a checkpoint records."""

import json

import pytest
import tensorflow as tf

from bert_tf.training import objectives
from bert_tf.training.objectives import checkpoint_tag

from helpers.pretraining import tiny_bert_config


def test_a_checkpoint_records_its_objective(tmp_path):
  sop = objectives.get("mlm_sop")
  tf.train.Checkpoint(**objectives.checkpoint_variables(sop)).save(str(tmp_path / "ckpt"))
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


def _tags(prefix):
  """{variable name: value} of the checkpoint's string variables."""
  return {name.split("/")[0]: tf.train.load_variable(prefix, name).decode()
          for name, _ in tf.train.list_variables(prefix) if name.startswith("objective")}


def test_options_are_saved_as_json_of_the_dataclass_beside_the_name(tmp_path):
  electra = objectives.ElectraObjective(
      objectives.ElectraSettings(generator_hidden_size=0.5, mask_token_id=4, seed=3))
  tf.train.Checkpoint(**objectives.checkpoint_variables(electra)).save(str(tmp_path / "ckpt"))
  prefix = tf.train.latest_checkpoint(str(tmp_path))
  tags = _tags(prefix)
  assert tags["objective"] == "electra"
  assert json.loads(tags["objective_options"]) == {
      "generator_hidden_size": 0.5, "generator_layers": 1.0, "generator_config": None,
      "discriminator_weight": 50.0, "mask_rule": "electra", "mask_token_id": 4, "seed": 3}
  saved = objectives.from_checkpoint(prefix)
  assert isinstance(saved, objectives.ElectraObjective) and saved.options == electra.options
  # An objective without options saves its name alone.
  assert objectives.checkpoint_variables(objectives.get("mlm")).keys() == {"objective"}


def test_a_checkpoint_of_the_earlier_one_variable_format_still_loads(tmp_path):
  # Earlier runs saved "electra" and the options' JSON in one string variable.
  legacy = ('electra {"discriminator_weight": 20.0, "generator_config": null, '
            '"generator_hidden_size": 0.5, "generator_layers": 1.0, "mask_rule": "bert", '
            '"mask_token_id": 4, "seed": 3}')
  with tf.device("/cpu:0"):
    variable = tf.Variable(legacy, trainable=False, dtype=tf.string, name="objective")
  tf.train.Checkpoint(objective=variable).save(str(tmp_path / "ckpt"))
  saved = objectives.from_checkpoint(str(tmp_path))
  assert saved.options == objectives.ElectraSettings(
      generator_hidden_size=0.5, discriminator_weight=20.0, mask_rule="bert",
      mask_token_id=4, seed=3)
  assert saved.discriminator_weight == 20.0
  objectives.check_objective(str(tmp_path), objectives.ElectraObjective(saved.options))


def test_distillation_options_travel_with_the_checkpoint(tmp_path):
  teacher_config = tiny_bert_config()
  options = objectives.DistillSettings(teacher_config=teacher_config, teacher_checkpoint="t",
                                      alpha_ce=3.0, temperature=4.0)
  objective = objectives.DistillationObjective(objectives.get("mlm"), options)
  tf.train.Checkpoint(**objectives.checkpoint_variables(objective)).save(str(tmp_path / "c"))
  _, options_json = checkpoint_tag.read_tag(tf.train.latest_checkpoint(str(tmp_path)))
  assert sorted(json.loads(options_json)) == [  # the keys every bert_tf checkpoint holds
      "alpha_ce", "alpha_cos", "alpha_mlm", "alpha_sentence", "kl_tokens", "student_init",
      "teacher_checkpoint", "teacher_config", "temperature"]
  saved = objectives.from_checkpoint(str(tmp_path))
  assert saved.name == "distill_mlm" and saved.options == options
  assert saved.options.teacher_config == teacher_config
  assert saved.checkpoint_root == ("model", "student")
  assert saved.export_objective is objectives.get("mlm")
