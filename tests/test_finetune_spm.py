"""bert_tf.finetune and bert_tf.extract_features on an ALBERT model's
SentencePiece model (--spm_model_file, as google-research/albert's
run_classifier): the task's ids are the sentencepiece package's own, a
tagger labels each word at its first piece (a lone "▁" included), the
SavedModel's text signatures tokenize the same way, an --hf_out folder
carries spiece.model and, evaluated as it is, gives the same dev metrics,
and a model of another vocab size is a one-line error naming the model."""

import dataclasses
import json
import os

import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

from bert_tf.downstream.tagging import conll
from bert_tf.downstream import finetune
from bert_tf.downstream.classification import finetune_tsv

from helpers import tagging_task
from helpers.finetune_task import write_task
from helpers.spm_models import SPM_MODEL, tiny_albert_config
from helpers.tool_runs import run_tool


@pytest.fixture(scope="module")
def sp():
  return sentencepiece.SentencePieceProcessor(model_file=SPM_MODEL)


def _wrapped(sp, ids):
  return [sp.PieceToId("[CLS]")] + list(ids) + [sp.PieceToId("[SEP]")]


def _model_flags(directory, config=None):
  path = directory / "bert_config.json"
  (config or tiny_albert_config()).to_json_file(str(path))
  return [f"--bert_config_file={path}", f"--spm_model_file={SPM_MODEL}"]


def _results(directory):
  return dict(line.split(" = ", 1) for line in
              (directory / "eval_results.txt").read_text().splitlines())


def _same_metrics(evaluated, trained, names):
  evaluated, trained = _results(evaluated), _results(trained)
  for name in names:
    assert abs(float(evaluated[name]) - float(trained[name])) < 1e-6, name


def test_task_ids_are_the_sentencepiece_ids_of_the_lower_cased_text(tmp_path, sp):
  texts = ["The Dog was GOOD", "the  light  with a   heavy dog", "Thou saidst"]
  path = tmp_path / "train.tsv"
  path.write_text("sentence\tlabel\n" + "".join(f"{t}\t{i % 2}\n" for i, t in enumerate(texts)))
  config = finetune.FinetuneConfig(train_file=str(path), dev_file=str(path),
                                   output_dir=str(tmp_path / "out"), spm_model_file=SPM_MODEL,
                                   max_seq_length=64)
  config.validate(tiny_albert_config())  # no vocab_file: the spm model is the vocabulary
  task = finetune_tsv.load_task(config)
  for row, text in zip(task.train["input_ids"], texts):
    want = _wrapped(sp, sp.EncodeAsIds(" ".join(text.lower().split())))
    assert row[:len(want)].tolist() == want
    assert not row[len(want):].any()
  with pytest.raises(ValueError, match=r"vocab_file is required \(or spm_model_file"):
    finetune.FinetuneConfig(train_file=str(path), dev_file=str(path),
                            output_dir=str(tmp_path / "out")).validate()


def test_a_glue_task_reads_with_the_sentencepiece_model(tmp_path, sp):
  from bert_tf.downstream.classification import glue  # pylint: disable=g-import-not-at-top
  from helpers import glue_files  # pylint: disable=g-import-not-at-top
  directory = tmp_path / "MRPC"
  glue_files.write_task_dir(directory, "MRPC", n_train=8, n_dev=4)
  fields = glue.finetune_fields("MRPC", str(directory), {})
  config = finetune.FinetuneConfig(**fields, output_dir=str(tmp_path / "out"),
                                   spm_model_file=SPM_MODEL, max_seq_length=64)
  config.validate(tiny_albert_config())
  task = finetune_tsv.load_task(config)
  examples = glue.read_split(glue.preset("MRPC"), config.train_file)
  first = examples[0]
  want = (_wrapped(sp, sp.EncodeAsIds(first.text_a.lower()))
          + sp.EncodeAsIds(first.text_b.lower()) + [sp.PieceToId("[SEP]")])
  assert task.train["input_ids"][0, :len(want)].tolist() == want
  assert task.train["segment_ids"][0, :len(want)].sum() == len(want) - (
      2 + len(sp.EncodeAsIds(first.text_a.lower())))


def test_a_word_is_labelled_on_its_first_piece_a_lone_word_start_too(sp):
  tokenizer = finetune.task_tokenizer("", True, SPM_MODEL)
  words = ("John", "went", "to", "Paris", ",", "the", "dog")
  gold = ("B-PER", "O", "O", "B-LOC", "O", "O", "O")
  sentence = conll.Sentence(words, gold, tuple(range(1, len(words) + 1)))
  labels = ("O", "B-LOC", "B-PER")
  pieces = [sp.EncodeAsIds(w.lower()) for w in words]
  # "john" is a lone "▁" then j o h n: the label sits on the "▁".
  assert sp.IdToPiece(pieces[0][0]) == "\u2581" and len(pieces[0]) == 5
  features = conll.convert_sentences([sentence], tokenizer, labels, 64, 31)
  ids = _wrapped(sp, [p for w in pieces for p in w])
  assert features.arrays["input_ids"][0, :len(ids)].tolist() == ids
  firsts = (1 + np.cumsum([0] + [len(p) for p in pieces])[:-1]).tolist()
  assert np.flatnonzero(features.arrays["label_weights"][0]).tolist() == firsts
  assert features.arrays["label_ids"][0, firsts].tolist() == [labels.index(g) for g in gold]
  assert features.word[0, firsts].tolist() == list(range(len(words)))
  # In windows (a sentence longer than one), still every word once, none dropped.
  windows = conll.convert_sentences([sentence], tokenizer, labels, 10, 4)
  assert windows.num_split == 1 and len(windows.sentence) > 1
  assert conll.sentence_predictions(windows, windows.arrays["label_ids"], [sentence],
                                    labels) == [gold]


def test_a_vocab_size_mismatch_is_one_line_naming_the_spm_model(tmp_path):
  config = dataclasses.replace(tiny_albert_config(), vocab_size=100)
  child = run_tool("finetune", _model_flags(tmp_path, config) + [
      f"--train_file={write_task(tmp_path / 'train.tsv', 8, seed=1)}",
      f"--dev_file={write_task(tmp_path / 'dev.tsv', 4, seed=2)}", "--max_seq_length=64",
      f"--output_dir={tmp_path / 'out'}"], tmp_path)
  assert child.returncode == 1
  lines = child.stderr.strip().splitlines()
  assert lines[-1] == (f"bert_tf.finetune: error: SentencePiece model {SPM_MODEL} has 120 "
                       f"pieces but the bert_config's vocab_size is 100")
  assert not (tmp_path / "out" / "eval_results.txt").exists()


@pytest.mark.slow
def test_classifier_exports_and_reads_back_from_its_albert_folder(tmp_path, sp):
  out, hf_dir, export = tmp_path / "out", tmp_path / "hf", tmp_path / "model"
  dev = write_task(tmp_path / "dev.tsv", 16, seed=2)
  child = run_tool("finetune", _model_flags(tmp_path) + [
      f"--train_file={write_task(tmp_path / 'train.tsv', 32, seed=1)}", f"--dev_file={dev}",
      "--max_seq_length=64", "--num_train_epochs=2", "--train_batch_size=16",
      "--learning_rate=1e-3", f"--output_dir={out}", f"--hf_out={hf_dir}",
      f"--export_dir={export}"], tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert "accuracy = " in child.stdout and (out / "eval_results.txt").exists()
  assert f"wrote {hf_dir} AlbertForSequenceClassification" in child.stdout
  assert "spiece.model" in os.listdir(hf_dir) and "vocab.txt" not in os.listdir(hf_dir)
  written = json.loads((hf_dir / "config.json").read_text())
  assert written["architectures"] == ["AlbertForSequenceClassification"]
  # The SavedModel's `classify` tokenizes text as training did: its
  # probabilities are classify_ids' on the sentencepiece ids.
  model = tf.saved_model.load(str(export))
  texts = ["The dog was GOOD", "a heavy light"]
  out_text = model.signatures["classify"](text=tf.constant(texts))
  for text, probs in zip(texts, out_text["probabilities"].numpy()):
    ids = _wrapped(sp, sp.EncodeAsIds(text.lower()))
    by_ids = model.signatures["classify_ids"](
        input_ids=tf.constant([ids]), input_mask=tf.ones([1, len(ids)], tf.int32),
        segment_ids=tf.zeros([1, len(ids)], tf.int32))
    np.testing.assert_allclose(probs, by_ids["probabilities"].numpy()[0], atol=1e-5)
  # The folder alone (its config.json and spiece.model), evaluated as it is.
  again = run_tool("finetune", [f"--init_checkpoint={hf_dir}", "--do_train=false",
                                f"--dev_file={dev}", "--max_seq_length=64",
                                f"--output_dir={tmp_path / 'again'}"], tmp_path)
  assert again.returncode == 0, again.stderr[-3000:]
  assert "read its AlbertForSequenceClassification head" in again.stdout
  _same_metrics(tmp_path / "again", out, ("accuracy", "f1", "mcc"))


@pytest.mark.slow
def test_tagger_exports_and_reads_back_from_its_albert_folder(tmp_path):
  out, hf_dir, export = tmp_path / "out", tmp_path / "hf", tmp_path / "model"
  dev = tagging_task.write_task(tmp_path / "dev.txt", 8, seed=2)
  child = run_tool("finetune", _model_flags(tmp_path) + [
      f"--train_file={tagging_task.write_task(tmp_path / 'train.txt', 24, seed=1)}",
      f"--dev_file={dev}", "--task_type=tagging", "--max_seq_length=48",
      "--num_train_epochs=2", "--train_batch_size=8", "--learning_rate=1e-3",
      f"--output_dir={out}", f"--hf_out={hf_dir}", f"--export_dir={export}"], tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert "entity_f1 = " in child.stdout
  assert f"wrote {hf_dir} AlbertForTokenClassification" in child.stdout
  assert "spiece.model" in os.listdir(hf_dir)
  predicted = (out / "dev_predictions.conll").read_text()
  # The `tag` signature labels a dev sentence as the run's dev predictions.
  first = [line.split() for line in predicted.split("\n\n")[0].splitlines()]
  tagged = tf.saved_model.load(str(export)).signatures["tag"](
      text=tf.constant([" ".join(row[0] for row in first)]))
  assert [x.decode() for x in tagged["labels"].numpy()[0][:len(first)]] == [
      row[2] for row in first]
  again = run_tool("finetune", [f"--init_checkpoint={hf_dir}", "--do_train=false",
                                f"--dev_file={dev}", "--task_type=tagging",
                                "--max_seq_length=48", f"--output_dir={tmp_path / 'again'}"],
                   tmp_path)
  assert again.returncode == 0, again.stderr[-3000:]
  _same_metrics(tmp_path / "again", out, ("entity_f1", "entity_precision", "entity_recall",
                                          "token_accuracy"))
  assert (tmp_path / "again" / "dev_predictions.conll").read_text() == predicted


def test_extract_features_writes_sentencepiece_tokens(tmp_path, sp):
  from bert_tf.models import hf_config  # pylint: disable=g-import-not-at-top
  from bert_tf.serving import hf_export  # pylint: disable=g-import-not-at-top
  config = tiny_albert_config()
  model, _ = finetune.build_classifier(config, 2)
  folder = tmp_path / "albert"
  hf_export.write_hf_head_folder(
      model.encoder, config, "albert", hf_config.SEQUENCE_CLASSIFICATION,
      model.head.kernel.numpy(), model.head.bias.numpy(), "", True, str(folder),
      labels=["0", "1"], spm_model_file=SPM_MODEL)
  source = tmp_path / "input.txt"
  source.write_text("The dog ||| was good\nheavy light\n")
  out = tmp_path / "features.jsonl"
  child = run_tool("extract_features", [
      f"--input_file={source}", f"--output_file={out}", f"--init_checkpoint={folder}",
      f"--spm_model_file={SPM_MODEL}", "--layers=-1,0", "--max_seq_length=32"], tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  rows = [json.loads(line) for line in out.read_text().splitlines()]
  tokens = [[f["token"] for f in row["features"]] for row in rows]
  assert tokens[0] == (["[CLS]"] + sp.EncodeAsPieces("the dog") + ["[SEP]"]
                       + sp.EncodeAsPieces("was good") + ["[SEP]"])
  assert tokens[1] == ["[CLS]"] + sp.EncodeAsPieces("heavy light") + ["[SEP]"]
  values = rows[1]["features"][1]["layers"]
  assert [layer["index"] for layer in values] == [-1, 0]
  assert len(values[0]["values"]) == config.hidden_size
