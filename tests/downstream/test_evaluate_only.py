"""downstream/evaluate_only.py: a fine-tuned transformers folder read as it is
(do_train=false): transformers' own BertForSequenceClassification fixture
gives the logits transformers recorded; a tagger folder the outputs of the
model written; a head whose labels are not the task's, a folder without a
fine-tuned head and any other checkpoint are refused in one line."""

import os

import numpy as np
import pytest

from bert_tf.models import hf_checkpoint as hf
from bert_tf.downstream import evaluate_only
from bert_tf.downstream import finetune
from bert_tf.downstream.tagging import tagging

from helpers import tagging_task
from helpers.hf_fixtures import fixture

CLASSIFIER = fixture("bert_for_sequence_classification")
LABELS = ("contradiction", "entailment", "neutral")  # the fixture's id2label


def _tsv(path, rows):
  path.write_text("sentence\tlabel\n" + "".join(f"{a}\t{y}\n" for a, y in rows),
                  encoding="utf-8")
  return str(path)


def _classifier_config(tmp_path, **fields):
  bert_config, vocab, _, casing = hf.model_files(CLASSIFIER, "", "")
  values = dict(init_checkpoint=CLASSIFIER, vocab_file=vocab, do_lower_case=casing,
                output_dir=str(tmp_path / "out"), max_seq_length=16, do_train=False,
                dev_file=_tsv(tmp_path / "dev.tsv", [("the lord said", "neutral"),
                                                     ("light and day", "entailment")]))
  values.update(fields)
  return finetune.FinetuneConfig(**values), bert_config


def test_a_sequence_classifier_as_is_gives_transformers_logits(tmp_path):
  config, bert_config = _classifier_config(tmp_path)
  model, space, described = evaluate_only.load_classifier(config, bert_config)
  assert space.labels == LABELS and not space.regression
  assert "read its BertForSequenceClassification head" in described
  recorded = np.load(os.path.join(CLASSIFIER, "outputs.npz"))
  feed = {"input_ids": recorded["input_ids"].astype(np.int32),
          "input_mask": recorded["attention_mask"].astype(np.int32),
          "segment_ids": recorded["token_type_ids"].astype(np.int32)}
  np.testing.assert_allclose(model(feed, training=False).numpy(), recorded["logits"],
                             atol=1e-5)


def test_the_task_labels_must_be_the_heads(tmp_path):
  train = _tsv(tmp_path / "train.tsv", [("a", "0"), ("b", "1")])
  config, bert_config = _classifier_config(tmp_path, train_file=train)
  with pytest.raises(ValueError) as e:
    evaluate_only.load_classifier(config, bert_config)
  assert str(e.value) == (
      f"init_checkpoint={CLASSIFIER}: its head's labels (config.json id2label) "
      f"['contradiction', 'entailment', 'neutral'] are not the task's ['0', '1'] "
      f"(the train file {train})")
  config, _ = _classifier_config(tmp_path, task_name="SST-2", dev_file=str(tmp_path / "d"))
  with pytest.raises(ValueError, match=r"are not the task's \['0', '1'\] \(GLUE SST-2\)"):
    evaluate_only.load_classifier(config, bert_config)
  config, _ = _classifier_config(tmp_path, task_type="regression")
  with pytest.raises(ValueError, match="is a classifier, the task_type regression"):
    evaluate_only.load_classifier(config, bert_config)
  dev = _tsv(tmp_path / "dev2.tsv", [("a", "neutral"), ("b", "maybe")])
  config, _ = _classifier_config(tmp_path, dev_file=dev)
  with pytest.raises(ValueError, match=f"{dev}:3: label 'maybe' is not among the model's "
                                       f"labels \\(contradiction, entailment, neutral;"):
    evaluate_only.load_classifier(config, bert_config)


@pytest.mark.parametrize("folder, says", [
    ("bert_for_pretraining", "its class BertForPreTraining has no fine-tuned head "
                             "(a pretraining checkpoint"),
    ("electra_for_pretraining", "its class ElectraForPreTraining has no fine-tuned head"),
    ("bert_for_question_answering", "its class BertForQuestionAnswering is not the task's"),
])
def test_a_folder_without_the_tasks_head_is_refused(folder, says):
  with pytest.raises(ValueError) as e:
    evaluate_only.read_head(fixture(folder), hf.SEQUENCE_CLASSIFICATION)
  assert says in str(e.value) and "\n" not in str(e.value)
  assert "BertForSequenceClassification / AlbertForSequenceClassification" in str(e.value)


def test_a_checkpoint_that_is_not_a_transformers_folder_is_refused(tmp_path):
  with pytest.raises(ValueError, match="this is not a transformers folder"):
    evaluate_only.read_head(str(tmp_path), hf.TOKEN_CLASSIFICATION)


def test_a_tagger_folder_as_is_gives_the_written_models_outputs(tmp_path):
  vocab = tagging_task.write_vocab(tmp_path / "vocab.txt")
  head_order = ["O", "B-PER", "I-PER", "B-LOC"]
  written = tagging_task.write_tagger_folder(tmp_path / "hf", vocab, head_order)
  values = dict(init_checkpoint=str(tmp_path / "hf"), vocab_file=vocab, max_seq_length=16,
                output_dir=str(tmp_path / "out"), do_train=False,
                dev_file=tagging_task.write_task(tmp_path / "dev.txt", 8, 2))
  ids = np.array([[2, 5, 12, 9, 3, 0], [2, 15, 5, 3, 8, 3]], np.int32)
  feed = {"input_ids": ids, "input_mask": (ids != 0).astype(np.int32),
          "segment_ids": np.zeros_like(ids)}
  expected = written(feed, training=False).numpy()
  # No train file: the head's labels in its order.
  config = tagging.TaggingConfig(**values)
  model, labels, described = evaluate_only.load_tagger(config, tagging_task.tiny_config())
  assert labels == head_order and "read its BertForTokenClassification head" in described
  np.testing.assert_allclose(model(feed, training=False).numpy(), expected, atol=1e-5)
  # A train file: its labels ("O" first, then sorted), the head's outputs reordered to them.
  config = tagging.TaggingConfig(**values, train_file=tagging_task.write_task(
      tmp_path / "train.txt", 24, 1))
  model, labels, _ = evaluate_only.load_tagger(config, tagging_task.tiny_config())
  assert labels == ["O", "B-LOC", "B-PER", "I-PER"]
  np.testing.assert_allclose(model(feed, training=False).numpy(),
                             expected[..., [head_order.index(l) for l in labels]], atol=1e-5)


def test_an_electra_tagger_folder_is_read_with_its_head(tmp_path):
  """The discriminator's encoder (built by ELECTRA's own path) and the head."""
  from bert_tf.models import electra, hf_config  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.tagging import token_head  # pylint: disable=g-import-not-at-top
  from bert_tf.serving import hf_export  # pylint: disable=g-import-not-at-top
  bert_config, vocab, _, _ = hf.model_files(fixture("electra_for_pretraining"), "", "")
  written = token_head.BertTokenTagger(bert_config, 3,
                                       encoder=electra.build_discriminator_encoder(bert_config))
  ids = np.array([[2, 7, 12, 9, 3, 0], [2, 15, 5, 3, 8, 3]], np.int32)
  feed = {"input_ids": ids, "input_mask": (ids != 0).astype(np.int32),
          "segment_ids": np.zeros_like(ids)}
  written(feed)
  written.head.kernel.assign(
      np.random.default_rng(0).normal(0, 1, written.head.kernel.shape).astype(np.float32))
  labels = ["O", "B-X", "I-X"]
  assert hf_export.write_hf_head_folder(
      written.encoder, bert_config, "electra", hf_config.TOKEN_CLASSIFICATION,
      written.head.kernel.numpy(), written.head.bias.numpy(), vocab, True,
      str(tmp_path / "hf"), labels=labels) == "ElectraForTokenClassification"
  (tmp_path / "dev.txt").write_text("the O\nlord B-X\n\n", encoding="utf-8")
  config = tagging.TaggingConfig(init_checkpoint=str(tmp_path / "hf"), vocab_file=vocab,
                                 dev_file=str(tmp_path / "dev.txt"), max_seq_length=16,
                                 output_dir=str(tmp_path / "out"), do_train=False)
  model, read_labels, described = evaluate_only.load_tagger(config, bert_config)
  assert read_labels == labels
  assert "ELECTRA discriminator's" in described
  assert "read its ElectraForTokenClassification head" in described
  np.testing.assert_allclose(model(feed, training=False).numpy(),
                             written(feed, training=False).numpy(), atol=1e-5)
