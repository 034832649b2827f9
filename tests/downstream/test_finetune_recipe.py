"""bert_tf.downstream.finetune.FinetuneRecipe: the fields and checks every
task of the finetune tool shares, written once; the TSV task's config adds
its columns, the tagger's its own fields and no columns."""

import dataclasses

import pytest

from bert_tf.downstream import finetune
from bert_tf.downstream import registry
from bert_tf.downstream.tagging import tagging

COLUMNS = {"text_a_column", "text_b_column", "label_column", "task_name", "extra_dev_files"}
FILES = dict(train_file="train", dev_file="dev", output_dir="out", vocab_file="vocab.txt")


def _names(cls):
  return {f.name for f in dataclasses.fields(cls)}


def test_both_configs_extend_the_recipe_and_only_the_tsv_one_has_columns():
  recipe = _names(finetune.FinetuneRecipe)
  assert issubclass(finetune.FinetuneConfig, finetune.FinetuneRecipe)
  assert issubclass(tagging.TaggingConfig, finetune.FinetuneRecipe)
  assert not issubclass(tagging.TaggingConfig, finetune.FinetuneConfig)
  assert _names(finetune.FinetuneConfig) == recipe | COLUMNS
  assert _names(tagging.TaggingConfig) == recipe | {"frozen_encoder", "window_stride"}
  # The recipe's defaults are the original run_classifier's, for both.
  for config in (finetune.FinetuneConfig(), tagging.TaggingConfig()):
    assert (config.learning_rate, config.num_train_epochs, config.train_batch_size,
            config.warmup_proportion) == (5e-5, 3.0, 32, 0.1)
  assert (finetune.FinetuneConfig().task_type, tagging.TaggingConfig().task_type) == (
      "auto", "tagging")


@pytest.mark.parametrize("config_class", [finetune.FinetuneConfig, tagging.TaggingConfig])
@pytest.mark.parametrize("field,value,message", [
    ("learning_rate", 0.0, "learning_rate must be positive, got 0.0"),
    ("seeds", 0, "seeds must be positive, got 0"),
    ("max_seq_length", 3, "max_seq_length=3 is out of range"),
    ("output_dir", "", "output_dir is required")])
def test_each_recipe_check_is_the_same_for_both(config_class, field, value, message):
  config = config_class(**{**FILES, field: value})
  with pytest.raises(ValueError, match=message):
    config.validate()


def test_each_config_checks_its_own_fields():
  with pytest.raises(ValueError, match="text_a_column is required"):
    finetune.FinetuneConfig(**FILES, text_a_column="").validate()
  with pytest.raises(ValueError, match="task_type='tagging': choose one of auto, "):
    finetune.FinetuneConfig(**FILES, task_type="tagging").validate()
  with pytest.raises(ValueError, match="task_type='auto': a TaggingConfig's is 'tagging'"):
    tagging.TaggingConfig(**FILES, task_type="auto").validate()
  with pytest.raises(ValueError, match=r"window_stride=11 must lie in \[0, "):
    tagging.TaggingConfig(**FILES, max_seq_length=12, window_stride=11).validate()


def test_the_finetune_tools_column_flags_are_not_a_taggers():
  # The tool passes its TSV column flags whatever the task type: the
  # tagging kind's config has no such fields and does not read them.
  values = {**FILES, "text_a_column": "sentence", "text_b_column": "", "label_column": "label",
            "task_type": "tagging"}
  config = registry.for_tool("finetune", "tagging").config_for(values, window_stride=4)
  assert isinstance(config, tagging.TaggingConfig) and config.window_stride == 4
  config.validate()
