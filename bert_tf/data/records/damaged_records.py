"""Naming the record file behind a failed read.

tf.data reads many TFRecord files as one stream, and a truncated or corrupt
one stops it with TensorFlow's `DataLossError: truncated record at 531180`,
which names neither the file nor what to do. `naming_the_file(files,
compression)` wraps a read of `files`: on that error it reads the files one
by one (those large enough to hold the offset first) to find the one that
fails, and raises `DamagedRecordsError`, one line naming the file, the
offset and the remedy.
"""

import contextlib
import re

import tensorflow as tf

from bert_tf.io import file_io

_OFFSET = re.compile(r"\bat (\d+)")
# TensorFlow's own words for the damage, without the op and function names
# that wrap them (`{{function_node ...}} truncated record at 7560' failed
# with Read less bytes than requested [Op:IteratorGetNext]`).
_DAMAGE = re.compile(r"(?:truncated|corrupted) record at \d+")


class DamagedRecordsError(ValueError):
  """A record file that cannot be read to its end (one line)."""


def error_line(error):
  message = getattr(error, "message", None) or str(error)
  found = _DAMAGE.search(message)
  if found:
    return found.group(0)
  line = (message.strip().splitlines() or ["unreadable"])[0]
  return re.sub(r"\{\{function_node [^}]*\}\}\s*|\s*\[Op:[^\]]*\]", "", line)


def _read_through(path, compression):
  """None when every record of `path` reads, else the error's first line."""
  try:
    dataset = tf.data.TFRecordDataset(path, compression_type=compression or None)
    dataset.batch(4096).reduce(tf.constant(0, tf.int64), lambda n, _: n + 1).numpy()
  except tf.errors.DataLossError as e:
    return error_line(e)
  return None


def locate(files, compression, error):
  """(path, error line) of the first of `files` that fails to read, trying
  first those longer than the offset `error` names; None if all read."""
  match = _OFFSET.search(error_line(error))
  offset = int(match.group(1)) if match and not compression else None

  def longer(path):
    return offset is None or file_io.size(path) > offset

  ordered = [p for p in files if longer(p)] + [p for p in files if not longer(p)]
  for path in ordered:
    line = _read_through(path, compression)
    if line is not None:
      return path, line
  return None


def describe(files, compression, error, what="records"):
  """The one-line DamagedRecordsError for `error` (a DataLossError) raised
  while reading `files`."""
  found = locate(files, compression, error)
  if found is None:
    return DamagedRecordsError(f"{what}: {error_line(error)} in one of {len(files)} record "
                               f"file(s), though each reads alone now (changed while read?)")
  path, line = found
  return DamagedRecordsError(
      f"{path}: {line} ({what}: a truncated or corrupt TFRecord file; write it again, e.g. "
      "rerun the create_pretraining_data command that wrote it, whose --output_dir checks "
      "every shard and rewrites the damaged ones, or leave it out of the file pattern)")


@contextlib.contextmanager
def naming_the_file(files, compression, what="records"):
  """Turns a DataLossError raised in the block into DamagedRecordsError
  naming the file of `files` that holds the damage."""
  try:
    yield
  except tf.errors.DataLossError as e:
    raise describe(list(files), compression, e, what) from None
