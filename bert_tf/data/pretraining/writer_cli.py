"""What the data tool (bert_tf.create_pretraining_data) does around the
writer: its flag checks, the output folder's claim (what its records are
written from), the output folders a failed run leaves behind, and the
summary it logs."""

import contextlib
import dataclasses
import hashlib
import os

from absl import logging

from bert_tf.io import file_io
from bert_tf.data.pretraining import writer


class FlagError(ValueError):
  """A missing or contradictory flag of the data tool (its usage error)."""


def outputs_from_flags(output_file, output_dir, num_output_shards, gzip):
  """The writer.Outputs of --output_file (comma-separated paths) or
  --output_dir with --num_output_shards; raises FlagError unless exactly
  one is given and the shard count is positive."""
  if bool(output_file) == bool(output_dir):
    raise FlagError("give exactly one of --output_file and --output_dir")
  if num_output_shards < 1:
    raise FlagError(f"--num_output_shards={num_output_shards}: must be at least 1")
  if output_file:
    return writer.Outputs(files=tuple(p.strip() for p in output_file.split(",") if p.strip()),
                          gzip=gzip)
  return writer.Outputs(directory=output_dir, num_shards=num_output_shards, gzip=gzip)


def num_workers_of(flag_value):
  """--num_workers, None or 0 meaning all cores; raises FlagError below 1."""
  num_workers = flag_value or writer.default_num_workers()
  if num_workers < 1:
    raise FlagError(f"--num_workers={num_workers}: must be at least 1")
  return num_workers


# Written into an --output_dir before any record: what the records there are
# written from, so a rerun of the same input resumes and another input is
# refused instead of rewriting the folder.
CLAIM_NAME = "writer_run.json"


def claim_of(input_patterns, outputs, options, vocab_file, spm_model_file=None):
  """What a run writes from (a JSON dict): the input files with their
  sizes, the vocab (path and sha256), the options and shards."""
  inputs = file_io.expand_patterns(input_patterns)
  vocab = spm_model_file or vocab_file
  return {"inputs": [[p, file_io.size(p)] for p in inputs],
          "vocab": [vocab, hashlib.sha256(file_io.read_bytes(vocab, "vocab")).hexdigest()],
          "options": dataclasses.asdict(options), "num_output_shards": outputs.num_shards,
          "gzip": bool(outputs.gzip)}


def _recorded_claim(directory):
  """The claim of the run that wrote `directory` (from its claim file, else
  from a manifest.json of a run that wrote none), or None."""
  from bert_tf.data.records import manifest as manifest_lib  # pylint: disable=g-import-not-at-top
  path = f"{directory.rstrip('/')}/{CLAIM_NAME}"
  if file_io.exists(path):
    return file_io.read_json(path, "writer claim file")
  return _claim_of_manifest(manifest_lib.manifest_path_for_dir(directory))


def _claim_of_manifest(manifest_path):
  """The claim recorded in a manifest (input paths without sizes, the
  vocab, the options, gzip and the record files), or None without one."""
  from bert_tf.data.records import manifest as manifest_lib  # pylint: disable=g-import-not-at-top
  if not file_io.exists(manifest_path):
    return None
  manifest = manifest_lib.Manifest.read(manifest_path)
  flags = dict(manifest.flags or {})
  inputs = [[p, None] for p in flags.pop("input_file", "").split(",") if p]
  gzip = flags.pop("gzip", None)
  claim = {"inputs": inputs, "options": flags, "gzip": gzip}
  if manifest.vocab_path and manifest.vocab_sha256:
    claim["vocab"] = [manifest.vocab_path, manifest.vocab_sha256]
  if manifest.files:
    claim["output_files"] = list(manifest.files)
  return claim


def _claim_differences(old, new):
  """Short phrases of what differs between two claims (the keys `old` has)."""
  out = []
  old_inputs = old.get("inputs") or []
  if any(size is None for _, size in old_inputs):  # a manifest's: paths only
    differ = [p for p, _ in old_inputs] != [p for p, _ in new["inputs"]]
  else:
    differ = [list(i) for i in old_inputs] != new["inputs"]
  if differ:
    out.append(f"inputs {_names(old_inputs)} -> {_names(new['inputs'])}")
  if "vocab" in old and list(old["vocab"]) != new["vocab"]:
    out.append(f"vocab {old['vocab'][0]} -> {new['vocab'][0]}"
               + (" (other contents)" if old["vocab"][0] == new["vocab"][0] else ""))
  options = old.get("options") or {}
  changed = sorted(k for k in options if k in new["options"] and options[k] != new["options"][k])
  if changed:
    out.append("options " + ", ".join(f"{k} {options[k]!r} -> {new['options'][k]!r}"
                                      for k in changed))
  for key in ("num_output_shards", "gzip"):
    if old.get(key) is not None and key in new and old[key] != new[key]:
      out.append(f"{key} {old[key]} -> {new[key]}")
  if old.get("output_files") and "output_files" in new and (
      list(old["output_files"]) != list(new["output_files"])):
    out.append(f"--output_file {','.join(old['output_files'])} -> "
               f"{','.join(new['output_files'])}")
  return out


def _names(inputs):
  paths = [p for p, _ in inputs]
  return ",".join(paths[:2]) + (f" and {len(paths) - 2} more" if len(paths) > 2 else "")


def claim_output_dir(directory, claim, overwrite):
  """Checks that --output_dir holds nothing or records of this same input,
  and records `claim` there before any record is written.

  With `overwrite`, the records, stats, manifest and token caches of an
  earlier run in `directory` are removed first, whichever run wrote them:
  every shard is written again (a rerun without it reuses the shards that
  pass their check and rewrites the others: shards.check_shard).

  Raises:
    FileExistsError: one line naming the folder, the old and new inputs (or
      whatever else differs) and --overwrite.
  """
  import tensorflow as tf
  old = _recorded_claim(directory)
  diffs = _claim_differences(old, claim) if old is not None else []
  if diffs and not overwrite:
    raise FileExistsError(
        f"--output_dir={directory} holds the records of another run ({'; '.join(diffs)}); "
        "pass --overwrite to replace them, or choose another --output_dir")
  if overwrite and file_io.isdir(directory):
    removed = 0
    for name in file_io.listdir(directory):
      name = name.rstrip("/")
      if name.startswith(("pretrain-", ".tokens-", ".blocks")) or name == "manifest.json":
        path = f"{directory.rstrip('/')}/{name}"
        if file_io.isdir(path):
          file_io.rmtree(path)
        else:
          file_io.remove(path)
        removed += 1
    if removed:
      logging.info("--overwrite: removed the records of the earlier run in %s (%s); writing "
                   "every shard again", directory, "; ".join(diffs) or "same input and options")
  path = f"{directory.rstrip('/')}/{CLAIM_NAME}"
  try:
    file_io.write_json(path, claim)
  except (OSError, tf.errors.OpError) as e:
    message = getattr(e, "message", None) or str(e)
    raise PermissionError(f"cannot write output {path}: {type(e).__name__}: "
                          f"{message.splitlines()[0] if message else ''}") from None


def check_output_files(outputs, claim, overwrite):
  """Checks that --output_file names no record file that another input (or
  other options, vocab or files) wrote, by the manifest beside its first
  file: the folder's rule (claim_output_dir) for a records file. The same
  command again rewrites the file; `overwrite` rewrites another run's.

  Raises:
    FileExistsError: one line naming the file, what differs and --overwrite.
  """
  first = outputs.files[0]
  if not file_io.exists(first):
    return
  old = _claim_of_manifest(outputs.manifest_path())
  new = dict(claim, output_files=list(outputs.files))
  new.pop("num_output_shards", None)
  diffs = _claim_differences(old, new) if old is not None else []
  if diffs and not overwrite:
    raise FileExistsError(
        f"--output_file={first} holds the records of another run ({'; '.join(diffs)}, by "
        f"{outputs.manifest_path()}); pass --overwrite to replace them, or choose another "
        "--output_file")
  if diffs:
    logging.info("--overwrite: replacing %s, the records of another run (%s)", first,
                 "; ".join(diffs))


@contextlib.contextmanager
def removed_if_left_empty(folders):
  """On an error, removes the folders (and their missing parents) that did
  not exist before and hold no file: a failed run leaves no empty output
  folder behind. Folders with files stay (shards a rerun resumes from)."""
  new = []
  for folder in folders:
    outermost = ""
    while folder and not file_io.exists(folder):
      outermost, folder = folder, os.path.dirname(folder.rstrip("/"))
    if outermost:
      new.append(outermost)
  try:
    yield
  except BaseException:
    for folder in new:
      # Its claim alone is not a result.
      if file_io.exists(folder) and not any(
          set(files) - {CLAIM_NAME} for _, _, files in file_io.walk(folder)):
        file_io.rmtree(folder)
    raise


def pair_share_phrase(manifest):
  """The share of class-1 sentence pairs, named for the records' sentence
  task: "| NSP random 0.498 " (B from another document), "| SOP swapped
  0.498 " (A and B in the other order), or "" for records without pairs."""
  task = manifest.get("flags", {}).get("sentence_task", "nsp")
  share = manifest["shares"].get("nsp_random")
  if task == "none" or share is None:
    return ""
  return f"| {'SOP swapped' if task == 'sop' else 'NSP random'} {share:.3f} "


def log_summary(manifest, outputs):
  """Logs a finished run's summary from its manifest dict (what both drivers
  return): what was written, how fast, the masking and sentence-pair shares,
  and where the manifest is."""
  counts, shares = manifest["counts"], manifest["shares"]
  logging.info("wrote %d instances from %d documents to %d file(s) in %.1f s (%.0f instances/s)",  # noqa
               counts["instances"], counts["documents"], len(manifest["files"]),
               manifest["run"]["seconds"],
               counts["instances"] / max(manifest["run"]["seconds"], 1e-9))
  logging.info("mean tokens %.1f | predictions/instance %.2f | [MASK] %.3f kept %.3f random %.3f "
               "%s| undecodable bytes %d", shares["mean_tokens"],
               shares["predictions_per_instance"], shares["masked"], shares["kept"],
               shares["random"], pair_share_phrase(manifest), counts["undecodable_bytes"])
  logging.info("manifest: %s", outputs.manifest_path())
