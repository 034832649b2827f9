"""What every command-line tool shares: absl flags and one-line errors.

A tool module has `define_flags(flag_values)`, a module-level `FLAGS`
(absl's global FlagValues) that its `main(argv)` reads, and a `run()` that
calls `cli.run(main, define_flags)`: its console script.

- Flags are defined when a tool runs, not when its module is imported, so
  tool modules import side by side (tests, notebooks, the quickstart) without
  clashing over the flag names they share (input_file, vocab_file, ...).
  `parse(define_flags, argv)` gives a private FlagValues for in-process use.
- Bad input ends with one line on stderr, `bert_tf.TOOL: error: MESSAGE`, and
  a non-zero exit: 2 for a bad command line (a flag that does not parse, a
  missing or contradictory flag: `app.UsageError`), 1 for a problem found
  while running (`Error`, `ValueError`, `OSError` such as a missing or
  unwritable file, a TensorFlow I/O error). Anything else is a bug and keeps
  its traceback.
- TensorFlow's C++ log is quiet: importing this module (every tool does so
  before TensorFlow) sets TF_CPP_MIN_LOG_LEVEL=3 unless the user set it, and
  applies that level also to the lines TensorFlow writes while it is imported
  (the oneDNN and CUDA notices, absl's "before absl::InitializeLog()"
  warning), which the variable alone no longer hides, and to TensorFlow's
  Python INFO lines ("Sharding callback duration ..."). TF_CPP_MIN_LOG_LEVEL=0
  brings them all back. The tools' own progress lines are absl Python logging
  and stay under absl's --verbosity (-v) flag. TF_ENABLE_ONEDNN_OPTS is left
  alone (it changes numerics); only its notice is hidden.
- TensorFlow's import loads Keras, and Keras imports matplotlib's pyplot
  where matplotlib is installed, for image-gallery plots no tool draws:
  0.5 s of every tool's start-up. matplotlib is kept out while TensorFlow is
  first imported (Keras' gallery plots then say matplotlib is missing);
  afterwards it imports as usual (`compare_objectives` plots with it).
"""

import contextlib
import gc
import importlib.abc
import dataclasses
import importlib.util
import logging as std_logging
import os
import re
import sys
import tempfile

from absl import app
from absl import flags
from absl import logging as absl_logging

USAGE_EXIT = 2
ERROR_EXIT = 1

# TensorFlow's C++ log lines ("I0000 00:00:1712345678.123 4242 port.cc:153] ..."),
# by severity, and lines that belong to them.
_CPP_LOG_LINE = re.compile(r"^([IWE])\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ \S+:\d+\] ")
_CPP_LOG_INFO_LINES = re.compile(
    r"^(WARNING: All log messages before absl::InitializeLog\(\) is called"
    r"|To enable the following instructions: )")
_SEVERITY_LEVEL = {"I": 1, "W": 2, "E": 3}  # TF_CPP_MIN_LOG_LEVEL that hides it


def tf_log_level():
  """TF_CPP_MIN_LOG_LEVEL as an int (0: all, 1: no INFO, 2: no WARNING, 3: no ERROR)."""
  try:
    return int(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0"))
  except ValueError:
    return 0


def hidden_by_log_level(line, level):
  """Whether TF_CPP_MIN_LOG_LEVEL=`level` hides this line of TensorFlow's C++ log."""
  match = _CPP_LOG_LINE.match(line)
  if match:
    return level >= _SEVERITY_LEVEL[match.group(1)]
  return level >= 1 and bool(_CPP_LOG_INFO_LINES.match(line))


@contextlib.contextmanager
def _stderr_filtered(level):
  """Captures file descriptor 2 (C++ writes there directly) and passes on
  the lines that `level` does not hide, when the block ends."""
  sys.stderr.flush()
  try:
    saved = os.dup(2)
  except OSError:  # no stderr at all: nothing to filter
    yield
    return
  with tempfile.TemporaryFile() as capture:
    os.dup2(capture.fileno(), 2)
    try:
      yield
    finally:
      sys.stderr.flush()
      os.dup2(saved, 2)
      os.close(saved)
      capture.seek(0)
      text = capture.read().decode("utf-8", errors="replace")
      sys.stderr.write("".join(line for line in text.splitlines(keepends=True)
                               if not hidden_by_log_level(line, level)))
      sys.stderr.flush()


@contextlib.contextmanager
def _matplotlib_kept_out():
  """Makes `import matplotlib` fail inside the block (unless it is imported
  already); afterwards it imports as usual."""
  if "matplotlib" in sys.modules:
    yield
    return
  sys.modules["matplotlib"] = None  # Python's way to make an import fail
  try:
    yield
  finally:
    if "matplotlib" in sys.modules and sys.modules["matplotlib"] is None:
      del sys.modules["matplotlib"]


class _TensorFlowLoader(importlib.abc.Loader):
  """Runs TensorFlow's loader with stderr filtered (`level` >= 1) and
  matplotlib kept out, then steps aside."""

  def __init__(self, loader, level):
    self._loader, self._level = loader, level

  def create_module(self, spec):
    return self._loader.create_module(spec)

  def exec_module(self, module):
    module.__loader__ = module.__spec__.loader = self._loader
    quiet = _stderr_filtered(self._level) if self._level >= 1 else contextlib.nullcontext()
    with quiet, _matplotlib_kept_out():
      self._loader.exec_module(module)


class _TensorFlowImport(importlib.abc.MetaPathFinder):
  """Wraps the first import of `tensorflow` (once; see _TensorFlowLoader)."""

  def __init__(self, level):
    self._level = level

  def find_spec(self, fullname, path=None, target=None):
    del path, target
    if fullname != "tensorflow":
      return None
    sys.meta_path.remove(self)
    spec = importlib.util.find_spec(fullname)
    if spec is not None and spec.loader is not None:
      spec.loader = _TensorFlowLoader(spec.loader, self._level)
    return spec


class _TensorFlowInfoFilter(std_logging.Filter):
  """Drops INFO (and debug) records logged from TensorFlow's own Python code."""

  _TF_DIR = os.sep + "tensorflow" + os.sep

  def filter(self, record):
    return record.levelno >= std_logging.WARNING or self._TF_DIR not in (record.pathname or "")


def quiet_tensorflow_log():
  """TF_CPP_MIN_LOG_LEVEL=3 unless set, kept also while TensorFlow is
  imported, and matplotlib out of that import (see the module docstring).
  Must run before TensorFlow's import to have an effect; runs when this
  module is imported."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  level = tf_log_level()
  if level >= 1:  # its Python INFO lines (absl or "tensorflow" logger), likewise
    tf_python_log = std_logging.getLogger("tensorflow")
    if tf_python_log.level == std_logging.NOTSET:
      tf_python_log.setLevel(std_logging.WARNING)
    handler = absl_logging.get_absl_handler()
    if not any(isinstance(f, _TensorFlowInfoFilter) for f in handler.filters):
      handler.addFilter(_TensorFlowInfoFilter())
  if "tensorflow" not in sys.modules and not any(
      isinstance(f, _TensorFlowImport) for f in sys.meta_path):
    sys.meta_path.insert(0, _TensorFlowImport(level))


quiet_tensorflow_log()


class Error(Exception):
  """A problem the user can fix; its message becomes the one-line error."""


def _user_error(e):
  if isinstance(e, (Error, ValueError, OSError)):
    return True
  tf = sys.modules.get("tensorflow")  # only if the tool imported it
  return tf is not None and isinstance(e, tf.errors.OpError)


def _one_line(e):
  message = getattr(e, "message", None) if not isinstance(e, (ValueError, OSError)) else None
  return " ".join(str(message or e).split()) or type(e).__name__


def prog_name(main):
  """`bert_tf.TOOL` for a tool's main, also when run as `python -m`."""
  module = sys.modules.get(main.__module__)
  spec = getattr(module, "__spec__", None)
  return spec.name if spec is not None else main.__module__


def fail(prog, message, code=ERROR_EXIT):
  """Writes `prog: error: message` to stderr and exits with `code`."""
  sys.stdout.flush()
  sys.stderr.write(f"{prog}: error: {message}\n")
  sys.stderr.flush()
  sys.exit(code)


def call(main, argv, prog=None):
  """Runs `main(argv)`, turning bad input into `fail(...)` (SystemExit)."""
  prog = prog or prog_name(main)
  try:
    return main(argv)
  except app.UsageError as e:
    fail(prog, f"{e} (--help lists the flags)", USAGE_EXIT)
  except Exception as e:  # pylint: disable=broad-except
    if not _user_error(e):
      raise
    fail(prog, _one_line(e), ERROR_EXIT)


def parse(define_flags, argv):
  """A private FlagValues with the tool's flags, parsed from argv (argv[0] is
  the program name). For calling a tool's main in-process."""
  flag_values = flags.FlagValues()
  define_flags(flag_values)
  flag_values(argv)
  return flag_values


def options_from_flags(cls, flag_values=None, unset_keeps_default=False, **overrides):
  """A `cls` (a dataclass of options) with each field the flag of its name.

  Fields without a flag of their name keep their default; `overrides` are
  fields given directly (a flag the tool names differently, or computes).
  flag_values: default absl's global FLAGS, where `run` defines the flags.
  unset_keeps_default: a flag whose value is None (a flag without a default,
    not given) leaves its field's default (e.g. "" for a path) instead.
  """
  flag_values = flags.FLAGS if flag_values is None else flag_values
  values = {f.name: flag_values[f.name].value for f in dataclasses.fields(cls)
            if f.name in flag_values and f.name not in overrides}
  if unset_keeps_default:
    values = {k: v for k, v in values.items() if v is not None}
  return cls(**values, **overrides)


def _print_help(main, define_flags, full):
  """The tool's docstring and its own flags (absl's too with --helpfull)."""
  module = sys.modules.get(main.__module__)
  print((getattr(module, "__doc__", None) or prog_name(main)).strip() + "\n")
  print("flags:\n" + _flags_help(define_flags))
  if full:
    print("\nall flags (absl's included):\n" + flags.FLAGS.get_help())


def _flags_help(define_flags):
  """Help text of the flags `define_flags` defines."""
  flag_values = flags.FlagValues()
  define_flags(flag_values)
  return flag_values.get_help(include_special_flags=False)


def run(main, define_flags, extra_args=False):
  """The console script: defines the flags in absl's global FlagValues,
  parses sys.argv (--flagfile included) and runs `main`. -h, --help,
  --helpshort print the tool's docstring and flags and exit 0 (absl's own
  help exits 1); --helpfull adds absl's flags.

  extra_args: pass arguments that are not flags (after a `--`) on to main;
    otherwise they are a usage error.
  """
  prog = prog_name(main)
  define_flags(flags.FLAGS)

  def parser(argv):
    for arg in argv[1:]:
      if arg == "--":
        break
      if arg in ("-h", "-?", "--help", "--helpshort", "--helpfull"):
        _print_help(main, define_flags, full=arg == "--helpfull")
        sys.exit(0)
    try:
      rest = flags.FLAGS(argv)
    except flags.Error as e:
      fail(prog, f"{e} (--help lists the flags)", USAGE_EXIT)
    if len(rest) > 1 and not extra_args:
      fail(prog, f"unexpected arguments: {' '.join(rest[1:])}", USAGE_EXIT)
    return rest

  def main_then_freeze(argv):
    result = call(main, argv, prog)
    # The job is done and the process exits next: the objects of the whole
    # run (TensorFlow's modules and graphs among them) go to the collector's
    # permanent generation, so the collections of interpreter shutdown skip
    # them: 0.1 s instead of 0.75 s after importing TensorFlow. Files are
    # closed and renamed by now; atexit handlers (log flushes) still run.
    gc.freeze()
    return result

  app.run(main_then_freeze, flags_parser=parser)
