"""The Beam driver's shard step when a runner retries it, or runs it twice
at once (speculative or backup execution: the tests at the end): a bundle whose
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
import time

import pytest

pytest.importorskip("apache_beam", reason="the Beam driver needs the 'beam' extra")

import tensorflow as tf  # noqa: E402  pylint: disable=wrong-import-position

from bert_tf.data.pretraining import beam  # noqa: E402  pylint: disable=wrong-import-position
from bert_tf.data.pretraining import shards  # noqa: E402  pylint: disable=wrong-import-position
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
    write = shards.ShardWriter.write

    def write_half_then_fail(self, records):
      records = list(records)
      if failed or len(records) < 2:
        return write(self, records)
      write(self, records[:len(records) // 2])
      self._writer.flush()  # pylint: disable=protected-access
      return once()

    monkeypatch.setattr(shards.ShardWriter, "write", write_half_then_fail)
  elif point == "shard published, its block files still there":
    close = shards.ShardWriter.close

    def close_then_fail(self, stats):
      close(self, stats)
      once()

    monkeypatch.setattr(shards.ShardWriter, "close", close_then_fail)
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


# ---------------------------------------------------------------------------
# Two attempts at one shard at once (speculative or backup execution)
# ---------------------------------------------------------------------------

_REAL_WRITE_SHARD = beam.write_shard
# What the two attempts of each shard share: set by the test, read by the
# shard step (module-level, so that Beam pickles the step by reference).
_ATTEMPTS = {}


def _two_attempts_at_once(plan, outputs, options, shard, parts):
  """The shard step run by two threads at once, as a runner's speculative
  execution runs it: "A" and "B" start together ("at once"), or B reads
  its first unit file, then waits while A publishes the shard and removes
  the unit files ("one publishes while the other reads")."""
  import threading  # pylint: disable=g-import-not-at-top
  state = _ATTEMPTS.setdefault(shard, {"start": threading.Barrier(2),
                                       "b_wrote": threading.Event(),
                                       "a_done": threading.Event()})
  errors = []

  def attempt(name):
    try:
      state["start"].wait(60)
      if name == "A" and _ATTEMPTS["scenario"] == "one publishes while the other reads":
        state["b_wrote"].wait(60)
      _REAL_WRITE_SHARD(plan, outputs, options, shard, list(parts))
    except Exception as e:  # noqa: BLE001 - re-raised below, in the step's thread
      errors.append(e)
    finally:
      if name == "A":
        state["a_done"].set()

  threads = [threading.Thread(target=attempt, args=(n,), name=f"attempt-{n}") for n in "AB"]
  for thread in threads:
    thread.start()
  for thread in threads:
    thread.join()
  if errors:
    raise errors[0]


@pytest.mark.parametrize("scenario", ["at once", "one publishes while the other reads"])
def test_two_attempts_at_one_shard_at_once_leave_the_local_drivers_bytes(
    tmp_path, monkeypatch, caplog, scenario):
  import logging  # pylint: disable=g-import-not-at-top
  import threading  # pylint: disable=g-import-not-at-top
  from bert_tf.io import file_io  # pylint: disable=g-import-not-at-top
  inputs, vocab = _inputs(tmp_path)
  options = writer.DataOptions(max_seq_length=32, max_predictions_per_seq=5, dupe_factor=2,
                               block_bytes=700)
  local = writer.Outputs(directory=str(tmp_path / "local"), num_shards=2)
  local_manifest = writer.create_pretraining_data(inputs, local, vocab, options, num_workers=1)

  _ATTEMPTS.clear()
  _ATTEMPTS["scenario"] = scenario
  temporaries = {}
  real_temp_path, real_write = file_io.temp_path, shards.ShardWriter.write

  def temp_path(path):
    name = real_temp_path(path)
    temporaries.setdefault(path, set()).add(name)
    return name

  def write(self, records):
    real_write(self, records)
    if scenario == "at once":
      time.sleep(0.01)  # the two attempts' writes interleave
      return
    state = _ATTEMPTS[twice.paths().index(self.path)]
    if threading.current_thread().name == "attempt-B" and not state["b_wrote"].is_set():
      state["b_wrote"].set()
      state["a_done"].wait(60)

  monkeypatch.setattr(file_io, "temp_path", temp_path)
  monkeypatch.setattr(shards.ShardWriter, "write", write)
  monkeypatch.setattr(beam, "write_shard", _two_attempts_at_once)
  twice = writer.Outputs(directory=str(tmp_path / "beam"), num_shards=2)
  caplog.set_level(logging.INFO, logger="absl")
  manifest = beam.run_beam(inputs, twice, vocab, options)
  if scenario != "at once":  # B found its next unit file gone, and A's shard in place
    assert caplog.text.count("published by another attempt") == 2, caplog.text[-3000:]

  assert sorted(k for k in _ATTEMPTS if k != "scenario") == [0, 1]  # both shards, twice
  for path in twice.paths():  # each attempt wrote its own temporary
    assert len(temporaries[path]) == 2, temporaries
  assert [open(p, "rb").read() for p in twice.paths()] == [
      open(p, "rb").read() for p in local.paths()]
  assert manifest["counts"] == local_manifest["counts"]
  # No temporary, no unit file left: the same names as the local driver's.
  assert sorted(p.name for p in (tmp_path / "beam").iterdir()) == sorted(
      p.name for p in (tmp_path / "local").iterdir())
