"""Tests of bert_tf.cli: every tool's bad command line ends in one line,
`bert_tf.TOOL: error: ...`, with exit 2 (usage) or 1 (bad input found while
running); a bug keeps its traceback; tool modules import side by side."""

import os
import subprocess
import sys

import pytest
from absl import app
from absl import flags

from bert_tf import cli

TOOLS = ("build_vocab", "create_pretraining_data", "run_pretraining", "export_saved_model",
         "predict", "inspect_records", "sample_corpus", "split_corpus", "quickstart",
         "run_squad")


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


def test_a_tool_that_finished_freezes_its_objects_before_exit(tmp_path):
  # After main returns, the run's objects go to the collector's permanent
  # generation, so interpreter shutdown does not walk them (0.75 s after
  # importing TensorFlow); the exit code and atexit handlers are unchanged.
  script = tmp_path / "tool.py"
  script.write_text(
      "import atexit, gc, sys\n"
      "from bert_tf import cli\n"
      "atexit.register(lambda: print('frozen', gc.get_freeze_count(), file=sys.stderr))\n"
      "def main(argv):\n"
      "  print('in main', gc.get_freeze_count(), file=sys.stderr)\n"
      "cli.run(main, lambda flag_values: None)\n")
  out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=120, cwd=os.path.dirname(os.path.dirname(__file__)))
  assert out.returncode == 0, out.stderr
  lines = [line.split() for line in out.stderr.splitlines() if line.startswith(("in main", "frozen"))]
  assert lines[0][:2] == ["in", "main"] and lines[0][2] == "0"
  assert lines[1][0] == "frozen" and int(lines[1][1]) > 1000


def test_tool_modules_import_together_and_define_flags_privately():
  import importlib
  for name in TOOLS:
    module = importlib.import_module(f"bert_tf.{name}")
    flag_values = cli.parse(module.define_flags, [name])
    assert len(list(flag_values)) >= 1
    assert module.run.__module__ == f"bert_tf.{name}"
  # Importing defined nothing in absl's global flags.
  assert "vocab_file" not in flags.FLAGS and "input_file" not in flags.FLAGS


# What TensorFlow writes on its own when imported and first used (its C++ log),
# which no tool may show by default.
TF_NOISE = ("I0000", "W0000", "E0000", "cuInit", "oneDNN", "absl::InitializeLog",
            "cpu_feature_guard", "To enable the following instructions")


def _start(tool, *args, env=None):
  return subprocess.Popen([sys.executable, "-m", f"bert_tf.{tool}", *args],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env)


def test_every_tool_on_the_command_line(tmp_path):
  """A flag that does not exist, a missing required flag, --help, and (for
  the tools that import TensorFlow only when they run) bad input found while
  running, for each tool, as a shell sees them: nothing of TensorFlow's own
  log, an error in exactly one line (all processes at once: most of their
  time is importing TensorFlow)."""
  env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
  missing = str(tmp_path / "missing")
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n")
  running = {  # bad input found while running, after TensorFlow is imported
      "run_pretraining": (f"--bert_config_file={missing}.json", f"--input_file={missing}",
                          f"--output_dir={tmp_path / 'out'}", "--do_train"),
      "inspect_records": (f"--input_file={missing}", f"--vocab_file={missing}"),
      "quickstart": (f"--output_dir={tmp_path / 'qs'}", f"--corpus={tmp_path}"),
      "build_vocab": (f"--input_file={missing}", f"--vocab_file={tmp_path / 'v' / 'vocab.txt'}"),
      "create_pretraining_data": (f"--input_file={tmp_path}", f"--vocab_file={vocab}",
                                  f"--output_dir={tmp_path / 'r' / 'records'}"),
      "split_corpus": (f"--input_file={missing}", f"--train_file={tmp_path / 's' / 'a.txt'}",
                       f"--heldout_file={tmp_path / 's' / 'b.txt'}"),
  }
  runs = {}
  for tool in TOOLS:
    runs[tool, "unknown"] = _start(tool, "--no_such_flag=1", env=env)
    runs[tool, "help"] = _start(tool, "--helpshort", env=env)
    if tool != "quickstart":  # with no flags it runs the whole job
      runs[tool, "bare"] = _start(tool, env=env)
    if tool in running:
      runs[tool, "running"] = _start(tool, *running[tool], env=env)
  for (tool, case), proc in runs.items():
    out, err = proc.communicate(timeout=300)
    assert not any(noise in err for noise in TF_NOISE), (tool, case, err[-2000:])
    if case == "help":
      assert proc.returncode == 0 and err == "", (tool, err[-2000:])
      assert f"bert_tf.{tool}" in out and "--" in out, (tool, out[:2000])
      continue
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"bert_tf.{tool}: error: "), (tool, case, err)
    if case == "running":
      assert proc.returncode in (cli.USAGE_EXIT, cli.ERROR_EXIT), (tool, case, err)
      assert "missing" in lines[0] or str(tmp_path) in lines[0], (tool, lines[0])
      continue
    assert proc.returncode == cli.USAGE_EXIT, (tool, case, err[-2000:])
    if case == "unknown":
      assert "no_such_flag" in lines[0], (tool, lines[0])
    else:
      assert "is required" in lines[0] or "give exactly one" in lines[0], (tool, lines[0])
  for left in ("v", "s", "r"):  # a failed tool leaves no (empty) output folder behind
    assert not os.path.exists(tmp_path / left), left


def test_tf_cpp_min_log_level_brings_tensorflow_log_back():
  """TF_CPP_MIN_LOG_LEVEL=0 shows TensorFlow's start-up lines again, =2
  hides their INFO and WARNING lines only."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="0")
  proc = _start("build_vocab", "--helpshort", env=env)
  _, err = proc.communicate(timeout=300)
  assert proc.returncode == 0
  # TensorFlow's INFO start-up lines (which lines depends on the CPU: oneDNN's
  # notice appears on some, the CPU feature guard's on others).
  assert "I0000" in err and ("oneDNN" in err or "cpu_feature_guard" in err), err[-2000:]


def test_options_from_flags_takes_the_fields_of_the_same_name():
  import dataclasses

  @dataclasses.dataclass(frozen=True)
  class Options:
    output_dir: str
    steps: int = 3
    not_a_flag: float = 0.5
    computed: str = ""

  def define_flags(f):
    flags.DEFINE_string("output_dir", None, "", flag_values=f)
    flags.DEFINE_integer("steps", 10, "", flag_values=f)
    flags.DEFINE_integer("other", 1, "", flag_values=f)

  flag_values = cli.parse(define_flags, ["tool", "--output_dir=out"])
  assert cli.options_from_flags(Options, flag_values) == Options("out", 10, 0.5, "")
  assert cli.options_from_flags(Options, flag_values, steps=7, computed="x") == Options(
      "out", 7, 0.5, "x")


def test_every_tools_help_shows_its_example_commands_as_written():
  # The docstring is the help (-h): a command continued with a backslash
  # must keep it and its line break, not become one line with a run of
  # spaces before the next flag (a `\` at a line's end inside a docstring
  # joins the lines).
  import ast
  import re
  import bert_tf
  package = os.path.dirname(bert_tf.__file__)  # the tools are the top-level modules
  tools = [name[:-3] for name in sorted(os.listdir(package)) if name.endswith(".py")
           and "def define_flags(" in open(os.path.join(package, name), encoding="utf-8").read()]
  assert "split_corpus" in tools and "compare_objectives" in tools
  for name in tools:
    with open(os.path.join(package, f"{name}.py"), encoding="utf-8") as f:
      doc = ast.get_docstring(ast.parse(f.read()), clean=False) or ""
    for line in doc.splitlines():
      assert not re.search(r"\S {2,}--\w", line), f"bert_tf/{name}.py: {line!r}"
