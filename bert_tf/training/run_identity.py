"""What a training output directory is a run of: its `run_identity.json`.

A run directory is resumed by running the same command again; a command of
another run pointed at it (another model config, objective or training
records) must not continue that run's checkpoints as if they were its own.
The identity is written atomically when a run starts, before its first
checkpoint, and checked by every later run into the same directory:

  model      the BertConfig's keys (bert_config.json)
  objective  the objective's name and the networks it fixes (ELECTRA's
             generator), as `objectives.check_objective` compares them
  records    what the training records are (None for an evaluation-only
             run, whose records are not part of the identity): with a
             manifest, the data writer's inputs and a digest of the manifest
             without its file paths and timings (the same data written again,
             or moved, keeps it); without one, the record files' names and
             sizes

A directory with checkpoints and no identity file (written by a run that did
not record one) is resumed unchecked, and gets this run's identity.
Evaluation settings, the schedule, batch sizes and step counts are not part
of it: raising --num_train_steps continues the same run.
"""

import hashlib
import json
import os

import tensorflow as tf
from absl import logging

from bert_tf.io import file_io
from bert_tf.training import checkpoints

IDENTITY_NAME = "run_identity.json"
# Manifest parts that differ between two writes of the same records.
_MANIFEST_VOLATILE = ("run", "files")


def records_identity(info):
  """The identity of training records (a pipeline.DataInfo), a JSON dict."""
  manifest = info.manifest
  if manifest is not None:
    stable = {k: v for k, v in manifest.to_dict().items() if k not in _MANIFEST_VOLATILE}
    stable["vocab"] = {k: v for k, v in (stable.get("vocab") or {}).items() if k != "path"}
    digest = hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest()
    inputs = (manifest.flags or {}).get("input_file", "")
    return {"inputs": inputs, "manifest": manifest.path, "digest": digest[:16]}
  sized = [(os.path.basename(p), file_io.size(p)) for p in info.files]
  digest = hashlib.sha256(json.dumps(sized).encode()).hexdigest()
  return {"inputs": ",".join(info.files), "manifest": None, "digest": digest[:16]}


def identity_of(bert_config, objective, train_info):
  """The identity of a run of `objective` on `bert_config` training on
  `train_info` (None: an evaluation-only run)."""
  return {"model": bert_config.to_dict(), "objective": objective.name,
          "networks": [float(n) if isinstance(n, (int, float)) else str(n)
                       for n in objective.networks],
          "records": records_identity(train_info) if train_info is not None else None}


def read(output_dir):
  """The identity recorded in `output_dir`, or None when there is none."""
  path = os.path.join(output_dir, IDENTITY_NAME)
  if not file_io.exists(path):
    return None
  saved = file_io.read_json(path, "run identity file")
  if not isinstance(saved, dict) or "model" not in saved:
    raise ValueError(f"{path}: not a run identity file (no 'model'); remove it to resume "
                     "the run unchecked")
  return saved


def differences(saved, identity):
  """What differs between two identities: a list of short phrases."""
  out = []
  old_model, new_model = saved.get("model") or {}, identity["model"]
  keys = sorted(k for k in set(old_model) | set(new_model)
                if old_model.get(k) != new_model.get(k))
  if keys:
    out.append("model config " + ", ".join(
        f"{k} {old_model.get(k)!r} -> {new_model.get(k)!r}" for k in keys[:3])
        + (f" and {len(keys) - 3} more" if len(keys) > 3 else ""))
  for key in ("objective", "networks"):
    if saved.get(key) != identity[key]:
      out.append(f"{key} {saved.get(key)} -> {identity[key]}")
  old, new = saved.get("records"), identity["records"]
  if old and new and old.get("digest") != new.get("digest"):
    out.append(f"training records {_records_name(old)} -> {_records_name(new)}")
  return out


def _records_name(records):
  where = records.get("manifest") or records.get("inputs")
  inputs = records.get("inputs")
  return f"{where} (inputs {inputs})" if records.get("manifest") and inputs else str(where)


def check(output_dir, identity):
  """Refuses to continue another run in `output_dir`.

  Returns:
    The identity recorded there (dict), or None when there is none.
  Raises:
    ValueError: one line naming what differs, when `output_dir` holds the
      identity of another run.
  """
  latest = tf.train.latest_checkpoint(output_dir)
  if latest:
    checkpoints.check_readable(latest)  # a missing shard: named here, not in a restore
  saved = read(output_dir)
  if saved is None:
    if latest:
      logging.info("%s holds checkpoints but no %s: resuming them unchecked; this run's "
                   "identity is recorded there", output_dir, IDENTITY_NAME)
    return None
  diffs = differences(saved, identity)
  if diffs and not latest:
    # Killed before its first checkpoint: nothing of that run to continue.
    logging.info("%s: the run recorded there (%s) left no checkpoint; starting this one",
                 output_dir, "; ".join(diffs))
    file_io.remove(os.path.join(output_dir, IDENTITY_NAME))
    return None
  if diffs:
    raise ValueError(
        f"--output_dir={output_dir} holds another run ({'; '.join(diffs)}): use a new "
        f"--output_dir, or start from that run's weights deliberately with "
        f"--init_checkpoint={output_dir} and a new --output_dir")
  return saved


def write(output_dir, identity):
  """Records `identity` in `output_dir` (atomically) unless one is there."""
  path = os.path.join(output_dir, IDENTITY_NAME)
  if identity["records"] is None or file_io.exists(path):
    # An evaluation-only run does not know the training records: the
    # training run that comes later records them.
    return
  file_io.write_json(path, identity)
