"""Tests of dynamic masking: records written with --dynamic_masking are
masked inside tf.data (bert_tf.data.input.dynamic_masking via pipeline), giving
the static records' features, by the same rules, new masks every epoch and
the same masks for a seed."""

import collections
import os
import random

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.input import dynamic_masking
from bert_tf.data.records import manifest as manifest_lib
from bert_tf.data.pretraining import masking
from bert_tf.data.input import pipeline
from bert_tf.data.pretraining import writer

from helpers import doc_corpus

SEQ, PREDS = 32, 5
VOCAB = masking.MaskingVocab(size=60, cls_id=2, sep_id=3, mask_id=4,
                             is_subword=tuple(i >= 45 for i in range(60)))


@pytest.fixture(scope="module")
def records(tmp_path_factory):
  """Static and dynamic records of the writer tests' corpus (helpers/doc_corpus.py) (same options else)."""
  root = tmp_path_factory.mktemp("dynamic")
  vocab = doc_corpus.write_vocab(root / "vocab.txt")
  doc_corpus.write_corpus(root / "corpus.txt")
  out = {}
  for name, changes in (("static", {}), ("dynamic", {"dynamic_masking": True}),
                        ("dynamic_none", {"dynamic_masking": True, "sentence_task": "none",
                                          "packing": "full_sentences"}),
                        ("sop", {"sentence_task": "sop"})):
    options = writer.DataOptions(max_seq_length=SEQ, max_predictions_per_seq=PREDS,
                                 dupe_factor=1, random_seed=7, **changes)
    outputs = writer.Outputs(directory=str(root / name), num_shards=1)
    writer.create_pretraining_data(str(root / "corpus.txt"), outputs, vocab, options)
    out[name] = str(root / name / "*.tfrecord")
  return out


def dataset(info, batch, seed=1, is_training=True):
  return pipeline.make_dataset(info.files, batch, SEQ, PREDS, is_training, seed=seed,
                               shuffle_buffer=1, sentence_task=info.sentence_task,
                               masking=info.masking)


def test_dynamic_batches_have_the_static_features(records):
  static = pipeline.check_data(records["static"], SEQ, PREDS, len(doc_corpus.VOCAB))
  dynamic = pipeline.check_data(records["dynamic"], SEQ, PREDS, len(doc_corpus.VOCAB))
  assert static.masking is None and dynamic.masking is not None
  assert dynamic.masking.vocab.mask_id == doc_corpus.MASK and dynamic.sentence_task == "nsp"
  specs = [{k: (v.shape, v.dtype) for k, v in dataset(i, 8).element_spec.items()}
           for i in (static, dynamic)]
  assert specs[0] == specs[1]
  batch = next(iter(dataset(dynamic, 64)))
  ids, weights = batch["input_ids"].numpy(), batch["masked_lm_weights"].numpy()
  positions, labels = batch["masked_lm_positions"].numpy(), batch["masked_lm_ids"].numpy()
  lengths = batch["input_mask"].numpy().sum(axis=1)
  for row in range(64):
    k = int(weights[row].sum())
    assert k == masking.num_to_predict(int(lengths[row]), 0.15, PREDS)
    assert list(weights[row]) == [1.0] * k + [0.0] * (PREDS - k)
    assert list(positions[row, k:]) == [0] * (PREDS - k) and list(labels[row, k:]) == [0] * (PREDS - k)
    assert list(positions[row, :k]) == sorted(set(positions[row, :k])) and positions[row, 0] > 0
    assert all(labels[row, :k] > 4), "never a special token"
  # Sentence task none: no label key at all.
  none = pipeline.check_data(records["dynamic_none"], SEQ, PREDS)
  assert none.sentence_task == "none"
  assert "next_sentence_labels" not in dataset(none, 8).element_spec


def random_batch(rng, n, length=SEQ):
  ids = np.zeros([n, length], np.int32)
  mask = np.zeros([n, length], np.int32)
  for row in range(n):
    k = rng.randint(6, length)
    body = [rng.randrange(5, 60) for _ in range(k - 3)]
    cut = rng.randint(1, len(body) - 1)
    ids[row, :k] = [2] + body[:cut] + [3] + body[cut:] + [3]
    mask[row, :k] = 1
  return {"input_ids": tf.constant(ids), "input_mask": tf.constant(mask)}


def masked(features, config, seed=0, first_index=0):
  n, length = features["input_ids"].shape
  draws = tf.stack([dynamic_masking.example_draws(seed, first_index + i, length)
                    for i in range(n)])
  return {k: v.numpy() for k, v in dynamic_masking.mask_batch(features, draws, config).items()}


def test_80_10_10_and_deterministic_per_example(records):
  config = dynamic_masking.DynamicMasking(0.15, PREDS, VOCAB)
  features = random_batch(random.Random(0), 3000)
  out = masked(features, config)
  ids = features["input_ids"].numpy()
  w = out["masked_lm_weights"] > 0
  at = np.take_along_axis(out["input_ids"], out["masked_lm_positions"], axis=1)
  total = w.sum()
  shares = (((at == 4) & w).sum() / total, ((at == out["masked_lm_ids"]) & w).sum() / total)
  assert abs(shares[0] - 0.8) < 0.02 and abs(shares[1] - (0.1 + 0.1 / 60)) < 0.015, shares
  # Only predicted positions change.
  changed = out["input_ids"] != ids
  predicted = np.zeros_like(changed)
  np.put_along_axis(predicted, out["masked_lm_positions"], w, axis=1)
  assert not (changed & ~predicted).any()
  # An example's masks depend on (seed, its index) only, not on its batch.
  again = masked({k: v[5:9] for k, v in features.items()}, config, first_index=5)
  assert (again["input_ids"] == out["input_ids"][5:9]).all()
  other = masked(features, config, seed=1)
  assert (other["masked_lm_positions"] != out["masked_lm_positions"]).any(axis=1).mean() > 0.9


def run_lengths(positions_rows):
  """Histogram of runs of consecutive predicted positions."""
  hist = collections.Counter()
  for positions in positions_rows:
    run = 0
    for i, p in enumerate(positions):
      if i and p == positions[i - 1] + 1:
        run += 1
      else:
        if run:
          hist[run] += 1
        run = 1
    if run:
      hist[run] += 1
  total = sum(hist.values())
  return {n: hist[n] / total for n in range(1, 7)}


@pytest.mark.parametrize("wwm, max_ngram", [(True, 1), (False, 3), (True, 3)])
def test_same_selection_rule_as_the_writer(wwm, max_ngram):
  # The spans of the TF rule and of masking.mask_tokens_ngram (the writer's)
  # have the same run-length histogram on the same sequences, and whole
  # words are never split.
  config = dynamic_masking.DynamicMasking(0.15, 8, VOCAB, do_whole_word_mask=wwm,
                                          max_ngram=max_ngram)
  rng = random.Random(1)
  features = random_batch(rng, 2000, length=48)
  out = masked(features, config)
  ids = features["input_ids"].numpy()
  lengths = features["input_mask"].numpy().sum(axis=1)
  tf_rows, py_rows = [], []
  for row in range(len(ids)):
    tokens = ids[row, :lengths[row]].tolist()
    k = int(out["masked_lm_weights"][row].sum())
    tf_positions = out["masked_lm_positions"][row, :k].tolist()
    tf_rows.append(tf_positions)
    _, py_positions, _, _ = masking.mask_tokens_ngram(tokens, 0.15, 8, VOCAB, rng, wwm, max_ngram)
    py_rows.append(py_positions)
    if wwm:
      chosen = set(tf_positions)
      for unit in masking.mask_units(tokens, VOCAB, True):
        assert len(chosen & set(unit)) in (0, len(unit))
    assert abs(k - len(py_positions)) <= (3 if wwm or max_ngram > 1 else 0)
  tf_hist, py_hist = run_lengths(tf_rows), run_lengths(py_rows)
  assert max(abs(tf_hist[n] - py_hist[n]) for n in tf_hist) < 0.03, (tf_hist, py_hist)
  if max_ngram == 3 and not wwm:
    # n-grams make runs longer than single-token masking's.
    single = masked(features, dynamic_masking.DynamicMasking(0.15, 8, VOCAB))
    single_hist = run_lengths([single["masked_lm_positions"][r, :int(single["masked_lm_weights"][r].sum())].tolist()
                               for r in range(len(ids))])
    assert tf_hist[1] < single_hist[1] - 0.1


def test_new_masks_each_epoch_same_masks_for_a_seed(records):
  info = pipeline.check_data(records["dynamic"], SEQ, PREDS)
  n = info.num_instances
  take = 2 * n // 8 * 8

  def stream(seed):
    rows = [b for b in dataset(info, 8, seed=seed).unbatch().take(take)]
    return [{k: v.numpy() for k, v in r.items()} for r in rows]

  first, again = stream(3), stream(3)
  assert all((a["input_ids"] == b["input_ids"]).all() for a, b in zip(first, again))
  # shuffle_buffer=1 and one file: epoch 2 holds the same records in the same order.
  epoch1, epoch2 = first[:n], first[n:]
  same_record = [(a["input_mask"] == b["input_mask"]).all() for a, b in zip(epoch1, epoch2)]
  assert all(same_record)
  differ = np.mean([set(a["masked_lm_positions"]) != set(b["masked_lm_positions"])
                    for a, b in zip(epoch1, epoch2)])
  assert differ > 0.9


def test_check_data_refuses_contradictions(records, tmp_path):
  with pytest.raises(ValueError, match="--sentence_task=nsp.*flags.sentence_task=sop"):
    pipeline.check_data(records["sop"], SEQ, PREDS, sentence_task="nsp")
  assert pipeline.check_data(records["sop"], SEQ, PREDS, sentence_task="sop").sentence_task == "sop"
  # Dynamic records without their manifest cannot be masked.
  with pytest.raises(ValueError, match="no masked_lm_.*manifest"):
    pipeline.check_data(records["dynamic"], SEQ, PREDS, use_manifest=False)
  # A manifest that contradicts its records.
  folder = os.path.dirname(records["dynamic"])
  manifest = manifest_lib.Manifest.read(folder + "/manifest.json")
  copy = tmp_path / "copy"
  copy.mkdir()
  for path in tf.io.gfile.glob(records["dynamic"]):
    tf.io.gfile.copy(path, str(copy / os.path.basename(path)))
  flags = dict(manifest.flags, dynamic_masking=False)
  manifest_lib.Manifest.from_dict(dict(manifest.to_dict(), flags=flags)).write(
      str(copy / "manifest.json"))
  with pytest.raises(ValueError, match="dynamic_masking=False.*no masked_lm_"):
    pipeline.check_data(str(copy / "*.tfrecord"), SEQ, PREDS)
  # An old manifest (no variant flags) reads as the original's records.
  old = {k: v for k, v in manifest.flags.items()
         if k not in ("sentence_task", "packing", "max_ngram", "dynamic_masking")}
  assert manifest_lib.Manifest.from_dict(dict(manifest.to_dict(), flags=old)).sentence_task == "nsp"


def test_the_writers_shares_reach_dynamic_masking(records, tmp_path):
  # Records written with --masked_token_share=1.0: the manifest says so and
  # the pipeline masks every chosen position with [MASK].
  vocab = doc_corpus.write_vocab(tmp_path / "vocab.txt")
  doc_corpus.write_corpus(tmp_path / "corpus.txt")
  options = writer.DataOptions(max_seq_length=SEQ, max_predictions_per_seq=PREDS,
                               dupe_factor=1, random_seed=7, dynamic_masking=True,
                               masked_token_share=1.0)
  writer.create_pretraining_data(str(tmp_path / "corpus.txt"),
                                 writer.Outputs(directory=str(tmp_path / "all_mask")), vocab,
                                 options)
  info = pipeline.check_data(str(tmp_path / "all_mask" / "*.tfrecord"), SEQ, PREDS)
  assert info.masking.replacement == masking.Replacement(1.0, 0.5)
  batch = next(iter(dataset(info, 32)))
  at = np.take_along_axis(batch["input_ids"].numpy(), batch["masked_lm_positions"].numpy(),
                          axis=1)
  w = batch["masked_lm_weights"].numpy() > 0
  assert w.sum() > 50 and (at[w] == doc_corpus.MASK).all()
  # The default records' manifest states the original's rule.
  default = pipeline.check_data(records["dynamic"], SEQ, PREDS)
  assert default.masking.replacement == masking.ORIGINAL


def test_shares_in_the_pipelines_draws():
  rule = masking.Replacement.of_shares(0.5, 0.3)
  config = dynamic_masking.DynamicMasking(0.15, PREDS, VOCAB, replacement=rule)
  features = random_batch(random.Random(1), 3000)
  out = masked(features, config)
  w = out["masked_lm_weights"] > 0
  at = np.take_along_axis(out["input_ids"], out["masked_lm_positions"], axis=1)
  total = w.sum()
  masked_share = ((at == 4) & w).sum() / total
  kept_share = ((at == out["masked_lm_ids"]) & w).sum() / total
  # kept includes the random draws that hit the original id (1 in 60).
  assert abs(masked_share - 0.5) < 0.02 and abs(kept_share - (0.2 + 0.3 / 60)) < 0.02


def test_single_units_take_the_loops_choice_in_one_rank():
  # Without whole words or n-grams every unit is one position, and the
  # chosen ones are the first `want` of the visiting order: the one-rank
  # path gives exactly the general loop's choice, row for row.
  rng = random.Random(3)
  features = random_batch(rng, 500, length=48)
  ids, real = features["input_ids"], features["input_mask"] > 0
  batch, length = ids.shape
  draws = tf.random.stateless_uniform([batch, length, 2], seed=[5, 6], dtype=tf.float64)
  valid = real & (ids != VOCAB.cls_id) & (ids != VOCAB.sep_id)
  num_units = tf.reduce_sum(tf.cast(valid, tf.int32), axis=1)
  want = tf.random.stateless_uniform([batch], seed=[7, 8], minval=1, maxval=length + 4,
                                     dtype=tf.int32)  # beyond num_units too
  keys = tf.where(tf.range(length)[None, :] < num_units[:, None], draws[:, :, 0], 2.0)
  order = tf.argsort(keys, axis=1, stable=True)
  cum = tf.pad(tf.cumsum(tf.ones([batch, length], tf.int32), axis=1), [[0, 0], [1, 0]])
  loop, count = dynamic_masking._choose_spans(order, draws[:, :, 1], cum, num_units, want,
                                              length, 1)
  ranked = dynamic_masking._first_units(order, num_units, want, length)
  assert ranked.numpy().tolist() == loop.numpy().tolist()
  assert (count.numpy() == tf.minimum(want, num_units).numpy()).all()
