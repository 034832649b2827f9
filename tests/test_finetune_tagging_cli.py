"""Tests of bert_tf.finetune --task_type=tagging: a tiny run on CoNLL files
with --export_dir, whose SavedModel `bert_tf.predict` answers with words and
labels; bad CoNLL input is one line naming file and line, a non-zero exit
and no result file."""

import os
import subprocess
import sys

import pytest

from helpers.tagging_task import tiny_config, write_task, write_vocab

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(module, args, cwd):
  return subprocess.run([sys.executable, "-m", module] + args, cwd=cwd, capture_output=True,
                        text=True, timeout=600, env=dict(os.environ, PYTHONPATH=REPO))


def _args(tmp_path, train, dev, *extra):
  config = tmp_path / "bert_config.json"
  tiny_config().to_json_file(str(config))
  return [f"--bert_config_file={config}", f"--vocab_file={write_vocab(tmp_path / 'v.txt')}",
          f"--train_file={train}", f"--dev_file={dev}", "--task_type=tagging",
          "--max_seq_length=12", "--learning_rate=2e-3", "--num_train_epochs=12",
          "--train_batch_size=16", f"--output_dir={tmp_path / 'out'}"] + list(extra)


@pytest.mark.slow
def test_tagging_run_exports_a_tagger_that_predict_answers(tmp_path):
  train = write_task(tmp_path / "train.conll", 96, seed=1)
  dev = write_task(tmp_path / "dev.conll", 32, seed=2)
  # The dev sentences again as a test file without gold labels (O in their place).
  test = tmp_path / "test.conll"
  test.write_text("".join(f"{line.split()[0]} O\n" if line.strip() else "\n"
                          for line in open(dev, encoding="utf-8").read().splitlines()))
  child = _run("bert_tf.finetune", _args(tmp_path, train, dev, f"--test_file={test}",
                                         f"--export_dir={tmp_path / 'model'}"), tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert "entity_f1 = " in child.stdout and "token_accuracy = " in child.stdout
  assert "dev_predictions.conll" in child.stdout and "(signatures tag, tag_ids)" in child.stdout
  results = dict(line.split(" = ") for line in
                 (tmp_path / "out" / "eval_results.txt").read_text().splitlines())
  assert float(results["entity_f1"]) > 0.6, results
  # The test file's words labelled as the same model labelled them as dev
  # sentences, its own last column kept as the gold one.
  dev_lines = (tmp_path / "out" / "dev_predictions.conll").read_text().splitlines()
  test_lines = (tmp_path / "out" / "test_predictions.conll").read_text().splitlines()
  assert "test_predictions.conll" in child.stdout
  assert len(test_lines) == len(dev_lines) > 32
  for d, t in zip(dev_lines, test_lines):
    assert (t.split()[0], t.split()[1], t.split()[2]) == (d.split()[0], "O", d.split()[2]) if d \
        else t == ""
  answer = _run("bert_tf.predict", [f"--saved_model={tmp_path / 'model'}",
                                    "--text=mary went to paris"], tmp_path)
  assert answer.returncode == 0, answer.stderr[-3000:]
  assert answer.stdout.splitlines() == ["text: mary went to paris",
                                        "mary/B-PER  went/O  to/O  paris/B-LOC"]


@pytest.mark.slow
def test_bad_conll_input_is_one_line_naming_file_and_line(tmp_path):
  train = write_task(tmp_path / "train.conll", 8, seed=1)
  dev = tmp_path / "dev.conll"
  dev.write_text("john B-PER\nwent\n", encoding="utf-8")
  child = _run("bert_tf.finetune", _args(tmp_path, train, dev), tmp_path)
  assert child.returncode == 1
  last = child.stderr.strip().splitlines()[-1]
  assert last.startswith("bert_tf.finetune: error: ") and f"{dev}:2: one column" in last
  assert "Traceback" not in child.stderr
  dev.write_text("john B-PER\nparis B-GPE\n", encoding="utf-8")
  child = _run("bert_tf.finetune", _args(tmp_path, train, dev), tmp_path)
  assert child.returncode == 1 and f"{dev}:2: label 'B-GPE' is not among" in child.stderr
  assert not (tmp_path / "out" / "eval_results.txt").exists()
  child = _run("bert_tf.finetune", _args(tmp_path, train, train, "--window_stride=11"),
               tmp_path)
  assert child.returncode == 2 and "window_stride=11" in child.stderr
