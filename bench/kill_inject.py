"""Runs a bert_tf tool as `python -m MODULE ARGS` and SIGKILLs it at an
exact point inside its writes (bench/kill_sweep.py drives it).

  python bench/kill_inject.py bert_tf.create_pretraining_data --output_dir=...

Every write-side file operation the tool makes through TensorFlow's file
layer (what tf.io.gfile and TensorFlow's own checkpoint and SavedModel code
call) is an event, counted in order: GFile writes and closes, renames,
removals, directory creation, atomic writes, each TFRecord written, each
checkpoint save and SavedModel save begun. Environment:

  KILL_AT_EVENT=k     SIGKILL this process at event k (1-based), before the
                      operation runs; 0 (default) never
  KILL_DELAY_S=d      with KILL_AT_EVENT: let the operation start, and kill
                      d seconds later (inside a checkpoint's or SavedModel's
                      own C++ writes)
  KILL_EVENTS_LOG=p   append "index name" of each event to p (the sweep
                      counts a clean run's events this way)
"""

import functools
import os
import runpy
import signal
import sys
import threading

_FILE_IO_FUNCTIONS = (
    "rename", "rename_v2", "atomic_write_string_to_file", "write_string_to_file",
    "delete_file", "delete_file_v2", "delete_recursively", "delete_recursively_v2",
    "recursive_create_dir", "recursive_create_dir_v2", "create_dir", "create_dir_v2",
    "copy", "copy_v2")
_GFILE_FUNCTIONS = ("rename", "remove", "rmtree", "makedirs", "mkdir", "copy")


class _Events:

  def __init__(self, kill_at, delay, log_path):
    self.count, self.kill_at, self.delay = 0, kill_at, delay
    self.log = open(log_path, "a", encoding="utf-8") if log_path else None

  def __call__(self, name):
    self.count += 1
    if self.log:
      self.log.write(f"{self.count} {name}\n")
      self.log.flush()
    if self.count == self.kill_at:
      if self.delay <= 0:
        os.kill(os.getpid(), signal.SIGKILL)
      threading.Timer(self.delay, os.kill, (os.getpid(), signal.SIGKILL)).start()


def _counted(event, name, function):
  @functools.wraps(function)
  def call(*args, **kwargs):
    event(name)
    return function(*args, **kwargs)
  return call


def install(event):
  """Wraps TensorFlow's write-side file operations so each calls `event`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorflow.python.lib.io import file_io  # pylint: disable=g-import-not-at-top
  for name in _FILE_IO_FUNCTIONS:
    if hasattr(file_io, name):
      setattr(file_io, name, _counted(event, f"file_io.{name}", getattr(file_io, name)))
  for name in _GFILE_FUNCTIONS:
    setattr(tf.io.gfile, name, _counted(event, f"gfile.{name}", getattr(tf.io.gfile, name)))
  file_io.FileIO.write = _counted(event, "GFile.write", file_io.FileIO.write)
  file_io.FileIO.close = _counted(event, "GFile.close", file_io.FileIO.close)
  base = tf.io.TFRecordWriter

  class CountingRecordWriter(base):

    def write(self, record):
      event("TFRecordWriter.write")
      return super().write(record)

    def close(self):
      event("TFRecordWriter.close")
      return super().close()

  tf.io.TFRecordWriter = CountingRecordWriter
  tf.train.CheckpointManager.save = _counted(event, "CheckpointManager.save",
                                             tf.train.CheckpointManager.save)
  tf.saved_model.save = _counted(event, "saved_model.save", tf.saved_model.save)


def main():
  events = _Events(int(os.environ.get("KILL_AT_EVENT", "0")),
                   float(os.environ.get("KILL_DELAY_S", "0")),
                   os.environ.get("KILL_EVENTS_LOG"))
  install(events)
  module = sys.argv[1]
  sys.argv = [module] + sys.argv[2:]
  runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
  main()
