"""Test-only: makes one Beam worker process die at the worst moment.

Put on PYTHONPATH (with BERT_TF_TEST_DIE_ONCE=MARKER) for a run of
`create_pretraining_data --driver=beam` under a multi-process runner: every
Python process then loads this file at start-up (the `site` module imports
`sitecustomize`). In the first process that publishes a shard, right after
the shard and its stats are in place and before the block files it was made
from are removed, the process exits at once (os._exit: no cleanup, as a
killed VM), after creating MARKER so that no other process dies.
"""

import os

_MARKER = os.environ.get("BERT_TF_TEST_DIE_ONCE")
if _MARKER:
  from bert_tf.data.pretraining import shards as _shards

  _close = _shards.ShardWriter.close

  def _close_then_die_once(self, stats):
    _close(self, stats)
    try:
      fd = os.open(_MARKER, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
      return
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    os._exit(17)

  _shards.ShardWriter.close = _close_then_die_once
