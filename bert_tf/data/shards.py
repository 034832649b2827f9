"""The --output_dir shard files of the data writer: written under a
temporary name and published whole with a stats file beside them (the
proof of completeness), and found again by a rerun, which reuses them.
Both drivers (writer, beam) write and reuse their shards through this
module."""

import contextlib
import json

from bert_tf import file_io as files_lib
from bert_tf.data import passes

class ShardWriter:
  """Writes one --output_dir shard: records under a temporary name, renamed
  into place when complete, then its stats file, the proof of completeness
  (killed in between, a stale shard of another run never gets this run's
  stats). Both drivers write their shards with it."""

  def __init__(self, path, fingerprint, gzip):
    import tensorflow as tf
    self.path = path
    self._fingerprint = fingerprint
    # Held open until close(): the rename happens when the stack is closed.
    self._rename = contextlib.ExitStack()
    tmp = self._rename.enter_context(files_lib.atomic_path(path, path + ".tmp"))
    self._writer = tf.io.TFRecordWriter(tmp, options="GZIP" if gzip else None)

  def write(self, records):
    for record in records:
      self._writer.write(record)

  def close(self, stats):
    """Closes the file, renames it into place, writes its stats (BlockStats,
    and the documents of its random Bs with their counts)."""
    import numpy as np
    self._writer.close()
    self._rename.close()
    documents, counts = np.unique(np.asarray(stats.b_documents, np.int64), return_counts=True)
    files_lib.write_json(self.path + ".stats.json", {
        "fingerprint": self._fingerprint, "stats": stats.to_dict(),
        "random_b_documents": [documents.tolist(), counts.tolist()]})



def read_complete_shard(path, fingerprint):
  """BlockStats of a complete shard of an earlier run with this fingerprint, or None."""
  import tensorflow as tf
  stats_path = path + ".stats.json"
  if not (tf.io.gfile.exists(path) and tf.io.gfile.exists(stats_path)):
    return None
  with tf.io.gfile.GFile(stats_path) as f:
    saved = json.load(f)
  if saved.get("fingerprint") != fingerprint:
    return None
  import numpy as np
  stats = passes.BlockStats.from_dict(saved["stats"])
  documents, counts = saved.get("random_b_documents", [[], []])
  stats.b_documents = np.repeat(np.array(documents, np.int64), np.array(counts, np.int64))
  return stats
