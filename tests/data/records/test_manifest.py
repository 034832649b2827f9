"""Tests of bert_tf.data.records.manifest: the Manifest dataclass built by the writer,
written and read back in the JSON layout of earlier manifests, tolerant of keys
it does not know, checked against training's settings with errors that name
the file, the key and both values; and finding the manifest of a set of
records in both output layouts of the data writer."""

import dataclasses
import json
import random

import pytest

from bert_tf.io import file_io as files_lib
from bert_tf.data.records import manifest as manifest_lib
from bert_tf.data.records import schema
from bert_tf.data.pretraining import writer

Manifest = manifest_lib.Manifest

# Written by the data writer as it was before the Manifest dataclass (commit
# 71ad7a2, `writer.create_pretraining_data` on a 6-document corpus, 2 shards,
# max_seq_length 32), paths shortened: the format existing manifests have.
EARLIER_MANIFEST = """\
{
 "compression": "",
 "counts": {
  "documents": 6,
  "input_files": 1,
  "instances": 21,
  "predictions": 72,
  "sentences": 23,
  "tokens": 473,
  "undecodable_bytes": 0
 },
 "files": [
  "data/out/pretrain-00000-of-00002.tfrecord",
  "data/out/pretrain-00001-of-00002.tfrecord"
 ],
 "flags": {
  "block_bytes": 1048576,
  "do_lower_case": true,
  "do_whole_word_mask": false,
  "dupe_factor": 2,
  "gzip": false,
  "input_file": "data/corpus.txt",
  "masked_lm_prob": 0.15,
  "max_predictions_per_seq": 5,
  "max_seq_length": 32,
  "random_seed": 12345,
  "short_seq_prob": 0.1
 },
 "length_histogram": {
  "bucket_tokens": 16,
  "counts": [
   1,
   17,
   3
  ]
 },
 "run": {
  "num_workers": 1,
  "reused_shards": 0,
  "seconds": 2.009
 },
 "schema_version": 1,
 "shares": {
  "kept": 0.1111111111111111,
  "masked": 0.8333333333333334,
  "mean_tokens": 22.523809523809526,
  "nsp_random": 0.5714285714285714,
  "prediction_fraction": 0.1522198731501057,
  "predictions_per_instance": 3.4285714285714284,
  "random": 0.05555555555555555,
  "shorter_than_64": null
 },
 "vocab": {
  "path": "data/vocab.txt",
  "sha256": "e3763083fa0d9774b94f3d98fca7bdf648c0ca26df5c2b4cd5168ff45700b335",
  "size": 13
 },
 "writer": "bert_tf.create_pretraining_data"
}
"""

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]


def write_corpus(directory):
  (directory / "vocab.txt").write_text(
      "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "."] + WORDS + ["##s"]) + "\n")
  rng = random.Random(0)
  docs = ["\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))) + " ."
                    for _ in range(rng.randint(2, 5))) for _ in range(6)]
  (directory / "corpus.txt").write_text("\n\n".join(docs) + "\n")
  return str(directory / "corpus.txt"), str(directory / "vocab.txt")


def layout(obj):
  """Key -> layout of the value: the keys of objects, the type of the rest."""
  if isinstance(obj, dict):
    return {k: layout(v) for k, v in obj.items()}
  if isinstance(obj, list):
    return "list"
  return type(obj).__name__


def sample(files=("a",), **flags):
  return Manifest(schema_version=1, flags=dict({"max_seq_length": 32,
                                                "max_predictions_per_seq": 5}, **flags),
                  vocab={"sha256": "ab" * 32, "size": 71, "path": "vocab.txt"},
                  counts={"instances": 3}, files=list(files))


def touch(path):
  path.write_bytes(b"")
  return str(path)


# --- The layout of earlier manifests ----------------------------------------------

def test_an_earlier_manifest_reads_into_the_dataclass_and_writes_back_byte_identical(tmp_path):
  path = tmp_path / "manifest.json"
  path.write_text(EARLIER_MANIFEST)
  manifest = Manifest.read(str(path))
  assert manifest.path == str(path)
  assert (manifest.schema_version, manifest.writer) == (1, "bert_tf.create_pretraining_data")
  assert (manifest.max_seq_length, manifest.max_predictions_per_seq) == (32, 5)
  assert manifest.option("masked_lm_prob", float) == 0.15
  assert manifest.option("do_whole_word_mask", bool) is False
  assert manifest.option("dupe_factor", int) == 2
  assert (manifest.vocab_size, manifest.vocab_path) == (13, "data/vocab.txt")
  assert manifest.vocab_sha256.startswith("e3763083")
  assert manifest.instances == 21 and manifest.count("documents") == 6
  assert manifest.share("masked") == pytest.approx(0.8333333333333334)
  assert manifest.share("shorter_than_64") is None  # null: seq 32 < 64
  assert manifest.files == ("data/out/pretrain-00000-of-00002.tfrecord",
                            "data/out/pretrain-00001-of-00002.tfrecord")
  assert manifest.gzip is False and manifest.compression == ""
  assert manifest.length_histogram["counts"] == (1, 17, 3)
  assert manifest.extra == {}
  assert manifest.to_dict() == json.loads(EARLIER_MANIFEST)
  out = tmp_path / "again.json"
  manifest.write(str(out))
  assert out.read_text() == EARLIER_MANIFEST


def test_the_writer_writes_the_earlier_layout(tmp_path):
  corpus, vocab = write_corpus(tmp_path)
  outputs = writer.Outputs(directory=str(tmp_path / "out"), num_shards=2)
  returned = writer.create_pretraining_data(
      corpus, outputs, vocab,
      writer.DataOptions(max_seq_length=32, max_predictions_per_seq=5, dupe_factor=2))
  text = (tmp_path / "out" / "manifest.json").read_text()
  written = json.loads(text)
  assert returned == written
  earlier = json.loads(EARLIER_MANIFEST)
  # Same sections, same keys, same types: tools that parse manifests keep
  # working. (Counts and flags may gain keys: a new count or option is not a
  # layout change; every earlier key keeps its type.)
  for section in earlier:
    if section in ("counts", "flags"):
      assert set(earlier[section]) <= set(written[section])
      assert layout({k: written[section][k] for k in earlier[section]}) == layout(earlier[section])
      continue
    assert layout(written[section]) == layout(earlier[section]), section
  assert set(written) == set(earlier)
  assert text == json.dumps(written, indent=1, sort_keys=True) + "\n"
  manifest = Manifest.read(outputs.manifest_path())
  assert manifest.files == tuple(outputs.paths())
  assert manifest.vocab_size == 13 and manifest.max_seq_length == 32
  assert manifest.instances == written["counts"]["instances"] > 0
  assert manifest.run["num_workers"] == 1 and "driver" not in manifest.run


# --- Building from the writer's totals ----------------------------------------------

class _Vocab:
  path, sha256, size = "v.txt", "cd" * 32, 50


TOTALS = {"documents": 4, "sentences": 20, "instances": 10, "tokens": 900, "predictions": 100,
          "masked": 80, "kept": 12, "random": 8, "nsp_random": 5, "undecodable_bytes": 3,
          "length_histogram": [0, 0, 0, 2, 3, 5, 0, 0, 0]}


def from_totals(totals=TOTALS, **kw):
  args = dict(input_files=["in/a.txt", "in/b.txt"], output_files=["o/r.tfrecord"],
              vocab=_Vocab(), options=writer.DataOptions(), gzip=True, totals=totals,
              bucket_tokens=16, seconds=1.23456, num_workers=4, reused_shards=1,
              schema_version=schema.SCHEMA_VERSION)
  args.update(kw)
  return Manifest.from_totals(**args)


def test_from_totals_counts_shares_and_options():
  m = from_totals()
  assert m.path is None and m.writer == "bert_tf.create_pretraining_data"
  assert dict(m.counts) == {"input_files": 2, "documents": 4, "sentences": 20, "instances": 10,
                            "tokens": 900, "predictions": 100, "undecodable_bytes": 3}
  assert m.share("mean_tokens") == 90.0 and m.share("predictions_per_instance") == 10.0
  assert m.share("prediction_fraction") == pytest.approx(100 / 900)
  assert (m.share("masked"), m.share("kept"), m.share("random")) == (0.8, 0.12, 0.08)
  assert m.share("nsp_random") == 0.5
  # Buckets of 16 tokens: 0-15, ..., 48-63 are shorter than 64.
  assert m.share("shorter_than_64") == 0.2
  assert m.flags["input_file"] == "in/a.txt,in/b.txt" and m.gzip is True
  assert m.compression == "GZIP"
  assert {f.name for f in dataclasses.fields(writer.DataOptions)} < set(m.flags)
  assert dict(m.run) == {"seconds": 1.235, "num_workers": 4, "reused_shards": 1}
  assert from_totals(driver="beam").run["driver"] == "beam"
  short = from_totals(options=writer.DataOptions(max_seq_length=32))
  assert short.share("shorter_than_64") is None


def test_a_new_writer_total_becomes_a_count_under_its_name():
  m = from_totals(dict(TOTALS, nsp_random_from_same_document=2))
  assert m.count("nsp_random_from_same_document") == 2
  assert "masked" not in m.counts and "length_histogram" not in m.counts


def test_the_manifest_is_frozen_all_the_way_down():
  m = from_totals()
  with pytest.raises(dataclasses.FrozenInstanceError):
    m.flags = {}
  with pytest.raises(TypeError):
    m.counts["instances"] = 0
  with pytest.raises(TypeError):
    m.length_histogram["counts"][0] = 1
  assert m == Manifest.from_dict(json.loads(m.to_json()))


# --- Reading: unknown keys, bad files, bad values ------------------------------------

def test_unknown_keys_are_kept_and_written_back(tmp_path):
  obj = json.loads(EARLIER_MANIFEST)
  obj["counts"]["nsp_random_from_same_document"] = 7
  obj["flags"].update(sentence_task="sop", packing="full_sentences", max_ngram=3,
                      dynamic_masking=True)
  obj["objective"] = {"name": "albert", "notes": [1, 2]}
  path = tmp_path / "manifest.json"
  path.write_text(json.dumps(obj))
  m = Manifest.read(str(path))
  assert m.count("nsp_random_from_same_document") == 7
  assert m.option("sentence_task", str) == "sop"
  assert m.option("max_ngram", int) == 3 and m.option("dynamic_masking", bool) is True
  assert m.option("not_recorded", int, default=1) == 1
  assert m.extra["objective"]["name"] == "albert"
  assert m.to_dict() == obj
  m.check(32, 5, 13)
  m.write(str(path))
  assert json.loads(path.read_text()) == obj


def test_read_names_the_file_that_is_not_a_manifest(tmp_path):
  cases = {"broken.json": ("{not json", "invalid JSON"),
           "other.json": (json.dumps({"counts": {}}), "no schema_version"),
           "list.json": ("[1, 2]", "a JSON list"),
           "version.json": (json.dumps({"schema_version": "1"}), "schema_version='1'"),
           "section.json": (json.dumps({"schema_version": 1, "flags": [1]}), "flags is list"),
           "files.json": (json.dumps({"schema_version": 1, "files": "a.tfrecord"}), "files")}
  for name, (text, message) in cases.items():
    (tmp_path / name).write_text(text)
    with pytest.raises(ValueError, match=name.replace(".", r"\.") + ".*" + message):
      Manifest.read(str(tmp_path / name))
  with pytest.raises(FileNotFoundError, match="absent.json"):
    Manifest.read(str(tmp_path / "absent.json"))


def test_a_value_of_the_wrong_type_names_the_file_and_key(tmp_path):
  path = tmp_path / "manifest.json"
  path.write_text(json.dumps({"schema_version": 1, "flags": {"max_seq_length": "128"},
                              "vocab": {"size": True}}))
  m = Manifest.read(str(path))
  with pytest.raises(ValueError, match=r"manifest\.json: flags\.max_seq_length='128' is not an integer"):
    m.check(max_seq_length=128)
  with pytest.raises(ValueError, match=r"vocab\.size=True is not an integer"):
    _ = m.vocab_size


# --- Checking against training's settings --------------------------------------------

def test_check_passes_matching_settings_and_skips_what_is_not_given():
  m = sample()
  assert m.check(32, 5, 71) is m
  m.check()
  # Settings a manifest does not record are not checked.
  Manifest(schema_version=1).check(128, 20, 30522)


@pytest.mark.parametrize("kwargs, message", [
    ({"max_seq_length": 128},
     r"^--max_seq_length=128 but the records' manifest .*/m\.json has flags\.max_seq_length=32$"),
    ({"max_predictions_per_seq": 20},
     r"^--max_predictions_per_seq=20 but .*/m\.json has flags\.max_predictions_per_seq=5$"),
    ({"vocab_size": 30522},
     r"^the model config has vocab_size=30522 but the records' manifest .*/m\.json has "
     r"vocab\.size=71 \(vocab vocab\.txt\)$"),
])
def test_a_mismatch_names_the_file_the_key_and_both_values(tmp_path, kwargs, message):
  m = sample().write(str(tmp_path / "m.json"))
  with pytest.raises(ValueError, match=message):
    m.check(**kwargs)


# --- Writing --------------------------------------------------------------------------

def test_write_then_read_round_trip_leaves_no_temp_file(tmp_path):
  path = str(tmp_path / "manifest.json")
  m = sample().write(path)
  assert m.path == path
  assert Manifest.read(path) == m == sample()
  assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]
  # Overwriting an existing manifest works (a resumed run writes it again).
  obj = m.to_dict()
  obj["counts"]["instances"] = 4
  Manifest.from_dict(obj).write(path)
  assert Manifest.read(path).instances == 4
  assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]


def test_the_json_dict_round_trips(tmp_path):
  path = str(tmp_path / "manifest.json")
  obj = sample().to_dict()
  Manifest.from_dict(obj, path=path).write(path)
  assert Manifest.read(path).to_dict() == obj
  assert Manifest.find(str(tmp_path / "*")) is None  # "a" is not beside it
  files_lib.write_json(str(tmp_path / "x.json"), {"b": 1, "a": [1]})
  assert (tmp_path / "x.json").read_text() == '{\n "a": [\n  1\n ],\n "b": 1\n}\n'


# --- Finding it beside the records -----------------------------------------------------

def test_paths_of_both_layouts():
  assert manifest_lib.manifest_path_for_dir("gs://b/out/") == "gs://b/out/manifest.json"
  assert manifest_lib.manifest_path_for_dir("out") == "out/manifest.json"
  assert manifest_lib.manifest_path_for_file("d/a.tfrecord") == "d/a.tfrecord.manifest.json"


def test_find_the_manifest_of_an_output_dir(tmp_path):
  out = tmp_path / "out"
  out.mkdir()
  shards = [touch(out / f"pretrain-{k:05d}-of-00002.tfrecord") for k in range(2)]
  sample(shards).write(manifest_lib.manifest_path_for_dir(str(out)))
  # A glob that also matches manifest.json and the shards' stats files.
  (out / "pretrain-00000-of-00002.tfrecord.stats.json").write_text("{}")
  found = Manifest.find(f"{out}/*")
  assert found is not None and found.files == tuple(shards)
  assert found.path == str(out / "manifest.json")
  assert Manifest.find([shards[1]]).files == tuple(shards)


def test_find_the_manifest_of_output_files_from_any_of_them(tmp_path):
  files = [touch(tmp_path / name) for name in ("b.tfrecord", "a.tfrecord")]
  # The manifest of an --output_file run sits beside the first file given.
  sample(files).write(manifest_lib.manifest_path_for_file(files[0]))
  for pattern in (files[0], files[1], f"{tmp_path}/*.tfrecord", f"{files[1]},{files[0]}"):
    found = Manifest.find(pattern)
    assert found is not None and found.files == tuple(files), pattern


def test_find_none_for_records_without_one(tmp_path):
  records = touch(tmp_path / "original.tfrecord")
  assert Manifest.find(records) is None
  assert Manifest.find([f"{tmp_path}/nothing*"]) is None
  # Another run's manifest in the same directory does not claim these records.
  sample([str(tmp_path / "other.tfrecord")]).write(str(tmp_path / "other.tfrecord.manifest.json"))
  assert Manifest.find(records) is None


def test_find_with_a_relative_pattern(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  touch(tmp_path / "r.tfrecord")
  sample(["r.tfrecord"]).write("r.tfrecord.manifest.json")
  assert Manifest.find("r.tfrecord").files == ("r.tfrecord",)


def test_record_files_leave_out_the_writers_json_sidecars(tmp_path):
  shards = [touch(tmp_path / f"s{k}.tfrecord") for k in range(2)]
  (tmp_path / "manifest.json").write_text("{}")
  (tmp_path / "s0.tfrecord.stats.json").write_text("{}")
  assert manifest_lib.record_files(f"{tmp_path}/*") == shards
  with pytest.raises(FileNotFoundError, match=r"\*\.json' \(--eval_input_file\) matches only \.json files"):
    manifest_lib.record_files(f"{tmp_path}/*.json", flag="--eval_input_file")
