"""The Beam driver's shard step when a runner retries it: a bundle whose
first attempt fails half-way (part of a shard written; a shard published
and its block files not yet removed; some of them removed) is run again by
the runner, and the shards come out byte-identical to the local driver's,
with no duplicate or missing record and no leftover file.

Beam's BundleBasedDirectRunner retries a failed bundle in the same job
(up to 4 attempts), as Dataflow, Flink or Spark retry one whose worker
died. The failure is an exception raised inside the shard step at the
chosen point, which leaves the files as a killed worker would: nothing in
the step cleans up on the way out (the shard's temporary stays, the block
files stay)."""

import random

import pytest

pytest.importorskip("apache_beam", reason="the Beam driver needs the 'beam' extra")

import tensorflow as tf  # noqa: E402  pylint: disable=wrong-import-position

from bert_tf.data.pretraining import beam  # noqa: E402  pylint: disable=wrong-import-position
from bert_tf.data.pretraining import writer  # noqa: E402  pylint: disable=wrong-import-position

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
         "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"]
RETRYING = ["--runner=BundleBasedDirectRunner"]


class WorkerDied(Exception):
  """The injected failure of the shard step's first attempt."""


def _inputs(tmp_path):
  vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "."] + WORDS
  (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
  rng = random.Random(11)
  docs = ["\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + " ."
                    for _ in range(rng.randint(2, 9))) for _ in range(40)]
  (tmp_path / "a.txt").write_text("\n\n".join(docs) + "\n")
  return str(tmp_path / "a.txt"), str(tmp_path / "vocab.txt")


def _records(outputs):
  return [[r.numpy() for r in tf.data.TFRecordDataset(p)] for p in outputs.paths()]


def _fail_once(monkeypatch, point):
  """Makes the shard step's first attempt fail at `point`; returns the list
  the failure is recorded in."""
  failed = []

  def once():
    if not failed:
      failed.append(point)
      raise WorkerDied(point)

  if point == "inside a shard's writes":
    write = writer.ShardWriter.write

    def write_half_then_fail(self, records):
      records = list(records)
      if failed or len(records) < 2:
        return write(self, records)
      write(self, records[:len(records) // 2])
      self._writer.flush()  # pylint: disable=protected-access
      return once()

    monkeypatch.setattr(writer.ShardWriter, "write", write_half_then_fail)
  elif point == "shard published, its block files still there":
    close = writer.ShardWriter.close

    def close_then_fail(self, stats):
      close(self, stats)
      once()

    monkeypatch.setattr(writer.ShardWriter, "close", close_then_fail)
  else:  # some of the shard's block files removed
    remove = tf.io.gfile.remove

    def remove_then_fail(path):
      remove(path)
      if "/.blocks/unit-" in path:
        once()

    monkeypatch.setattr(tf.io.gfile, "remove", remove_then_fail)
  return failed


@pytest.mark.parametrize("point", ["inside a shard's writes",
                                   "shard published, its block files still there",
                                   "one block file removed"])
def test_a_retried_shard_step_writes_the_local_drivers_records(tmp_path, monkeypatch, point):
  inputs, vocab = _inputs(tmp_path)
  options = writer.DataOptions(max_seq_length=32, max_predictions_per_seq=5, dupe_factor=2,
                               block_bytes=700)
  local = writer.Outputs(directory=str(tmp_path / "local"), num_shards=2)
  local_manifest = writer.create_pretraining_data(inputs, local, vocab, options, num_workers=1)

  failed = _fail_once(monkeypatch, point)
  retried = writer.Outputs(directory=str(tmp_path / "beam"), num_shards=2)
  manifest = beam.run_beam(inputs, retried, vocab, options, beam_args=RETRYING)
  assert failed == [point]  # the first attempt failed there, and the job finished

  expected, got = _records(local), _records(retried)
  assert all(len(shard) > 4 for shard in expected)
  # No duplicate or missing record: the same records in the same order.
  assert [len(s) for s in got] == [len(s) for s in expected]
  assert got == expected
  assert [open(p, "rb").read() for p in retried.paths()] == [
      open(p, "rb").read() for p in local.paths()]
  assert manifest["counts"] == local_manifest["counts"]
  # No temporary shard, no block file left behind.
  assert sorted(p.name for p in (tmp_path / "beam").iterdir()) == sorted(
      p.name for p in (tmp_path / "local").iterdir())
