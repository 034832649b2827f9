"""RoBERTa's SENTENCE-PAIR input (Liu et al. 2019, section 4.2: "Each input
contains a pair of natural sentences, either sampled from a contiguous
portion of one document or from separate documents", with the NSP loss):
the pure rule (instances.sentence_pairs_from_document) on documents whose
ids say where each token comes from, and the writer's --packing=sentence_pair
records end to end."""

import random

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.pretraining import instances
from bert_tf.data.pretraining import writer
from bert_tf.data.records import schema

from helpers import doc_corpus


def _documents(rng, num_docs, min_sentences=1, max_sentences=10, max_len=30):
  """Token d * 10000 + k * 100 + j: document d, sentence k, token j."""
  return [[[d * 10000 + k * 100 + j for j in range(rng.randint(1, max_len))]
           for k in range(rng.randint(min_sentences, max_sentences))]
          for d in range(1, num_docs + 1)]


def _sentence_of(tokens):
  return {(t // 10000, t // 100 % 100) for t in tokens}


def test_each_segment_is_one_sentence_b_the_next_or_from_another_document():
  rng = random.Random(0)
  docs = _documents(rng, 600)
  pairs = []
  for i in range(len(docs)):
    pairs.extend((i, p) for p in instances.sentence_pairs_from_document(docs, i, 48, rng))
  # One pair per sentence that has a next one; one-sentence documents none.
  assert len(pairs) == sum(len(d) - 1 for d in docs)
  randoms = 0
  for i, pair in pairs:
    a, b = pair.tokens_a, pair.tokens_b
    assert a and b and len(a) + len(b) <= 48 - 3
    (doc_a, k), = _sentence_of(a)  # one sentence each
    (doc_b, k_b), = _sentence_of(b)
    assert doc_a == i + 1
    if pair.is_random_next:
      assert doc_b != doc_a  # from another document
      randoms += 1
    else:
      assert (doc_b, k_b) == (doc_a, k + 1)  # the next sentence
    assert not pair.random_from_same_document
    sentence_a = docs[i][k]
    if len(sentence_a) + len(docs[doc_b - 1][k_b]) <= 45:
      assert a == sentence_a  # whole when it fits
  assert abs(randoms / len(pairs) - 0.5) < 5 * 0.5 / np.sqrt(len(pairs))


def test_the_rule_is_a_pure_function_of_its_seed():
  docs = _documents(random.Random(3), 20, min_sentences=2)
  one = [instances.sentence_pairs_from_document(docs, i, 32, random.Random(5)) for i in range(20)]
  two = [instances.sentence_pairs_from_document(docs, i, 32, random.Random(5)) for i in range(20)]
  assert one == two
  assert instances.sentence_pairs_from_document([[[1, 2, 3]]], 0, 32, random.Random(1)) == []


def _decode(record):
  feature = tf.train.Example.FromString(record).features.feature
  return {name: (list(feature[name].int64_list.value) or list(feature[name].float_list.value))
          for name in feature}


def _write(tmp_path, name, num_workers=1):
  options = writer.DataOptions(max_seq_length=64, max_predictions_per_seq=8, dupe_factor=1,
                               random_seed=7, block_bytes=4000, packing="sentence_pair")
  outputs = writer.Outputs(directory=str(tmp_path / name), num_shards=2)
  manifest = writer.create_pretraining_data(str(tmp_path / "corpus.txt"), outputs,
                                            str(tmp_path / "vocab.txt"), options,
                                            num_workers=num_workers)
  return manifest, doc_corpus.read_records(outputs.paths())


def test_sentence_pair_records(tmp_path):
  doc_corpus.write_vocab(tmp_path / "vocab.txt")
  docs = doc_corpus.write_corpus(tmp_path / "corpus.txt")
  manifest, raw = _write(tmp_path, "out")
  records = [_decode(r) for r in raw]
  assert manifest["flags"]["packing"] == "sentence_pair"
  assert len(records) == sum(len(d) - 1 for d in docs)
  period = doc_corpus.TOKEN_ID["."]
  randoms = 0
  for r in records:
    ids = r["input_ids"][:sum(r["input_mask"])]
    for p, w, label in zip(r["masked_lm_positions"], r["masked_lm_weights"], r["masked_lm_ids"]):
      if w:
        ids[p] = label
    num_a = r["segment_ids"].index(1)
    a, b = ids[1:num_a - 1], ids[num_a:-1]
    assert ids[num_a - 1] == doc_corpus.SEP and ids[-1] == doc_corpus.SEP
    # One sentence each: a sentence ends at its period (none cut off here:
    # the corpus's sentences fit 64 tokens two at a time).
    assert a.count(period) == 1 and a[-1] == period
    assert b.count(period) == 1 and b[-1] == period
    docs_a = {doc_corpus.DOC_OF_ID[t] for t in a if t in doc_corpus.DOC_OF_ID}
    docs_b = {doc_corpus.DOC_OF_ID[t] for t in b if t in doc_corpus.DOC_OF_ID}
    random_next = r["next_sentence_labels"][0] == schema.IS_RANDOM
    assert (docs_a != docs_b) == random_next
    randoms += random_next
  assert abs(randoms / len(records) - 0.5) < 5 * 0.5 / np.sqrt(len(records))
  # The same bytes with two workers (each block's rule is seeded by the block).
  assert _write(tmp_path, "two", num_workers=2)[1] == raw


@pytest.mark.parametrize("task", ("sop", "none"))
def test_sentence_pair_needs_nsp(task):
  with pytest.raises(ValueError, match=f"--packing=sentence_pair needs --sentence_task=nsp"):
    writer.DataOptions(packing="sentence_pair", sentence_task=task).validate()
