"""Instruments without fine-tuning noise: a pretrained model's own sentence
head, and linear probes on its frozen encoder.

  head_<pair task>_accuracy    the NSP or SOP head as trained, on held-out
                               segment pairs built like its pretraining
                               pairs (data.segment_pairs: random-document
                               and same-document negatives, swapped
                               order); class 0 is the natural pair for
                               both kinds of head. The pairs are unmasked.
  frozen_<task>_accuracy       a deterministic linear probe
                               (experiments.linear_probe) on the frozen
                               encoder's features, fitted on the train
                               split and scored on dev; for the pair tasks
                               on the same pairs (the head's are its dev
                               split), and for each --task.

Features of an input (no dropout): the last layer's [CLS] vector and, for
a pair, u and v, the mean of A's and of B's token vectors, with |u - v| and
u * v (the usual sentence-pair probe features: a linear probe cannot
compare two texts from their concatenation alone); a single text gives
[CLS] and the mean of its tokens. The pooler is left out: an MLM-only
model's is untrained.
"""

import dataclasses

import numpy as np

from bert_tf.data import segment_pairs
from bert_tf.experiments import linear_probe


@dataclasses.dataclass(frozen=True)
class PairSet:
  """One pair task's held-out pairs as model features (dicts of int32 [n,
  seq]) and labels (int [n]), split by document; `seen`, `seen_labels`:
  pairs of the pretraining documents themselves (None when not made), on
  which a sentence head that scores above its held-out figure learned
  those documents rather than the task."""
  task: str
  train: dict
  train_labels: np.ndarray
  dev: dict
  dev_labels: np.ndarray
  seen: dict = None
  seen_labels: np.ndarray = None


def pair_features(pairs, vocab, max_seq_length):
  """([CLS] A [SEP] B [SEP] features, labels) of (tokens_a, tokens_b,
  label) pairs (each already within max_seq_length - 3 tokens)."""
  n = len(pairs)
  ids = np.zeros([n, max_seq_length], np.int32)
  mask = np.zeros([n, max_seq_length], np.int32)
  segments = np.zeros([n, max_seq_length], np.int32)
  for i, (a, b, _) in enumerate(pairs):
    row = [vocab.cls_id] + list(a) + [vocab.sep_id] + list(b) + [vocab.sep_id]
    if len(row) > max_seq_length:
      raise ValueError(f"pair {i} has {len(row)} tokens, more than {max_seq_length}")
    ids[i, :len(row)] = row
    mask[i, :len(row)] = 1
    segments[i, len(a) + 2:len(row)] = 1
  labels = np.array([p[2] for p in pairs], np.int64)
  return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}, labels


def tokenized_documents(documents, tokenizer):
  """Documents (lists of sentences, str) as lists of sentences of token ids
  (empty sentences and documents dropped)."""
  flat = [s for d in documents for s in d]
  ids = []
  if flat:
    values, splits = tokenizer.tokenize_to_ids(flat)
    ids = [values[splits[i]:splits[i + 1]].tolist() for i in range(len(flat))]
  out, k = [], 0
  for d in documents:
    out.append([s for s in ids[k:k + len(d)] if s])
    k += len(d)
  return [d for d in out if d]


# Held-out documents are tokenized in prefixes of this many, doubling, until
# every pair task has its `max_examples` train and dev pairs: a held-out
# split 1,000x a test corpus's is not tokenized whole for a few thousand pairs.
FIRST_DOCUMENTS = 256


def _task_pairs(tokenized, tasks, max_seq_length, seed):
  return {task: segment_pairs.split_pairs(
      segment_pairs.segment_pairs(tokenized, task, max_seq_length - 3, seed)) for task in tasks}


def pair_sets(text, tasks, tokenizer, max_seq_length, seed, max_examples):
  """{task: PairSet} of held-out `text` (the pretraining format); at most
  `max_examples` train and dev pairs each. The pairs come from the first
  documents that give every task that many (all of them for a smaller
  held-out split: the same pairs as from the whole text then)."""
  from bert_tf.data import pair_tasks  # pylint: disable=g-import-not-at-top
  documents = pair_tasks.parse_documents(text)
  if not tasks:
    return {}
  count = min(FIRST_DOCUMENTS, len(documents))
  while True:
    tokenized = tokenized_documents(documents[:count], tokenizer)
    split = _task_pairs(tokenized, tasks, max_seq_length, seed)
    if count >= len(documents) or all(min(len(train), len(dev)) >= max_examples
                                      for train, dev in split.values()):
      break
    count = min(2 * count, len(documents))
  return {task: PairSet(task, *pair_features(train[:max_examples], tokenizer.vocab,
                                             max_seq_length),
                        *pair_features(dev[:max_examples], tokenizer.vocab, max_seq_length))
          for task, (train, dev) in split.items()}


def with_seen_pairs(sets, text, tokenizer, max_seq_length, seed, max_examples):
  """`sets` (pair_sets() of the held-out text) with the dev pairs of the
  pretraining text `text` as each set's `seen` pairs (made as pair_sets()
  makes its dev pairs)."""
  seen = pair_sets(text, list(sets), tokenizer, max_seq_length, seed, max_examples)
  return {task: dataclasses.replace(s, seen=seen[task].dev, seen_labels=seen[task].dev_labels)
          for task, s in sets.items()}


def _batches(features, batch_size):
  n = len(next(iter(features.values())))
  for start in range(0, n, batch_size):
    yield {k: v[start:start + batch_size] for k, v in features.items()}


def head_outcomes(pretrainer, features, labels, batch_size=128):
  """Whether the pretrainer's sentence head (argmax of nsp_logits) gets each
  of (features, labels) right: int 0/1 [n] (its mean is the head's
  accuracy)."""
  # Eager: a few batches per model, and a tf.function per model would be
  # counted as retracing of one function (TensorFlow keys them by code).
  call = lambda f: pretrainer(f, training=False)["nsp_logits"]  # noqa: E731
  predictions = np.concatenate([np.argmax(call(b).numpy(), axis=1)
                                for b in _batches(features, batch_size)])
  return (predictions == np.asarray(labels)).astype(np.int64)


def head_accuracy(pretrainer, features, labels, batch_size=128):
  """Accuracy of the pretrainer's sentence head on (features, labels)."""
  return float(np.mean(head_outcomes(pretrainer, features, labels, batch_size)))


def encoder_features(encoder, features, pair, batch_size=128):
  """Probe features (float64 [n, 5H] for pairs, [n, 2H] for single texts)
  of a keras-hub backbone's last layer, without dropout."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert_tf.models import modeling  # pylint: disable=g-import-not-at-top

  def run(f):
    out = modeling.encoder_outputs(encoder, f["input_ids"], f["segment_ids"], f["input_mask"],
                                   training=False)["sequence_output"]
    out = tf.cast(out, tf.float32)  # sums in float32 under mixed precision
    real = tf.cast(f["input_mask"], tf.float32)[:, :, None]
    first = tf.cast(f["segment_ids"], tf.float32)[:, :, None]
    cls = out[:, 0]
    if modeling.is_causal(encoder):  # a left-to-right LM's: the last real token sees all
      last = tf.maximum(tf.reduce_sum(tf.cast(f["input_mask"], tf.int32), 1) - 1, 0)
      cls = tf.gather(out, last, batch_dims=1)
    if not pair:
      return tf.concat([cls, tf.reduce_sum(out * real, 1) / tf.reduce_sum(real, 1)], axis=1)
    in_a, in_b = real * (1.0 - first), real * first
    u = tf.reduce_sum(out * in_a, 1) / tf.maximum(tf.reduce_sum(in_a, 1), 1.0)
    v = tf.reduce_sum(out * in_b, 1) / tf.maximum(tf.reduce_sum(in_b, 1), 1.0)
    return tf.concat([cls, u, v, tf.abs(u - v), u * v], axis=1)

  # Eager, as head_accuracy.
  return np.concatenate([run(b).numpy().astype(np.float64)
                         for b in _batches(features, batch_size)])


def frozen_probe(encoder, train, train_labels, dev, dev_labels, space, pair):
  """(metric name suffix, value, each dev example's outcome) of a linear
  probe on frozen features: ("accuracy", dev accuracy, 1/0 correct [n])
  or, for regression, ("pearson", r, (prediction, target) [n, 2])."""
  from bert_tf.downstream import finetune  # pylint: disable=g-import-not-at-top
  train_x = encoder_features(encoder, train, pair)
  dev_x = encoder_features(encoder, dev, pair)
  if space is not None and space.regression:
    predictions = linear_probe.fit_regression(train_x, train_labels, dev_x)
    targets = np.asarray(dev_labels, np.float64)
    return ("pearson", float(finetune.pearson(predictions, targets)),
            np.stack([predictions, targets], axis=1))
  num_classes = 2 if space is None else len(space.labels)
  predictions = linear_probe.fit_predict(train_x, train_labels, dev_x, num_classes)
  correct = (predictions == np.asarray(dev_labels)).astype(np.int64)
  return "accuracy", float(np.mean(correct)), correct
