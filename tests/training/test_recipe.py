"""Tests of bert_tf.training.recipe: each recipe field's check, declared with
the field, applies in every config that declares it (pretraining,
fine-tuning, SQuAD), with one message."""

import dataclasses

import pytest

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
