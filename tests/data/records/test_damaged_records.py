"""damaged_records: a truncated or corrupt TFRecord file is named, with its
offset, in one line, wherever records are read (the input pipeline's
checks, inspect_records' statistics)."""

import random

import pytest
import tensorflow as tf

from bert_tf.data.records import damaged_records
from bert_tf.data.input import pipeline
from bert_tf.data.records import stats

from helpers import reference_records

SEQ, PREDS = 32, 5


def write_records(path, n, seed=0):
  rng = random.Random(seed)
  encoder = reference_records.RecordEncoder(SEQ, PREDS)
  with tf.io.TFRecordWriter(str(path)) as writer:
    for _ in range(n):
      ids = [rng.randrange(5, 100) for _ in range(SEQ)]
      writer.write(encoder.encode(ids, [0] * SEQ, list(range(1, PREDS + 1)), ids[1:PREDS + 1],
                                  rng.randint(0, 1)))
  return str(path)


def truncate(path, keep_fraction=0.6):
  """Cuts the file inside a record (a cut between two records reads as a
  shorter file: the manifest's counts are what tell those apart)."""
  data = open(path, "rb").read()
  with open(path, "wb") as f:
    f.write(data[:int(len(data) * keep_fraction) + 20])


def corrupt(path, at_fraction=0.5):
  data = bytearray(open(path, "rb").read())
  data[int(len(data) * at_fraction)] ^= 0xFF
  with open(path, "wb") as f:
    f.write(bytes(data))


@pytest.fixture
def shards(tmp_path):
  return [write_records(tmp_path / f"part-{k}.tfrecord", 40, seed=k) for k in range(3)]


@pytest.mark.parametrize("damage, kind", [(truncate, "truncated record at"),
                                          (corrupt, "corrupted record at")])
def test_a_damaged_file_among_several_is_named_with_its_offset(shards, damage, kind):
  damage(shards[1])
  with pytest.raises(damaged_records.DamagedRecordsError) as e:
    with damaged_records.naming_the_file(shards, ""):
      for _ in tf.data.TFRecordDataset(shards).batch(7):
        pass
  message = str(e.value)
  assert "\n" not in message
  assert message.startswith(f"{shards[1]}: ") and kind in message
  assert "rerun the create_pretraining_data command that wrote it" in message


def test_inspect_records_statistics_name_the_damaged_file(shards):
  truncate(shards[2])
  with pytest.raises(damaged_records.DamagedRecordsError, match=f"^{shards[2]}: truncated record at \\d+"):
    stats.record_statistics(",".join(shards), mask_id=4, batch_size=16)


def test_a_first_record_cut_short_is_named_by_the_input_checks(tmp_path):
  path = write_records(tmp_path / "one.tfrecord", 1)
  truncate(path, 0.5)
  with pytest.raises(damaged_records.DamagedRecordsError, match=f"^{path}: truncated record at 0 "):
    pipeline.check_data(path, SEQ, PREDS)


def test_an_intact_set_reads_through(shards):
  with damaged_records.naming_the_file(shards, ""):
    count = sum(1 for _ in tf.data.TFRecordDataset(shards))
  assert count == 120


def test_a_record_file_its_manifest_does_not_list_is_named(tmp_path):
  from bert_tf.data.pretraining import writer
  from helpers import doc_corpus as tw
  vocab = tw.write_vocab(tmp_path / "vocab.txt")
  tw.write_corpus(tmp_path / "corpus.txt")
  options = writer.DataOptions(max_seq_length=SEQ, max_predictions_per_seq=PREDS, dupe_factor=1,
                               random_seed=7)
  out = tmp_path / "rec"
  writer.create_pretraining_data(str(tmp_path / "corpus.txt"),
                                 writer.Outputs(directory=str(out), num_shards=1), vocab,
                                 options, num_workers=1)
  assert pipeline.check_data(str(out / "*.tfrecord"), SEQ, PREDS).num_instances > 0
  stray = write_records(out / "pretrain-00003-of-00004.tfrecord", 4)  # another run's shard
  with pytest.raises(ValueError, match=f"^{stray} is not one of the 1 record files its manifest "
                     f"{out / 'manifest.json'} lists"):
    pipeline.check_data(str(out / "*.tfrecord"), SEQ, PREDS)
