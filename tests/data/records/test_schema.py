"""Tests of bert_tf.data.records.schema: the hand-encoded writer gives exactly the bytes of
tf.train.Example, and the reader gives the values back as the model wants
them. Records one at a time come from tests/helpers/reference_records.py,
checked here against tf.train.Example too."""

import random

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.records import schema

from helpers import reference_records


def reference_bytes(input_ids, segment_ids, positions, lm_ids, label, seq, preds):
  """The original writer's tf.train.Example, padded the original's way."""
  def ints(values, length):
    values = list(values) + [0] * (length - len(values))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
  n, p = len(input_ids), len(positions)
  features = {
      "input_ids": ints(input_ids, seq),
      "input_mask": ints([1] * n, seq),
      "segment_ids": ints(segment_ids, seq),
      "masked_lm_positions": ints(positions, preds),
      "masked_lm_ids": ints(lm_ids, preds),
      "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(
          value=[1.0] * p + [0.0] * (preds - p))),
      "next_sentence_labels": ints([label], 1),
  }
  example = tf.train.Example(features=tf.train.Features(feature=features))
  return example.SerializeToString(deterministic=True)


def random_instance(rng, seq, preds, vocab_size, n=None, p=None):
  n = n if n is not None else rng.randint(5, seq)
  num_a = rng.randint(2, n - 2)
  ids = [rng.randrange(vocab_size) for _ in range(n)]
  segments = [0] * num_a + [1] * (n - num_a)
  p = p if p is not None else rng.randint(1, min(preds, n - 3))
  positions = sorted(rng.sample(range(1, n), p))
  lm_ids = [rng.randrange(vocab_size) for _ in positions]
  return ids, num_a, segments, positions, lm_ids, rng.choice([schema.IS_NEXT, schema.IS_RANDOM])


def test_feature_names_and_labels_are_the_originals():
  assert set(schema.FEATURE_NAMES) == {
      "input_ids", "input_mask", "segment_ids", "masked_lm_positions",
      "masked_lm_ids", "masked_lm_weights", "next_sentence_labels"}
  assert (schema.IS_NEXT, schema.IS_RANDOM) == (0, 1)
  spec = schema.feature_spec(128, 20)
  assert spec["input_ids"].shape == [128] and spec["masked_lm_ids"].shape == [20]
  assert spec["next_sentence_labels"].shape == [1]
  assert spec["masked_lm_weights"].dtype == tf.float32 and spec["segment_ids"].dtype == tf.int64


# (max_seq_length, max_predictions_per_seq, vocab size) of the encoder tests.
ENCODER_SHAPES = [
    (16, 3, 100),
    (128, 20, 30522),     # ids up to 30521: 1-, 2- and 3-byte varints
    (512, 76, 30522),
    (64, 10, 70000),      # beyond 2^16
    (5, 1, 2),            # the smallest instance
]


def edge_instances(rng, seq, preds, vocab_size):
  """Full length with one and with every prediction slot, the shortest
  instance, no prediction at all, and the largest id everywhere."""
  empty = random_instance(rng, seq, preds, vocab_size, n=5, p=1)
  full = random_instance(rng, seq, preds, vocab_size, n=seq, p=min(preds, seq - 1))
  full[0][:] = [vocab_size - 1] * seq
  full[4][:] = [vocab_size - 1] * len(full[4])
  return [random_instance(rng, seq, preds, vocab_size, n=seq, p=1),
          random_instance(rng, seq, preds, vocab_size, n=seq, p=min(preds, seq - 1)),
          random_instance(rng, seq, preds, vocab_size, n=5, p=1),
          (empty[0], empty[1], empty[2], [], [], empty[5]),
          full]


def encoder_and_cases(seed, n, seq, preds, vocab_size):
  """An ExampleEncoder of the shape and n random instances plus the edge ones."""
  rng = random.Random(seed)
  cases = [random_instance(rng, seq, preds, vocab_size) for _ in range(n)]
  cases += edge_instances(rng, seq, preds, vocab_size)
  return schema.ExampleEncoder(seq, preds, vocab_size), cases


@pytest.mark.parametrize("seq, preds, vocab_size", ENCODER_SHAPES)
def test_records_one_at_a_time_are_the_bytes_of_tf_train_example(seq, preds, vocab_size):
  _, cases = encoder_and_cases(seq * 1000 + preds, 150, seq, preds, vocab_size)
  encoder = reference_records.RecordEncoder(seq, preds)
  for ids, num_a, segments, positions, lm_ids, label in cases:
    expected = reference_bytes(ids, segments, positions, lm_ids, label, seq, preds)
    assert encoder.encode_pair(ids, num_a, positions, lm_ids, label) == expected
    # `encode` is a front end to the same serializer.
    assert encoder.encode(ids, segments, positions, lm_ids, label) == expected


def test_three_byte_varints_beyond_2_to_the_14():
  encoder = schema.ExampleEncoder(8, 2, 30522)
  ids = [16383, 16384, 30521, 0, 127, 128]
  expected = reference_bytes(ids, [0] * 3 + [1] * 3, [1, 2], [16384, 30521], 1, 8, 2)
  assert reference_records.RecordEncoder(8, 2).encode_pair(
      ids, 3, [1, 2], [16384, 30521], 1) == expected
  assert encoder.encode_batch([ids], [6], [3], [[1, 2]], [[16384, 30521]], [2], [1]) == [expected]
  parsed = tf.train.Example.FromString(expected).features.feature
  assert list(parsed["input_ids"].int64_list.value)[:6] == ids


def test_too_long_instance_is_refused():
  encoder = reference_records.RecordEncoder(8, 2)
  with pytest.raises(ValueError, match="max_seq_length 8"):
    encoder.encode_pair(list(range(9)), 3, [1], [1], 0)
  with pytest.raises(ValueError, match="max_predictions_per_seq 2"):
    encoder.encode(list(range(8)), [0] * 8, [1, 2, 3], [1, 2, 3], 0)


def test_encode_refuses_segment_ids_that_are_not_a_pair():
  encoder = reference_records.RecordEncoder(8, 2)
  for segments in ([0, 1, 0, 1, 1], [0, 0, 1], [0, 0, 2, 2, 2]):
    with pytest.raises(ValueError, match="segment_ids must be zeros then ones"):
      encoder.encode([2, 5, 3, 6, 3], segments, [1], [5], 0)


def test_parse_examples_gives_the_values_back_as_int32():
  seq, preds, vocab_size = 32, 5, 30522
  rng = random.Random(1)
  encoder = reference_records.RecordEncoder(seq, preds)
  cases = [random_instance(rng, seq, preds, vocab_size) for _ in range(20)]
  cases.append(random_instance(rng, seq, preds, vocab_size, n=seq, p=preds))
  serialized = [encoder.encode_pair(ids, num_a, pos, lm, label)
                for ids, num_a, _, pos, lm, label in cases]
  parsed = schema.parse_examples(tf.constant(serialized), seq, preds)
  assert set(parsed) == set(schema.FEATURE_NAMES)
  batch = len(cases)
  shapes = {"input_ids": (batch, seq), "input_mask": (batch, seq), "segment_ids": (batch, seq),
            "masked_lm_positions": (batch, preds), "masked_lm_ids": (batch, preds),
            "masked_lm_weights": (batch, preds), "next_sentence_labels": (batch, 1)}
  for name, shape in shapes.items():
    assert tuple(parsed[name].shape) == shape, name
    expected_dtype = tf.float32 if name == "masked_lm_weights" else tf.int32
    assert parsed[name].dtype == expected_dtype, name
  values = {k: v.numpy() for k, v in parsed.items()}
  for i, (ids, _, segments, positions, lm_ids, label) in enumerate(cases):
    n, p = len(ids), len(positions)
    np.testing.assert_array_equal(values["input_ids"][i], ids + [0] * (seq - n))
    np.testing.assert_array_equal(values["input_mask"][i], [1] * n + [0] * (seq - n))
    np.testing.assert_array_equal(values["segment_ids"][i], segments + [0] * (seq - n))
    np.testing.assert_array_equal(values["masked_lm_positions"][i], positions + [0] * (preds - p))
    np.testing.assert_array_equal(values["masked_lm_ids"][i], lm_ids + [0] * (preds - p))
    np.testing.assert_array_equal(values["masked_lm_weights"][i], [1.0] * p + [0.0] * (preds - p))
    assert values["next_sentence_labels"][i].tolist() == [label]


def test_parse_examples_inside_a_dataset_map(tmp_path):
  encoder = reference_records.RecordEncoder(16, 3)
  path = str(tmp_path / "r.tfrecord")
  with tf.io.TFRecordWriter(path) as writer:
    for i in range(6):
      writer.write(encoder.encode_pair([2, 10 + i, 3, 20, 3], 3, [1], [10 + i], i % 2))
  ds = tf.data.TFRecordDataset(path).batch(4).map(lambda s: schema.parse_examples(s, 16, 3))
  batches = list(ds)
  assert [b["input_ids"].shape[0] for b in batches] == [4, 2]
  assert batches[0]["masked_lm_ids"][:, 0].numpy().tolist() == [10, 11, 12, 13]
  assert batches[1]["next_sentence_labels"].numpy().ravel().tolist() == [0, 1]


def test_shapes_of_record():
  encoder = reference_records.RecordEncoder(48, 7)
  record = encoder.encode_pair([2, 5, 3, 6, 3], 3, [1], [5], 0)
  assert schema.shapes_of_record(record) == (48, 7)
  # Records of the original writer (tf.train.Example) too.
  original = reference_bytes([2, 5, 3, 6, 3], [0, 0, 0, 1, 1], [1, 3], [5, 6], 1, 24, 4)
  assert schema.shapes_of_record(original) == (24, 4)


def test_record_missing_a_feature_is_a_clear_error():
  example = tf.train.Example.FromString(reference_bytes([2, 5, 3, 6, 3], [0, 0, 0, 1, 1],
                                                        [1], [5], 1, 8, 2))
  del example.features.feature["masked_lm_weights"]
  with pytest.raises(ValueError, match="missing features.*masked_lm_weights"):
    schema.shapes_of_record(example.SerializeToString())
  not_bert = tf.train.Example(features=tf.train.Features(feature={
      "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[1]))}))
  with pytest.raises(ValueError, match="not a BERT pretraining example"):
    schema.shapes_of_record(not_bert.SerializeToString())


def batch_arrays(cases, width_extra=0):
  """The padded arrays encode_batch takes, of random_instance cases; the
  padding holds junk, which encode_batch must ignore."""
  n = len(cases)
  width = max(len(c[0]) for c in cases) + width_extra
  k = max(max(len(c[3]) for c in cases), 1)
  ids = np.full((n, width), 7, np.int64)
  positions = np.full((n, k), 3, np.int64)
  lm_ids = np.full((n, k), 9, np.int64)
  for i, (row_ids, _, _, row_positions, row_lm_ids, _) in enumerate(cases):
    ids[i, :len(row_ids)] = row_ids
    positions[i, :len(row_positions)] = row_positions
    lm_ids[i, :len(row_lm_ids)] = row_lm_ids
  return (ids, np.array([len(c[0]) for c in cases]), np.array([c[1] for c in cases]), positions,
          lm_ids, np.array([len(c[3]) for c in cases]), np.array([c[5] for c in cases]))


@pytest.mark.parametrize("seq, preds, vocab_size", ENCODER_SHAPES)
def test_encode_batch_gives_the_bytes_of_one_at_a_time_and_tf_train_example(seq, preds,
                                                                            vocab_size):
  encoder, cases = encoder_and_cases(seq * 7 + preds, 120, seq, preds, vocab_size)
  one_at_a_time = reference_records.RecordEncoder(seq, preds)
  ids, lengths, num_a, positions, lm_ids, counts, labels = batch_arrays(cases)
  expected = [reference_bytes(c[0], c[2], c[3], c[4], c[5], seq, preds) for c in cases]
  assert [one_at_a_time.encode_pair(c[0], c[1], c[3], c[4], c[5]) for c in cases] == expected
  # Chunks of any size, the last one short.
  for rows_per_chunk in (1, 7, 1024):
    assert encoder.encode_batch(ids, lengths, num_a, positions, lm_ids, counts, labels,
                                rows_per_chunk=rows_per_chunk) == expected
  # The variants without masked_lm_* and/or next_sentence_labels.
  for masked, labelled in ((False, True), (True, False), (False, False)):
    expected = [one_at_a_time.encode_pair(c[0], c[1], c[3] if masked else None,
                                          c[4] if masked else None, c[5] if labelled else None)
                for c in cases]
    got = encoder.encode_batch(ids, lengths, num_a, positions if masked else None,
                               lm_ids if masked else None, counts if masked else None,
                               labels if labelled else None)
    assert got == expected


def test_encode_batch_takes_narrow_padding_and_refuses_what_does_not_fit():
  encoder = schema.ExampleEncoder(8, 2, 100)
  ids = np.array([[2, 5, 3, 6, 3]])
  one = encoder.encode_batch(ids, [5], [3], [[1]], [[5]], [1], [0])
  assert one == [reference_records.RecordEncoder(8, 2).encode_pair([2, 5, 3, 6, 3], 3, [1], [5], 0)]
  assert encoder.encode_batch(np.zeros((0, 8), np.int64), [], [], None, None, None, None) == []
  with pytest.raises(ValueError, match="max_seq_length 8"):
    encoder.encode_batch(np.zeros((1, 9), np.int64), [9], [3], [[1]], [[1]], [1], [0])
  with pytest.raises(ValueError, match="max_predictions_per_seq 2"):
    encoder.encode_batch(np.zeros((1, 8), np.int64), [8], [3], [[1, 2, 3]], [[1, 2, 3]], [3], [0])
