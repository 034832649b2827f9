"""The JSON manifest written beside pretraining records.

It records what produced the records (every flag, the vocab's sha256 and
size, the schema version) and what they contain (counts, shares, length
histogram), so that training can check the records against its own flags and
config before its first step instead of failing mid-run.

Where it lives: `<output_dir>/manifest.json` for `--output_dir` runs, and
`<first output file>.manifest.json` for `--output_file` runs.
"""

import json

import tensorflow as tf

MANIFEST_NAME = "manifest.json"


def manifest_path_for_dir(output_dir):
  return output_dir.rstrip("/") + "/" + MANIFEST_NAME


def manifest_path_for_file(output_file):
  return output_file + ".manifest.json"


def write_json(obj, path):
  """Writes `obj` as JSON to `path` atomically (temp name, rename)."""
  tmp = path + ".tmp"
  with tf.io.gfile.GFile(tmp, "w") as f:
    f.write(json.dumps(obj, indent=1, sort_keys=True) + "\n")
  tf.io.gfile.rename(tmp, path, overwrite=True)


def write_manifest(manifest, path):
  """Writes `manifest` (a dict) to `path` atomically."""
  write_json(manifest, path)


def read_manifest(path):
  """Reads a manifest; raises FileNotFoundError or ValueError naming the file."""
  if not tf.io.gfile.exists(path):
    raise FileNotFoundError(f"{path}: no such manifest")
  with tf.io.gfile.GFile(path, "r") as f:
    text = f.read()
  try:
    manifest = json.loads(text)
  except json.JSONDecodeError as e:
    raise ValueError(f"{path}: not a bert_tf manifest (invalid JSON: {e})") from None
  if not isinstance(manifest, dict) or "schema_version" not in manifest:
    raise ValueError(f"{path}: not a bert_tf manifest (no schema_version)")
  return manifest


def find_manifest(input_patterns):
  """Finds the manifest of the records matched by `input_patterns`.

  Args:
    input_patterns: a list of file globs (or one comma-separated string), as
      given to training.
  Returns:
    The manifest dict of the first matched file that has one (its directory's
    `manifest.json`, or `<file>.manifest.json` of an `--output_file` run), or
    None for records written without one (e.g. by the original script).
  """
  if isinstance(input_patterns, str):
    input_patterns = [p for p in input_patterns.split(",") if p]
  for pattern in input_patterns:
    for path in sorted(tf.io.gfile.glob(pattern)):
      if path.endswith(".json"):
        continue
      candidates = [manifest_path_for_file(path)]
      if "/" in path:
        candidates.append(manifest_path_for_dir(path.rsplit("/", 1)[0]))
      else:
        candidates.append(MANIFEST_NAME)
      for candidate in candidates:
        if tf.io.gfile.exists(candidate):
          return read_manifest(candidate)
      # For --output_file runs, the manifest sits beside the first file of
      # the comma-separated list, which may not be this one.
      parent = path.rsplit("/", 1)[0] if "/" in path else "."
      for other in tf.io.gfile.glob(parent + "/*.manifest.json"):
        manifest = read_manifest(other)
        names = [f.rsplit("/", 1)[-1] for f in manifest.get("files", [])]
        if path.rsplit("/", 1)[-1] in names:
          return manifest
  return None
