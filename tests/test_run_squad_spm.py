"""bert_tf.run_squad with an ALBERT SentencePiece model (--spm_model_file), as
google-research/albert's run_squad_v1 takes one: the windows hold
SentencePiece's own pieces of each word (what ALBERT's whole-paragraph
tokenization gives), answers come back in the context's own characters, a
tiny ALBERT trains and predicts, its --hf_out folder has spiece.model and its
--export_dir SavedModel tokenizes by ALBERT's rules; a model of another
size, and a tokenizer.json export, are refused in one line."""

import json
import os
import subprocess
import sys

import pytest
import sentencepiece

from bert_tf.data.tokenizers import sentencepiece_vocab as spv
from bert_tf.downstream.span import squad
from bert_tf.downstream import finetune
from bert_tf.downstream.span import span_answers

from helpers import squad_spm
from helpers.tool_runs import REPO, run_tool

GOLDEN = os.path.join(os.path.dirname(squad_spm.SPM_MODEL), "golden.json")


@pytest.fixture(scope="module")
def tokenizer():
  return finetune.task_tokenizer("", True, squad_spm.SPM_MODEL)


@pytest.fixture(scope="module")
def processor():
  return sentencepiece.SentencePieceProcessor(model_file=squad_spm.SPM_MODEL)


def test_a_line_is_its_words_tokenized_one_by_one():
  """Why per-word tokenization (ours, BERT's run_squad's) gives ALBERT's
  pieces: the original ALBERT code's pieces of whole lines (the fixture's
  golden.json, digit-comma rule included) are the concatenated pieces of
  their words."""
  model = spv.load_sentencepiece(squad_spm.SPM_MODEL)
  with open(GOLDEN, encoding="utf-8") as f:
    rows = json.load(f)["rows"]
  for row in rows:
    words, _ = squad.split_words(row["line"])
    per_word = [p for w in words for p in model.pieces(spv.preprocess_text(w, True))]
    assert per_word == row["pieces"], row["line"]
    assert [i for w in words for i in model.tokenize(w, True)] == row["ids"], row["line"]


def _features(tmp_path, tokenizer, is_training, max_seq_length=64):
  path = squad_spm.write_squad(tmp_path / "squad.json")
  examples = squad.read_examples(path, is_training).examples
  return examples, squad.convert_examples(examples, tokenizer, max_seq_length, 8, 20,
                                          is_training)


def test_features_are_sentencepieces_own_encoding_of_each_word(tmp_path, tokenizer,
                                                                processor):
  examples, features = _features(tmp_path, tokenizer, is_training=True)
  assert len(features) == len(examples) == 4  # one window each
  words, _ = squad.split_words(squad_spm.CONTEXT)
  doc = [i for w in words for i in processor.EncodeAsIds(spv.preprocess_text(w, True))]
  cls, sep = processor.PieceToId("[CLS]"), processor.PieceToId("[SEP]")
  for example, feature in zip(examples, features):
    query = processor.EncodeAsIds(spv.preprocess_text(example.question_text, True))
    ids = [cls] + query + [sep] + doc + [sep]
    assert feature.input_ids[:len(ids)] == ids
    assert set(feature.input_ids[len(ids):]) == {0}  # <pad>
    assert feature.segment_ids[:len(ids)] == [0] * (len(query) + 2) + [1] * (len(doc) + 1)
    # The training answer's pieces spell it: "God" stops before "created".
    answer = feature.tokens[feature.start_position:feature.end_position + 1]
    assert span_answers.sentencepiece_text(answer) == example.orig_answer_text.lower()
  first = features[0].tokens.index("▁light")
  assert features[0].tokens[first + 1] == ","  # "the light" of "light," stops before ","
  assert features[0].end_position == first


def test_an_answer_inside_a_word_is_found_without_its_word_start():
  doc = ["▁", "(", "go", "d", ")", "▁the"]
  assert squad.improve_span(doc, 0, 4, ["▁go", "d"], sentencepiece=True) == (2, 3)
  assert squad.improve_span(doc, 0, 4, ["▁go", "d"]) == (0, 4)  # WordPiece: as before
  assert squad.improve_span(doc, 0, 5, ["▁", "(", "go"], sentencepiece=True) == (0, 2)


def test_sentencepiece_final_text_keeps_the_contexts_characters():
  final = span_answers.sentencepiece_final_text
  assert final("jerusalem", "Jerusalem,", True) == "Jerusalem"  # before the comma piece
  assert final("jerusalem,", "Jerusalem,", True) == "Jerusalem,"
  assert final("sao paulo", "São  Paulo,", True) == "São  Paulo"  # accents, spaces kept
  assert final("Paulo", "São Paulo", False) == "Paulo"
  assert final("paulo", "São Paulo", False) == "São Paulo"  # cased: no match, all of it
  assert final("<unk>erusalem", "Jerusalem,", True) == "Jerusalem,"  # no alignment
  assert final("", "Jerusalem,", True) == "Jerusalem,"
  assert span_answers.sentencepiece_text(["▁", "j", "e", "▁go", "d", ","]) == "je god,"


def test_decoding_a_span_gives_the_contexts_words(tmp_path, tokenizer):
  examples, features = _features(tmp_path, tokenizer, is_training=False)
  results = []
  for feature, span in zip(features, (("▁go", "d"), ("▁w", "d"), ("▁light", ","),
                                      ("re", "at"))):
    start, end = [0.0] * 64, [0.0] * 64
    first = min(feature.token_to_orig_map)  # the context's first piece
    at = feature.tokens.index(span[0], first)
    start[at], end[feature.tokens.index(span[1], at)] = 9.0, 9.0
    results.append(span_answers.RawResult(feature.unique_id, start, end))
  predictions, nbest, _ = span_answers.decode(examples, features, results, n_best_size=3,
                                              sentencepiece=True)
  # The context's characters: "God" cased, "good" without ".", "reat" inside "created".
  assert list(predictions.values()) == ["God", "was good", "light,", "reat"]
  assert all(entry["text"] in squad_spm.CONTEXT for e in nbest.values() for entry in e)


def test_the_answer_signature_reads_the_pieces_run_squad_reads(tmp_path, tokenizer):
  """The SavedModel's `answer` (ALBERT's tokenization in the graph) scores
  the best span as run_squad's prediction does, and its whole words hold
  run_squad's answer text."""
  import keras  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.span import span_head  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.span import answer_export  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.span import squad_finetune  # pylint: disable=g-import-not-at-top
  keras.utils.set_random_seed(3)
  model = span_head.BertSpanModel(squad_spm.tiny_albert_config())
  settings = dict(max_seq_length=64, max_query_length=20, n_best_size=10, max_answer_length=6)
  module = answer_export.AnswerServingModule(model, "", True, spm_model_file=squad_spm.SPM_MODEL,
                                             **settings)
  # A model that does not fit the SentencePiece model is refused, naming it.
  with pytest.raises(ValueError, match=f"SentencePiece model {squad_spm.SPM_MODEL} has 120 "
                     "pieces but the bert_config's vocab_size is 100"):
    answer_export.AnswerServingModule(
        span_head.BertSpanModel(squad_spm.tiny_albert_config(vocab_size=100)), "", True,
        spm_model_file=squad_spm.SPM_MODEL, **settings)
  examples, features = _features(tmp_path, tokenizer, is_training=False)
  out = {k: v.numpy() for k, v in module.answer(
      tf.constant([e.question_text for e in examples]),
      tf.constant([squad_spm.CONTEXT] * len(examples))).items()}
  raw = squad_finetune.predict_logits(model, features, 8)
  predictions, nbest, _ = span_answers.decode(
      examples, features, raw, settings["n_best_size"], settings["max_answer_length"],
      sentencepiece=True)
  for i, example in enumerate(examples):
    best = nbest[example.qas_id][0]
    assert abs(out["score"][i] - (best["start_logit"] + best["end_logit"])) < 1e-4
    answer = out["answer"][i].decode()
    assert squad_spm.CONTEXT[out["start"][i]:out["end"][i]] == answer
    # run_squad writes "empty" where no span passes, the signature "".
    assert predictions[example.qas_id] in answer or (
        predictions[example.qas_id], answer) == ("empty", "")
  assert out["has_answer"].sum() >= 2 and not out["truncated"].any()


def test_a_vocab_size_mismatch_and_a_tokenizer_json_export_are_refused(tmp_path):
  data = squad_spm.write_squad(tmp_path / "squad.json")
  common = ["--do_train", f"--train_file={data}", "--max_seq_length=32",
            "--max_query_length=8", "--doc_stride=8"]
  # Both at once: most of their time is importing TensorFlow.
  runs = [subprocess.Popen(
      [sys.executable, "-m", "bert_tf.run_squad"] + common + extra, cwd=tmp_path,
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
      env=dict(os.environ, PYTHONPATH=REPO))
          for extra in (squad_spm.model_flags(tmp_path / "a", vocab_size=100)
                        + [f"--output_dir={tmp_path / 'a' / 'out'}"],
                        squad_spm.model_flags(tmp_path / "b")
                        + [f"--spm_model_file={tmp_path / 'tokenizer.json'}",
                           f"--output_dir={tmp_path / 'b' / 'out'}",
                           f"--export_dir={tmp_path / 'export'}"])]
  (_, size), (_, export) = [run.communicate(timeout=600) for run in runs]
  assert runs[0].returncode == 1, size[-2000:]
  assert size.strip().splitlines()[-1] == (
      f"bert_tf.run_squad: error: SentencePiece model {squad_spm.SPM_MODEL} has 120 pieces "
      "but the bert_config's vocab_size is 100")
  assert runs[1].returncode == 2, export[-2000:]
  assert export.strip().splitlines()[-1].startswith(
      f"bert_tf.run_squad: error: --export_dir with --spm_model_file={tmp_path}/tokenizer.json: "
      "a tokenizer.json's Unigram model has no graph tokenizer")
  assert not (tmp_path / "a" / "out").exists() and not (tmp_path / "b" / "out").exists()


def test_train_predict_and_hf_out(tmp_path):
  data = squad_spm.write_squad(tmp_path / "squad.json")
  out, hf_dir = tmp_path / "out", tmp_path / "hf"
  child = run_tool("run_squad", squad_spm.model_flags(tmp_path) + [
      "--do_train", f"--train_file={data}", "--do_predict", f"--predict_file={data}",
      "--max_seq_length=48", "--max_query_length=12", "--doc_stride=16",
      "--train_batch_size=2", "--num_train_epochs=2", f"--output_dir={out}",
      f"--hf_out={hf_dir}", f"--export_dir={tmp_path / 'export'}"], tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert "exact_match = " in child.stdout and "f1 = " in child.stdout
  assert f"wrote {hf_dir} AlbertForQuestionAnswering" in child.stdout
  predictions = json.loads((out / "predictions.json").read_text())
  assert list(predictions) == ["q1", "q2", "q3", "q4"]
  # Answers are the context's characters (its casing), never pieces.
  assert all(text in squad_spm.CONTEXT and "▁" not in text for text in predictions.values())
  nbest = json.loads((out / "nbest_predictions.json").read_text())
  assert all(entry["text"] in squad_spm.CONTEXT for e in nbest.values() for entry in e)
  assert "exact_match" in (out / "eval_results.txt").read_text()
  assert sorted(os.listdir(hf_dir)) == ["config.json", "model.safetensors",
                                       "special_tokens_map.json", "spiece.model",
                                       "tokenizer_config.json"]
  with open(squad_spm.SPM_MODEL, "rb") as f:
    assert (hf_dir / "spiece.model").read_bytes() == f.read()
  config = json.loads((hf_dir / "config.json").read_text())
  assert config["architectures"] == ["AlbertForQuestionAnswering"]
  assert json.loads((hf_dir / "tokenizer_config.json").read_text())[
      "tokenizer_class"] == "AlbertTokenizer"
  # The SavedModel answers from text, its SentencePiece model as the asset.
  assert f"wrote SavedModel {tmp_path / 'export'} (signature answer)" in child.stdout
  assert os.listdir(tmp_path / "export" / "assets") == ["spm.model"]
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  answer = tf.saved_model.load(str(tmp_path / "export")).signatures["answer"](
      question=tf.constant(["Who created the light?"]),
      context=tf.constant([squad_spm.CONTEXT]))["answer"].numpy()[0].decode()
  assert answer in squad_spm.CONTEXT
