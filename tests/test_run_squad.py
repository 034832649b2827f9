"""Tests of the bert_tf.run_squad tool: a tiny train-and-predict run prints
the skipped answers' count and its metrics and writes the original's files;
bad input is one line naming the file and question or the flags, a non-zero
exit and no prediction file."""

import json
import os
import subprocess
import sys

import pytest

from bert_tf.models.config import BertConfig

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "where", "is", "paris", "in",
         "france", "the", "city", "of", "lights", ".", "?"]


def run_tool(args, cwd):
  return subprocess.run([sys.executable, "-m", "bert_tf.run_squad"] + args, cwd=cwd,
                        capture_output=True, text=True, timeout=600,
                        env=dict(os.environ, PYTHONPATH=REPO))


def squad_file(path, qas):
  context = "Paris is the city of lights in France."
  path.write_text(json.dumps({"version": "1.1", "data": [{"paragraphs": [
      {"context": context, "qas": qas}]}]}), encoding="utf-8")
  return str(path)


def answer(qid, text, start):
  return {"id": qid, "question": "Where is Paris?",
          "answers": [{"text": text, "answer_start": start}]}


@pytest.fixture
def model_files(tmp_path):
  config = tmp_path / "bert_config.json"
  BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1,
             num_attention_heads=2, intermediate_size=32,
             max_position_embeddings=32).to_json_file(str(config))
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("".join(t + "\n" for t in VOCAB), encoding="utf-8")
  return [f"--bert_config_file={config}", f"--vocab_file={vocab}", "--max_seq_length=16",
          "--doc_stride=4", "--max_query_length=6", "--train_batch_size=2"]


@pytest.mark.slow
def test_train_and_predict(model_files, tmp_path):
  train = squad_file(tmp_path / "train.json", [
      answer("a", "France", 32), answer("b", "France", 3), answer("c", "France", 32),
      answer("d", "the city of lights", 9)])
  out = tmp_path / "out"
  child = run_tool(model_files + ["--do_train", f"--train_file={train}", "--do_predict",
                                  f"--predict_file={train}", f"--output_dir={out}",
                                  "--use_tpu=false", "--iterations_per_loop=5"], tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert "skipped 1 answers whose text is not at their answer_start" in child.stdout
  assert "exact_match = " in child.stdout and "f1 = " in child.stdout
  assert "skipped 1 of 4 training answers" in child.stderr  # the warning names it: b
  predictions = json.loads((out / "predictions.json").read_text())
  assert list(predictions) == ["a", "b", "c", "d"]
  assert sorted(os.listdir(out)) == sorted(
      ["eval_results.txt", "model.data-00000-of-00001", "model.index",
       "nbest_predictions.json", "predictions.json"])


def test_a_training_question_without_answers(model_files, tmp_path):
  train = squad_file(tmp_path / "train.json", [
      answer("a", "France", 32), {"id": "q-empty", "question": "Where?", "answers": []}])
  out = tmp_path / "out"
  child = run_tool(model_files + ["--do_train", f"--train_file={train}",
                                  f"--output_dir={out}"], tmp_path)
  assert child.returncode == 1
  lines = child.stderr.strip().splitlines()
  assert lines[-1].startswith("bert_tf.run_squad: error: SQuAD file ")
  assert "train.json: question q-empty has 0 answers" in lines[-1]
  assert not (out / "model.index").exists()


def test_a_window_that_cannot_hold_the_question(model_files, tmp_path):
  train = squad_file(tmp_path / "train.json", [answer("a", "France", 32)])
  child = run_tool(model_files + ["--do_train", f"--train_file={train}",
                                  "--max_query_length=13", f"--output_dir={tmp_path / 'o'}"],
                   tmp_path)
  assert child.returncode == 2
  assert child.stderr.strip().splitlines()[-1].startswith(
      "bert_tf.run_squad: error: --max_seq_length=16 must be greater than "
      "--max_query_length=13 + 3 ([CLS], two [SEP]) to leave room for the document")


def test_nothing_to_do_and_missing_files(model_files, tmp_path):
  # Both at once: most of their time is importing TensorFlow.
  runs = [subprocess.Popen([sys.executable, "-m", "bert_tf.run_squad"] + model_files + extra,
                           cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=dict(os.environ, PYTHONPATH=REPO))
          for extra in ([f"--output_dir={tmp_path / 'o'}"],
                        ["--do_predict", f"--predict_file={tmp_path / 'no.json'}",
                         f"--output_dir={tmp_path / 'o'}"])]
  (_, nothing), (_, missing) = [run.communicate(timeout=600) for run in runs]
  assert runs[0].returncode == 2 and "--do_train or --do_predict" in nothing
  assert runs[1].returncode == 1 and "no.json: no such SQuAD file" in missing
  assert not (tmp_path / "o" / "predictions.json").exists()
