"""Tests of bert_tf.data.input.pipeline: file discovery, gzip detection, checks
against the manifest and the records, sharding and static batches."""

import random

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.input import pipeline

from helpers import reference_records
from helpers.pretraining import write_manifest

SEQ, PREDS, VOCAB = 32, 5, 100


def write_records(path, n, seq=SEQ, preds=PREDS, vocab=VOCAB, seed=0, gzip=False, start_id=0):
  """Writes n random instances; input_ids[1] holds a running id (start_id +
  i) % vocab so tests can tell records apart."""
  rng = random.Random(seed)
  encoder = reference_records.RecordEncoder(seq, preds)
  options = tf.io.TFRecordOptions(compression_type="GZIP" if gzip else "")
  with tf.io.TFRecordWriter(str(path), options) as writer:
    for i in range(n):
      length = rng.randint(8, seq)
      ids = [rng.randrange(5, vocab) for _ in range(length)]
      ids[1] = (start_id + i) % vocab
      segments = [0] * (length // 2) + [1] * (length - length // 2)
      positions = sorted(rng.sample(range(2, length), min(preds, length - 2)))
      writer.write(encoder.encode(ids, segments, positions, [ids[p] for p in positions],
                                  rng.randint(0, 1)))


def test_check_data_finds_records_in_pattern_order_without_sidecars(tmp_path):
  for name in ("b.tfrecord", "a.tfrecord", "c.other"):
    write_records(tmp_path / name, 2)
  (tmp_path / "b.tfrecord.stats.json").write_text("{}")
  info = pipeline.check_data(f"{tmp_path}/*.tfrecord, {tmp_path}/c.other", SEQ, PREDS, VOCAB)
  assert [f.rsplit("/", 1)[1] for f in info.files] == ["a.tfrecord", "b.tfrecord", "c.other"]
  assert len(pipeline.check_data(f"{tmp_path}/*", SEQ, PREDS).files) == 3
  assert info.manifest is None and info.num_instances is None
  with pytest.raises(FileNotFoundError, match=r"input pattern .*nothing-here.* \(--eval_input_file\)"):
    pipeline.check_data(f"{tmp_path}/*.tfrecord,{tmp_path}/nothing-here*", SEQ, PREDS,
                        flag="--eval_input_file")


@pytest.mark.parametrize("gzip", [False, True])
def test_check_data_detects_compression_by_the_bytes_and_shapes(tmp_path, gzip):
  # Named against their contents: the bytes decide.
  path = tmp_path / ("r.tfrecord" if gzip else "r.tfrecord.gz")
  write_records(path, 20, gzip=gzip)
  info = pipeline.check_data(str(path), SEQ, PREDS, VOCAB)
  assert info.compression == ("GZIP" if gzip else "")
  assert (info.max_seq_length, info.max_predictions_per_seq) == (SEQ, PREDS)
  ds = pipeline.make_dataset(info.files, 8, SEQ, PREDS, is_training=False,
                                   compression=info.compression)
  batches = list(ds)
  assert len(batches) == 2  # 20 records, drop_remainder
  assert batches[0]["input_ids"].shape == (8, SEQ)
  assert batches[0]["input_ids"].dtype == tf.int32
  assert batches[0]["masked_lm_weights"].dtype == tf.float32
  assert batches[0]["next_sentence_labels"].shape == (8, 1)


def test_records_without_manifest_shape_mismatch_names_both_values(tmp_path):
  write_records(tmp_path / "r.tfrecord", 4)
  with pytest.raises(ValueError, match=r"--max_seq_length=128 .*max_seq_length=32"):
    pipeline.check_data(str(tmp_path / "r.tfrecord"), 128, PREDS, VOCAB)
  with pytest.raises(ValueError, match=r"--max_predictions_per_seq=20 .*=5"):
    pipeline.check_data(str(tmp_path / "r.tfrecord"), SEQ, 20, VOCAB)


def test_manifest_checked_against_flags_and_vocab(tmp_path):
  write_records(tmp_path / "r.tfrecord", 16)
  written = write_manifest(tmp_path)
  info = pipeline.check_data(str(tmp_path / "*.tfrecord"), SEQ, PREDS, VOCAB)
  assert info.num_instances == 16
  assert info.manifest == written and info.manifest.path == str(tmp_path / "manifest.json")
  with pytest.raises(ValueError, match=r"vocab_size=30522 .*manifest\.json has vocab\.size=100"):
    pipeline.check_data(str(tmp_path / "*.tfrecord"), SEQ, PREDS, 30522)
  write_manifest(tmp_path, max_predictions_per_seq=7)
  with pytest.raises(ValueError, match=r"^--max_predictions_per_seq=5 but the records' manifest "
                                       r".*manifest\.json has flags\.max_predictions_per_seq=7$"):
    pipeline.check_data(str(tmp_path / "*.tfrecord"), SEQ, PREDS, VOCAB)
  # use_manifest=False checks the records alone.
  assert pipeline.check_data(str(tmp_path / "*.tfrecord"), SEQ, PREDS, VOCAB,
                             use_manifest=False).manifest is None


def test_compression_from_the_bytes_when_the_manifest_disagrees(tmp_path):
  write_records(tmp_path / "r.tfrecord", 8, gzip=True)
  write_manifest(tmp_path)  # says compression ""
  info = pipeline.check_data(str(tmp_path / "r.tfrecord"), SEQ, PREDS, VOCAB)
  assert info.compression == "GZIP"
  assert len(list(pipeline.make_dataset(info.files, 8, SEQ, PREDS, False, info.compression))) == 1


def test_training_dataset_shards_files_by_pipeline(tmp_path):
  # Four files with disjoint running ids; two pipelines must read disjoint
  # files and together cover all of them.
  for i in range(4):
    write_records(tmp_path / f"r{i}.tfrecord", 10, seed=i, start_id=10 * i)
  files = pipeline.check_data(str(tmp_path / "*.tfrecord"), SEQ, PREDS).files
  for is_training in (False, True):
    seen = []
    for pipeline_id in range(2):
      ctx = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline_id,
                                       num_replicas_in_sync=2)
      ds = pipeline.make_dataset(files, 5, SEQ, PREDS, is_training=is_training,
                                       input_context=ctx, seed=1, shuffle_buffer=100)
      ids = set()
      for batch in ds.take(12):  # training: 60 records, three passes over its 20
        assert batch["input_ids"].shape == (5, SEQ)
        ids.update(batch["input_ids"][:, 1].numpy().tolist())
      # Each pipeline reads whole files: ids come in blocks of ten.
      assert {i // 10 for i in ids} in ({0, 2}, {1, 3}, {0, 1}, {2, 3}, {0, 3}, {1, 2}), ids
      seen.append(ids)
    assert not seen[0] & seen[1]
    if not is_training:
      assert seen[0] | seen[1] == set(range(40))


def test_distributed_dataset_per_replica_batch(tmp_path):
  write_records(tmp_path / "r.tfrecord", 32)
  info = pipeline.check_data(str(tmp_path / "r.tfrecord"), SEQ, PREDS, VOCAB)
  strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
  ds = pipeline.distributed_dataset(strategy, info, 16, is_training=True, seed=3)
  batch = next(iter(ds))
  assert batch["input_ids"].shape == (16, SEQ)
  np.testing.assert_array_equal(batch["input_mask"].numpy()[:, 0], 1)
