"""Tests of bert_tf.cli: every tool's bad command line ends in one line,
`bert_tf.TOOL: error: ...`, with exit 2 (usage) or 1 (bad input found while
running); a bug keeps its traceback; tool modules import side by side."""

import subprocess
import sys

import pytest
from absl import app
from absl import flags

from bert_tf import cli

TOOLS = ("build_vocab", "create_pretraining_data", "run_pretraining", "export_saved_model",
         "predict", "inspect_records", "sample_corpus", "quickstart")


def _main_raising(error):
  def main(argv):
    del argv
    raise error
  return main


@pytest.mark.parametrize("error, code, line", [
    (app.UsageError("--vocab_file is required"), cli.USAGE_EXIT,
     "tool: error: --vocab_file is required (--help lists the flags)"),
    (ValueError("vocab.txt: no [MASK] token"), cli.ERROR_EXIT,
     "tool: error: vocab.txt: no [MASK] token"),
    (FileNotFoundError("corpus/*.txt matches no file"), cli.ERROR_EXIT,
     "tool: error: corpus/*.txt matches no file"),
    (cli.Error("loss is NaN at step 7\n  (last good checkpoint kept)"), cli.ERROR_EXIT,
     "tool: error: loss is NaN at step 7 (last good checkpoint kept)"),
])
def test_user_errors_become_one_line_and_an_exit_code(error, code, line, capsys):
  with pytest.raises(SystemExit) as info:
    cli.call(_main_raising(error), ["tool"], prog="tool")
  assert info.value.code == code
  assert capsys.readouterr().err == line + "\n"


def test_tensorflow_io_errors_are_user_errors_and_bugs_keep_their_traceback(capsys):
  import tensorflow as tf
  with pytest.raises(SystemExit) as info:
    cli.call(lambda argv: tf.io.gfile.GFile("/nonexistent/dir/file.txt").read(), ["tool"],
             prog="tool")
  assert info.value.code == cli.ERROR_EXIT
  err = capsys.readouterr().err
  assert err.startswith("tool: error: ") and "/nonexistent/dir/file.txt" in err
  assert err.count("\n") == 1
  with pytest.raises(KeyError):
    cli.call(_main_raising(KeyError("a bug")), ["tool"], prog="tool")


def test_tool_modules_import_together_and_define_flags_privately():
  import importlib
  for name in TOOLS:
    module = importlib.import_module(f"bert_tf.{name}")
    flag_values = cli.parse(module.define_flags, [name])
    assert len(list(flag_values)) >= 1
    assert module.run.__module__ == f"bert_tf.{name}"
  # Importing defined nothing in absl's global flags.
  assert "vocab_file" not in flags.FLAGS and "input_file" not in flags.FLAGS


def test_every_tool_on_the_command_line():
  """A flag that does not exist, a missing required flag, and --help, for
  each tool, as a shell sees them (all processes at once: most of their
  time is importing TensorFlow)."""
  def start(tool, *args):
    return subprocess.Popen([sys.executable, "-m", f"bert_tf.{tool}", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

  runs = {}
  for tool in TOOLS:
    runs[tool, "unknown"] = start(tool, "--no_such_flag=1")
    runs[tool, "help"] = start(tool, "--helpshort")
    if tool != "quickstart":  # with no flags it runs the whole job
      runs[tool, "bare"] = start(tool)
  for (tool, case), proc in runs.items():
    out, err = proc.communicate(timeout=300)
    lines = err.strip().splitlines()
    if case == "help":
      assert proc.returncode == 0, (tool, err[-2000:])
      assert f"bert_tf.{tool}" in out and "--" in out, (tool, out[:2000])
      continue
    assert proc.returncode == cli.USAGE_EXIT, (tool, case, err[-2000:])
    assert lines[-1].startswith(f"bert_tf.{tool}: error: "), (tool, case, lines[-1])
    assert "Traceback" not in err and not any(l.startswith("  --") for l in lines), (tool, err)
    if case == "unknown":
      assert "no_such_flag" in lines[-1], (tool, lines[-1])
    else:
      assert "is required" in lines[-1] or "give exactly one" in lines[-1], (tool, lines[-1])
