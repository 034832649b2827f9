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


def paragraphs(path, n, seed=0):
  """A corpus of `n` short paragraphs (a document each) of a few sentences:
  the issue's 76-paragraph kind."""
  import random  # pylint: disable=g-import-not-at-top
  rng = random.Random(seed)
  words = "river king city stone garden bell market tower harbor wheat".split()
  docs = ["\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(4, 9))) + " ."
                    for _ in range(rng.randint(2, 4))) for _ in range(n)]
  path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
  return path


def test_a_small_corpus_is_told_what_it_allows_and_a_refusal_claims_nothing(tmp_path):
  # The trap: 76 paragraphs refused at one --heldout_every, then
  # refused as "a comparison of other inputs" at the next. Now each try says
  # what the corpus allows and what meets the minimum, and writes nothing.
  corpus = paragraphs(tmp_path / "corpus.txt", 76)
  out = tmp_path / "out"
  for every in (10, 5, 3):
    result = run_tool(f"--corpus={corpus}", f"--output_dir={out}", f"--heldout_every={every}")
    assert result.returncode == 1, result.stderr
    errors = [line for line in result.stderr.splitlines()
              if line.startswith("bert_tf.compare_objectives: error:")]
    assert len(errors) == 1, result.stderr
    assert (f"too few evaluation rows for this comparison at --heldout_every={every} "
            "(nothing was written)") in errors[0]
    assert "other inputs" not in errors[0]
    assert "a corpus of about" in errors[0] and "documents like these" in errors[0]
    assert result.stdout.startswith(f"what the corpus allows: {corpus}, 76 documents")
    for probe in ("probe_nsp_random", "probe_nsp_same_doc", "probe_sop"):
      assert f"  {probe} " in result.stdout, result.stdout
    assert not out.exists()


def test_another_heldout_every_on_a_claimed_folder_prints_the_command_that_runs_it(tmp_path):
  from bert_tf import compare_objectives  # pylint: disable=g-import-not-at-top
  from bert_tf.experiments import plan  # pylint: disable=g-import-not-at-top
  corpus = paragraphs(tmp_path / "corpus.txt", 20)
  out = tmp_path / "out"
  options = plan.CompareOptions(corpus=str(corpus), output_dir=str(out),
                                bert_config_file=compare_objectives._TINY_CONFIG)  # pylint: disable=protected-access
  out.mkdir()
  (out / "plan.json").write_text(json.dumps(plan.plan_inputs(options)))  # claimed at 10
  result = run_tool(f"--corpus={corpus}", "--output_dir", str(out), "--heldout_every=5")
  assert result.returncode == 1, result.stderr
  error = result.stderr.strip().splitlines()[-1]
  assert f"{out} holds a comparison of other inputs (heldout_every 10 -> 5)" in error
  assert error.endswith(f"The command: {sys.executable} -m bert_tf.compare_objectives "
                        f"--corpus={corpus} --heldout_every=5 --output_dir={out}-heldout_every5")


def test_the_command_line_with_another_output_dir():
  from bert_tf import compare_objectives  # pylint: disable=g-import-not-at-top
  line = compare_objectives.command_with_output_dir(
      "runs/b", ["--corpus=my corpus.txt", "--output_dir=runs/a", "--flagfile=x.flags",
                 "-output_dir", "runs/c", "--heldout_every=3"])
  assert line == (f"{sys.executable} -m bert_tf.compare_objectives '--corpus=my corpus.txt' "
                  "--flagfile=x.flags --heldout_every=3 --output_dir=runs/b")
