"""Tests of bert_tf.data.records.stats: the figures computed from records equal the
ones the writer states in its manifest, under the same names; compression is
read from the bytes; the original's reference names map onto them."""

import json
import os

import pytest
import tensorflow as tf

from bert_tf.data.records import manifest as manifest_lib
from bert_tf.data.records import stats

from helpers.writer_run import MASK_ID, write_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
  root = tmp_path_factory.mktemp("stats")
  return write_run(root)


def test_figures_from_the_records_equal_the_manifests_under_the_same_names(run):
  # "out/*" also matches manifest.json and the .stats.json files: left out.
  got = stats.record_statistics(run.directory + "/*", MASK_ID)
  stated = stats.manifest_figures(manifest_lib.Manifest.read(run.manifest_path()))
  assert stated["path"] == run.manifest_path()
  assert got["files"] == stated["files"] == 2
  assert (got["max_seq_length"], got["max_predictions_per_seq"]) == (32, 5)
  assert set(got["counts"]) == set(stats.COUNTS) and set(got["shares"]) == set(stats.SHARES)
  assert got["counts"] == stated["counts"] and got["counts"]["instances"] > 100
  for name in stats.SHARES:
    if stated["shares"][name] is None:
      assert got["shares"][name] is None, name  # seq 32: no instance reaches 64 tokens
    else:
      assert got["shares"][name] == pytest.approx(stated["shares"][name], rel=1e-12), name
  assert 0.7 < got["shares"]["masked"] < 0.9


def test_compression_by_the_bytes(run, tmp_path):
  # Plain records under a .gz name read as plain.
  plain = run.paths()[0]
  renamed = str(tmp_path / "shard.tfrecord.gz")
  tf.io.gfile.copy(plain, renamed)
  assert stats.record_statistics(renamed, MASK_ID)["counts"] == stats.record_statistics(
      plain, MASK_ID)["counts"]
  # GZIP records under a plain name read as GZIP.
  gz = str(tmp_path / "gzip.tfrecord")
  with tf.io.TFRecordWriter(gz, options="GZIP") as w:
    for record in tf.data.TFRecordDataset(plain):
      w.write(record.numpy())
  assert stats.record_statistics(gz, MASK_ID)["counts"] == stats.record_statistics(
      plain, MASK_ID)["counts"]
  with pytest.raises(ValueError, match=r"gzip\.tfrecord is GZIP-compressed but .*shard\.tfrecord\.gz is not"):
    stats.record_statistics(f"{gz},{renamed}", MASK_ID)


def test_bad_input_names_the_flag_or_file(tmp_path):
  with pytest.raises(FileNotFoundError, match=r"input pattern .*nothing.* \(--input_file\) matches no files"):
    stats.record_statistics(str(tmp_path / "nothing*"), MASK_ID)
  tf.io.TFRecordWriter(str(tmp_path / "empty.tfrecord")).close()
  with pytest.raises(ValueError, match=r"empty\.tfrecord: no record"):
    stats.record_statistics(str(tmp_path / "empty.tfrecord"), MASK_ID)


def test_reference_names_are_the_original_figures(run, shared_dir):
  with open(os.path.join(shared_dir, "reference",
                         "original_create_pretraining_data_kjv.json")) as f:
    reference = json.load(f)
  got = stats.reference_figures(stats.record_statistics(run.directory + "/*.tfrecord", MASK_ID))
  for figures in reference.values():
    assert set(got) == set(figures)
  assert got["instances"] == stats.record_statistics(run.paths(), MASK_ID)["counts"]["instances"]
  assert got["mask_frac"] > 0.7 and got["frac_len_lt_64"] is None


def test_unigram_plateau_is_the_commonest_label_share_at_mask(run):
  import numpy as np  # pylint: disable=g-import-not-at-top
  from bert_tf.data.records import schema  # pylint: disable=g-import-not-at-top
  files = sorted(p for p in tf.io.gfile.glob(run.directory + "/*.tfrecord"))
  labels = []
  for path in files:
    for raw in tf.data.TFRecordDataset(path):
      ex = schema.parse_examples(raw[None], 32, 5, masked=True, sentence_label=True)
      ex = {k: v.numpy()[0] for k, v in ex.items()}
      for pos, label, weight in zip(ex["masked_lm_positions"], ex["masked_lm_ids"],
                                    ex["masked_lm_weights"]):
        if weight > 0 and ex["input_ids"][pos] == MASK_ID:
          labels.append(int(label))
  counts = np.bincount(labels)
  assert stats.unigram_plateau(run.directory + "/*", MASK_ID) == counts.max() / len(labels)
  assert 0 < counts.max() / len(labels) < 0.5
