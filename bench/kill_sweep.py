"""Kills the data writer, the trainer and the exporter with SIGKILL at a
sweep of points inside their writes, and checks what a user would see.

  PYTHONPATH=$PWD .venv/bin/python bench/kill_sweep.py --points=12 --out=/tmp/kill_sweep

For each tool a clean run is made first, its write events counted
(bench/kill_inject.py: every GFile write and close, rename, removal, record
written, checkpoint save and SavedModel save, in order). Then, for each
chosen point (the structural events: renames, removals, closes, saves, and
evenly spaced ones between them; for saves also a few delays into the save's
own C++ writes), a fresh run is killed there and:

  1. no reader sees a partial file under a final name: every final-named
     record shard reads to its end, manifests and stats files parse, the
     checkpoint the `checkpoint` file names is complete, an export folder
     under its final name holds every file of a complete one;
  2. the same command run again finishes, and its output is identical to
     the uninterrupted run's: the writer's shards and manifest (but its
     timings) byte for byte; the trainer resumes from the latest complete
     checkpoint and its final weights equal those of an uninterrupted run
     resumed at the same step (the input order after a resume is seeded by
     the step); the exporter's transformers folder byte for byte and its
     SavedModel's file names and variables.

Prints one JSON line per tool with the counts (points killed, partial files
seen, reruns identical) and exits non-zero on any failure. tests/
test_kill_sweep.py runs a few points of it.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INJECT = os.path.join(REPO, "bench", "kill_inject.py")
# Events where a kill leaves the most telling state: a file being published
# or removed, a file or record writer closed, a save begun.
STRUCTURAL = ("rename", "remove", "rmtree", "delete", "atomic_write", "TFRecordWriter.close",
              "CheckpointManager.save", "saved_model.save")
SAVE_DELAYS_S = (0.02, 0.1, 0.3)


def _env(extra=None):
  env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
  env.update(extra or {})
  return env


def run_tool(module, args, cwd, kill_at=0, delay=0.0, events_log=None, timeout=600):
  """Runs the tool under the injector; returns (returncode, stderr)."""
  extra = {"KILL_AT_EVENT": str(kill_at), "KILL_DELAY_S": str(delay)}
  if events_log:
    extra["KILL_EVENTS_LOG"] = events_log
  proc = subprocess.run([sys.executable, INJECT, module] + args, cwd=cwd, env=_env(extra),
                        capture_output=True, text=True, timeout=timeout)
  return proc.returncode, proc.stderr


def read_events(path):
  with open(path, encoding="utf-8") as f:
    return [line.split()[1] for line in f if line.strip()]


def choose_points(events, count, first_event=None):
  """Up to `count` (event index, delay) kill points: structural events and
  evenly spaced others from `first_event` (a name: its first occurrence) on;
  saves also with delays into their own writes."""
  if count < 1:
    return []
  start = events.index(first_event) if first_event in events else 0
  indices = range(start + 1, len(events) + 1)
  structural = [i for i in indices if any(s in events[i - 1] for s in STRUCTURAL)]
  others = [i for i in indices if i not in set(structural)]
  spaced = ([others[int((k + 0.5) * len(others) / count)] for k in range(count)]
            if others and count else [])
  points = sorted(set(structural) | set(spaced))
  if len(points) > count:
    points = [points[int((k + 0.5) * len(points) / count)] for k in range(count)]
  out = [(i, 0.0) for i in points]
  saves = [i for i in indices if events[i - 1] in ("CheckpointManager.save", "saved_model.save")]
  for k, delay in enumerate(SAVE_DELAYS_S[:max(1, count // 4)]):
    if saves:
      out.append((saves[k % len(saves)], delay))
  return out


# ----------------------------------------------------------------------------
# Readers: what a user's tool would see under the final names
# ----------------------------------------------------------------------------


def partial_records(folder):
  """Final-named record shards that do not read to their end, and sidecar
  JSON files that do not parse."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  gfile = tf.io.gfile
  bad = []
  for name in sorted(gfile.listdir(folder)) if gfile.isdir(folder) else []:
    path = os.path.join(folder, name)
    if ".tmp" in name or gfile.isdir(path):
      continue
    try:
      if name.endswith(".tfrecord"):
        for _ in tf.data.TFRecordDataset(path).batch(1024):
          pass
      elif name.endswith(".json"):
        with gfile.GFile(path) as f:
          json.load(f)
    except Exception as e:  # noqa: BLE001 - anything unreadable is partial
      bad.append(f"{name}: {type(e).__name__}")
  return bad


def checkpoint_state(folder):
  """(latest step the `checkpoint` file names or 0, problem or None)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert_tf.training import checkpoints  # pylint: disable=g-import-not-at-top
  if not tf.io.gfile.exists(os.path.join(folder, "checkpoint")):
    return 0, None
  try:
    latest = tf.train.latest_checkpoint(folder)
    if latest is None:
      return 0, "a 'checkpoint' file naming no checkpoint"
    checkpoints.check_readable(latest)
    tf.train.load_checkpoint(latest).get_variable_to_shape_map()
  except Exception as e:  # noqa: BLE001
    return 0, f"{type(e).__name__}: {str(e)[:200]}"
  return int(latest.rsplit("-", 1)[1]), None


def model_weights(prefix):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  reader = tf.train.load_checkpoint(prefix)
  return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()
          if k.startswith("model/")}


def tree_files(folder):
  """{relative path: bytes} of the files under `folder` ({} if absent);
  local or gs://."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  out = {}
  if not tf.io.gfile.isdir(folder):
    return out
  for root, _, names in tf.io.gfile.walk(folder):
    for name in names:
      path = os.path.join(root, name)
      with tf.io.gfile.GFile(path, "rb") as f:
        out[path[len(folder):].strip("/")] = f.read()
  return out


def remove_tree(path):
  """Removes the folder `path` (local or gs://) if it is there."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if tf.io.gfile.exists(path):
    tf.io.gfile.rmtree(path)


# ----------------------------------------------------------------------------
# The three tools
# ----------------------------------------------------------------------------


def make_inputs(work):
  """A corpus, a vocab and a tiny bert_config.json in `work`."""
  sys.path.insert(0, os.path.join(REPO, "tests"))
  import pathlib  # pylint: disable=g-import-not-at-top
  import test_create_pretraining_data as t  # pylint: disable=g-import-not-at-top
  work = pathlib.Path(work)
  vocab = t.write_vocab(work / "vocab.txt")
  corpus = t.write_corpus(work / "corpus.txt", num_docs=120)
  config = {"vocab_size": len(t.VOCAB), "hidden_size": 16, "num_hidden_layers": 1,
            "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 64,
            "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
            "attention_probs_dropout_prob": 0.1, "type_vocab_size": 2,
            "initializer_range": 0.02}
  (work / "bert_config.json").write_text(json.dumps(config))
  return {"vocab": vocab, "corpus": corpus, "config": str(work / "bert_config.json")}


WRITER = "bert_tf.create_pretraining_data"
TRAINER = "bert_tf.run_pretraining"
EXPORTER = "bert_tf.export_saved_model"


def writer_args(inputs, out):
  return [f"--input_file={inputs['corpus']}", f"--vocab_file={inputs['vocab']}",
          f"--output_dir={out}", "--num_output_shards=3", "--dupe_factor=2",
          "--num_workers=1", "--max_seq_length=32", "--max_predictions_per_seq=5",
          "--block_bytes=3000"]


def trainer_args(inputs, records, out, keep=2):
  return [f"--bert_config_file={inputs['config']}", f"--input_file={records}/*.tfrecord",
          f"--output_dir={out}", "--do_train", "--train_batch_size=8", "--max_seq_length=32",
          "--max_predictions_per_seq=5", "--num_train_steps=6", "--num_warmup_steps=1",
          "--learning_rate=1e-3", "--save_checkpoints_steps=2", "--iterations_per_loop=2",
          "--log_steps=2", f"--keep_checkpoint_max={keep}"]


def exporter_args(inputs, checkpoint, out):
  return [f"--checkpoint={checkpoint}", f"--bert_config_file={inputs['config']}",
          f"--vocab_file={inputs['vocab']}", "--max_seq_length=32", "--notext_signatures",
          f"--export_dir={out}/saved_model", f"--hf_out={out}/hf", "--overwrite"]


def _manifest_without_run(folder):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  with tf.io.gfile.GFile(os.path.join(folder, "manifest.json")) as f:
    manifest = json.load(f)
  manifest.pop("run", None)
  manifest["files"] = [os.path.basename(p) for p in manifest.get("files", [])]
  return manifest


def sweep_writer(work, inputs, count, log, outputs=None):
  outputs = outputs or work
  ref = os.path.join(outputs, "writer_ref")
  events_log = os.path.join(work, "writer_events.log")
  code, err = run_tool(WRITER, writer_args(inputs, ref), work, events_log=events_log)
  assert code == 0, err[-2000:]
  events = read_events(events_log)
  want = {n: b for n, b in tree_files(ref).items() if n.endswith(".tfrecord")}
  result = {"tool": "create_pretraining_data", "events": len(events), "points": 0, "killed": 0,
            "partial_seen": 0, "reruns_identical": 0, "failures": []}
  for index, delay in choose_points(events, count):
    out = os.path.join(outputs, f"writer_{index}")
    code, _ = run_tool(WRITER, writer_args(inputs, out), work, kill_at=index, delay=delay)
    result["points"] += 1
    result["killed"] += code == -signal.SIGKILL
    bad = partial_records(out)
    result["partial_seen"] += bool(bad)
    code, err = run_tool(WRITER, writer_args(inputs, out), work)
    got = {n: b for n, b in tree_files(out).items() if n.endswith(".tfrecord")}
    same = code == 0 and got == want and _manifest_without_run(out) == _manifest_without_run(ref)
    result["reruns_identical"] += same
    if bad or not same:
      result["failures"].append(f"event {index} ({events[index - 1]}): partial {bad}, rerun "
                                f"exit {code}, identical {same} {err[-300:] if code else ''}")
    log(f"writer event {index} {events[index - 1]}: partial={bad} identical={same}")
    remove_tree(out)
  return result, ref


def sweep_trainer(work, inputs, records, count, log, outputs=None):
  outputs = outputs or work
  ref = os.path.join(outputs, "trainer_ref")
  events_log = os.path.join(work, "trainer_events.log")
  code, err = run_tool(TRAINER, trainer_args(inputs, records, ref), work, events_log=events_log)
  assert code == 0, err[-2000:]
  events = read_events(events_log)
  # resumed-at step -> final weights of the uninterrupted run resumed there:
  # its checkpoint of that step alone in a folder, and the same command.
  references = {0: model_weights(os.path.join(ref, "ckpt-6"))}
  references[6] = references[0]
  every = os.path.join(outputs, "trainer_every_checkpoint")
  if count:
    code, err = run_tool(TRAINER, trainer_args(inputs, records, every, keep=10), work)
    assert code == 0, err[-2000:]

  def reference(step):
    if step not in references:
      import tensorflow as tf  # pylint: disable=g-import-not-at-top
      out = os.path.join(outputs, f"trainer_resumed_at_{step}")
      tf.io.gfile.makedirs(out)
      for name in tf.io.gfile.listdir(every):
        if name.startswith(f"ckpt-{step}.") or name == "run_identity.json":
          tf.io.gfile.copy(os.path.join(every, name), os.path.join(out, name))
      with tf.io.gfile.GFile(os.path.join(out, "checkpoint"), "w") as f:
        f.write(f'model_checkpoint_path: "ckpt-{step}"\n'
                f'all_model_checkpoint_paths: "ckpt-{step}"\n')
      code, err = run_tool(TRAINER, trainer_args(inputs, records, out), work)
      assert code == 0 and f"at step {step}" in err, err[-2000:]
      references[step] = model_weights(os.path.join(out, "ckpt-6"))
    return references[step]

  result = {"tool": "run_pretraining", "events": len(events), "points": 0, "killed": 0,
            "partial_seen": 0,
            "resumed_from_latest_complete": 0, "reruns_identical": 0, "failures": []}
  for index, delay in choose_points(events, count, first_event="CheckpointManager.save"):
    out = os.path.join(outputs, f"trainer_{index}_{delay}")
    code, _ = run_tool(TRAINER, trainer_args(inputs, records, out), work, kill_at=index,
                       delay=delay)
    result["points"] += 1
    result["killed"] += code == -signal.SIGKILL
    step, problem = checkpoint_state(out)
    result["partial_seen"] += problem is not None
    code, err = run_tool(TRAINER, trainer_args(inputs, records, out), work)
    resumed = (f"Resumed from {out}/ckpt-{step} at step {step}" in err) if step else (
        "Resumed from" not in err)
    result["resumed_from_latest_complete"] += code == 0 and resumed
    same = False
    if code == 0:
      import numpy as np  # pylint: disable=g-import-not-at-top
      got, want = model_weights(os.path.join(out, "ckpt-6")), reference(step)
      same = got.keys() == want.keys() and all(np.array_equal(got[k], want[k]) for k in got)
    result["reruns_identical"] += same
    if problem or not resumed or not same:
      result["failures"].append(f"event {index}+{delay}s ({events[index - 1]}): state "
                                f"{problem}, resumed right {resumed}, identical {same}, exit "
                                f"{code} {err[-300:] if code else ''}")
    log(f"trainer event {index}+{delay}s {events[index - 1]}: latest complete ckpt-{step} "
        f"problem={problem} resumed_right={resumed} identical={same}")
    remove_tree(out)
  return result, ref


def _export_view(out):
  """What must match between two exports: the transformers folder's bytes,
  the SavedModel's file names and variables."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  hf = tree_files(os.path.join(out, "hf"))
  saved = os.path.join(out, "saved_model")
  names = sorted(tree_files(saved)) if tf.io.gfile.isdir(saved) else None
  variables = None
  if names and "variables/variables.index" in names:
    reader = tf.train.load_checkpoint(os.path.join(saved, "variables", "variables"))
    variables = {k: reader.get_tensor(k).tobytes() for k in reader.get_variable_to_shape_map()
                 if "OBJECT_GRAPH" not in k}
  return hf, names, variables


def sweep_exporter(work, inputs, checkpoint, count, log, outputs=None):
  outputs = outputs or work
  ref = os.path.join(outputs, "export_ref")
  events_log = os.path.join(work, "export_events.log")
  code, err = run_tool(EXPORTER, exporter_args(inputs, checkpoint, ref), work,
                       events_log=events_log)
  assert code == 0, err[-2000:]
  events = read_events(events_log)
  want = _export_view(ref)
  result = {"tool": "export_saved_model --hf_out", "events": len(events), "points": 0,
            "killed": 0, "partial_seen": 0, "unfinished_without_completing_file": 0,
            "reruns_identical": 0, "failures": []}
  for index, delay in choose_points(events, count):
    out = os.path.join(outputs, f"export_{index}_{delay}")
    code, _ = run_tool(EXPORTER, exporter_args(inputs, checkpoint, out), work, kill_at=index,
                       delay=delay)
    result["points"] += 1
    result["killed"] += code == -signal.SIGKILL
    hf, names, _ = _export_view(out)
    bad = [f"hf/{n}" for n in hf if n not in want[0] or hf[n] != want[0][n]]
    # A folder under its final name is a model to its readers when it holds
    # its completing file (file_io.COMPLETING_NAMES); one moved file by file
    # (gs://) and stopped half-way lacks it, which they take for no model.
    unmarked = 0
    if hf and set(hf) != set(want[0]):
      if "config.json" in hf:
        bad.append("hf: files " + ",".join(sorted(set(want[0]) - set(hf))[:3]) + " missing")
      unmarked += "config.json" not in hf
    if names is not None and names != want[1]:
      if "saved_model.pb" in names:
        bad.append("saved_model: files " + ",".join(sorted(set(want[1]) - set(names))[:3])
                   + " missing")
      unmarked += "saved_model.pb" not in names
    result["partial_seen"] += bool(bad)
    result["unfinished_without_completing_file"] += unmarked > 0
    code, err = run_tool(EXPORTER, exporter_args(inputs, checkpoint, out), work)
    same = code == 0 and _export_view(out) == want
    result["reruns_identical"] += same
    if bad or not same:
      result["failures"].append(f"event {index}+{delay}s ({events[index - 1]}): partial {bad}, "
                                f"identical {same} {err[-300:] if code else ''}")
    log(f"export event {index}+{delay}s {events[index - 1]}: partial={bad} identical={same}")
    remove_tree(out)
  return result


def run_sweep(work, points, tools=("writer", "trainer", "exporter"), log=print, outputs=None):
  """Runs the sweep of `points` kill points per tool in `work` (the inputs,
  the event logs; the tools' outputs too unless `outputs` names another
  folder, e.g. on gs://); returns the list of per-tool result dicts."""
  os.makedirs(work, exist_ok=True)
  inputs = make_inputs(work)
  results = []
  writer_result, records = sweep_writer(work, inputs, points if "writer" in tools else 0, log,
                                        outputs)
  if "writer" in tools:
    results.append(writer_result)
  if "trainer" in tools or "exporter" in tools:
    trainer_result, trained = sweep_trainer(
        work, inputs, records, points if "trainer" in tools else 0, log, outputs)
    if "trainer" in tools:
      results.append(trainer_result)
    if "exporter" in tools:
      results.append(sweep_exporter(work, inputs, trained, points, log, outputs))
  return results


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--points", type=int, default=12, help="kill points per tool")
  parser.add_argument("--out", default="/tmp/kill_sweep", help="work folder (emptied)")
  parser.add_argument("--tools", default="writer,trainer,exporter")
  args = parser.parse_args()
  shutil.rmtree(args.out, ignore_errors=True)
  start = time.time()
  results = run_sweep(args.out, args.points, tuple(args.tools.split(",")),
                      log=lambda line: print(line, file=sys.stderr, flush=True))
  for result in results:
    print(json.dumps(result))
  print(json.dumps({"seconds": round(time.time() - start)}))
  return 1 if any(r["failures"] for r in results) else 0


if __name__ == "__main__":
  sys.exit(main())
