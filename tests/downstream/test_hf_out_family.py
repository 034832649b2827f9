"""bert_tf.downstream.hf_out: the transformers family a fine-tuned model is
written as comes from the network (its encoder, or the network of an
init_checkpoint whose objective builds its own encoder: ELECTRA's), not
from an objective's name; a kind's head class decides what is refused."""

import os

import numpy as np
import pytest

from bert_tf.downstream import hf_out
from bert_tf.downstream import registry
from bert_tf.downstream.span import span_head
from bert_tf.downstream.span import squad_finetune
from bert_tf.models import hf_checkpoint as hf
from bert_tf.serving import hf_export

from helpers.hf_fixtures import fixture


def _span_run(name, tmp_path):
  """(config, bert_config, prefix) of a span model fine-tuned from the
  fixture `name`: its model saved as run_squad saves it."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  folder = fixture(name)
  bert_config = hf.read_hf_model(folder).bert_config
  model, _ = squad_finetune.build_span_model(bert_config, folder)
  out = tmp_path / "run"
  out.mkdir()
  prefix = str(out / squad_finetune.CHECKPOINT_NAME)
  tf.train.Checkpoint(model=model).write(prefix)
  config = squad_finetune.SquadConfig(init_checkpoint=folder, vocab_file=hf.vocab_path(folder),
                                      output_dir=str(out), do_train=True)
  return config, bert_config, prefix, model


@pytest.mark.parametrize("name,architecture", [
    ("electra_for_question_answering", "ElectraForQuestionAnswering"),
    ("bert_for_question_answering", "BertForQuestionAnswering")])
def test_the_family_is_the_networks(name, architecture, tmp_path):
  config, bert_config, prefix, model = _span_run(name, tmp_path)
  out = str(tmp_path / "hf")
  written = hf_out.write_head(
      config, bert_config, registry.get("squad").hf_head,
      lambda encoder: span_head.BertSpanModel(bert_config, encoder=encoder), prefix, out)
  assert written == architecture
  # What was written is the fine-tuned model: its head, and its encoder
  # under the family's names (the fixture's, which it was read from).
  theirs, ours = hf.read_safetensors(fixture(name)), hf.read_safetensors(out)
  assert sorted(ours) == sorted(theirs)
  np.testing.assert_array_equal(ours["qa_outputs.weight"], model.head.kernel.numpy().T)
  for key, value in theirs.items():
    np.testing.assert_array_equal(ours[key], value, err_msg=key)


def test_a_sequence_classifier_on_an_own_encoder_is_refused_before_training(tmp_path):
  config, bert_config, _, _ = _span_run("electra_for_question_answering", tmp_path)
  classification = registry.for_tool("finetune", "auto")
  with pytest.raises(ValueError, match="ElectraForSequenceClassification"):
    hf_out.check_out(config, bert_config, classification.hf_head, str(tmp_path / "hf"))
  # A token tagger or a span model on it has a transformers class: no refusal.
  for kind in (registry.for_tool("finetune", "tagging"), registry.for_tool("run_squad")):
    hf_out.check_out(config, bert_config, kind.hf_head, str(tmp_path / "hf"))
  assert not os.path.exists(tmp_path / "hf")
  assert hf_export.ELECTRA_CLASSIFIER.startswith("hf_out: ElectraForSequenceClassification")
