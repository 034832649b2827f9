"""Tests of bert_tf.training.recipe: each recipe field's check, declared with
the field, applies in every config that declares it (pretraining,
fine-tuning, SQuAD, the quickstart, the comparison), with one message."""

import dataclasses

import pytest

from bert_tf.cli import quickstart_stages
from bert_tf.experiments import plan
from bert_tf.training import recipe
from bert_tf.downstream.span import squad_finetune
from bert_tf.training import train_config
from bert_tf.downstream.finetune import FinetuneConfig

SQUAD = {"vocab_file": "v.txt", "output_dir": "o", "do_train": True, "train_file": "t"}


@pytest.mark.parametrize("field, value, message", [
    ("learning_rate", 0.0, "learning_rate must be positive, got 0.0"),
    ("train_batch_size", 0, "train_batch_size must be positive, got 0"),
    ("warmup_proportion", 1.0, "warmup_proportion must be in [0, 1), got 1.0"),
])
def test_a_recipe_field_is_checked_alike_in_every_config(field, value, message):
  with pytest.raises(ValueError, match=message.replace("[", r"\[").replace(")", r"\)")):
    recipe.check(dataclasses.replace(FinetuneConfig(), **{field: value}))
  with pytest.raises(ValueError, match="--" + message.replace("[", r"\[").replace(")", r"\)")):
    squad_finetune.SquadConfig(**SQUAD, **{field: value}).validate(prefix="--")
  if field != "warmup_proportion":  # pretraining warms up by steps
    with pytest.raises(ValueError, match=message):
      train_config.TrainConfig(output_dir="o", input_file="r", do_train=True,
                               **{field: value}).validate()


def test_the_checks_are_the_fields_own():
  checked = {f.name for f in dataclasses.fields(train_config.TrainConfig)
             if "recipe_check" in f.metadata}
  assert {"learning_rate", "train_batch_size", "adam_beta2", "clip_norm"} <= checked
  recipe.check(train_config.TrainConfig())  # the defaults pass
  recipe.check(FinetuneConfig())


def _escaped(message):
  return "^" + message.replace("[", r"\[").replace(")", r"\)") + "$"


QUICKSTART = {"output_dir": "o", "corpus": "c.txt", "vocab_size": 100,
              "bert_config_template": "b.json", "train_steps": 10, "dupe_factor": 1,
              "batch_size": 8, "max_seq_length": 32, "learning_rate": 1e-3}


@pytest.mark.parametrize("field, value, message", [
    ("learning_rate", 0.0, "--learning_rate must be positive, got 0.0"),
    ("batch_size", 0, "--batch_size must be positive, got 0"),
    ("train_steps", -1, "--train_steps must be positive, got -1"),
    ("adam_beta2", 1.0, "--adam_beta2 must be in [0, 1), got 1.0"),
    ("dropout", 1.5, "--dropout must be in [0, 1), got 1.5"),
])
def test_the_quickstart_checks_its_recipe_as_the_tools_do(field, value, message):
  with pytest.raises(ValueError, match=_escaped(message)):
    quickstart_stages.QuickstartOptions(**{**QUICKSTART, field: value})
  quickstart_stages.QuickstartOptions(**QUICKSTART)  # the good values pass


@pytest.mark.parametrize("field, value, message", [
    ("learning_rate", 0.0, "--learning_rate must be positive, got 0.0"),
    ("train_batch_size", 0, "--train_batch_size must be positive, got 0"),
    ("seeds", 0, "--seeds must be positive, got 0"),
    ("finetune_epochs", 0.0, "--finetune_epochs must be positive, got 0.0"),
    ("finetune_learning_rate", -1e-4, "--finetune_learning_rate must be positive, got -0.0001"),
    ("frozen_learning_rate", 0.0, "--frozen_learning_rate must be positive, got 0.0"),
    ("finetune_batch_size", 0, "--finetune_batch_size must be positive, got 0"),
])
def test_the_comparison_checks_its_recipe_as_the_tools_do(field, value, message):
  options = plan.CompareOptions(corpus="c.txt", output_dir="o", bert_config_file="b.json")
  with pytest.raises(ValueError, match=_escaped(message)):
    dataclasses.replace(options, **{field: value}).validate()
  checked = {f.name for f in dataclasses.fields(plan.CompareOptions)
             if "recipe_check" in f.metadata}
  assert field in checked
