"""Tests of bert_tf.cli.quiet_import: TensorFlow's start-up log lines hidden by
level, its Python INFO lines hidden and ours kept, matplotlib kept out of
TensorFlow's import only."""

import os
import subprocess
import sys

import pytest

from bert_tf.cli import quiet_import


def test_tensorflow_imports_without_matplotlib_which_imports_as_usual_after():
  # Keras imports matplotlib's pyplot inside TensorFlow's import when it is
  # installed (0.5 s); the tools keep it out of that import only.
  pytest.importorskip("matplotlib", reason="matplotlib is not installed: nothing to keep out")
  code = ("import sys\n"
          "from bert_tf.cli import quiet_import\n"
          "import tensorflow as tf\n"
          "print('after tensorflow', 'matplotlib' in sys.modules)\n"
          "from keras.src.visualization import plot_image_gallery\n"
          "print('keras gallery plt', plot_image_gallery.plt)\n"
          "import matplotlib.pyplot\n"
          "print('imported', matplotlib.pyplot.__name__, tf.constant(2).numpy())\n")
  for env in ({}, {"TF_CPP_MIN_LOG_LEVEL": "0"}):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=dict(os.environ, MPLBACKEND="Agg", **env),
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines() == [
        "after tensorflow False", "keras gallery plt None", "imported matplotlib.pyplot 2"], env


@pytest.mark.parametrize("line, hidden_at", [
    ("I0000 00:00:1796083578.785759   10706 port.cc:153] oneDNN custom operations are on.", 1),
    ("W0412 13:45:12.123456    42 gpu_device.cc:2342] Cannot dlopen some GPU libraries.", 2),
    ("E0000 00:00:1796083662.364605   11307 cuda_platform.cc:52] failed call to cuInit: x", 3),
    ("WARNING: All log messages before absl::InitializeLog() is called are written to STDERR", 1),
    ("To enable the following instructions: AVX2 FMA, in other operations, rebuild", 1),
    ("F0000 00:00:1796083662.364605   11307 x.cc:1] Check failed: fatal is always shown", 99),
    ("bert_tf.build_vocab: error: --input_file is required", 99),
    ("Traceback (most recent call last):", 99),
])
def test_which_tensorflow_log_lines_each_level_hides(line, hidden_at):
  for level in range(4):
    assert quiet_import.hidden_by_log_level(line, level) == (level >= hidden_at), (line, level)


def test_tensorflow_python_info_lines_are_hidden_ours_are_not():
  import logging
  from absl import logging as absl_logging
  (tf_filter,) = [f for f in absl_logging.get_absl_handler().filters
                  if isinstance(f, quiet_import._TensorFlowInfoFilter)]  # pylint: disable=protected-access
  def record(level, path):
    return logging.LogRecord("absl", level, path, 1, "m", (), None)
  tf_file = os.path.join("site-packages", "tensorflow", "python", "checkpoint", "functional_saver.py")
  assert not tf_filter.filter(record(logging.INFO, tf_file))
  assert tf_filter.filter(record(logging.WARNING, tf_file))
  assert tf_filter.filter(record(logging.INFO, os.path.join("bert_tf", "training", "loop.py")))
