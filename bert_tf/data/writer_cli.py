"""What the data tool (bert_tf.create_pretraining_data) does around the
writer: its flag checks, the output folders a failed run leaves behind, and
the summary it logs."""

import contextlib
import os

from absl import logging

from bert_tf.data import writer


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


@contextlib.contextmanager
def removed_if_left_empty(folders):
  """On an error, removes the folders (and their missing parents) that did
  not exist before and hold no file: a failed run leaves no empty output
  folder behind. Folders with files stay (shards a rerun resumes from)."""
  import tensorflow as tf
  new = []
  for folder in folders:
    outermost = ""
    while folder and not tf.io.gfile.exists(folder):
      outermost, folder = folder, os.path.dirname(folder.rstrip("/"))
    if outermost:
      new.append(outermost)
  try:
    yield
  except BaseException:
    for folder in new:
      if tf.io.gfile.exists(folder) and not any(
          files for _, _, files in tf.io.gfile.walk(folder)):
        tf.io.gfile.rmtree(folder)
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
