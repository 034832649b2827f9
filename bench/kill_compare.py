"""Kills compare_objectives with SIGKILL at a sweep of points inside its
writes, runs the same command again, and checks what a user would see.

  PYTHONPATH=$PWD .venv/bin/python bench/kill_compare.py --points=12 --out=/tmp/kill_compare

A toy comparison (one arm, mlm_nsp; a 1-layer model of hidden size
16; 3 pretraining steps; the SOP pair task and one fine-tuning seed) is
run once uninterrupted under bench/kill_inject.py, which counts its write
events (every GFile write and close, rename, removal, record written,
checkpoint save, in order: the split, vocab, records, pretraining, held-out
figures, instruments, fine-tuning, results). Then for each chosen point
(kill_sweep.choose_points: the renames, removals, closes and saves, and
evenly spaced writes between them; also delays into checkpoint saves) a
fresh comparison into a new folder is killed there and:

  1. no partial file under a final name: every record shard reads to its
     end, every JSON file parses, every text and TSV file equals the
     uninterrupted run's file of that name, every checkpoint the
     `checkpoint` file names is complete, and no event file (TensorBoard
     HParams) is cut short;
  2. the same command run again finishes, and its results.csv and
     results.md equal the uninterrupted run's but for the columns that
     time the run (TIMING_COLUMNS: pretraining seconds, examples/s and
     FLOP/s measure this machine's speed during that run, so no two runs
     share them, killed or not), and with the output folder's path, which
     results.md's notes name, written OUTPUT_DIR.

Prints one JSON line with the counts and exits non-zero on any failure.
tests/test_kill_sweep.py runs a few points of it.
"""

import argparse
import csv
import io
import json
import os
import re
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kill_sweep  # pylint: disable=g-import-not-at-top,wrong-import-position

REPO = kill_sweep.REPO
COMPARE = "bert_tf.compare_objectives"
# results.csv columns that time the run, and results.md's columns of them.
TIMING_COLUMNS = ("pretrain_seconds", "examples_per_second", "flops_per_second", "command")
TIMING_HEADERS = ("pretraining (s)", "ex/s", "FLOP/s")
# results.md's lines of how the table was made that time the run or name
# its command (its output folder).
TIMING_LINES = ("- wall time of this invocation", "- pretraining wall time", "- command: ")


def make_inputs(work):
  """A topic corpus and a tiny model config in `work`."""
  import pathlib  # pylint: disable=g-import-not-at-top
  sys.path.insert(0, os.path.join(REPO, "tests"))
  from helpers.topic_corpus import write_corpus  # pylint: disable=g-import-not-at-top
  work = pathlib.Path(work)
  config = {"vocab_size": 100, "hidden_size": 16, "num_hidden_layers": 1,
            "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 32,
            "type_vocab_size": 2, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
            "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02}
  (work / "tiny.json").write_text(json.dumps(config))
  return {"corpus": write_corpus(work / "corpus.txt"), "config": str(work / "tiny.json")}


def compare_args(inputs, out):
  return [f"--corpus={inputs['corpus']}", f"--output_dir={out}",
          f"--bert_config_file={inputs['config']}", "--objectives=mlm_nsp",
          "--vocab_size=120", "--heldout_every=2", "--max_seq_length=32", "--dupe_factor=1",
          "--num_train_steps=3", "--train_batch_size=8", "--probes=sop", "--seeds=1",
          "--finetune_epochs=1", "--max_probe_examples=64"]


def _without_timing_csv(text):
  rows = list(csv.DictReader(io.StringIO(text)))
  return [{k: v for k, v in r.items() if k not in TIMING_COLUMNS} for r in rows]


def _without_timing_md(text, out_dir):
  """results.md with the cells of its timing columns blanked (in every table
  whose header names them) and the output folder's path (in its notes) as
  OUTPUT_DIR."""
  out, drop = [], []
  for line in text.replace(out_dir, "OUTPUT_DIR").splitlines():
    if line.startswith("|"):
      cells = line.split("|")
      if any(c.strip() in TIMING_HEADERS for c in cells):
        drop = [i for i, c in enumerate(cells) if c.strip() in TIMING_HEADERS]
      elif not set(line) <= set("|-: "):
        cells = [("" if i in drop else c) for i, c in enumerate(cells)]
      out.append("|".join(cells))
    else:
      drop = []
      if not line.startswith(TIMING_LINES):
        out.append(line)
  return out


def _read_text(path):
  """The text of `path` (local or gs://), or None where it is not there."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.io.gfile.exists(path):
    return None
  with tf.io.gfile.GFile(path, "rb") as f:
    return f.read().decode("utf-8")


def results_view(out):
  """(results.csv rows, results.md lines), both without timing, or None;
  `out` local or gs://."""
  csv_text, md_text = (_read_text(os.path.join(out, n)) for n in ("results.csv", "results.md"))
  if csv_text is None or md_text is None:
    return None
  return _without_timing_csv(csv_text), _without_timing_md(md_text, out)


def _unkeyed(rel):
  """A path under the output folder without the fine-tuning settings' key
  (stages.finetune_path), which hashes the task's folder and so differs
  between two output folders."""
  return re.sub(r"(finetune/[^/]+)-[0-9a-f]{8}(/|$)", r"\1\2", rel)


def _relative(path, root):
  return path[len(root):].strip("/")


def partial_files(out, ref):
  """Final-named files under `out` that a reader would find cut short;
  `out` and `ref` local or gs://."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  gfile = tf.io.gfile
  ref_files = {_unkeyed(_relative(os.path.join(root, n), ref)): os.path.join(root, n)
               for root, _, names in gfile.walk(ref) for n in names}
  bad = []
  for root, _, names in gfile.walk(out):
    rel_root = _relative(root, out) or "."
    if ".tmp" in rel_root:
      continue
    if "checkpoint" in names:
      _, problem = kill_sweep.checkpoint_state(root)
      if problem:
        bad.append(f"{rel_root}/checkpoint: {problem}")
    for name in names:
      if ".tmp" in name:
        continue
      path = os.path.join(root, name)
      rel = _relative(path, out)
      try:
        if name.endswith(".tfrecord"):
          for _ in tf.data.TFRecordDataset(path).batch(1024):
            pass
        elif name.endswith(".json"):
          with gfile.GFile(path) as f:
            json.load(f)
        elif name.endswith((".txt", ".tsv")):
          with gfile.GFile(path, "rb") as f, gfile.GFile(ref_files[_unkeyed(rel)], "rb") as g:
            if f.read() != g.read():
              bad.append(f"{rel}: differs from the uninterrupted run's")
        elif ".tfevents." in name:
          for _ in tf.data.TFRecordDataset(path):
            pass
      except Exception as e:  # noqa: BLE001 - anything unreadable is partial
        bad.append(f"{rel}: {type(e).__name__}")
  return bad


def run_sweep(work, points, log=print, only=None, outputs=None):
  """Runs the sweep in `work` (created); returns the result dict. only: a
  predicate on (event name, delay) that keeps some of the chosen points;
  outputs: where the comparisons' output folders go (e.g. a gs:// folder;
  default `work`)."""
  os.makedirs(work, exist_ok=True)
  outputs = outputs or work
  inputs = make_inputs(work)
  ref = os.path.join(outputs, "compare_ref")
  events_log = os.path.join(work, "compare_events.log")
  started = time.time()
  code, err = kill_sweep.run_tool(COMPARE, compare_args(inputs, ref), work,
                                  events_log=events_log, timeout=1200)
  assert code == 0, err[-3000:]
  clean_seconds = time.time() - started
  events = kill_sweep.read_events(events_log)
  want = results_view(ref)
  result = {"tool": "compare_objectives", "events": len(events),
            "clean_run_seconds": round(clean_seconds), "points": 0, "killed": 0,
            "partial_seen": 0, "reruns_identical": 0, "excluded_columns": list(TIMING_COLUMNS),
            "failures": []}
  chosen = kill_sweep.choose_points(events, points)
  for index, delay in [(i, d) for i, d in chosen if only is None or only(events[i - 1], d)]:
    out = os.path.join(outputs, f"compare_{index}_{delay}")
    code, _ = kill_sweep.run_tool(COMPARE, compare_args(inputs, out), work, kill_at=index,
                                  delay=delay, timeout=1200)
    result["points"] += 1
    result["killed"] += code == -signal.SIGKILL
    bad = partial_files(out, ref)
    result["partial_seen"] += bool(bad)
    code, err = kill_sweep.run_tool(COMPARE, compare_args(inputs, out), work, timeout=1200)
    got = results_view(out) if code == 0 else None
    same = got == want
    result["reruns_identical"] += same
    if bad or not same:
      diff = ""
      if got is not None:
        diff = str([(a, b) for a, b in zip(got[0], want[0]) if a != b][:2] or
                   [(a, b) for a, b in zip(got[1], want[1]) if a != b][:2])[:600]
      result["failures"].append(f"event {index}+{delay}s ({events[index - 1]}): partial "
                                f"{bad}, rerun exit {code}, identical {same} {diff} "
                                f"{err[-400:] if code else ''}")
    log(f"compare event {index}+{delay}s {events[index - 1]}: partial={bad} identical={same}")
    kill_sweep.remove_tree(out)
  return result


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
  parser.add_argument("--points", type=int, default=12, help="kill points")
  parser.add_argument("--out", default="/tmp/kill_compare", help="work folder (emptied)")
  args = parser.parse_args()
  shutil.rmtree(args.out, ignore_errors=True)
  start = time.time()
  result = run_sweep(args.out, args.points,
                     log=lambda line: print(line, file=sys.stderr, flush=True))
  print(json.dumps(result))
  print(json.dumps({"seconds": round(time.time() - start)}))
  return 1 if result["failures"] else 0


if __name__ == "__main__":
  sys.exit(main())
