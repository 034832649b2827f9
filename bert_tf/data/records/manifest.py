"""The JSON manifest written beside pretraining records: one frozen dataclass.

It records what produced the records (every option of the writer, the
vocab's sha256 and size, the schema version) and what they contain (counts,
shares, length histogram), so that training can check the records against
its own flags and config before its first step instead of failing mid-run.

`Manifest` is the one owner of it: built from the writer's totals
(`Manifest.from_totals`), written atomically (`write`), read from a path or
found beside the records (`read`, `find`), and checked against what training
needs (`check`). The JSON layout (indent 1, sorted keys):

  schema_version   int, bert_tf.data.records.schema.SCHEMA_VERSION of the records
  writer           str, the tool that wrote them
  flags            {option: value}: every writer option (DataOptions, gzip,
                   input_file); an objective's options live here too
  vocab            {path, sha256, size[, cls_id, sep_id, mask_id, subword_ids]}:
                   the ids only for records written with dynamic_masking, so
                   the input pipeline masks them without the vocab file
                   (subword_ids: masking.pack_subword_ids of the '##' flags)
  files            [record file paths]
  compression      "" or "GZIP"
  counts           {input_files, documents, sentences, instances, tokens,
                   predictions, undecodable_bytes, ...}
  shares           {mean_tokens, predictions_per_instance,
                   prediction_fraction, masked, kept, random, nsp_random,
                   shorter_than_64}
  length_histogram {bucket_tokens, counts}
  run              {seconds, num_workers, reused_shards[, driver]}

Keys this version does not know (a newer writer's) are read without error
and written back unchanged: inside a section they stay in its mapping, at the
top level in `extra`.

Where it lives: `<output_dir>/manifest.json` for `--output_dir` runs, and
`<first output file>.manifest.json` for `--output_file` runs.
"""

import dataclasses
import json
import types

from bert_tf.io import file_io as files_lib

MANIFEST_NAME = "manifest.json"
MANIFEST_SUFFIX = ".manifest.json"
WRITER = "bert_tf.create_pretraining_data"
# Every file the writer leaves beside its records (manifest.json,
# <file>.manifest.json, <shard>.stats.json) ends so; none is a record file.
SIDECAR_SUFFIX = ".json"

# Top-level keys whose values are JSON objects (sections).
_SECTIONS = ("flags", "vocab", "counts", "shares", "length_histogram", "run")
_KNOWN_KEYS = ("schema_version", "writer", "files", "compression") + _SECTIONS
# Writer totals that become shares rather than counts.
_SHARE_TOTALS = ("masked", "kept", "random", "nsp_random", "length_histogram")


def manifest_path_for_dir(output_dir):
  return output_dir.rstrip("/") + "/" + MANIFEST_NAME


def manifest_path_for_file(output_file):
  return output_file + MANIFEST_SUFFIX


def _freeze(value):
  """JSON value -> the same value, immutable (mappings read-only, lists tuples)."""
  if isinstance(value, dict):
    return types.MappingProxyType({k: _freeze(v) for k, v in value.items()})
  if isinstance(value, (list, tuple)):
    return tuple(_freeze(v) for v in value)
  return value


def _thaw(value):
  """The inverse of _freeze: plain dicts and lists, for json.dumps."""
  if isinstance(value, types.MappingProxyType):
    return {k: _thaw(v) for k, v in value.items()}
  if isinstance(value, tuple):
    return [_thaw(v) for v in value]
  return value


_KINDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


@dataclasses.dataclass(frozen=True)
class Manifest:
  """What a run of the data writer wrote, and from what.

  Sections are read-only mappings (JSON objects; lists become tuples); a
  section absent from the file is None and stays absent when written back.
  Read typed values through the accessors (`max_seq_length`, `vocab_size`,
  `instances`, `option`, `count`, `share`), which raise ValueError naming the
  file and key of a value of the wrong type.
  """
  schema_version: int
  writer: object = None
  flags: object = None
  vocab: object = None
  files: object = None
  compression: object = None
  counts: object = None
  shares: object = None
  length_histogram: object = None
  run: object = None
  extra: object = dataclasses.field(default_factory=dict)
  # Where it was read from or written to: named in errors, not in the JSON.
  path: object = dataclasses.field(default=None, compare=False)

  def __post_init__(self):
    if isinstance(self.schema_version, bool) or not isinstance(self.schema_version, int):
      raise ValueError(f"{self.source}: schema_version={self.schema_version!r} is not an integer")
    for name in _SECTIONS + ("extra",):
      value = getattr(self, name)
      if value is not None and not isinstance(value, (dict, types.MappingProxyType)):
        raise ValueError(f"{self.source}: {name} is {type(value).__name__}, not a JSON object")
    if self.files is not None and (not isinstance(self.files, (list, tuple)) or
                                   not all(isinstance(f, str) for f in self.files)):
      raise ValueError(f"{self.source}: files is not a list of paths")
    for name in ("writer", "compression"):
      if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
        raise ValueError(f"{self.source}: {name}={getattr(self, name)!r} is not a string")
    for field in dataclasses.fields(self):
      if field.name not in ("schema_version", "path"):
        object.__setattr__(self, field.name, _freeze(getattr(self, field.name)))

  # --- Building ---------------------------------------------------------------

  @classmethod
  def from_totals(cls, *, input_files, output_files, vocab, options, gzip, totals,
                  bucket_tokens, seconds, num_workers, reused_shards, schema_version,
                  driver=None):
    """The manifest of a finished writer run.

    Args:
      input_files: list of the text files read, in order.
      output_files: list of the record files written.
      vocab: has `path`, `sha256`, `size` (wordpiece_vocab.Vocab).
      options: the writer's options, a dataclass (DataOptions): every field
        goes to `flags`, so a new option is recorded without a change here.
      gzip: bool, whether the records are GZIP-compressed.
      totals: mapping of the run's totals (the writer's BlockStats.to_dict():
        documents, sentences, instances, tokens, predictions, masked, kept,
        random, nsp_random, undecodable_bytes, length_histogram); any other
        total is kept as a count under its own name.
      bucket_tokens: tokens per bucket of `totals["length_histogram"]`.
      seconds, num_workers, reused_shards: how the run went.
      schema_version: schema.SCHEMA_VERSION of the records.
      driver: None for the local driver, else its name (e.g. "beam").
    """
    t = dict(totals)
    instances = max(t["instances"], 1)
    preds = max(t["predictions"], 1)
    histogram = list(t["length_histogram"])
    counts = {"input_files": len(input_files)}
    for name in ("documents", "sentences", "instances", "tokens", "predictions",
                 "undecodable_bytes"):
      counts[name] = t[name]
    counts.update({k: v for k, v in t.items() if k not in counts and k not in _SHARE_TOTALS})
    flags = dict(dataclasses.asdict(options), gzip=bool(gzip), input_file=",".join(input_files))
    short_buckets = 64 // bucket_tokens
    run = {"seconds": round(seconds, 3), "num_workers": num_workers,
           "reused_shards": reused_shards}
    if driver:
      run["driver"] = driver
    vocab_section = {"path": vocab.path, "sha256": vocab.sha256, "size": vocab.size}
    if flags.get("dynamic_masking"):
      from bert_tf.data.pretraining import masking  # pylint: disable=g-import-not-at-top
      vocab_section.update(cls_id=vocab.cls_id, sep_id=vocab.sep_id, mask_id=vocab.mask_id,
                           subword_ids=masking.pack_subword_ids(vocab.is_subword))
    return cls(
        schema_version=schema_version,
        writer=WRITER,
        flags=flags,
        vocab=vocab_section,
        files=list(output_files),
        compression="GZIP" if gzip else "",
        counts=counts,
        shares={
            "mean_tokens": t["tokens"] / instances,
            "predictions_per_instance": t["predictions"] / instances,
            "prediction_fraction": t["predictions"] / max(t["tokens"], 1),
            "masked": t["masked"] / preds,
            "kept": t["kept"] / preds,
            "random": t["random"] / preds,
            # None for records without a sentence label.
            "nsp_random": (t["nsp_random"] / instances
                           if flags.get("sentence_task", "nsp") != "none" else None),
            # None where no instance can be that long, so the share says nothing.
            "shorter_than_64": (sum(histogram[:short_buckets]) / instances
                                if flags.get("max_seq_length", 0) >= 64 else None),
        },
        length_histogram={"bucket_tokens": bucket_tokens, "counts": histogram},
        run=run)

  # --- JSON --------------------------------------------------------------------

  @classmethod
  def from_dict(cls, obj, path=None):
    """The manifest of a parsed JSON object; ValueError naming `path` if it is not one."""
    where = path or "manifest"
    if not isinstance(obj, dict):
      raise ValueError(f"{where}: not a bert_tf manifest (a JSON {type(obj).__name__}, "
                       "not an object)")
    if "schema_version" not in obj:
      raise ValueError(f"{where}: not a bert_tf manifest (no schema_version)")
    known = {k: obj[k] for k in _KNOWN_KEYS if k in obj}
    extra = {k: v for k, v in obj.items() if k not in _KNOWN_KEYS}
    return cls(extra=extra, path=path, **known)

  def to_dict(self):
    """The JSON object: plain dicts and lists, absent sections left out."""
    out = {"schema_version": self.schema_version}
    for name in _KNOWN_KEYS[1:]:
      value = getattr(self, name)
      if value is not None:
        out[name] = _thaw(value)
    out.update(_thaw(self.extra))
    return out

  def to_json(self):
    return json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n"

  def write(self, path):
    """Writes the manifest to `path` atomically; returns it with `path` set."""
    files_lib.atomic_write(path, self.to_json())
    return dataclasses.replace(self, path=path)

  @classmethod
  def read(cls, path):
    """Reads a manifest; raises FileNotFoundError or ValueError naming the file."""
    return cls.from_dict(files_lib.read_json(path, "bert_tf manifest"), path=path)

  @classmethod
  def find(cls, patterns):
    """Finds the manifest of the records matched by `patterns`.

    Args:
      patterns: comma-separated globs (str) or a list of them, as given to
        training; patterns matching nothing are passed over.
    Returns:
      The Manifest of the first matched record file that has one: its
      directory's `manifest.json`, `<file>.manifest.json`, or, for a file
      that is not the first of an `--output_file` run, the
      `*.manifest.json` beside it that lists it. None for records written
      without one (e.g. by the original script).
    """
    beside = {}  # directory -> the --output_file manifests in it, read once
    for pattern in files_lib.split_patterns(patterns):
      for path in sorted(files_lib.glob(pattern)):
        if path.endswith(SIDECAR_SUFFIX):
          continue
        parent = files_lib.parent_of(path)
        for candidate in (manifest_path_for_file(path),
                          manifest_path_for_dir(parent) if parent else MANIFEST_NAME):
          if files_lib.exists(candidate):
            return cls.read(candidate)
        if parent not in beside:
          beside[parent] = [cls.read(p) for p in sorted(
              files_lib.glob((parent or ".") + "/*" + MANIFEST_SUFFIX))]
        name = path.rsplit("/", 1)[-1]
        for manifest in beside[parent]:
          if name in (f.rsplit("/", 1)[-1] for f in manifest.files or ()):
            return manifest
    return None

  # --- Typed accessors -----------------------------------------------------------

  @property
  def source(self):
    """How errors name this manifest: its path, or "manifest" before it has one."""
    return self.path or "manifest"

  def _typed(self, section, key, kind, default):
    mapping = getattr(self, section) or {}
    if key not in mapping or mapping[key] is None:
      return default
    value = mapping[key]
    ok = (isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float
          else isinstance(value, kind) and not (kind is int and isinstance(value, bool)))
    if not ok:
      raise ValueError(f"{self.source}: {section}.{key}={value!r} is not {_KINDS[kind]}")
    return float(value) if kind is float else value

  def option(self, name, kind, default=None):
    """A writer option from `flags`, checked to be of `kind` (int, float,
    bool or str); `default` when the manifest does not record it (written
    before the option existed)."""
    return self._typed("flags", name, kind, default)

  def count(self, name):
    """An int of `counts`, or None when absent."""
    return self._typed("counts", name, int, None)

  def share(self, name):
    """A float of `shares`, or None when absent (or null: not applicable)."""
    return self._typed("shares", name, float, None)

  @property
  def max_seq_length(self):
    return self.option("max_seq_length", int)

  @property
  def max_predictions_per_seq(self):
    return self.option("max_predictions_per_seq", int)

  @property
  def gzip(self):
    """Whether the records are GZIP-compressed, None when not recorded."""
    if self.compression is not None:
      return self.compression.upper() == "GZIP"
    return self.option("gzip", bool)

  @property
  def vocab_size(self):
    return self._typed("vocab", "size", int, None)

  @property
  def vocab_sha256(self):
    return self._typed("vocab", "sha256", str, None)

  @property
  def vocab_path(self):
    return self._typed("vocab", "path", str, None)

  @property
  def instances(self):
    return self.count("instances")

  # --- Checks ----------------------------------------------------------------------

  # The writer's record variants and their values: DataOptions' defaults
  # (the original's records) for a manifest written before they existed.
  VARIANTS = {"sentence_task": ("nsp", "sop", "none"),
              "packing": ("segment_pair", "full_sentences", "doc_sentences",
                          "sentence_pair")}

  @property
  def sentence_task(self):
    """"nsp", "sop" or "none" ("nsp" when not recorded)."""
    return self._variant("sentence_task")

  @property
  def packing(self):
    return self._variant("packing")

  @property
  def max_ngram(self):
    return self.option("max_ngram", int, 1)

  @property
  def dynamic_masking(self):
    return self.option("dynamic_masking", bool, False)

  def _variant(self, name):
    values = self.VARIANTS[name]
    value = self.option(name, str, values[0])
    if value not in values:
      raise ValueError(f"{self.source}: flags.{name}={value!r} is none of {', '.join(values)} "
                       "(records of a newer writer?)")
    return value

  def masking_vocab(self):
    """masking.MaskingVocab the records were written with, from the vocab
    section (present for records written with dynamic_masking).

    Raises:
      ValueError naming this file when the ids are not recorded.
    """
    from bert_tf.data.pretraining import masking  # pylint: disable=g-import-not-at-top
    ids = {name: self._typed("vocab", name, int, None) for name in ("cls_id", "sep_id", "mask_id")}
    packed = self._typed("vocab", "subword_ids", str, None)
    size = self.vocab_size
    if None in ids.values() or packed is None or size is None:
      raise ValueError(f"{self.source}: flags.dynamic_masking is true but vocab.cls_id/sep_id/"
                       "mask_id/subword_ids/size are not all recorded: the input pipeline "
                       "cannot mask these records; write them again")
    try:
      is_subword = masking.unpack_subword_ids(packed, size)
    except Exception as e:  # noqa: BLE001 - base64 / zlib errors
      raise ValueError(f"{self.source}: vocab.subword_ids is not readable ({e})") from None
    return masking.MaskingVocab(size=size, is_subword=is_subword, **ids)

  def check(self, max_seq_length=None, max_predictions_per_seq=None, vocab_size=None,
            sentence_task=None):
    """Checks the records against what training will use; None skips a check.

    A setting the manifest does not record is not checked (the first
    record's shapes are, by the input pipeline), except sentence_task,
    which a manifest written before it existed records as "nsp".

    Raises:
      ValueError: one line naming the flag and its value, this file, the
        manifest's key and its value.
    """
    for name, want in (("max_seq_length", max_seq_length),
                       ("max_predictions_per_seq", max_predictions_per_seq)):
      have = self.option(name, int)
      if want is not None and have is not None and have != int(want):
        raise ValueError(f"--{name}={want} but the records' manifest {self.source} has "
                         f"flags.{name}={have}")
    have = self.vocab_size
    if vocab_size is not None and have is not None and have != int(vocab_size):
      vocab = f" (vocab {self.vocab_path})" if self.vocab_path else ""
      raise ValueError(f"the model config has vocab_size={vocab_size} but the records' "
                       f"manifest {self.source} has vocab.size={have}{vocab}")
    have = self.sentence_task
    if sentence_task is not None and have != sentence_task:
      raise ValueError(f"--sentence_task={sentence_task} but the records' manifest {self.source} "
                       f"has flags.sentence_task={have}")
    _ = self.packing  # raises on a value this version does not know
    return self


def record_files(patterns, flag="--input_file"):
  """The record files matched by `patterns`, the writer's .json sidecars left out.

  So `out/*` reads the shards and not `manifest.json` or `*.stats.json`.

  Raises:
    ValueError / FileNotFoundError as files.expand_patterns, and
    FileNotFoundError when the patterns match only sidecars.
  """
  paths = [p for p in files_lib.expand_patterns(patterns, flag)
           if not p.endswith(SIDECAR_SUFFIX)]
  if not paths:
    raise FileNotFoundError(f"input pattern {','.join(files_lib.split_patterns(patterns))!r} "
                            f"({flag}) matches only {SIDECAR_SUFFIX} files, no records")
  return paths

