"""Tests of bert_tf.training.objectives.registry: how --objective and the
records choose an objective, and the objective of a model."""

import pytest

from bert_tf.models import modeling
from bert_tf.training import objective_names
from bert_tf.training import objectives
from bert_tf.training import train_config

from helpers.pretraining import tiny_bert_config


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


def test_mlm_named_on_sentence_pair_records_leaves_their_labels_unused():
  # BERT's "No NSP" (Devlin et al. 2019, Table 5): the masked LM alone on
  # BERT's segment pairs. A member with a sentence head still needs its own
  # task's labels.
  for task in (None, "nsp", "sop"):
    resolved = objectives.resolve("mlm", task)
    assert resolved.name == "mlm" and resolved.sentence_name is None
    assert "next_sentence_labels" not in resolved.features
  assert objectives.resolve("bert", "nsp").name == "mlm_nsp"
  with pytest.raises(ValueError, match="--objective=mlm_nsp needs records written with "
                     "--sentence_task=nsp; these records have sentence_task=none"):
    objectives.resolve("mlm_nsp", "none")
  with pytest.raises(ValueError, match="--objective=mlm_sop needs records written with "
                     "--sentence_task=sop; these records have sentence_task=nsp"):
    objectives.resolve("mlm_sop", "nsp")


def test_every_family_resolves_through_its_class_and_a_named_member_must_agree():
  assert set(objectives.registry.FAMILY_CLASSES) == set(objective_names.FAMILIES)
  assert tuple(objectives.OBJECTIVES) == objective_names.OBJECTIVE_NAMES
  for name, objective in objectives.OBJECTIVES.items():
    assert objective.name == name
    assert objective.family == objective_names.family_of(name)
  assert objectives.resolve("electra", "nsp").name == "electra"
  options = objectives.DistillSettings(teacher_config=tiny_bert_config(), teacher_checkpoint="x")
  with pytest.raises(ValueError, match="--objective=distill_mlm_nsp: these records and "
                     "settings train distill_mlm"):
    objectives.resolve("distill_mlm_nsp", "nsp", options)
  with pytest.raises(ValueError, match="records have sentence_task='pairs', which no objective "
                     "of --objective=bert trains"):
    objectives.resolve("bert", "pairs")


def test_the_objective_of_a_model_is_the_one_that_built_it():
  config = tiny_bert_config()
  electra = objectives.ElectraObjective(objectives.ElectraSettings(mask_token_id=4))
  assert objectives.of_model(electra.build_model(config)) is electra
  # A pretrainer built directly: MLM + NSP, or MLM alone without the head.
  assert objectives.of_model(modeling.BertPretrainer(config)).name == "mlm_nsp"
  assert objectives.of_model(modeling.BertPretrainer(config, sentence_head=False)).name == "mlm"
