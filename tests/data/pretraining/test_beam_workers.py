"""The Beam driver under a multi-process runner: Beam's portable engine with
worker processes (`--direct_running_mode=multi_processing
--direct_num_workers=2`, passed after `--` as the README shows), state
shared only through files. Its shards are byte-identical to the local
driver's, and a worker that dies at the worst moment (a shard published,
its block files not yet removed) leaves no duplicate or missing record
after the run is started again."""

import os
import random
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("apache_beam", reason="the Beam driver needs the 'beam' extra")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
INJECT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "beam_worker_failure")
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
         "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"]
WORKERS = ("--", "--direct_running_mode=multi_processing", "--direct_num_workers=2")


def _inputs(tmp_path):
  vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "."] + WORDS
  (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
  rng = random.Random(5)
  docs = ["\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + " ."
                    for _ in range(rng.randint(2, 9))) for _ in range(60)]
  (tmp_path / "a.txt").write_text("\n\n".join(docs[:35]) + "\n")
  (tmp_path / "b.txt").write_text("\n\n".join(docs[35:]) + "\n")
  return (f"--input_file={tmp_path / '*.txt'}", f"--vocab_file={tmp_path / 'vocab.txt'}",
          "--max_seq_length=32", "--max_predictions_per_seq=5", "--dupe_factor=2",
          "--block_bytes=800", "--num_output_shards=3")


def _write(flags, output_dir, *extra, env=None):
  env = dict(env or os.environ)
  env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), REPO) if p)
  return subprocess.run([sys.executable, "-m", "bert_tf.create_pretraining_data", *flags,
                         f"--output_dir={output_dir}", *extra],
                        capture_output=True, text=True, env=env, timeout=600, check=False)


def _records(directory):
  """{shard name: bytes} of the TFRecord shards, and every file's name."""
  names = sorted(os.listdir(directory))
  return {n: open(os.path.join(directory, n), "rb").read()
          for n in names if n.endswith(".tfrecord")}, names


@pytest.mark.slow
def test_beam_workers_write_the_local_drivers_bytes_and_survive_a_dead_worker(tmp_path):
  flags = _inputs(tmp_path)
  local = _write(flags, tmp_path / "local")
  assert local.returncode == 0, local.stderr[-3000:]
  expected, expected_names = _records(tmp_path / "local")
  assert len(expected) == 3 and all(expected.values())

  # === Two worker processes ===
  beam = _write(flags, tmp_path / "beam", "--driver=beam", *WORKERS)
  assert beam.returncode == 0, beam.stderr[-3000:]
  got, names = _records(tmp_path / "beam")
  assert got == expected
  assert names == expected_names  # shards, their stats, the manifest; no leftovers

  # === A worker dies after publishing a shard, before removing its blocks ===
  # Beam's local engine does not restart a dead worker: the job waits for it
  # for ever. As a user would, the test kills the stuck job (its whole
  # process group) and starts it again.
  marker = tmp_path / "died"
  env = dict(os.environ, BERT_TF_TEST_DIE_ONCE=str(marker),
             PYTHONPATH=os.pathsep.join(p for p in (INJECT, REPO, os.environ.get("PYTHONPATH"))
                                        if p))
  job = subprocess.Popen([sys.executable, "-m", "bert_tf.create_pretraining_data", *flags,
                          f"--output_dir={tmp_path / 'retried'}", "--driver=beam", *WORKERS],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                         start_new_session=True)
  try:
    deadline = time.monotonic() + 600
    while not marker.exists() and job.poll() is None and time.monotonic() < deadline:
      time.sleep(0.2)
    assert marker.exists(), "no worker died: the injection did not run"
  finally:
    os.killpg(job.pid, signal.SIGKILL)
    job.wait()
  published = [n for n in os.listdir(tmp_path / "retried") if n.endswith(".stats.json")]
  leftovers = os.listdir(tmp_path / "retried" / ".blocks")
  assert published and leftovers  # it died between the two
  rerun = _write(flags, tmp_path / "retried", "--driver=beam", *WORKERS)
  assert rerun.returncode == 0, rerun.stderr[-3000:]
  got, names = _records(tmp_path / "retried")
  assert got == expected
  assert names == expected_names
