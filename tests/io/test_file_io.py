"""Tests of bert_tf.io.file_io: the storage seam (its file-system calls, and no
other module calling tf.io.gfile), glob expansion, write-then-rename, and
compression detected by the bytes rather than the name."""

import gzip
import os
import pathlib
import re

import pytest
import tensorflow as tf

from bert_tf.io import file_io as files


REPO = pathlib.Path(__file__).resolve().parents[2]

# The one module besides file_io that calls tf.io.gfile itself: the standalone
# SavedModel client, which imports nothing of bert_tf so that it runs wherever
# an export is copied (tests/test_layout.py holds it to that).
STANDALONE = ("bert_tf/serving/predict.py",)


def names(paths):
  return [p.rsplit("/", 1)[-1] for p in paths]


def test_no_module_but_file_io_calls_gfile():
  """Every file-system call of the package goes through file_io: the source
  of each other module (comments and docstrings too) names no tf.io.gfile,
  gfile.X or tensorflow.io.gfile."""
  for name in STANDALONE:
    assert (REPO / name).exists(), f"{name} moved: update STANDALONE in this test"
  pattern = re.compile(r"\bgfile\b")
  offenders = []
  for path in sorted((REPO / "bert_tf").rglob("*.py")):
    rel = path.relative_to(REPO).as_posix()
    if rel == "bert_tf/io/file_io.py" or rel in STANDALONE:
      continue
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
      if pattern.search(line):
        offenders.append(f"{rel}:{number}: {line.strip()}")
  assert not offenders, ("call bert_tf.io.file_io (exists, glob, open_file, rename, ...) "
                         "instead of tf.io.gfile:\n" + "\n".join(offenders))


def test_the_seams_file_system_calls(tmp_path):
  root = str(tmp_path / "a")
  files.makedirs(f"{root}/b/c")
  files.makedirs(f"{root}/b/c")  # exists already: no error
  assert files.isdir(f"{root}/b") and files.exists(f"{root}/b/c")
  with files.open_file(f"{root}/b/x.txt", "w") as f:
    f.write("héllo\n")
  with files.open_file(f"{root}/b/x.txt", "rb") as f:
    assert f.read() == "héllo\n".encode("utf-8")
  assert files.size(f"{root}/b/x.txt") == files.stat(f"{root}/b/x.txt").length == 7
  assert not files.isdir(f"{root}/b/x.txt") and not files.exists(f"{root}/nothing")
  assert sorted(n.rstrip("/") for n in files.listdir(f"{root}/b")) == ["c", "x.txt"]
  assert files.glob(f"{root}/b/*.txt") == [f"{root}/b/x.txt"]
  files.copy(f"{root}/b/x.txt", f"{root}/y.txt")
  with pytest.raises(tf.errors.AlreadyExistsError):
    files.copy(f"{root}/b/x.txt", f"{root}/y.txt")
  files.copy(f"{root}/y.txt", f"{root}/b/x.txt", overwrite=True)
  files.rename(f"{root}/y.txt", f"{root}/b/c/z.txt")
  walked = {(os.path.relpath(d, root), tuple(sorted(s.rstrip("/") for s in subs)), tuple(sorted(fs)))
            for d, subs, fs in files.walk(root)}
  assert walked == {(".", ("b",), ()), ("b", ("c",), ("x.txt",)), ("b/c", (), ("z.txt",))}
  assert list(files.walk(f"{root}/nothing")) == []
  files.remove(f"{root}/b/x.txt")
  with pytest.raises(tf.errors.NotFoundError):
    files.remove(f"{root}/b/x.txt")
  with pytest.raises(tf.errors.NotFoundError):
    files.size(f"{root}/b/x.txt")
  files.rmtree(f"{root}/b")
  assert files.listdir(root) == []
  with pytest.raises(tf.errors.NotFoundError):
    files.rmtree(f"{root}/b")


def test_split_patterns_drops_blanks_and_spaces():
  assert files.split_patterns(" a, ,b,,") == ["a", "b"]
  assert files.split_patterns(["a,b", " c "]) == ["a", "b", "c"]
  assert files.split_patterns("") == []


def test_expand_patterns_sorted_per_pattern_in_pattern_order_without_duplicates(tmp_path):
  for name in ("b.txt", "a.txt", "z.other", "c.txt"):
    (tmp_path / name).write_text("x")
  got = files.expand_patterns(f"{tmp_path}/z.other, {tmp_path}/*.txt,{tmp_path}/a.txt")
  assert names(got) == ["z.other", "a.txt", "b.txt", "c.txt"]
  assert files.expand_patterns([f"{tmp_path}/c.txt", f"{tmp_path}/a.txt"]) == [
      str(tmp_path / "c.txt"), str(tmp_path / "a.txt")]


def test_expand_patterns_names_the_flag_and_the_pattern(tmp_path):
  (tmp_path / "a.txt").write_text("x")
  with pytest.raises(FileNotFoundError, match=r"input pattern '.*nothing-\*' \(--eval_input_file\) matches no files"):
    files.expand_patterns(f"{tmp_path}/a.txt,{tmp_path}/nothing-*", flag="--eval_input_file")
  with pytest.raises(ValueError, match="--input_file: no file pattern given"):
    files.expand_patterns(" , ")


@pytest.mark.parametrize("data", [b"\x00bytes\xff", "text \u00e9\n"])
def test_atomic_write_bytes_or_text_creates_parent_and_leaves_no_temp(tmp_path, data):
  path = tmp_path / "new" / "dir" / "out.bin"
  files.atomic_write(str(path), data)
  assert path.read_bytes() == (data if isinstance(data, bytes) else data.encode("utf-8"))
  files.atomic_write(str(path), b"second")  # replaces an existing file
  assert path.read_bytes() == b"second"
  assert [p.name for p in path.parent.iterdir()] == ["out.bin"]
  with pytest.raises(TypeError, match="out.bin"):
    files.atomic_write(str(path), 3)


def test_atomic_open_failure_keeps_the_old_file_and_removes_the_temp(tmp_path):
  path = tmp_path / "results.txt"
  path.write_text("old\n")
  with pytest.raises(RuntimeError, match="midway"):
    with files.atomic_open(str(path)) as f:
      f.write("half of the new\n")
      raise RuntimeError("midway")
  assert path.read_text() == "old\n"
  assert [p.name for p in tmp_path.iterdir()] == ["results.txt"]
  with files.atomic_open(str(path)) as f:
    f.write("new\n")
    # Nothing under the final name changes until the block ends.
    assert path.read_text() == "old\n"
  assert path.read_text() == "new\n"
  assert [p.name for p in tmp_path.iterdir()] == ["results.txt"]


def test_atomic_path_for_a_record_writer_and_for_a_directory(tmp_path):
  path = str(tmp_path / "r.tfrecord")
  with files.atomic_path(path) as tmp:
    assert tmp != path and tmp.startswith(path + ".tmp")
    with tf.io.TFRecordWriter(tmp) as writer:
      writer.write(b"record")
  assert [r.numpy() for r in tf.data.TFRecordDataset(path)] == [b"record"]
  # A directory: written whole under the temporary name, then in place of
  # the old one.
  out = tmp_path / "export"
  out.mkdir()
  (out / "stale").write_text("x")
  with files.atomic_path(str(out)) as tmp:
    tf.io.gfile.makedirs(tmp)
    with tf.io.gfile.GFile(tmp + "/model", "w") as f:
      f.write("m")
  assert sorted(p.name for p in out.iterdir()) == ["model"]
  with pytest.raises(KeyError):
    with files.atomic_path(str(out)) as tmp:
      tf.io.gfile.makedirs(tmp + "/sub")
      raise KeyError("killed")
  assert sorted(p.name for p in tmp_path.iterdir()) == ["export", "r.tfrecord"]
  assert sorted(p.name for p in out.iterdir()) == ["model"]


def test_compression_by_the_bytes_not_the_name(tmp_path):
  gz_named_plain = tmp_path / "plain.tfrecord.gz"
  with tf.io.TFRecordWriter(str(gz_named_plain)) as writer:
    writer.write(b"a record")
  plain_named_gzip = tmp_path / "gzip.tfrecord"
  with tf.io.TFRecordWriter(str(plain_named_gzip), options="GZIP") as writer:
    writer.write(b"a record")
  assert files.compression_of(str(gz_named_plain)) == ""
  assert files.compression_of(str(plain_named_gzip)) == "GZIP"
  # What each says is how it reads.
  for path in (gz_named_plain, plain_named_gzip):
    ds = tf.data.TFRecordDataset(str(path), compression_type=files.compression_of(str(path)))
    assert [r.numpy() for r in ds] == [b"a record"]
  # Any gzip stream (e.g. from the gzip module), an empty file, an empty GZIP shard.
  (tmp_path / "text").write_bytes(gzip.compress(b"hello"))
  assert files.compression_of(str(tmp_path / "text")) == "GZIP"
  (tmp_path / "empty").write_bytes(b"")
  assert files.compression_of(str(tmp_path / "empty")) == ""
  tf.io.TFRecordWriter(str(tmp_path / "empty.gz"), options="GZIP").close()
  assert files.compression_of(str(tmp_path / "empty.gz")) == "GZIP"
  with pytest.raises(FileNotFoundError, match="missing.tfrecord"):
    files.compression_of(str(tmp_path / "missing.tfrecord"))


def test_a_failed_write_leaves_no_folder_it_made(tmp_path, monkeypatch):
  import tensorflow as tf

  class Boom(Exception):
    pass

  def failing_rename(*args, **kwargs):
    raise Boom()

  (tmp_path / "kept").mkdir()
  monkeypatch.setattr(tf.io.gfile, "rename", failing_rename)
  with pytest.raises(Boom):
    files.atomic_write(str(tmp_path / "new" / "deeper" / "vocab.txt"), "x")
  with pytest.raises(Boom):
    files.atomic_write(str(tmp_path / "kept" / "vocab.txt"), "x")
  assert os.listdir(tmp_path) == ["kept"] and os.listdir(tmp_path / "kept") == []


def test_atomic_paths_renames_in_order_or_removes_every_temporary(tmp_path, monkeypatch):
  paths = [str(tmp_path / "out" / name) for name in ("a", "b", "index")]
  with pytest.raises(KeyError):
    with files.atomic_paths(paths) as temps:
      for tmp in temps:
        with tf.io.gfile.GFile(tmp, "w") as f:
          f.write("half")
      raise KeyError("killed")
  assert os.listdir(tmp_path) == []  # no temporaries, not even the folder it made
  renamed = []
  rename = tf.io.gfile.rename
  monkeypatch.setattr(tf.io.gfile, "rename",
                      lambda src, dst, overwrite=False: (renamed.append(dst), rename(src, dst, overwrite)))
  fixed = [p + ".partial" for p in paths]
  with files.atomic_paths(paths, fixed) as temps:
    assert temps == fixed
    for tmp in temps:
      with tf.io.gfile.GFile(tmp, "w") as f:
        f.write(tmp)
  assert renamed == paths  # the last one is the proof that all are there
  assert sorted(os.listdir(tmp_path / "out")) == ["a", "b", "index"]
  assert (tmp_path / "out" / "b").read_text() == fixed[1]
  with pytest.raises(ValueError, match="2 temporaries for 3 paths"):
    with files.atomic_paths(paths, fixed[:2]):
      pass


def test_atomic_dir_refuses_an_existing_directory_unless_overwrite(tmp_path):
  out = str(tmp_path / "sub" / "model")
  with files.atomic_dir(out, what="export_dir") as tmp:
    assert not tmp.startswith(out + "/")
    tf.io.gfile.makedirs(tmp)
    with tf.io.gfile.GFile(tmp + "/v1", "w") as f:
      f.write("1")
  assert os.listdir(out) == ["v1"]
  with pytest.raises(FileExistsError, match=r"export_dir .*model exists already"):
    with files.atomic_dir(out, what="export_dir"):
      raise AssertionError("not reached: refused before the block")
  with files.atomic_dir(out, overwrite=True) as tmp:
    tf.io.gfile.makedirs(tmp)
    with tf.io.gfile.GFile(tmp + "/v2", "w") as f:
      f.write("2")
  assert os.listdir(out) == ["v2"]
  # Someone else made it while this one was written: refused, temporary removed.
  late = str(tmp_path / "late")
  with pytest.raises(FileExistsError, match="late exists already"):
    with files.atomic_dir(late) as tmp:
      tf.io.gfile.makedirs(tmp)
      os.makedirs(late)
  assert sorted(os.listdir(tmp_path)) == ["late", "sub"]
  assert os.listdir(late) == []


def test_write_json_sorted_keys_indent_final_newline(tmp_path):
  path = str(tmp_path / "x.json")
  files.write_json(path, {"b": 1, "a": [1]})
  assert open(path).read() == '{\n "a": [\n  1\n ],\n "b": 1\n}\n'
  files.write_json(path, {"k": "v"}, indent=4)
  assert open(path).read() == '{\n    "k": "v"\n}\n'


def test_read_json_names_the_file_and_what_it_should_be(tmp_path):
  path = str(tmp_path / "c.json")
  files.write_json(path, {"a": 1})
  assert files.read_json(path) == {"a": 1}
  with pytest.raises(FileNotFoundError, match=r"absent\.json: no such BERT config file"):
    files.read_json(str(tmp_path / "absent.json"), "BERT config file")
  (tmp_path / "bad.json").write_text("{not json")
  with pytest.raises(ValueError, match=r"bad\.json: not a bert_tf manifest \(invalid JSON: "):
    files.read_json(str(tmp_path / "bad.json"), "bert_tf manifest")


def test_a_directory_on_an_object_store_is_published_completing_file_last(tmp_path, monkeypatch):
  assert files.renames_directories_whole(str(tmp_path))
  assert not files.renames_directories_whole("gs://bucket/export")
  src = tmp_path / "export.tmp"
  for name in ("saved_model.pb", "fingerprint.pb", "variables/variables.index",
               "variables/variables.data-00000-of-00001", "generator/config.json", "config.json",
               "vocab.txt"):
    (src / name).parent.mkdir(parents=True, exist_ok=True)
    (src / name).write_text(name)
  moved = []
  real_rename = tf.io.gfile.rename
  monkeypatch.setattr(tf.io.gfile, "rename",
                      lambda a, b, overwrite=False: (moved.append(b), real_rename(a, b, overwrite)))
  files.publish_files(str(src), str(tmp_path / "export"))
  names = [os.path.relpath(m, tmp_path / "export") for m in moved]
  assert names[-3:] == ["generator/config.json", "config.json", "saved_model.pb"]
  assert sorted(names) == sorted(["saved_model.pb", "fingerprint.pb", "variables/variables.index",
                                  "variables/variables.data-00000-of-00001", "generator/config.json",
                                  "config.json", "vocab.txt"])
  assert not src.exists()
  assert (tmp_path / "export" / "variables" / "variables.index").read_text() == (
      "variables/variables.index")


def test_an_export_replaced_goes_completing_files_first(tmp_path, monkeypatch):
  # Overwriting an export removes the old folder; on an object store that
  # is object by object, so its saved_model.pb / config.json go first: a
  # kill half-way leaves no folder a reader takes for a model.
  old = tmp_path / "export"
  for name in ("variables/variables.index", "saved_model.pb", "generator/config.json",
               "config.json", "vocab.txt"):
    (old / name).parent.mkdir(parents=True, exist_ok=True)
    (old / name).write_text(name)
  removed = []
  real_remove = tf.io.gfile.remove
  monkeypatch.setattr(tf.io.gfile, "remove", lambda p: (removed.append(p), real_remove(p)))
  files.retire_dir(str(old))
  order = [os.path.relpath(p, old) for p in removed]
  assert sorted(order[:2]) == ["config.json", "saved_model.pb"]
  assert order[2:] == ["generator/config.json"]
  assert not old.exists()


def test_a_documents_prefix_keeps_whole_documents(tmp_path):
  path = tmp_path / "corpus.txt"
  text = "a b\nc d\n\nEsau é\nf\n\ng h\n"
  path.write_text(text, encoding="utf-8")
  # The whole file when it fits.
  assert files.read_documents_prefix(str(path), 1 << 20) == text
  # Cut inside the third document: the first two, whole.
  assert files.read_documents_prefix(str(path), len(text.encode()) - 2) == "a b\nc d\n\nEsau é\nf"
  # Cut inside the first: its whole lines, never a broken character.
  assert files.read_documents_prefix(str(path), 6) == "a b\n"
  assert files.read_documents_prefix(str(path), 16) == "a b\nc d"
  # Bad UTF-8 is a one-line error naming the file, never bytes dropped.
  path.write_bytes(b"a b\n\xff c\n\nd\n")
  with pytest.raises(ValueError, match=r"corpus\.txt: not UTF-8"):
    files.read_documents_prefix(str(path), 1 << 20)
