"""The --output_dir shard files of the data writer: written under a
temporary name and published whole with a stats file beside them (the
proof of completeness), and found again by a rerun, which reuses a shard
only after checking it against its stats. Both drivers (writer, beam)
write and reuse their shards through this module.

The check of a reused shard (`check_shard`): its byte size against the
size its stats recorded, then, on a local filesystem, a read through every
record (TFRecord checks each record's CRC32C) counting them against the
stats' instances. The size alone catches every cut file (a kill, a full
disk, a partial copy: the damage the training reader reports as a
"truncated record"); the read-through adds damage that keeps the size (a
changed byte) at the cost of reading the shard once, at disk speed, where
writing it took tokenizing and masking. On an object store (gs://, s3://)
the size is the check: an object appears only whole once its upload
completes and the store keeps its own checksums, and reading every shard
back would download the whole output on each rerun. Stats written without
a size (by an earlier version) are always read through.

Temporaries: every write of a shard (an attempt) writes its own fresh
temporary name beside the shard, so two attempts at one shard at once (a
Beam runner's speculative or backup execution) never write into one file.
The publish is idempotent: a shard's bytes and stats are a function of the
plan, so whichever attempt renames last puts the same bytes in place
(rename over an existing file is atomic locally and per object on a
store). `remove_temporaries` removes what a killed attempt left.
"""

import contextlib
import json

from absl import logging

from bert_tf.io import file_io as files_lib
from bert_tf.data.pretraining import passes

TEMPORARY_MARK = ".tmp"


class ShardWriter:
  """Writes one --output_dir shard: records under a temporary name of its
  own, renamed into place when complete, then its stats file, the proof of
  completeness (killed in between, a stale shard of another run never gets
  this run's stats). Both drivers write their shards with it."""

  def __init__(self, path, fingerprint, gzip):
    import tensorflow as tf
    self.path = path
    self._fingerprint = fingerprint
    # Held open until close(): the rename happens when the stack is closed.
    self._rename = contextlib.ExitStack()
    tmp = self._rename.enter_context(files_lib.atomic_path(path, files_lib.temp_path(path)))
    self._writer = tf.io.TFRecordWriter(tmp, options="GZIP" if gzip else None)

  def write(self, records):
    for record in records:
      self._writer.write(record)

  def close(self, stats):
    """Closes the file, renames it into place, writes its stats (BlockStats,
    the shard's byte size, and the documents of its random Bs with their
    counts)."""
    import numpy as np
    self._writer.close()
    self._rename.close()
    documents, counts = np.unique(np.asarray(stats.b_documents, np.int64), return_counts=True)
    files_lib.write_json(self.path + ".stats.json", {
        "fingerprint": self._fingerprint, "stats": stats.to_dict(),
        "bytes": files_lib.size(self.path),
        "random_b_documents": [documents.tolist(), counts.tolist()]})

  def abort(self):
    """Closes the file and removes the temporary; the shard is left as it was."""
    self._writer.close()
    self._rename.__exit__(_Abandoned, _Abandoned(), None)


class _Abandoned(Exception):
  """Thrown into a ShardWriter's rename by abort(): its temporary goes."""


def _count_records(path, gzip):
  """(records, None) read through `path`, each record's CRC checked; or
  (None, the error's first line) where it cannot be read to its end."""
  import tensorflow as tf
  from bert_tf.data.records import damaged_records  # pylint: disable=g-import-not-at-top
  dataset = tf.data.TFRecordDataset(path, compression_type="GZIP" if gzip else "")
  try:
    n = dataset.batch(4096).reduce(tf.constant(0, tf.int64),
                                   lambda n, batch: n + tf.size(batch, tf.int64))
  except (tf.errors.DataLossError, tf.errors.OutOfRangeError) as e:
    return None, damaged_records.error_line(e)
  return int(n.numpy()), None


def check_shard(path, saved, gzip):
  """None when the shard at `path` is what its stats `saved` (the stats
  file's dict) say; else a phrase of what is wrong (see the module's
  docstring for why this check is enough)."""
  size = files_lib.size(path)
  if saved.get("bytes") is not None and size != saved["bytes"]:
    return f"{size} bytes where its stats say {saved['bytes']}"
  if saved.get("bytes") is not None and not files_lib.renames_directories_whole(path):
    return None  # an object store: see the module's docstring
  records, error = _count_records(path, gzip)
  if error is not None:
    return error
  expected = saved["stats"].get("instances")
  if expected is not None and records != expected:
    return f"{records} records where its stats say {expected}"
  return None


def read_complete_shard(path, fingerprint, gzip=False, damaged=None):
  """BlockStats of a complete shard of an earlier run with this fingerprint,
  or None (no shard, no stats, other fingerprint, or a shard that fails
  check_shard: logged as a warning naming the shard and the
  damage, appended to the list `damaged` as (path, damage) if given, and
  left to be rewritten)."""
  stats_path = path + ".stats.json"
  if not (files_lib.exists(path) and files_lib.exists(stats_path)):
    return None
  with files_lib.open_file(stats_path) as f:
    saved = json.load(f)
  if saved.get("fingerprint") != fingerprint:
    return None
  damage = check_shard(path, saved, gzip)
  if damage is not None:
    logging.warning("rewriting %s: %s", path, damage)
    if damaged is not None:
      damaged.append((path, damage))
    return None
  import numpy as np
  stats = passes.BlockStats.from_dict(saved["stats"])
  documents, counts = saved.get("random_b_documents", [[], []])
  stats.b_documents = np.repeat(np.array(documents, np.int64), np.array(counts, np.int64))
  return stats


def remove_temporaries(paths):
  """Removes the temporaries of `paths` (shard files) that killed or
  duplicate attempts left beside them; returns how many. Only when no
  attempt runs: a live attempt's temporary would go too."""
  import tensorflow as tf
  removed = 0
  by_folder = {}
  for path in paths:
    by_folder.setdefault(files_lib.parent_of(path), []).append(path.rsplit("/", 1)[-1])
  for folder, names in by_folder.items():
    if not files_lib.isdir(folder or "."):
      continue
    prefixes = tuple(name + TEMPORARY_MARK for name in names)
    for name in files_lib.listdir(folder or "."):
      if name.startswith(prefixes):
        path = f"{folder.rstrip('/')}/{name}" if folder else name
        with contextlib.suppress(tf.errors.NotFoundError):  # another attempt's cleanup
          files_lib.remove(path)
        removed += 1
  return removed
