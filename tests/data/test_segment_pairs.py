"""Tests of bert_tf.data.segment_pairs: held-out pairs built like
pretraining pairs, with random-document, same-document and swapped
negatives."""

import random

import pytest

from bert_tf.data import segment_pairs


def documents(count=12, sentences=14, seed=0):
  """Sentence s of document d holds ids d * 1000 + s * 20 + k: every token
  says where it came from."""
  rng = random.Random(seed)
  return [[[d * 1000 + s * 20 + k for k in range(rng.randint(3, 9))] for s in range(sentences)]
          for d in range(count)]


def where(token):
  return token // 1000, token % 1000 // 20


@pytest.mark.parametrize("task", segment_pairs.TASKS)
def test_pairs_are_balanced_within_the_length_and_seeded(task):
  docs = documents()
  pairs = segment_pairs.segment_pairs(docs, task, 29, seed=3)
  assert len(pairs) > 30
  assert all(len(a) + len(b) <= 29 and a and b for _, a, b, _ in pairs)
  share = sum(label for *_, label in pairs) / len(pairs)
  assert 0.3 < share < 0.7
  assert segment_pairs.segment_pairs(docs, task, 29, seed=3) == pairs
  assert segment_pairs.segment_pairs(docs, task, 29, seed=4) != pairs


def test_natural_pairs_are_a_text_and_its_continuation():
  for task in segment_pairs.TASKS:
    for d, a, b, label in segment_pairs.segment_pairs(documents(), task, 29):
      if label == 0:
        # A's sentences then B's, consecutive, in A's own document.
        sentences = [where(t) for t in a + b]
        assert all(doc == d for doc, _ in sentences)
        order = [s for _, s in sentences]
        assert order == sorted(order) and len(set(order)) == order[-1] - order[0] + 1


def test_each_kind_of_negative():
  docs = documents()
  for d, a, b, label in segment_pairs.segment_pairs(docs, "nsp_random", 29):
    if label:
      assert {where(t)[0] for t in b} != {d}, "B comes from another document"
  same = [p for p in segment_pairs.segment_pairs(docs, "nsp_same_doc", 29) if p[3]]
  assert same
  for d, a, b, _ in same:
    assert {where(t)[0] for t in a + b} == {d}
    a_sentences = {where(t)[1] for t in a}
    b_sentences = {where(t)[1] for t in b}
    # B is never A's continuation: at least one sentence lies between them.
    gap = min(abs(x - y) for x in a_sentences for y in b_sentences)
    assert gap >= 2, (a_sentences, b_sentences)
  for d, a, b, label in segment_pairs.segment_pairs(docs, "sop", 29):
    if label:
      # Swapped: B's sentences come before A's.
      assert max(where(t)[1] for t in b) < min(where(t)[1] for t in a)


def test_split_by_document_and_bad_input():
  pairs = segment_pairs.segment_pairs(documents(), "sop", 29)
  train, dev = segment_pairs.split_pairs(pairs)
  assert len(train) + len(dev) == len(pairs) and dev
  dev_docs = {p[0] for p in pairs if p[0] % 5 == 4}
  assert len(dev) == sum(p[0] in dev_docs for p in pairs)
  with pytest.raises(ValueError, match="nsp_random needs at least two documents"):
    segment_pairs.segment_pairs(documents(1), "nsp_random", 29)
  with pytest.raises(ValueError, match="pair task 'order' is not one of"):
    segment_pairs.segment_pairs(documents(), "order", 29)
