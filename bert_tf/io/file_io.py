"""Small file helpers, one copy for the whole package: glob expansion,
write-then-rename (a file, several files as one, a directory, JSON),
compression detection.

The package's one storage seam: every file-system call of bert_tf comes here
(exists, glob, open_file, rename, ... below), and only this module calls
tf.io.gfile, so local paths and gs:// alike work.
A package-wide utility below every layer: data, models, training, serving,
experiments and the tools all import it, and it imports nothing of ours
(tests/test_layout.py; the standalone `bert_tf.serving.predict` keeps its
own few lines on purpose). TensorFlow is imported on first use, not with
the module: the data writer's worker processes never import it.
"""

import contextlib
import json
import uuid

# gzip member header: ID1 ID2 (the magic) and CM=8 (deflate, the only method
# gzip defines). A plain TFRecord file starts with its first record's length
# as uint64 little-endian, so it would only look like gzip if that record were
# 559,903 bytes long (plus a multiple of 16 MiB): no pretraining record is.
_GZIP_HEADER = b"\x1f\x8b\x08"


def _gfile():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top  (on first use: see above)
  return tf.io.gfile


# ------------------------------------------------------------------------------
# The file system: every other module calls these, never tf.io.gfile itself
# (tests/io/test_file_io.py holds them to that), so a new backend, a retry policy
# or a fault injected by a test has one place to go. Each is tf.io.gfile's
# call of the same name, with its errors (tf.errors.NotFoundError for a
# missing path, other tf.errors.OpError subclasses; not OSError).
# ------------------------------------------------------------------------------


def exists(path):
  """Whether a file or directory `path` exists (local or gs://)."""
  return _gfile().exists(path)


def isdir(path):
  """Whether `path` is a directory (False when it does not exist)."""
  return _gfile().isdir(path)


def makedirs(path):
  """Creates the directory `path` and its missing parents; no error when it
  exists already."""
  _gfile().makedirs(path)


def listdir(path):
  """The names (not paths) of the entries of the directory `path`, in no
  set order; NotFoundError when it does not exist."""
  return _gfile().listdir(path)


def walk(path):
  """os.walk over `path`: (directory, subdirectory names, file names), top
  down; nothing when `path` does not exist."""
  return _gfile().walk(path)


def glob(pattern):
  """The paths matching the glob `pattern` (* ? [..]), in no set order; []
  when none does. `expand_patterns` is the checked, ordered form for
  user-given patterns."""
  return _gfile().glob(pattern)


def stat(path):
  """The statistics of the file `path`: .length (bytes), .mtime_nsec and
  .is_directory; NotFoundError when it does not exist."""
  return _gfile().stat(path)


def size(path):
  """The length of the file `path` in bytes; NotFoundError when it does not
  exist."""
  return _gfile().stat(path).length


def open_file(path, mode="r"):
  """The file `path` opened with `mode` ("r"/"rb" read text/bytes, "w"/"wb"
  write, "a" append), a context manager like open()'s. A write here is not
  atomic: final outputs are written with atomic_open / atomic_write /
  atomic_path."""
  return _gfile().GFile(path, mode)


def copy(src, dst, overwrite=False):
  """Copies the file `src` to `dst` (across file systems too); an existing
  `dst` is an error unless `overwrite`."""
  _gfile().copy(src, dst, overwrite=overwrite)


def rename(src, dst, overwrite=False):
  """Renames the file (or, locally, the directory) `src` to `dst`; an
  existing `dst` is an error unless `overwrite`."""
  _gfile().rename(src, dst, overwrite=overwrite)


def remove(path):
  """Deletes the file `path`; NotFoundError when it does not exist."""
  _gfile().remove(path)


def rmtree(path):
  """Deletes the directory `path` and everything under it; NotFoundError
  when it does not exist."""
  _gfile().rmtree(path)


# ------------------------------------------------------------------------------
# Patterns, write-then-rename, readers
# ------------------------------------------------------------------------------


def split_patterns(patterns):
  """Comma-separated globs (a str, or a list of such strs) -> list of globs.

  Whitespace around each pattern is dropped, and so are empty patterns
  ("a,,b," is ["a", "b"]).
  """
  if isinstance(patterns, str):
    patterns = [patterns]
  out = []
  for item in patterns:
    out.extend(p.strip() for p in item.split(",") if p.strip())
  return out


def expand_patterns(patterns, flag="--input_file"):
  """Expands globs to the files they match.

  Args:
    patterns: comma-separated globs (str) or a list of them.
    flag: the flag the patterns came from, named in errors.
  Returns:
    list of paths: each pattern's matches sorted, patterns in the order given,
    a file matched twice kept at its first place. The same list on every
    worker and for every run, so what depends on file order (the writer's
    blocks, the input pipeline's sharding) is reproducible.
  Raises:
    ValueError: no pattern given.
    FileNotFoundError: naming the flag and the pattern that matches nothing.
  """
  split = split_patterns(patterns)
  if not split:
    raise ValueError(f"{flag}: no file pattern given")
  files, seen = [], set()
  for pattern in split:
    matched = sorted(_gfile().glob(pattern))
    if not matched:
      raise FileNotFoundError(f"input pattern {pattern!r} ({flag}) matches no files")
    for path in matched:
      if path not in seen:
        seen.add(path)
        files.append(path)
  return files


def parent_of(path):
  """The directory part of `path` ("" for a bare file name)."""
  path = path.rstrip("/")
  return path.rsplit("/", 1)[0] if "/" in path else ""


def temp_path(path):
  """A fresh name beside `path`: same directory, so the final rename stays
  on one filesystem; unique, so two runs writing the same file do not write
  into each other's temporary."""
  return f"{path.rstrip('/')}.tmp-{uuid.uuid4().hex[:12]}"


def _remove(path):
  if _gfile().isdir(path):
    _gfile().rmtree(path)
  elif _gfile().exists(path):
    _gfile().remove(path)


def remove_if_present(path):
  """Removes the file or directory `path` (nothing when it is absent)."""
  _remove(path)


@contextlib.contextmanager
def atomic_path(path, tmp=None):
  """Yields a temporary path to write `path` under; renames it on success.

  For writers that open the file themselves (tf.io.TFRecordWriter) or write a
  whole directory. The parent directory is created. On success the temporary
  replaces `path` (an existing directory at `path` is removed first: then
  there is a short moment with neither, as rename cannot replace a
  directory; on an object store a directory is moved file by file, its
  completing file last: `publish_files`); on any exception the temporary is removed and `path` is left as
  it was. Never half a file under the final name.

  `tmp` names the temporary (default: a fresh `temp_path(path)`). The record
  writer passes a fixed name, so that a run killed and started again writes
  over its own leftover instead of adding another beside its shards.
  """
  parent = parent_of(path)
  created = ""  # the outermost folder this call makes, removed again on failure
  while parent and not _gfile().exists(parent):
    created, parent = parent, parent_of(parent)
  if created:
    _gfile().makedirs(parent_of(path))
  tmp = tmp or temp_path(path)
  try:
    yield tmp
    if _gfile().isdir(tmp) and _gfile().isdir(path):
      retire_dir(path)
    if _gfile().isdir(tmp) and not renames_directories_whole(path):
      publish_files(tmp, path)
    else:
      _gfile().rename(tmp, path, overwrite=True)
  except BaseException:
    _remove(tmp)
    if created and _gfile().exists(created) and not any(
        names for _, _, names in _gfile().walk(created)):
      _gfile().rmtree(created)
    raise


# The files a reader opens first to decide that a folder is a model:
# TensorFlow's SavedModel loader, transformers and keras-hub. Published last.
COMPLETING_NAMES = ("saved_model.pb", "config.json")


def renames_directories_whole(path):
  """Whether renaming a directory at `path` is one atomic step: on a local
  filesystem; not on object stores (gs://, s3://), where TensorFlow renames
  a directory as a copy and a delete per object."""
  return "://" not in path or path.startswith("file://")


def retire_dir(path):
  """Removes the directory `path`, its COMPLETING_NAMES files first: on an
  object store, where a directory goes object by object, a kill half-way
  leaves a folder that no reader takes for a model, never saved_model.pb
  or config.json without the files they name."""
  completing = [f"{root.rstrip('/')}/{name}" for root, _, files in _gfile().walk(path)
                for name in files if name in COMPLETING_NAMES]
  for name in sorted(completing, key=lambda n: n.count("/")):
    _gfile().remove(name)
  _gfile().rmtree(path)


def publish_files(tmp, path):
  """Moves the files of the directory `tmp` to `path` one by one, each
  COMPLETING_NAMES file after every other file (deepest first), then removes
  `tmp`. Stopped half-way (a kill), `path` lacks its saved_model.pb or
  config.json, so the readers of those formats see no model there rather
  than part of one."""
  names = []
  for root, _, files in _gfile().walk(tmp):
    rel = root[len(tmp):].strip("/")
    names += [f"{rel}/{name}" if rel else name for name in files]

  def order(name):
    completing = name.rsplit("/", 1)[-1] in COMPLETING_NAMES
    return (completing, -name.count("/") if completing else 0, name)

  for name in sorted(names, key=order):
    target = f"{path.rstrip('/')}/{name}"
    _gfile().makedirs(parent_of(target))
    _gfile().rename(f"{tmp.rstrip('/')}/{name}", target, overwrite=True)
  _gfile().rmtree(tmp)


@contextlib.contextmanager
def atomic_open(path, mode="w"):
  """`with atomic_open(path) as f: f.write(...)`: a streaming write of `path`.

  Yields a _gfile().GFile opened with `mode` ("w" text, "wb" bytes) on a
  temporary name beside `path`; it is closed and renamed to `path` when the
  block ends normally, and removed when it raises.
  """
  if mode not in ("w", "wb"):
    raise ValueError(f"atomic_open: mode {mode!r} must be 'w' or 'wb'")
  with atomic_path(path) as tmp:
    with _gfile().GFile(tmp, mode) as f:
      yield f


@contextlib.contextmanager
def atomic_paths(paths, temps=None):
  """`atomic_path` for several files that are complete only together.

  Yields the list of temporaries (`temps`, default a fresh `temp_path` of
  each). When the block ends normally they are renamed in the order of
  `paths`, so the last path existing means all exist (a TF1 checkpoint's
  index is renamed last); when it raises, all temporaries are removed and
  the files at `paths` are left as they were.
  """
  paths = list(paths)
  temps = list(temps) if temps is not None else [temp_path(p) for p in paths]
  if len(temps) != len(paths):
    raise ValueError(f"atomic_paths: {len(temps)} temporaries for {len(paths)} paths")
  with contextlib.ExitStack() as stack:
    # Entered last to first: an ExitStack leaves them in the reverse order.
    for path, tmp in reversed(list(zip(paths, temps))):
      stack.enter_context(atomic_path(path, tmp))
    yield temps


def check_absent(path, overwrite, what):
  """Raises FileExistsError naming `what` if `path` exists and not `overwrite`."""
  if not overwrite and _gfile().exists(path):
    raise FileExistsError(f"{what} {path} exists already; pass overwrite=True "
                          f"(--overwrite) to replace it")


@contextlib.contextmanager
def atomic_dir(path, overwrite=False, what="output"):
  """`with atomic_dir(path) as tmp:` writes the directory `path` whole.

  Yields a temporary name beside `path` for the block to create and fill
  (e.g. tf.saved_model.save(..., tmp)); on success it replaces `path`, on
  any exception it is removed and `path` is left as it was.

  Raises:
    FileExistsError: `path` exists (before the block, or made by someone else
      while it ran) and `overwrite` is false; the message names `what`.
  """
  check_absent(path, overwrite, what)
  with atomic_path(path) as tmp:
    yield tmp
    check_absent(path, overwrite, what)


def read_bytes(path, what):
  """The bytes of the file `path`; FileNotFoundError "{what} file not
  found: {path}" when there is none."""
  if not _gfile().exists(path):
    raise FileNotFoundError(f"{what} file not found: {path}")
  with _gfile().GFile(path, "rb") as f:
    return f.read()


def read_text(path, what, errors="strict"):
  """The text of the file `path`, decoded as UTF-8.

  Args:
    what: what the file is, for errors ("vocab", "task", ...).
    errors: "strict" (bad UTF-8 is an error) or "replace".
  Raises:
    FileNotFoundError: "{what} file not found: {path}".
    ValueError: "{what} {path}: not UTF-8 (...)" (errors="strict").
  """
  if not _gfile().exists(path):
    raise FileNotFoundError(f"{what} file not found: {path}")
  with _gfile().GFile(path, "rb") as f:
    data = f.read()
  try:
    return data.decode("utf-8", errors=errors)
  except UnicodeDecodeError as e:
    raise ValueError(f"{what} {path}: not UTF-8 ({e})") from None


def read_documents_prefix(path, max_bytes):
  """The whole documents (blocks between blank lines) within the first
  `max_bytes` of the text file `path`, as text: all of it when the file is
  no longer, else cut after its last blank line (the first document, cut
  at a line, when it has none). ValueError naming the file for bad UTF-8."""
  with _gfile().GFile(path, "rb") as f:
    data = f.read(max_bytes)
    if f.read(1):
      cut = data.rfind(b"\n\n")
      data = data[:cut] if cut > 0 else data[:data.rfind(b"\n") + 1]
  try:
    return data.decode("utf-8")
  except UnicodeDecodeError as e:
    raise ValueError(f"{path}: not UTF-8 ({e})") from None


def read_json(path, what="JSON file"):
  """The JSON value in the file `path`.

  Raises:
    FileNotFoundError: "{path}: no such {what}".
    ValueError: "{path}: not a {what} (invalid JSON: ...)".
  """
  if not _gfile().exists(path):
    raise FileNotFoundError(f"{path}: no such {what}")
  with _gfile().GFile(path, "r") as f:
    text = f.read()
  try:
    return json.loads(text)
  except json.JSONDecodeError as e:
    raise ValueError(f"{path}: not a {what} (invalid JSON: {e})") from None


def write_json(path, obj, indent=1):
  """Writes `obj` as JSON (sorted keys, `indent`, a final newline) atomically."""
  atomic_write(path, json.dumps(obj, indent=indent, sort_keys=True) + "\n")


def atomic_write(path, data):
  """Writes `data` (bytes, or str written as UTF-8) to `path` atomically."""
  if isinstance(data, str):
    data = data.encode("utf-8")
  elif not isinstance(data, (bytes, bytearray)):
    raise TypeError(f"atomic_write({path}): data must be bytes or str, "
                    f"not {type(data).__name__}")
  with atomic_open(path, "wb") as f:
    f.write(bytes(data))


def compression_of(path):
  """"GZIP" when the file starts with a gzip header, else "".

  By the bytes, not the name: a gzip file named `x.tfrecord` is GZIP, a plain
  file named `x.gz` is not. An empty file is "" (an empty shard is valid).

  Raises:
    FileNotFoundError: naming the path.
  """
  if not _gfile().exists(path):
    raise FileNotFoundError(f"{path}: no such file")
  with _gfile().GFile(path, "rb") as f:
    head = f.read(len(_GZIP_HEADER))
  return "GZIP" if head == _GZIP_HEADER else ""
