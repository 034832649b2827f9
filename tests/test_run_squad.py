"""Tests of the bert_tf.run_squad tool: a tiny train-and-predict run shows
its progress (rate, ETA), prints the skipped answers' and malformed
questions' counts and its metrics and writes the original's files; bad input
is one line naming the file and question or the flags, a non-zero exit, and
no --output_dir left behind."""

import json
import os
import re
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
      answer("d", "the city of lights", 9), answer("e", "France", "32")])
  out = tmp_path / "out"
  child = run_tool(model_files + ["--do_train", f"--train_file={train}", "--do_predict",
                                  f"--predict_file={train}", f"--output_dir={out}",
                                  "--use_tpu=false", "--iterations_per_loop=5",
                                  "--skip_malformed_questions"], tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert ("skipped 1 answers whose text is not at their answer_start and 1 malformed "
          "questions (--skip_malformed_questions)") in child.stdout
  assert "exact_match = " in child.stdout and "f1 = " in child.stdout
  # The warnings name them: b (misplaced) and e (answer_start "32").
  assert ("skipped 1 of 5 training answers whose text is not at their answer_start (b)"
          in child.stderr)
  assert "skipped 1 of 5 training questions, malformed (e); first: has answer_start='32', " \
      "not an integer" in child.stderr
  # Progress without --verbose_logging: 3 questions, 3 windows, batch 2:
  # 4 steps of 2 windows; 5 questions to predict, 5 windows, 1 batch of 8.
  assert re.search(r"step 4/4  loss \d+\.\d{4}  \d+\.\d windows/s  ETA 0:00:00", child.stderr)
  assert re.search(r"predicting batch 1/1  \d+\.\d windows/s  ETA 0:00:00", child.stderr)
  predictions = json.loads((out / "predictions.json").read_text())
  assert list(predictions) == ["a", "b", "c", "d", "e"]
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
  assert lines[-1].endswith("(--skip_malformed_questions skips such questions)")
  assert not out.exists()


def test_refused_inputs_leave_no_output_dir(model_files, tmp_path):
  # A non-integer answer_start, a predict file that is not JSON (found
  # before training), a --hf_out that exists: each one line, nothing made.
  # All at once: most of their time is importing TensorFlow.
  good = squad_file(tmp_path / "good.json", [answer("a", "France", 32)])
  train = squad_file(tmp_path / "train.json", [answer("a", "France", 32),
                                               answer("q-text", "France", "32")])
  broken = tmp_path / "dev.json"
  broken.write_text('{"data": [', encoding="utf-8")
  (tmp_path / "hf").mkdir()
  cases = [(["--do_train", f"--train_file={train}"], 1,
            f"error: SQuAD file {train}: question q-text has answer_start='32', not an integer "
            "(--skip_malformed_questions skips such questions)"),
           (["--do_train", f"--train_file={good}", "--do_predict", f"--predict_file={broken}"],
            1, f"error: {broken}: not a SQuAD file"),
           (["--do_train", f"--train_file={good}", f"--hf_out={tmp_path / 'hf'}"], 1,
            "error: --hf_out")]
  runs = [subprocess.Popen([sys.executable, "-m", "bert_tf.run_squad"] + model_files + extra +
                           [f"--output_dir={tmp_path / f'out{i}'}"], cwd=tmp_path,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, PYTHONPATH=REPO))
          for i, (extra, _, _) in enumerate(cases)]
  for i, (run, (_, code, message)) in enumerate(zip(runs, cases)):
    _, stderr = run.communicate(timeout=600)
    assert run.returncode == code, stderr[-2000:]
    assert message in stderr.strip().splitlines()[-1], stderr[-2000:]
    assert not (tmp_path / f"out{i}").exists()


def test_help_text():
  from absl import flags
  from bert_tf import run_squad
  flag_values = flags.FlagValues()
  run_squad.define_flags(flag_values)
  assert flag_values["max_seq_length"].help.startswith(
      "Window length in tokens (word pieces): [CLS] question [SEP] document part [SEP].")
  assert flag_values["skip_malformed_questions"].default is False
  for flag in flag_values:
    assert "  " not in flag_values[flag].help, flag


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
