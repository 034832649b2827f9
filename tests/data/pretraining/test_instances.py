"""Tests of bert_tf.data.pretraining.instances: the pairing and truncation rules of
original BERT, as pure functions with a seeded RNG.

No TensorFlow here. Documents in the pairing tests are built from ids that
encode (document, sentence, position), so every token of a pair can be
traced back to where it came from.
"""

import collections
import random

import numpy as np

from bert_tf.data.pretraining import instances

from helpers import list_pairs

CLS, SEP = 101, 102


def _chi_square(observed, expected):
  observed, expected = np.asarray(observed, float), np.asarray(expected, float)
  return float(((observed - expected) ** 2 / expected).sum())


# ---------------------------------------------------------------------------
# Truncation
# ---------------------------------------------------------------------------

def reference_truncate(tokens_a, tokens_b, max_num_tokens, rng):
  """The original's token-by-token loop, for comparison."""
  while len(tokens_a) + len(tokens_b) > max_num_tokens:
    longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
    if rng.random() < 0.5:
      del longer[0]
    else:
      longer.pop()


def test_truncate_pair_fits_trims_the_longer_side_b_on_ties():
  rng = random.Random(12)
  for len_a in range(1, 14):
    for len_b in range(1, 14):
      for max_num in range(2, 28):
        a, b = list(range(len_a)), list(range(100, 100 + len_b))
        ref_a, ref_b = list(a), list(b)
        assert instances.truncate_pair_at_random_ends(a, b, max_num, rng) is None  # in place
        reference_truncate(ref_a, ref_b, max_num, rng)
        assert (len(a), len(b)) == (len(ref_a), len(ref_b))
        assert len(a) + len(b) == min(len_a + len_b, max_num)
        assert a and b
        # What is left is one contiguous run of each side.
        assert a == list(range(a[0], a[0] + len(a)))
        assert b == list(range(b[0], b[0] + len(b)))
  a, b = [1] * 5, [2] * 5
  instances.truncate_pair_at_random_ends(a, b, 9, rng)
  assert (len(a), len(b)) == (5, 4)
  a, b = [1] * 10, [2] * 3
  instances.truncate_pair_at_random_ends(a, b, 8, rng)
  assert (len(a), len(b)) == (5, 3)


def test_truncate_pair_trims_both_ends_like_the_token_by_token_rule():
  fronts = {"truncate_pair_at_random_ends": [], "reference": []}
  for seed in range(4000):
    for name, fn in (("truncate_pair_at_random_ends", instances.truncate_pair_at_random_ends),
                     ("reference", reference_truncate)):
      a, b = list(range(30)), [100, 101, 102, 103]
      fn(a, b, 20, random.Random(seed))
      assert len(a) == 16 and b == [100, 101, 102, 103]
      fronts[name].append(a[0])  # tokens trimmed from the front of 14
  for name, f in fronts.items():
    f = np.array(f)
    # Binomial(14, 0.5): mean 7, variance 3.5.
    assert abs(f.mean() - 7) < 0.15, name
    assert abs(f.var() - 3.5) < 0.35, name
    assert (f == 0).mean() < 0.01 and (f == 14).mean() < 0.01, name
    assert ((f > 0) & (f < 14)).mean() > 0.98, name  # both ends trimmed


# ---------------------------------------------------------------------------
# Pairing for next sentence prediction
# ---------------------------------------------------------------------------

def make_documents(rng, num_docs, min_sentences, max_sentences, min_len, max_len):
  """Documents whose ids encode (doc, sentence, position)."""
  docs = []
  for d in range(num_docs):
    doc = []
    for s in range(rng.randint(min_sentences, max_sentences)):
      doc.append([(d * 1000 + s) * 1000 + p for p in range(rng.randint(min_len, max_len))])
    docs.append(doc)
  return docs


def where(token):
  """(doc, sentence, position) of a token of make_documents."""
  ds, p = divmod(token, 1000)
  d, s = divmod(ds, 1000)
  return d, s, p


def flat_index(docs):
  """token -> (doc, index of the token in the whole document)."""
  index = {}
  for d, doc in enumerate(docs):
    n = 0
    for sentence in doc:
      for t in sentence:
        index[t] = (d, n)
        n += 1
  return index


def assert_contiguous(tokens, index):
  """All tokens of one document, consecutive in it; returns (doc, first, last)."""
  places = [index[t] for t in tokens]
  doc = places[0][0]
  assert all(d == doc for d, _ in places), places
  flat = [n for _, n in places]
  assert flat == list(range(flat[0], flat[0] + len(flat))), flat
  return doc, flat[0], flat[-1]


def test_pairs_fit_and_come_from_where_they_should():
  docs = make_documents(random.Random(13), 20, 1, 20, 1, 30)
  index = flat_index(docs)
  max_seq_length = 64
  max_num = max_seq_length - 3
  n_random = n_next = 0
  for seed in range(40):
    rng = random.Random(seed)
    for d in range(len(docs)):
      for tokens_a, tokens_b, is_random, _ in list_pairs.create_pairs_from_document(
          docs, d, max_seq_length, 0.1, rng):
        assert tokens_a and tokens_b
        assert len(tokens_a) + len(tokens_b) <= max_num
        doc_a, _, last_a = assert_contiguous(tokens_a, index)
        doc_b, first_b, _ = assert_contiguous(tokens_b, index)
        assert doc_a == d
        untruncated = len(tokens_a) + len(tokens_b) < max_num
        if untruncated:
          # Whole sentences: A and B start at a sentence start.
          assert where(tokens_a[0])[2] == 0 and where(tokens_b[0])[2] == 0
        if is_random:
          n_random += 1
          assert doc_b != d
        else:
          n_next += 1
          assert doc_b == d
          assert first_b > last_a
          if untruncated:
            assert first_b == last_a + 1  # B is the continuation of A
            s_last = where(tokens_b[-1])
            assert s_last[2] == len(docs[d][s_last[1]]) - 1  # ends at a sentence end
  assert n_random > 500 and n_next > 500


def test_unused_sentences_are_put_back():
  # Sentences of 5 tokens and a target of 40: chunks are exactly 8 sentences,
  # and no pair needs truncating. Each sentence must then appear exactly once
  # in an A or a non-random B: those a random B did not use go back.
  docs = make_documents(random.Random(14), 12, 1, 60, 5, 5)
  n_random_from_long_chunks = 0
  for seed in range(20):
    rng = random.Random(seed)
    for d in range(len(docs)):
      seen = collections.Counter()
      for tokens_a, tokens_b, is_random, _ in list_pairs.create_pairs_from_document(
          docs, d, 43, 0.0, rng):
        assert len(tokens_a) % 5 == 0 and len(tokens_a) + len(tokens_b) <= 40
        seen.update(where(t)[:2] for t in tokens_a[::5])
        if is_random:
          n_random_from_long_chunks += len(tokens_a) < 35
        else:
          seen.update(where(t)[:2] for t in tokens_b[::5])
      assert seen == collections.Counter((d, s) for s in range(len(docs[d]))), (seed, d)
  assert n_random_from_long_chunks > 100


def test_short_seq_prob_gives_shorter_pairs():
  docs = make_documents(random.Random(15), 20, 10, 30, 5, 15)

  def lengths(short_seq_prob):
    out = []
    for seed in range(20):
      rng = random.Random(seed)
      for d in range(len(docs)):
        out.extend(len(p.tokens_a) + len(p.tokens_b) for p in list_pairs.create_pairs_from_document(
            docs, d, 128, short_seq_prob, rng))
    return np.array(out)

  never, always = lengths(0.0), lengths(1.0)
  assert never.mean() > 100  # near the 125-token target
  assert always.mean() < 0.6 * never.mean()
  assert (always < 20).sum() > 50


def test_one_sentence_document_always_gets_a_random_b():
  docs = make_documents(random.Random(16), 10, 3, 10, 2, 20)
  docs[4] = [docs[4][0]]
  index = flat_index(docs)
  for seed in range(300):
    pairs = list_pairs.create_pairs_from_document(docs, 4, 32, 0.1, random.Random(seed))
    assert len(pairs) == 1
    tokens_a, tokens_b, is_random, same_document = pairs[0]
    assert is_random and not same_document
    assert where(tokens_a[0])[0] == 4 and assert_contiguous(tokens_b, index)[0] != 4
  # A window of one document and nothing outside it: B can only come from
  # A's own document; still random, and said to be from the same document.
  alone = [docs[4]]
  pairs = list_pairs.create_pairs_from_document(alone, 0, 32, 0.1, random.Random(0))
  assert len(pairs) == 1 and pairs[0].is_random_next and pairs[0].random_from_same_document
  # The same window with documents outside it: B comes from those.
  outside = instances.Negatives([(docs[7], len(docs[7]))], num_documents=5)
  for seed in range(50):
    [pair] = list_pairs.create_pairs_from_document(alone, 0, 32, 0.1, random.Random(seed),
                                                  outside)
    assert pair.is_random_next and not pair.random_from_same_document
    assert assert_contiguous(pair.tokens_b, index)[0] == 7


def test_random_b_is_uniform_over_all_other_documents():
  # A window of 4 documents (A is one of them) and negatives standing for 6
  # documents outside it, sampled as entries of documents 4..9 whose first
  # `starts` sentences B may start at: B's document must be uniform over the
  # 9 others, and its start uniform over the allowed sentences.
  docs = make_documents(random.Random(18), 10, 6, 6, 2, 3)
  window = docs[:4]
  entries = [(docs[d], 2 + d % 3) for d in range(4, 10)]
  negatives = instances.Negatives(entries, num_documents=6)
  rng = random.Random(19)
  by_doc, starts = collections.Counter(), collections.Counter()
  draws = 27000
  for _ in range(draws):
    sentences, start, same = instances.random_b_source(window, 2, negatives, rng)
    d, s, _ = where(sentences[start][0])
    assert d != 2 and not same
    by_doc[d] += 1
    starts[d, s] += 1
  assert set(by_doc) == set(range(10)) - {2}
  assert _chi_square([by_doc[d] for d in sorted(by_doc)], [draws / 9] * 9) < 30  # 8 dof
  for d in range(4, 10):  # only the allowed starts, uniformly
    allowed = 2 + d % 3
    assert {s for (dd, s) in starts if dd == d} == set(range(allowed))
    assert _chi_square([starts[d, s] for s in range(allowed)],
                       [by_doc[d] / allowed] * allowed) < 20
  for d in (0, 1, 3):  # the window's documents: any sentence
    assert {s for (dd, s) in starts if dd == d} == set(range(6))


def test_random_b_never_from_own_document_when_another_exists():
  # Two documents: the original's ten tries all hit A's own with
  # probability 2^-10; then the other one must serve.
  docs = make_documents(random.Random(20), 2, 3, 3, 2, 2)
  rng = random.Random(21)
  for _ in range(20000):
    sentences, _, same = instances.random_b_source(docs, 0, instances.NO_NEGATIVES, rng)
    assert sentences is docs[1] and not same


def reference_pairs(documents, document_index, max_seq_length, short_seq_prob, rng, negatives):
  """The pairing rule written plainly on lists, sentence by sentence, as the
  original states it (random_b_source and truncate_pair_at_random_ends for its parts)."""
  document = documents[document_index]
  max_num_tokens, target_length = instances.pair_lengths(max_seq_length, short_seq_prob, rng)
  pairs, chunk, chunk_length, i = [], [], 0, 0
  while i < len(document):
    chunk.append(document[i])
    chunk_length += len(document[i])
    if i == len(document) - 1 or chunk_length >= target_length:
      a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
      tokens_a = [t for sentence in chunk[:a_end] for t in sentence]
      tokens_b = []
      if len(chunk) == 1 or rng.random() < 0.5:
        is_random, (source, start, same) = True, instances.random_b_source(
            documents, document_index, negatives, rng)
        for k in range(start, len(source)):
          tokens_b.extend(source[k])
          if len(tokens_b) >= target_length - len(tokens_a):
            break
        i -= len(chunk) - a_end
      else:
        is_random = same = False
        tokens_b = [t for sentence in chunk[a_end:] for t in sentence]
      instances.truncate_pair_at_random_ends(tokens_a, tokens_b, max_num_tokens, rng)
      pairs.append(instances.Pair(tokens_a, tokens_b, is_random, same))
      chunk, chunk_length = [], 0
    i += 1
  return pairs


def test_pairs_are_the_plain_rule_draw_for_draw():
  # create_pairs_from_document runs the rule on token offsets
  # (pair_spans_from_document, the writer's form): the same pairs, from the
  # same draws, as the plain rule on lists, with and without negatives.
  rng = random.Random(22)
  for trial in range(60):
    docs = make_documents(rng, rng.randint(1, 10), 1, 25, 1, 40)
    outside = make_documents(rng, 3, 1, 10, 1, 30)
    negatives = (instances.Negatives([(d, rng.randint(1, len(d))) for d in outside], 7)
                 if trial % 2 else instances.NO_NEGATIVES)
    for d in range(len(docs)):
      for max_seq_length in (5, 8, 40, 128):
        ours, plain = random.Random(trial * 100 + d), random.Random(trial * 100 + d)
        assert list_pairs.create_pairs_from_document(
            docs, d, max_seq_length, 0.3, ours, negatives) == reference_pairs(
                docs, d, max_seq_length, 0.3, plain, negatives)
        assert ours.random() == plain.random()


def test_pairs_exact_for_a_seed():
  docs = make_documents(random.Random(17), 8, 1, 15, 1, 20)
  a = [list_pairs.create_pairs_from_document(docs, d, 40, 0.1, random.Random(3)) for d in range(8)]
  b = [list_pairs.create_pairs_from_document(docs, d, 40, 0.1, random.Random(3)) for d in range(8)]
  assert a == b


def test_build_instance():
  tokens, num_a = instances.build_instance([7, 8], [9], CLS, SEP)
  assert tokens == [CLS, 7, 8, SEP, 9, SEP] and num_a == 4
