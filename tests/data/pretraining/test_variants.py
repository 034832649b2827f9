"""Tests of the RoBERTa / ALBERT data variants of the writer: SOP pairs,
FULL-/DOC-SENTENCES packing, n-gram masking, records for dynamic masking.

The pure rules are tested on generated documents whose token ids say where
they come from (document d, sentence k, token j -> d * 10000 + k * 100 + j),
so a pair's document and order are read off its ids; the writer is tested
end to end on the writer tests' corpus (helpers/doc_corpus.py).
"""

import collections
import random

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.pretraining import instances
from bert_tf.data.pretraining import masking
from bert_tf.data.records import schema
from bert_tf.data.pretraining import writer

from helpers import reference_records
from helpers import doc_corpus


def id_documents(rng, num_docs, min_sentences=1, max_sentences=12, max_len=20):
  return [[[d * 10000 + k * 100 + j for j in range(rng.randint(1, max_len))]
           for k in range(rng.randint(min_sentences, max_sentences))]
          for d in range(1, num_docs + 1)]


# ---------------------------------------------------------------------------
# SOP
# ---------------------------------------------------------------------------

def test_sop_pairs_come_from_one_document_and_the_label_says_swapped():
  rng = random.Random(0)
  docs = id_documents(rng, 1200)
  pairs = []
  for doc in docs:
    pairs.extend(instances.create_sop_pairs_from_document(doc, 48, 0.1, rng))
  assert len(pairs) > 1500
  swapped = 0
  for pair in pairs:
    a, b = pair.tokens_a, pair.tokens_b
    assert a and b and len(a) + len(b) <= 48 - 3
    assert len({t // 10000 for t in a + b}) == 1, "one document"
    # Ids grow along a document: the label is 1 exactly when B came first.
    assert pair.is_random_next == (max(b) < min(a)), pair
    assert pair.is_random_next or max(a) < min(b)
    assert not pair.random_from_same_document
    swapped += pair.is_random_next
  # Binomial(n, 0.5): 5 standard deviations.
  assert abs(swapped / len(pairs) - 0.5) < 5 * 0.5 / np.sqrt(len(pairs))


def test_sop_skips_single_sentence_chunks_and_is_exact_for_a_seed():
  assert instances.create_sop_pairs_from_document([[1, 2, 3, 4]], 32, 0.0, random.Random(1)) == []
  # A sentence longer than the target fills a chunk alone: skipped, the rest paired.
  doc = [[1] * 40, [2, 3], [4, 5]]
  pairs = instances.create_sop_pairs_from_document(doc, 32, 0.0, random.Random(1))
  assert len(pairs) == 1 and sorted(pairs[0].tokens_a + pairs[0].tokens_b) == [2, 3, 4, 5]
  doc = id_documents(random.Random(3), 1, min_sentences=10)[0]
  assert (instances.create_sop_pairs_from_document(doc, 32, 0.1, random.Random(5))
          == instances.create_sop_pairs_from_document(doc, 32, 0.1, random.Random(5)))


# ---------------------------------------------------------------------------
# FULL-SENTENCES / DOC-SENTENCES
# ---------------------------------------------------------------------------

SEP = -1


def test_full_sentences_fill_and_separate_documents():
  rng = random.Random(1)
  docs = id_documents(rng, 60)
  limit = 64 - 2
  packed = instances.pack_sentences(docs, 64, random.Random(2), cross_documents=True, sep_id=SEP)
  assert all(0 < len(p) <= limit for p in packed)
  # Nothing lost or reordered: without the separators, the documents in order.
  flat = [t for p in packed for t in p]
  assert [t for t in flat if t != SEP] == [t for d in docs for s in d for t in s]
  # A separator exactly where a document ends inside an instance; never first or last.
  for p in packed:
    assert p[0] != SEP and p[-1] != SEP
    for i, t in enumerate(p):
      if t == SEP:
        assert p[i - 1] // 10000 + 1 == p[i + 1] // 10000
      elif i and p[i - 1] != SEP:
        assert p[i - 1] // 10000 == t // 10000
  crossings = sum(t == SEP for t in flat)
  assert crossings > 20
  # Whole sentences: an instance ends only where the next sentence would not fit.
  for p, q in zip(packed, packed[1:]):
    first = [t for t in q if t // 100 == q[0] // 100]
    separator = q[0] // 100 % 100 == 0  # q starts a document
    assert len(p) + separator + len(first) > limit
  # Mean fill: at most one sentence (<= 20 tokens) short of the limit.
  assert np.mean([len(p) for p in packed[:-1]]) > limit - 20


def test_doc_sentences_never_cross_a_document():
  rng = random.Random(2)
  docs = id_documents(rng, 60)
  packed = instances.pack_sentences(docs, 64, random.Random(2), cross_documents=False, sep_id=SEP)
  assert all(0 < len(p) <= 62 and SEP not in p for p in packed)
  assert all(len({t // 10000 for t in p}) == 1 for p in packed)
  assert [t for p in packed for t in p] == [t for d in docs for s in d for t in s]
  # More, shorter instances than FULL-SENTENCES: each document ends one.
  full = instances.pack_sentences(docs, 64, random.Random(2), cross_documents=True, sep_id=SEP)
  assert len(packed) >= len(docs) and len(packed) > len(full)


def test_packing_cuts_a_sentence_longer_than_the_limit():
  long = list(range(100, 200))
  for seed in range(20):
    packed = instances.pack_sentences([[[1, 2]], [long], [[3]]], 16, random.Random(seed),
                                      cross_documents=True, sep_id=SEP)
    assert packed[0] == [1, 2] and packed[-1] == [3]
    cut = packed[1]
    assert len(cut) == 14 and cut == list(range(cut[0], cut[0] + 14))


# ---------------------------------------------------------------------------
# n-gram masking
# ---------------------------------------------------------------------------

def test_ngram_span_lengths_follow_one_over_n():
  rng = random.Random(0)
  max_ngram, want = 3, 40
  units = [[i] for i in range(2000)]
  lengths = collections.Counter()
  for _ in range(200):
    count = 0
    for span in masking.choose_ngram_spans(units, want, max_ngram, rng):
      assert span == list(range(span[0], span[0] + len(span)))
      # Only draws the budget could not shorten.
      if count + max_ngram <= want:
        lengths[len(span)] += 1
      count += len(span)
    assert count == want
  total = sum(lengths.values())
  assert total > 4000
  expected = masking.ngram_weights(max_ngram)  # 6/11, 3/11, 2/11
  for n in range(1, max_ngram + 1):
    # Uniform (1/3) is 0.15-0.2 off; the tolerance is ~4 standard deviations.
    assert abs(lengths[n] / total - expected[n - 1]) < 0.03, (n, lengths, expected)


def test_ngram_masking_respects_budget_words_and_specials():
  vocab = masking.MaskingVocab(size=50, cls_id=2, sep_id=3, mask_id=4,
                               is_subword=tuple(i >= 40 for i in range(50)))
  rng = random.Random(3)
  for _ in range(300):
    body = [rng.randrange(5, 50) for _ in range(rng.randint(3, 60))]
    cut = rng.randint(1, len(body) - 1)
    tokens = [2] + body[:cut] + [3] + body[cut:] + [3]
    for wwm in (False, True):
      out, positions, labels, spans = masking.mask_tokens_ngram(
          tokens, 0.15, 7, vocab, rng, do_whole_word_mask=wwm, max_ngram=3)
      assert len(positions) <= masking.num_to_predict(len(tokens), 0.15, 7)
      assert positions == sorted(set(positions)) and len(labels) == len(positions)
      assert all(tokens[p] not in (2, 3) for p in positions)
      assert labels == [tokens[p] for p in positions]
      assert all(1 <= s <= 3 for s in spans)
      chosen = set(positions)
      if wwm:
        for unit in masking.mask_units(tokens, vocab, True):
          assert len(chosen & set(unit)) in (0, len(unit)), "a word is never split"
      for i, t in enumerate(out):
        assert i in chosen or t == tokens[i]


# ---------------------------------------------------------------------------
# The writer, end to end
# ---------------------------------------------------------------------------

def decode(record):
  feature = tf.train.Example.FromString(record).features.feature
  return {name: (list(feature[name].int64_list.value) or list(feature[name].float_list.value))
          for name in feature}


def doc_of(ids):
  return {doc_corpus.DOC_OF_ID[t] for t in ids if t in doc_corpus.DOC_OF_ID}


def unmasked(r):
  """The real tokens of a decoded record: the masked ids put back."""
  ids = r["input_ids"][:sum(r["input_mask"])]
  for p, w, label in zip(r.get("masked_lm_positions", ()), r.get("masked_lm_weights", ()),
                         r.get("masked_lm_ids", ())):
    if w:
      ids[p] = label
  return ids


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
  root = tmp_path_factory.mktemp("variants")
  vocab = doc_corpus.write_vocab(root / "vocab.txt")
  doc_corpus.write_corpus(root / "corpus.txt")
  return root, vocab, str(root / "corpus.txt")


def write(corpus, name, num_workers=1, **changes):
  root, vocab, text = corpus
  options = writer.DataOptions(max_seq_length=32, max_predictions_per_seq=5, dupe_factor=2,
                               random_seed=7, block_bytes=4000, **changes)
  outputs = writer.Outputs(directory=str(root / name), num_shards=2)
  manifest = writer.create_pretraining_data(text, outputs, vocab, options,
                                            num_workers=num_workers)
  return manifest, doc_corpus.read_records(outputs.paths())


def test_sop_records(corpus):
  manifest, records = write(corpus, "sop", sentence_task="sop")
  assert manifest["flags"]["sentence_task"] == "sop"
  swapped = 0
  for record in records:
    r = decode(record)
    assert len(doc_of(unmasked(r))) == 1, "A and B of one document"
    swapped += r["next_sentence_labels"][0]
  assert abs(swapped / len(records) - 0.5) < 5 * 0.5 / np.sqrt(len(records))
  assert manifest["shares"]["nsp_random"] == swapped / len(records)


def test_packed_records(corpus):
  full = check_packed(*write(corpus, "full", sentence_task="none", packing="full_sentences"))
  doc = check_packed(*write(corpus, "doc", sentence_task="none", packing="doc_sentences"))
  assert full["crossings"] > 10 and doc["crossings"] == 0
  # A document's end leaves its last instance short: more, emptier instances.
  assert doc["instances"] > full["instances"] and doc["mean_fill"] < full["mean_fill"]
  # Sentences here are up to ~25 of the 30 tokens an instance holds.
  assert full["mean_fill"] > 0.7


def check_packed(manifest, records):
  crossings = 0
  for record in records:
    r = decode(record)
    assert "next_sentence_labels" not in r
    assert r["segment_ids"] == [0] * 32
    original = unmasked(r)
    assert original[0] == doc_corpus.CLS and original[-1] == doc_corpus.SEP
    # Each part between separators holds one document.
    parts = [[]]
    for t in original[1:-1]:
      if t == doc_corpus.SEP:
        parts.append([])
      else:
        parts[-1].append(t)
    assert all(len(doc_of(part)) <= 1 for part in parts)
    crossings += len(parts) - 1
  return {"crossings": crossings, "instances": len(records),
          "mean_fill": manifest["shares"]["mean_tokens"] / 32}


def test_dynamic_records_carry_real_tokens_and_no_masks(corpus):
  manifest, records = write(corpus, "dynamic", dynamic_masking=True, max_ngram=3,
                            do_whole_word_mask=True)
  _, static = write(corpus, "static_ngram", max_ngram=3, do_whole_word_mask=True)
  for record in records:
    r = decode(record)
    assert set(r) == {"input_ids", "input_mask", "segment_ids", "next_sentence_labels"}
    assert doc_corpus.MASK not in r["input_ids"]
  assert manifest["counts"]["predictions"] == 0
  vocab = manifest["vocab"]
  assert (vocab["cls_id"], vocab["sep_id"], vocab["mask_id"]) == (doc_corpus.CLS, doc_corpus.SEP, doc_corpus.MASK)
  assert masking.unpack_subword_ids(vocab["subword_ids"], vocab["size"]) == tuple(
      t.startswith("##") for t in doc_corpus.VOCAB)
  assert len(static) == len(records)


@pytest.mark.parametrize("changes", [
    {"sentence_task": "sop", "max_ngram": 3},
    {"sentence_task": "none", "packing": "full_sentences", "dynamic_masking": True},
])
def test_variants_same_bytes_with_one_or_two_workers(corpus, changes):
  _, one = write(corpus, "one", **changes)
  _, two = write(corpus, "two", num_workers=2, **changes)
  assert one == two and len(one) > 50


def test_encoder_variants_give_the_bytes_of_tf_train_example():
  encoder = schema.ExampleEncoder(16, 4, 300)
  one_at_a_time = reference_records.RecordEncoder(16, 4)
  ids = [2, 250, 7, 3, 9, 8, 3]
  for positions, label in (([1, 4], None), (None, 1), (None, None)):
    features = {"input_ids": ids + [0] * 9, "input_mask": [1] * 7 + [0] * 9,
                "segment_ids": [0] * 4 + [1] * 3 + [0] * 9}
    if positions is not None:
      features.update(masked_lm_positions=positions + [0, 0],
                      masked_lm_ids=[ids[p] for p in positions] + [0, 0])
    if label is not None:
      features["next_sentence_labels"] = [label]
    feature = {k: tf.train.Feature(int64_list=tf.train.Int64List(value=v))
               for k, v in features.items()}
    if positions is not None:
      feature["masked_lm_weights"] = tf.train.Feature(
          float_list=tf.train.FloatList(value=[1.0, 1.0, 0.0, 0.0]))
    expected = tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(
        deterministic=True)
    lm_ids = None if positions is None else [ids[p] for p in positions]
    assert one_at_a_time.encode_pair(ids, 4, positions, lm_ids, label) == expected
    masks = (None, None, None) if positions is None else ([positions], [lm_ids], [len(positions)])
    assert encoder.encode_batch([ids], [len(ids)], [4], *masks,
                                None if label is None else [label]) == [expected]


@pytest.mark.parametrize("changes, flag", [
    ({"sentence_task": "none"}, "--sentence_task=none"),
    ({"sentence_task": "nsp", "packing": "doc_sentences"}, "--sentence_task=nsp"),
    ({"sentence_task": "sop", "packing": "full_sentences"}, "--sentence_task=sop"),
    ({"sentence_task": "mlm"}, "--sentence_task=mlm"),
    ({"packing": "blocks", "sentence_task": "none"}, "--packing=blocks"),
    ({"max_ngram": 0}, "--max_ngram=0"),
])
def test_impossible_variant_options_name_the_flag(changes, flag):
  with pytest.raises(ValueError, match=flag) as info:
    writer.DataOptions(**changes).validate()
  assert "\n" not in str(info.value)
