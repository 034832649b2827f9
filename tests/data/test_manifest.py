"""Tests of bert_tf.data.manifest: atomic writing, clear errors on files that are
not manifests, and finding the manifest of a set of records in both output
layouts of the data writer."""

import json

import pytest

from bert_tf.data import manifest as manifest_lib


def sample_manifest(files):
  return {"schema_version": 1, "flags": {"max_seq_length": 32, "max_predictions_per_seq": 5},
          "vocab": {"sha256": "ab" * 32, "size": 71, "path": "vocab.txt"},
          "counts": {"instances": 3}, "files": list(files)}


def touch(path):
  path.write_bytes(b"")
  return str(path)


def test_write_then_read_round_trip_leaves_no_temp_file(tmp_path):
  path = str(tmp_path / "manifest.json")
  manifest = sample_manifest(["a"])
  manifest_lib.write_manifest(manifest, path)
  assert manifest_lib.read_manifest(path) == manifest
  assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]
  # Overwriting an existing manifest works (a resumed run writes it again).
  manifest["counts"]["instances"] = 4
  manifest_lib.write_manifest(manifest, path)
  assert manifest_lib.read_manifest(path)["counts"]["instances"] == 4
  assert json.loads((tmp_path / "manifest.json").read_text())["counts"]["instances"] == 4


def test_read_manifest_names_the_file_that_is_not_a_manifest(tmp_path):
  bad_json = tmp_path / "broken.json"
  bad_json.write_text("{not json")
  with pytest.raises(ValueError, match=r"broken\.json.*invalid JSON"):
    manifest_lib.read_manifest(str(bad_json))
  other = tmp_path / "other.json"
  other.write_text(json.dumps({"counts": {}}))
  with pytest.raises(ValueError, match=r"other\.json.*no schema_version"):
    manifest_lib.read_manifest(str(other))
  a_list = tmp_path / "list.json"
  a_list.write_text("[1, 2]")
  with pytest.raises(ValueError, match=r"list\.json"):
    manifest_lib.read_manifest(str(a_list))


def test_paths_of_both_layouts():
  assert manifest_lib.manifest_path_for_dir("gs://b/out/") == "gs://b/out/manifest.json"
  assert manifest_lib.manifest_path_for_dir("out") == "out/manifest.json"
  assert manifest_lib.manifest_path_for_file("d/a.tfrecord") == "d/a.tfrecord.manifest.json"


def test_find_manifest_of_an_output_dir(tmp_path):
  out = tmp_path / "out"
  out.mkdir()
  shards = [touch(out / f"pretrain-{k:05d}-of-00002.tfrecord") for k in range(2)]
  manifest_lib.write_manifest(sample_manifest(shards), manifest_lib.manifest_path_for_dir(str(out)))
  # A glob that also matches manifest.json and the shards' stats files.
  (out / "pretrain-00000-of-00002.tfrecord.stats.json").write_text("{}")
  found = manifest_lib.find_manifest(f"{out}/*")
  assert found is not None and found["files"] == shards
  assert manifest_lib.find_manifest([shards[1]])["files"] == shards


def test_find_manifest_of_output_files_from_any_of_them(tmp_path):
  files = [touch(tmp_path / name) for name in ("b.tfrecord", "a.tfrecord")]
  # The manifest of an --output_file run sits beside the first file given.
  manifest_lib.write_manifest(sample_manifest(files),
                              manifest_lib.manifest_path_for_file(files[0]))
  for pattern in (files[0], files[1], f"{tmp_path}/*.tfrecord", f"{files[1]},{files[0]}"):
    found = manifest_lib.find_manifest(pattern)
    assert found is not None and found["files"] == files, pattern


def test_find_manifest_none_for_records_without_one(tmp_path):
  records = touch(tmp_path / "original.tfrecord")
  assert manifest_lib.find_manifest(records) is None
  assert manifest_lib.find_manifest([f"{tmp_path}/nothing*"]) is None
  # Another run's manifest in the same directory does not claim these records.
  manifest_lib.write_manifest(sample_manifest([str(tmp_path / "other.tfrecord")]),
                              str(tmp_path / "other.tfrecord.manifest.json"))
  assert manifest_lib.find_manifest(records) is None


def test_find_manifest_with_a_relative_pattern(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  touch(tmp_path / "r.tfrecord")
  manifest_lib.write_manifest(sample_manifest(["r.tfrecord"]), "r.tfrecord.manifest.json")
  assert manifest_lib.find_manifest("r.tfrecord")["files"] == ["r.tfrecord"]
