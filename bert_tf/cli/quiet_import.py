"""How every tool imports TensorFlow: quietly, and without matplotlib.

TensorFlow's C++ log is quiet: importing this module (every tool does so,
through `cli`, before TensorFlow) sets TF_CPP_MIN_LOG_LEVEL=3 unless the
user set it, and applies that level also to the lines TensorFlow writes while it is imported
(the oneDNN and CUDA notices, absl's "before absl::InitializeLog()"
warning), which the variable alone no longer hides, and to TensorFlow's
Python INFO lines ("Sharding callback duration ..."). TF_CPP_MIN_LOG_LEVEL=0
brings them all back. The tools' own progress lines are absl Python logging
and stay under absl's --verbosity (-v) flag. TF_ENABLE_ONEDNN_OPTS is left
alone (it changes numerics); only its notice is hidden.

TensorFlow's import loads Keras, and Keras imports matplotlib's pyplot
where matplotlib is installed, for image-gallery plots no tool draws:
0.5 s of every tool's start-up. matplotlib is kept out while TensorFlow is
first imported (Keras' gallery plots then say matplotlib is missing);
afterwards it imports as usual (`compare_objectives` plots with it).
"""

import contextlib
import importlib.abc
import importlib.util
import logging as std_logging
import os
import re
import sys
import tempfile

from absl import logging as absl_logging

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
