"""Tests of bert_tf.data.input.length_buckets: the bucket lengths, batches cut to
the shortest that holds their longest example, a model giving the same
outputs on a cut batch as on the full one, one trace per shape, and a
fine-tuning run with buckets against the original's full padding."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.downstream.classification import tsv as classification
from bert_tf.data.input import length_buckets
from bert_tf.downstream.classification import classifier
from bert_tf.downstream import finetune
from bert_tf.downstream.classification import finetune_tsv

from helpers.finetune_task import tiny_config, write_task, write_vocab


def test_bucket_lengths_are_equal_steps_in_multiples_of_eight():
  assert length_buckets.boundaries(128, 8) == (16, 32, 48, 64, 80, 96, 112, 128)
  assert length_buckets.boundaries(128, 4) == (32, 64, 96, 128)
  assert length_buckets.boundaries(128, 1) == (128,)
  assert length_buckets.boundaries(100, 3) == (40, 72, 100)  # the last is max_seq_length
  assert length_buckets.boundaries(16, 6) == (8, 16)  # never below 8, no duplicates
  with pytest.raises(ValueError, match="length_buckets=0: must be at least 1"):
    length_buckets.boundaries(128, 0)


def _features(lengths, seq=32):
  ids = np.zeros((len(lengths), seq), np.int32)
  for i, n in enumerate(lengths):
    ids[i, :n] = np.arange(2, 2 + n) % 20 + 2
  return {"input_ids": ids, "input_mask": (ids != 0).astype(np.int32),
          "segment_ids": np.zeros_like(ids)}


def test_a_batch_is_cut_to_the_bucket_of_its_longest_example():
  lengths = length_buckets.boundaries(32, 4)  # (8, 16, 24, 32)
  features = _features([3, 5, 9, 4, 30, 2])
  labels = np.arange(6)
  dataset = classification.make_dataset(features, labels, batch_size=2, lengths=lengths)
  shapes = [(f["input_ids"].shape[1], l.shape) for f, l in dataset]
  # Longest 5 -> 8, 9 -> 16, 30 -> 32; the labels (one per example) untouched.
  assert [s for s, _ in shapes] == [8, 16, 32]
  assert all(l == (2,) for _, l in shapes)
  # The same examples in the same order as full padding, only the tail gone.
  full = list(classification.make_dataset(features, labels, batch_size=2))
  for (cut, _), (whole, _) in zip(dataset, full):
    n = cut["input_ids"].shape[1]
    np.testing.assert_array_equal(cut["input_ids"], whole["input_ids"][:, :n])
    assert not whole["input_mask"][:, n:].numpy().any()
  # Per-position labels are cut with the inputs.
  per_position = classification.make_dataset(features, (features["input_ids"],),
                                             batch_size=3, lengths=lengths)
  for f, (ids,) in per_position:
    assert ids.shape == f["input_ids"].shape


def test_arrays_are_cut_as_trim_batch_cuts_tensors():
  lengths = length_buckets.boundaries(32, 4)  # (8, 16, 24, 32)
  for example_lengths in ([3, 5], [9, 4], [30, 2], [0, 0], [16, 1]):
    features = dict(_features(example_lengths), label=np.arange(2))
    cut = length_buckets.trim_arrays(features, lengths)
    expected = length_buckets.trim_batch({k: tf.constant(v) for k, v in features.items()},
                                         lengths)
    assert set(cut) == set(expected)
    for key, value in expected.items():
      np.testing.assert_array_equal(cut[key], value.numpy())


def test_prediction_by_buckets_gives_full_padding_outputs_in_order():
  model = classifier.BertClassifier(tiny_config(), 3)
  features = _features([4, 30, 6, 2, 17])
  full = model(features, training=False).numpy()
  out = finetune.predict(model, features, 2, lengths=length_buckets.boundaries(32, 4))
  assert out.shape == (5, 3)
  np.testing.assert_allclose(out, full, atol=1e-5)


def test_a_model_gives_the_same_outputs_on_a_cut_batch():
  model = classifier.BertClassifier(tiny_config(), 3)
  features = _features([4, 7, 6])
  full = model(features, training=False).numpy()
  cut = length_buckets.trim_batch({k: tf.constant(v) for k, v in features.items()}, (8, 16, 32))
  assert cut["input_ids"].shape == (3, 8)
  np.testing.assert_allclose(model(cut, training=False).numpy(), full, atol=1e-5)


def test_steps_are_traced_once_per_shape():
  calls = []
  step = length_buckets.StepsByShape(lambda x: (calls.append(1), x * 2)[1])
  for n in (8, 16, 8, 16, 8):
    step(tf.ones((4, n)))
  assert step.num_traces == 2 and len(calls) == 2
  any_batch = length_buckets.StepsByShape(lambda x: x + 1, any_batch=True)
  for b in (4, 3, 4):
    any_batch(tf.ones((b, 8)))
  assert any_batch.num_traces == 1
  any_length = length_buckets.StepsByShape(lambda x: x * 3, any_batch=True, any_length=True)
  for b, n in ((4, 8), (3, 16), (4, 32)):
    assert any_length(tf.ones((b, n))).shape == (b, n)
  assert any_length.num_traces == 1


@pytest.mark.slow
def test_fine_tuning_with_buckets_matches_full_padding(tmp_path):
  """The same task, seeds and batches with and without buckets: the same
  dev figures (the padding cut is masked; float sums in other shapes may
  differ in their last bits, so within a step's noise)."""
  vocab = write_vocab(tmp_path / "vocab.txt")
  train, dev = write_task(tmp_path / "train.tsv", 64, 1), write_task(tmp_path / "dev.tsv", 32, 2)
  results = {}
  for buckets in (1, 3):
    config = finetune.FinetuneConfig(
        train_file=train, dev_file=dev, output_dir=str(tmp_path / f"b{buckets}"),
        vocab_file=vocab, max_seq_length=32, num_train_epochs=4, learning_rate=1e-3,
        train_batch_size=16, seeds=1, save_model=False, length_buckets=buckets)
    results[buckets] = finetune_tsv.run(config, tiny_config())
  assert abs(results[1]["accuracy"] - results[3]["accuracy"]) <= 1 / 32
