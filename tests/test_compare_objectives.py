"""Tests of the compare_objectives command line: a bad arm, arms file or
corpus is one line and a non-zero exit before anything is written."""

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_tool(*args):
  env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
  return subprocess.run([sys.executable, "-m", "bert_tf.compare_objectives", *args],
                        capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("arm, message, code", [
    ("bert:objective=mlm_nsp,mask_share=1.0", "unknown flag 'mask_share'", 2),
    ("bert:objective=mlm_nsp,max_seq_length=32", "max_seq_length is the same for every arm", 2),
    ("bert:objective=mlm_nsp,masked_token_share=1.5", "--masked_token_share=1.5: must be in", 2),
])
def test_a_bad_arm_stops_before_anything_runs(tmp_path, arm, message, code):
  corpus = tmp_path / "corpus.txt"
  corpus.write_text("a b c.\nd e f.\n\ng h i.\nj k l.\n")
  out = tmp_path / "out"
  result = run_tool(f"--corpus={corpus}", f"--output_dir={out}", f"--arm={arm}",
                    "--arm=mlm:objective=mlm")
  assert result.returncode == code, result.stderr
  errors = [line for line in result.stderr.splitlines()
            if line.startswith("bert_tf.compare_objectives: error:")]
  assert len(errors) == 1 and message in errors[0], result.stderr
  assert not out.exists()


def test_a_bad_arms_file_or_corpus_is_one_line(tmp_path):
  arms = tmp_path / "arms.json"
  arms.write_text(json.dumps([{"name": "x", "objective": "mlm", "learning_rate": "fast"}]))
  out = tmp_path / "out"
  result = run_tool("--corpus=nowhere.txt", f"--output_dir={out}", f"--arms_file={arms}")
  assert result.returncode == 2 and "learning_rate: 'fast' is not a float" in result.stderr
  arms.write_text(json.dumps([{"name": "x", "objective": "mlm"}]))
  result = run_tool(f"--corpus={tmp_path / 'nowhere.txt'}", f"--output_dir={out}",
                    f"--arms_file={arms}")
  assert result.returncode == 1, result.stderr
  assert "--corpus=" in result.stderr and "no such file" in result.stderr
  assert not out.exists()


def test_help_says_up_front_how_large_a_corpus_each_instrument_needs():
  from bert_tf.experiments import preflight  # pylint: disable=g-import-not-at-top
  result = run_tool("--help")
  assert result.returncode == 0, result.stderr
  text = " ".join(result.stdout.split())
  assert "How large a corpus" in text
  # The figures the preflight applies, for each instrument.
  assert (f"every evaluation set needs at least {preflight.MIN_EVAL_EXAMPLES} dev rows (below "
          f"{preflight.WARN_EVAL_EXAMPLES}, a warning" in text)
  assert f"dev is every {preflight.DEV_EVERY}th held-out document" in text
  for instrument in ("held-out masked LM", "pair tasks", "heads, frozen probes", "--task"):
    assert instrument in text, instrument
  assert "--probes" in text and "pair_tasks.py" in text


def test_a_bad_task_spec_or_missing_task_file_is_one_line(tmp_path):
  corpus = tmp_path / "corpus.txt"
  corpus.write_text("a b c.\nd e f.\n\ng h i.\nj k l.\n")
  out = tmp_path / "out"
  result = run_tool(f"--corpus={corpus}", f"--output_dir={out}", "--task=ner=conll:")
  assert result.returncode == 2, result.stderr
  errors = [line for line in result.stderr.splitlines()
            if line.startswith("bert_tf.compare_objectives: error:")]
  assert len(errors) == 1 and "--task='ner=conll:': expected NAME=conll:DIR" in errors[0]
  result = run_tool(f"--corpus={corpus}", f"--output_dir={out}",
                    f"--task=qa=squad:{tmp_path / 'squad'}")
  assert result.returncode == 1, result.stderr
  assert f"--task=qa: {tmp_path / 'squad' / 'train.json'}: no such file" in result.stderr
  assert not out.exists()
