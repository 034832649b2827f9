"""Batches padded to their longest example, in a few fixed lengths.

Fine-tuning and prediction write every example padded to max_seq_length,
as the original's run_classifier does. A batch of 30-token sentences at
max_seq_length=128 then spends three quarters of its attention and
feed-forward work on padding. `trim_batch` cuts each batch to the
shortest of a few bucket lengths that holds its longest example (by
input_mask), so the examples, their order and the batches are those of full
padding: only the padded tail, which the attention mask already hides,
goes. A model run on a trimmed batch gives the same outputs as on the full
one (positions are absolute from 0; masked keys add nothing to a softmax).

A few lengths, not any length: a compiled step (XLA, a TPU) keeps static
shapes, one per bucket (`StepsByShape` traces one concrete function per
shape it meets). `boundaries(max_seq_length, 1)` is the original's full
padding.
"""

import numpy as np
import tensorflow as tf

# Bucket lengths are multiples of this (a tensor core's and a TPU's tile).
ALIGN = 8


def boundaries(max_seq_length, num_buckets):
  """The bucket lengths, shortest first: max_seq_length split in
  num_buckets equal steps, each rounded up to a multiple of ALIGN
  (duplicates dropped), e.g. (16, 32, 48, ..., 128) for 128 and 8 buckets;
  (max_seq_length,) for 1.

  Raises:
    ValueError: num_buckets below 1.
  """
  if num_buckets < 1:
    raise ValueError(f"length_buckets={num_buckets}: must be at least 1 (1: every batch "
                     "padded to max_seq_length, the original's)")
  step = num_buckets * ALIGN
  lengths = {min(max_seq_length, -(-max_seq_length * i // step) * ALIGN)
             for i in range(1, num_buckets + 1)}
  return tuple(sorted(lengths))


def trim_batch(batch, lengths):
  """Cuts every [batch, seq] tensor of `batch` (a dict, or a (features,
  labels) pair whose labels may be per position) to the shortest of
  `lengths` that holds the batch's longest example (the most ones in
  features["input_mask"]). Tensors of another rank are left as they are."""
  features = batch[0] if isinstance(batch, tuple) else batch
  longest = tf.reduce_max(tf.reduce_sum(tf.cast(features["input_mask"], tf.int32), axis=1))
  bounds = tf.constant(lengths, tf.int32)
  length = tf.gather(bounds, tf.minimum(
      tf.reduce_sum(tf.cast(bounds < longest, tf.int32)), len(lengths) - 1))

  def cut(t):
    return t[:, :length] if t.shape.rank == 2 else t

  return tf.nest.map_structure(cut, batch)


def trim_arrays(features, lengths):
  """trim_batch's cut on a dict of numpy arrays (one batch), outside tf.data:
  prediction slices its batches from arrays in memory, and building a
  tf.data pipeline with trim_batch's map traced it again at every call
  (0.2 s of the 0.7 s a 256-pair dev set of BERT-tiny took,
  bench/bench_peers.py's classify, profiled)."""
  longest = int(np.max(np.sum(features["input_mask"] != 0, axis=1), initial=0))
  length = next((n for n in lengths if n >= longest), lengths[-1])
  return {k: v[:, :length] if np.ndim(v) == 2 else v for k, v in features.items()}


class StepsByShape:
  """A tf.function traced once per batch shape it is called with (a bucket
  length, a short last batch), as a concrete function: calls of a concrete
  function never count as retracing, so a model fine-tuned over several
  seeds or runs in one process makes TensorFlow warn of nothing.

  fn: a Python function of a batch (nested tensors).
  any_batch: one trace for every batch size (prediction's short last
    batch), keyed by the other dimensions only.
  any_length: one trace for every sequence length (the second dimension
    of a tensor of rank 2 or more: every length bucket). Tracing a step once
    per bucket cost about 60% of a 640-pair fine-tuning epoch of BERT-tiny
    (bench/bench_peers.py's classify, profiled); a step of unknown length
    runs the same ops.
  """

  def __init__(self, fn, any_batch=False, any_length=False):
    self._function = tf.function(fn, autograph=False)
    self._any_batch = any_batch
    self._any_length = any_length
    self._concrete = {}

  def _shape(self, t):
    shape = tuple(t.shape)
    if self._any_length and len(shape) >= 2:
      shape = shape[:1] + (None,) + shape[2:]
    return ((None,) + shape[1:]) if self._any_batch and shape else shape

  def __call__(self, *batch):
    key = tuple(self._shape(t) for t in tf.nest.flatten(batch))
    if key not in self._concrete:
      specs = tf.nest.map_structure(lambda t: tf.TensorSpec(self._shape(t), t.dtype), batch)
      self._concrete[key] = self._function.get_concrete_function(*specs)
    return self._concrete[key](*batch)

  @property
  def num_traces(self):
    return len(self._concrete)
