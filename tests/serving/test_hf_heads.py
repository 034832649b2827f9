"""Fine-tuned transformers folders (BertForSequenceClassification,
BertForQuestionAnswering, ElectraForQuestionAnswering, an
AlbertForSequenceClassification on a Unigram tokenizer.json) and
tokenizer.json vocabs: read against what transformers 5 saved and computed
(tests/fixtures/transformers, made by its make_fixtures.py), and written back
(`write_hf_head_folder`, `--hf_out` of finetune and run_squad).
"""

import json
import os
import shutil

import numpy as np
import pytest

from bert_tf.data.tokenizers import sentencepiece_vocab
from bert_tf.data.tokenizers import tokenization
from bert_tf.data.tokenizers import wordpiece_vocab
from bert_tf.models import hf_checkpoint as hf
from bert_tf.serving import export
from bert_tf.serving import hf_export
from bert_tf.training import checkpoints
from bert_tf.downstream import finetune
from bert_tf.training import objectives
from bert_tf.downstream.span import squad_finetune

from helpers.hf_fixtures import FIXTURES, fixture

VOCAB = os.path.join(FIXTURES, "tokenizer", "vocab.txt")
# folder: (the architecture, the task)
HEADS = {"bert_for_sequence_classification": ("BertForSequenceClassification",
                                              hf.SEQUENCE_CLASSIFICATION),
         "albert_unigram": ("AlbertForSequenceClassification", hf.SEQUENCE_CLASSIFICATION),
         "bert_for_question_answering": ("BertForQuestionAnswering", hf.QUESTION_ANSWERING),
         "electra_for_question_answering": ("ElectraForQuestionAnswering",
                                            hf.QUESTION_ANSWERING)}
LABELS = ["contradiction", "entailment", "neutral"]


def read_model(name, labels=None):
  folder = fixture(name)
  config = hf.read_hf_model(folder).bert_config
  if HEADS[name][1] == hf.QUESTION_ANSWERING:
    return squad_finetune.build_span_model(config, folder)
  return finetune.build_classifier(config, len(labels or LABELS), folder,
                                   labels=labels or LABELS)


def feed_of(outputs):
  return {"input_ids": outputs["input_ids"], "input_mask": outputs["attention_mask"],
          "segment_ids": outputs["token_type_ids"]}


@pytest.mark.parametrize("name", sorted(HEADS))
def test_a_fine_tuned_folder_gives_transformers_logits(name):
  model, described = read_model(name)
  assert f"read its {HEADS[name][0]} head" in described
  o = np.load(os.path.join(fixture(name), "outputs.npz"))
  if HEADS[name][1] == hf.QUESTION_ANSWERING:
    start, end = model(feed_of(o))
    real = o["attention_mask"].astype(bool)
    for ours, theirs in ((start, o["start_logits"]), (end, o["end_logits"])):
      np.testing.assert_allclose(np.asarray(ours)[real], theirs[real], atol=1e-4, rtol=0)
  else:
    np.testing.assert_allclose(model(feed_of(o)).numpy(), o["logits"], atol=1e-4, rtol=0)


def test_the_head_follows_the_tasks_label_order():
  order = ["neutral", "contradiction", "entailment"]
  model, _ = read_model("bert_for_sequence_classification", labels=order)
  o = np.load(os.path.join(fixture("bert_for_sequence_classification"), "outputs.npz"))
  theirs = o["logits"][:, [LABELS.index(label) for label in order]]
  np.testing.assert_allclose(model(feed_of(o)).numpy(), theirs, atol=1e-4, rtol=0)
  # Another task's labels: the encoder is read, the head starts new.
  model, described = read_model("bert_for_sequence_classification",
                                labels=["yes", "no", "maybe"])
  assert "head" not in described and "initialized 39 encoder weights" in described


@pytest.mark.parametrize("name", sorted(HEADS))
def test_a_fine_tuned_folder_read_and_written_back_is_what_transformers_saved(name, tmp_path):
  model, _ = read_model(name)
  folder = fixture(name)
  info = hf.read_hf_model(folder)
  saved = objectives.from_checkpoint(checkpoints.resolve_checkpoint(folder))
  model_type = "electra" if saved.builds_own_encoder else (
      "albert" if info.bert_config.is_albert else "bert")
  spm = hf.spm_path(folder)
  out = tmp_path / "out"
  architecture = hf_export.write_hf_head_folder(
      model.encoder, info.bert_config, model_type, HEADS[name][1], model.head.kernel.numpy(),
      model.head.bias.numpy(), None if spm else hf.vocab_path(folder), True, str(out),
      labels=None if HEADS[name][1] == hf.QUESTION_ANSWERING else LABELS,
      spm_model_file=spm)
  assert architecture == HEADS[name][0]
  written, theirs = hf.read_safetensors(str(out)), hf.read_safetensors(folder)
  assert sorted(written) == sorted(theirs)
  for key, value in theirs.items():
    np.testing.assert_array_equal(written[key], value, err_msg=key)
  ours_config = json.loads((out / "config.json").read_text())
  with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
    their_config = json.load(f)
  for key in ("architectures", "model_type", "hidden_size", "vocab_size"):
    assert ours_config[key] == their_config[key], key
  if HEADS[name][1] == hf.SEQUENCE_CLASSIFICATION:
    assert ours_config["id2label"] == their_config["id2label"]
    assert ours_config["label2id"] == their_config["label2id"]
    assert ours_config["problem_type"] == "single_label_classification"
  assert ("tokenizer.json" if spm else "vocab.txt") in os.listdir(out)
  # and the folder written reads back as transformers' did
  assert hf.read_hf_head(str(out)).labels == hf.read_hf_head(folder).labels


def test_an_electra_sequence_classifier_is_refused_not_approximated(tmp_path):
  model, _ = read_model("electra_for_question_answering")
  config = hf.read_hf_model(fixture("electra_for_question_answering")).bert_config
  with pytest.raises(ValueError, match="ElectraForSequenceClassification's head is dense"):
    hf_export.write_hf_head_folder(model.encoder, config, "electra",
                                   hf.SEQUENCE_CLASSIFICATION, np.zeros((32, 2)), np.zeros(2),
                                   VOCAB, True, str(tmp_path / "out"), labels=["a", "b"])
  assert not (tmp_path / "out").exists()


def test_a_regression_head_says_so(tmp_path):
  model, _ = read_model("bert_for_sequence_classification")
  config = hf.read_hf_model(fixture("bert_for_sequence_classification")).bert_config
  hf_export.write_hf_head_folder(model.encoder, config, "bert", hf.SEQUENCE_CLASSIFICATION,
                                 model.head.kernel.numpy()[:, :1], model.head.bias.numpy()[:1],
                                 VOCAB, True, str(tmp_path / "out"), regression=True)
  written = json.loads((tmp_path / "out" / "config.json").read_text())
  assert (written["num_labels"], written["problem_type"]) == (1, "regression")
  assert hf.read_hf_head(str(tmp_path / "out")).regression


def test_a_token_classification_head_maps_with_one_more_entry(tmp_path):
  """A tagger's Dense over the sequence output -> BertForTokenClassification."""
  model, _ = read_model("bert_for_question_answering")
  config = hf.read_hf_model(fixture("bert_for_question_answering")).bert_config
  kernel = np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32)
  tags = ["O", "B-PER", "I-PER", "B-LOC"]
  out = tmp_path / "out"
  assert hf_export.write_hf_head_folder(
      model.encoder, config, "bert", hf.TOKEN_CLASSIFICATION, kernel, np.arange(4.0), VOCAB,
      True, str(out), labels=tags) == "BertForTokenClassification"
  head = hf.read_hf_head(str(out))
  np.testing.assert_array_equal(head.kernel, kernel)
  assert head.labels == tags and "bert.pooler.dense.weight" not in hf.read_safetensors(str(out))


# ------------------------------------------------------------------------------
# tokenizer.json
# ------------------------------------------------------------------------------


def test_a_wordpiece_tokenizer_json_is_a_vocab_however_it_is_named():
  folder = fixture("bert_for_pretraining")  # transformers 5 saved no vocab.txt
  want = wordpiece_vocab.load_vocab(VOCAB).tokens
  for path in (folder, os.path.join(folder, "tokenizer.json"),
               os.path.join(folder, "vocab.txt")):
    assert wordpiece_vocab.load_vocab(path).tokens == want, path
  with open(os.path.join(FIXTURES, "tokenizer", "tokenizer_ids.json"), encoding="utf-8") as f:
    ids = json.load(f)["ids"]["uncased"]
  tokenizer = tokenization.tokenizer_for(os.path.join(folder, "vocab.txt"), True)
  vocab = tokenizer.vocab
  for line, theirs in ids.items():
    values, _ = tokenizer.tokenize_to_ids([line])
    assert [vocab.cls_id] + values.tolist() + [vocab.sep_id] == theirs, line


def test_a_unigram_tokenizer_json_gives_transformers_ids():
  folder = fixture("albert_unigram")
  assert not os.path.exists(os.path.join(folder, "spiece.model"))
  with open(os.path.join(folder, "tokenizer_ids.json"), encoding="utf-8") as f:
    ids = json.load(f)["ids"]
  for path in (folder, os.path.join(folder, "tokenizer.json"),
               os.path.join(folder, "spiece.model")):
    tokenizer = tokenization.tokenizer_for(None, True, spm_model_file=path)
    vocab = tokenizer.vocab
    assert vocab.size == 120 and vocab.unk_id == 1
    values, splits = tokenizer.tokenize_to_ids(list(ids))
    for i, (line, theirs) in enumerate(ids.items()):
      row = values[splits[i]:splits[i + 1]].tolist()
      assert [vocab.cls_id] + row + [vocab.sep_id] == theirs, line
  # the same pieces as the SentencePiece model it was made from
  spm = sentencepiece_vocab.load_sentencepiece(
      os.path.join(os.path.dirname(FIXTURES), "albert_sentencepiece", "spm.model"))
  assert tokenizer.vocab.tokens == spm.vocab.tokens


def test_the_wrong_kind_of_tokenizer_is_named_in_one_line(tmp_path):
  unigram = os.path.join(fixture("albert_unigram"), "tokenizer.json")
  with pytest.raises(ValueError, match="give it as --spm_model_file="):
    wordpiece_vocab.load_vocab(unigram)
  with pytest.raises(ValueError, match="give it as --vocab_file="):
    sentencepiece_vocab.load_sentencepiece(os.path.join(fixture("bert_for_pretraining"),
                                                        "tokenizer.json"))
  listing = os.path.join(os.path.dirname(FIXTURES), "albert_sentencepiece", "spm.vocab")
  with pytest.raises(ValueError, match="SentencePiece vocab listing.*--spm_model_file"):
    wordpiece_vocab.load_vocab(listing)
  (tmp_path / "bad.json").write_text("{\"version\": 1}")
  with pytest.raises(ValueError, match="is not a tokenizer.json"):
    wordpiece_vocab.load_vocab(str(tmp_path / "bad.json"))


def test_an_albert_folder_with_only_a_unigram_tokenizer_json_exports(tmp_path):
  """An AlbertForPreTraining folder whose tokenizer is a tokenizer.json
  (no spiece.model) exports without a vocab flag, and the tokenizer goes
  with it."""
  folder = fixture("albert_unigram")
  config = hf.read_hf_model(folder).bert_config
  objective = objectives.get("mlm_sop")
  pretrainer = objective.build_model(config)
  spm = os.path.join(folder, "tokenizer.json")
  src = tmp_path / "albert"
  assert hf_export.write_hf_folder(pretrainer, objective, None, True, str(src),
                                   spm_model_file=spm) == "AlbertForPreTraining"
  assert "tokenizer.json" in os.listdir(src) and "spiece.model" not in os.listdir(src)
  out = export.run_export(export.ExportOptions(
      bert_config_file=None, checkpoint=str(src), vocab_file=None,
      export_dir=str(tmp_path / "sm"), text_signatures=False, hf_out=str(tmp_path / "hf")))
  assert sorted(out) == ["export_dir", "hf_out"]
  with open(os.path.join(tmp_path / "hf", "tokenizer.json"), "rb") as f, open(spm, "rb") as g:
    assert f.read() == g.read()
  with pytest.raises(ValueError, match="no graph tokenizer.*--notext_signatures"):
    export.run_export(export.ExportOptions(
        bert_config_file=None, checkpoint=str(src), vocab_file=None,
        export_dir=str(tmp_path / "sm2")))
  shutil.rmtree(tmp_path / "sm")
