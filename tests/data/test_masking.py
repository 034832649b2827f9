"""Tests of bert_tf.data.masking: the pairing, truncation and 80/10/10 masking
rules of original BERT, as pure functions with a seeded RNG.

No TensorFlow here: the rules must be checkable (and usable) without it.
Documents in the pairing tests are built from ids that encode (document,
sentence, position), so every token of a pair can be traced back to where it
came from.
"""

import collections
import random
import subprocess
import sys

import numpy as np
import pytest

from bert_tf.data import instances
from bert_tf.data import masking

import batch_masking

CLS, SEP, MASK = 101, 102, 103
BIG_VOCAB = masking.MaskingVocab(size=30522, cls_id=CLS, sep_id=SEP, mask_id=MASK)


def random_sequence(rng, length, low=1000, high=30000):
  """[CLS] A [SEP] B [SEP] of `length` ids (length >= 5), A and B non-empty."""
  body = length - 3
  len_a = rng.randint(1, body - 1)
  ids = [rng.randrange(low, high) for _ in range(body)]
  return [CLS] + ids[:len_a] + [SEP] + ids[len_a:] + [SEP]


def outcome_counts(tokens, output, positions, mask_id):
  """(masked, kept, random) among the predicted positions."""
  masked = kept = other = 0
  for p in positions:
    if output[p] == mask_id:
      masked += 1
    elif output[p] == tokens[p]:
      kept += 1
    else:
      other += 1
  return masked, kept, other


def test_module_imports_without_tensorflow():
  code = "import bert_tf.data.masking, sys; assert 'tensorflow' not in sys.modules, 'tensorflow imported'"
  result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
  assert result.returncode == 0, result.stderr


# ---------------------------------------------------------------------------
# How many predictions
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("num_tokens, prob, max_preds, expected", [
    (5, 0.15, 20, 1),      # 0.75 rounds to 1
    (3, 0.01, 20, 1),      # never fewer than one
    (30, 0.15, 20, 4),     # 4.5: Python rounds halves to even
    (50, 0.15, 20, 8),     # 7.5 -> 8
    (70, 0.15, 20, 10),    # 10.5 -> 10
    (128, 0.15, 20, 19),   # 19.2
    (512, 0.15, 76, 76),   # 76.8 rounds to 77, capped at 76
    (10, 1.0, 5, 5),
])
def test_num_to_predict_rounds_and_caps(num_tokens, prob, max_preds, expected):
  assert masking.num_to_predict(num_tokens, prob, max_preds) == expected


def test_prediction_counts_follow_the_formula_for_every_length():
  rng = random.Random(0)
  gen = np.random.default_rng(0)
  for prob, max_preds in ((0.15, 20), (0.15, 76), (0.5, 7), (0.03, 20)):
    sequences = [random_sequence(rng, n) for n in range(5, 200)]
    expected = [min(max_preds, max(1, round(len(s) * prob))) for s in sequences]
    got_single = [len(masking.mask_tokens(s, prob, max_preds, BIG_VOCAB, rng)[1]) for s in sequences]
    got_batch = [len(p) for _, p, _ in batch_masking.mask_sequences(
        sequences, prob, max_preds, BIG_VOCAB, gen)]
    assert got_single == expected
    assert got_batch == expected


def test_fewer_candidates_than_wanted_masks_all_candidates():
  tokens = [CLS, 2000, SEP, 3000, SEP]
  _, positions, labels = masking.mask_tokens(tokens, 1.0, 20, BIG_VOCAB, random.Random(1))
  assert positions == [1, 3] and labels == [2000, 3000]
  [(_, positions, labels)] = batch_masking.mask_sequences([tokens], 1.0, 20, BIG_VOCAB,
                                                          np.random.default_rng(1))
  assert positions == [1, 3] and labels == [2000, 3000]


# ---------------------------------------------------------------------------
# Which positions
# ---------------------------------------------------------------------------

def _sequences_with_extra_specials(rng, count):
  """Random sequences, some with a stray [CLS]/[SEP] inside A or B: any token
  equal to them is never a candidate, as in the original."""
  sequences = []
  for _ in range(count):
    seq = random_sequence(rng, rng.randint(5, 64))
    if rng.random() < 0.3:
      seq[rng.randrange(1, len(seq) - 1)] = rng.choice([CLS, SEP])
    sequences.append(seq)
  return sequences


def _mask_each(implementation, sequences, prob, max_preds, vocab, seed):
  """(output, positions, labels) of each sequence, by mask_tokens one at a
  time or by the vectorized draw for all at once."""
  if implementation == "mask_tokens":
    rng = random.Random(seed)
    return [masking.mask_tokens(tokens, prob, max_preds, vocab, rng) for tokens in sequences]
  return batch_masking.mask_sequences(sequences, prob, max_preds, vocab,
                                      np.random.default_rng(seed))


@pytest.mark.parametrize("implementation", ["mask_tokens", "mask_sequences"])
def test_positions_sorted_unique_never_special(implementation):
  sequences = _sequences_with_extra_specials(random.Random(2), 2000)
  results = _mask_each(implementation, sequences, 0.15, 20, BIG_VOCAB, 3)
  assert len(results) == len(sequences)
  for tokens, (output, positions, labels) in zip(sequences, results):
    specials = [i for i, t in enumerate(tokens) if t in (CLS, SEP)]
    assert positions == sorted(set(positions))
    assert not set(positions) & set(specials)
    assert all(0 <= p < len(tokens) for p in positions)
    assert labels == [tokens[p] for p in positions]
    assert len(output) == len(tokens)
    changed = {i for i, (a, b) in enumerate(zip(tokens, output)) if a != b}
    assert changed <= set(positions)
    assert len(positions) == min(masking.num_to_predict(len(tokens), 0.15, 20),
                                 len(tokens) - len(specials))


def test_apply_masks_and_count_outcomes():
  tokens = [CLS, 2000, 2001, SEP, 3000, 3001, SEP]
  output = masking.apply_masks(tokens, [5, 1, 2], [MASK, 2000, 7777])
  assert output == [CLS, 2000, 7777, SEP, 3000, MASK, SEP]
  assert tokens == [CLS, 2000, 2001, SEP, 3000, 3001, SEP]  # a new list
  # A random draw that hit the original id or [MASK] counts as what it is.
  assert masking.count_outcomes(output, [1, 2, 5], [2000, 2001, 3001], MASK) == (1, 1, 1)
  assert masking.count_outcomes([CLS, MASK, SEP], [1], [MASK], MASK) == (1, 0, 0)
  assert masking.count_outcomes(tokens, [1, 4], [2000, 3000], MASK) == (0, 2, 0)
  assert masking.count_outcomes(tokens, [], [], MASK) == (0, 0, 0)


def _chi_square(observed, expected):
  observed = np.asarray(observed, np.float64)
  expected = np.asarray(expected, np.float64)
  return float(((observed - expected) ** 2 / expected).sum())


def test_positions_uniform_over_candidates_in_both_implementations():
  # Length 20, [CLS] at 0, [SEP] at 8 and 19: 17 candidates, 3 predictions.
  tokens = [CLS] + list(range(2000, 2007)) + [SEP] + list(range(3000, 3010)) + [SEP]
  assert len(tokens) == 20 and masking.num_to_predict(20, 0.15, 20) == 3
  draws = 20000
  rng = random.Random(4)
  single = collections.Counter()
  for _ in range(draws):
    single.update(masking.mask_tokens(tokens, 0.15, 20, BIG_VOCAB, rng)[1])
  results = batch_masking.mask_sequences([tokens] * draws, 0.15, 20, BIG_VOCAB,
                                         np.random.default_rng(4))
  assert all(len(positions) == 3 for _, positions, _ in results)
  batch = collections.Counter(p for _, positions, _ in results for p in positions)
  candidates = [i for i in range(20) if i not in (0, 8, 19)]
  expected = [3 * draws / 17] * 17
  for hist in (single, batch):
    assert set(hist) == set(candidates)
    # 16 degrees of freedom: 50 is far in the tail (p < 1e-4).
    assert _chi_square([hist[i] for i in candidates], expected) < 50


# ---------------------------------------------------------------------------
# What replaces them: 80/10/10
# ---------------------------------------------------------------------------

def test_80_10_10_shares_in_both_implementations():
  # ~200k predictions each: a share's standard error is below 0.1pp.
  rng = random.Random(5)
  sequences = [random_sequence(rng, 128) for _ in range(10600)]
  totals = {}
  counts_single = np.zeros(3)
  for tokens in sequences:
    output, positions, _ = masking.mask_tokens(tokens, 0.15, 20, BIG_VOCAB, rng)
    counts_single += outcome_counts(tokens, output, positions, MASK)
  totals["mask_tokens"] = counts_single
  results = batch_masking.mask_sequences(sequences, 0.15, 20, BIG_VOCAB,
                                         np.random.default_rng(5))
  counts_batch = np.zeros(3)
  for tokens, (output, positions, labels) in zip(sequences, results):
    counts_batch += outcome_counts(tokens, output, positions, MASK)
    # The library's one count agrees with this independent one.
    assert masking.count_outcomes(output, positions, labels, MASK) == outcome_counts(
        tokens, output, positions, MASK)
  totals["mask_sequences"] = counts_batch
  shares = {}
  for name, c in totals.items():
    assert c.sum() > 195000, name
    shares[name] = c / c.sum()
    np.testing.assert_allclose(shares[name], [0.8, 0.1, 0.1], atol=0.005, err_msg=name)
  np.testing.assert_allclose(shares["mask_tokens"], shares["mask_sequences"], atol=0.005)


@pytest.mark.parametrize("implementation", ["mask_tokens", "mask_sequences"])
def test_random_replacements_uniform_over_whole_vocab(implementation):
  # A 40-id vocab and inputs that are all id 20: the id at a predicted
  # position is [MASK] (0.8), 20 (0.1) or uniform over all 40 ids (0.1),
  # [PAD], [CLS], [SEP] and [MASK] included, as in the original.
  size, x = 40, 20
  vocab = masking.MaskingVocab(size=size, cls_id=2, sep_id=3, mask_id=4)
  tokens = [2] + [x] * 60 + [3] + [x] * 64 + [3]
  seqs = 10600  # 19 predictions each
  if implementation == "mask_tokens":
    rng = random.Random(6)
    ids = []
    for _ in range(seqs):
      output, positions, _ = masking.mask_tokens(tokens, 0.15, 20, vocab, rng)
      ids.extend(output[p] for p in positions)
  else:
    results = batch_masking.mask_sequences([tokens] * seqs, 0.15, 20, vocab,
                                           np.random.default_rng(6))
    assert all(len(positions) == 19 for _, positions, _ in results)
    ids = [output[p] for output, positions, _ in results for p in positions]
  hist = collections.Counter(ids)
  n = len(ids)
  assert set(hist) == set(range(size)), sorted(set(range(size)) - set(hist))
  expected = [n * 0.1 / size] * size
  expected[4] += n * 0.8
  expected[x] += n * 0.1
  # 39 degrees of freedom: 80 is far in the tail (p < 1e-4).
  assert _chi_square([hist[i] for i in range(size)], expected) < 80


def test_mask_tokens_exact_for_a_seed():
  tokens = random_sequence(random.Random(7), 100)
  a = masking.mask_tokens(tokens, 0.15, 20, BIG_VOCAB, random.Random(8))
  b = masking.mask_tokens(tokens, 0.15, 20, BIG_VOCAB, random.Random(8))
  c = masking.mask_tokens(tokens, 0.15, 20, BIG_VOCAB, random.Random(9))
  assert a == b and a != c
  batch = [batch_masking.mask_sequences([tokens] * 3, 0.15, 20, BIG_VOCAB,
                                        np.random.default_rng(8))
           for _ in range(2)]
  assert batch[0] == batch[1]


def test_padded_masking_is_mask_sequences_and_counts_its_outcomes():
  # The writer's form: the sequences in one padded array, masks put in and
  # outcomes counted for the whole batch; the same draws and results as
  # mask_sequences and count_outcomes per sequence. Tiny vocab: random draws hit
  # [MASK] and the original id often.
  rng = random.Random(11)
  vocab = masking.MaskingVocab(size=8, cls_id=1, sep_id=2, mask_id=3)
  for trial in range(30):
    n = rng.randint(1, 40)
    sequences = [[1] + [rng.randrange(8) for _ in range(rng.randint(0, 60))] + [2]
                 for _ in range(n)]
    if trial % 3 == 0:
      sequences[0] = [1, 2]  # nothing to predict
    prob, max_preds = rng.choice([(0.15, 20), (0.5, 5), (1.0, 80)])
    expected = batch_masking.mask_sequences(sequences, prob, max_preds, vocab,
                                            np.random.default_rng(trial))
    lengths = np.array([len(seq) for seq in sequences])
    tokens = np.zeros((n, lengths.max()), np.int64)
    for i, seq in enumerate(sequences):
      tokens[i, :len(seq)] = seq
    positions, labels, new, counts = masking.choose_masks_padded(
        tokens, lengths, prob, max_preds, vocab, np.random.default_rng(trial))
    output = masking.apply_masks_padded(tokens, positions, new, counts)
    assert positions.shape == labels.shape == (n, max_preds)
    for i, (out, pos, lab) in enumerate(expected):
      c = counts[i]
      assert (output[i, :lengths[i]].tolist(), positions[i, :c].tolist(),
              labels[i, :c].tolist()) == (out, pos, lab)
      assert not output[i, lengths[i]:].any()
    totals = np.sum([masking.count_outcomes(out, pos, lab, vocab.mask_id)
                     for out, pos, lab in expected], axis=0)
    assert masking.count_outcomes_padded(output, positions, labels, counts,
                                         vocab.mask_id) == tuple(totals.tolist())


# ---------------------------------------------------------------------------
# Whole-word masking
# ---------------------------------------------------------------------------

# ids 5..29 start a word, 30..49 are '##' pieces.
WWM_VOCAB = masking.MaskingVocab(size=50, cls_id=2, sep_id=3, mask_id=4,
                                 is_subword=tuple(i >= 30 for i in range(50)))


def _words_sequence(rng, num_words_a, num_words_b):
  """[CLS] A [SEP] B [SEP] of words of 1-4 pieces; returns (tokens, words)
  with words as lists of positions."""
  tokens, words = [2], []
  for num_words in (num_words_a, num_words_b):
    for _ in range(num_words):
      pieces = rng.choice([1, 1, 2, 3, 4])
      words.append(list(range(len(tokens), len(tokens) + pieces)))
      tokens.append(rng.randrange(5, 30))
      tokens.extend(rng.randrange(30, 50) for _ in range(pieces - 1))
    tokens.append(3)
  return tokens, words


def test_whole_word_masking_never_splits_a_word():
  rng = random.Random(10)
  split_without_wwm = 0
  for _ in range(1500):
    tokens, words = _words_sequence(rng, rng.randint(1, 20), rng.randint(1, 20))
    output, positions, labels = masking.mask_tokens(tokens, 0.15, 20, WWM_VOCAB, rng,
                                                    do_whole_word_mask=True)
    chosen = set(positions)
    assert positions == sorted(chosen)
    want = masking.num_to_predict(len(tokens), 0.15, 20)
    assert len(positions) <= want
    assert labels == [tokens[p] for p in positions]
    for word in words:
      assert set(word) <= chosen or not set(word) & chosen, (tokens, word, positions)
      # A word left out did not fit in what was left (it may still be
      # nothing: the original masks no word when none fits).
      assert set(word) <= chosen or len(chosen) + len(word) > want
    assert all(output[p] == tokens[p] for p in range(len(tokens)) if p not in chosen)
    # Without the flag the same sequences do get words split.
    _, plain, _ = masking.mask_tokens(tokens, 0.15, 20, WWM_VOCAB, rng)
    split_without_wwm += any(0 < len(set(w) & set(plain)) < len(w) for w in words)
  assert split_without_wwm > 100


def test_whole_word_masking_skips_a_word_that_does_not_fit():
  # Three 3-piece words and one 1-piece word, room for 4 predictions: a
  # 3-piece word that would overflow is skipped (not split, not the end of
  # the search), so every draw ends with one 3-piece word and the 1-piece one.
  tokens = [2, 5, 30, 31, 6, 32, 33, 7, 34, 35, 8, 3]
  three_piece = [{1, 2, 3}, {4, 5, 6}, {7, 8, 9}]
  chosen_words = collections.Counter()
  rng = random.Random(11)
  for _ in range(300):
    _, positions, _ = masking.mask_tokens(tokens, 1.0, 4, WWM_VOCAB, rng, do_whole_word_mask=True)
    chosen = set(positions)
    assert len(positions) == 4 and 10 in chosen
    matches = [i for i, w in enumerate(three_piece) if w <= chosen]
    assert len(matches) == 1
    chosen_words[matches[0]] += 1
  assert min(chosen_words.values()) > 60 and len(chosen_words) == 3


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
        assert instances.truncate_pair(a, b, max_num, rng) is None  # in place
        reference_truncate(ref_a, ref_b, max_num, rng)
        assert (len(a), len(b)) == (len(ref_a), len(ref_b))
        assert len(a) + len(b) == min(len_a + len_b, max_num)
        assert a and b
        # What is left is one contiguous run of each side.
        assert a == list(range(a[0], a[0] + len(a)))
        assert b == list(range(b[0], b[0] + len(b)))
  a, b = [1] * 5, [2] * 5
  instances.truncate_pair(a, b, 9, rng)
  assert (len(a), len(b)) == (5, 4)
  a, b = [1] * 10, [2] * 3
  instances.truncate_pair(a, b, 8, rng)
  assert (len(a), len(b)) == (5, 3)


def test_truncate_pair_trims_both_ends_like_the_token_by_token_rule():
  fronts = {"truncate_pair": [], "reference": []}
  for seed in range(4000):
    for name, fn in (("truncate_pair", instances.truncate_pair), ("reference", reference_truncate)):
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
      for tokens_a, tokens_b, is_random, _ in instances.create_pairs_from_document(
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
      for tokens_a, tokens_b, is_random, _ in instances.create_pairs_from_document(
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
        out.extend(len(p.tokens_a) + len(p.tokens_b) for p in instances.create_pairs_from_document(
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
    pairs = instances.create_pairs_from_document(docs, 4, 32, 0.1, random.Random(seed))
    assert len(pairs) == 1
    tokens_a, tokens_b, is_random, same_document = pairs[0]
    assert is_random and not same_document
    assert where(tokens_a[0])[0] == 4 and assert_contiguous(tokens_b, index)[0] != 4
  # A window of one document and nothing outside it: B can only come from
  # A's own document; still random, and said to be from the same document.
  alone = [docs[4]]
  pairs = instances.create_pairs_from_document(alone, 0, 32, 0.1, random.Random(0))
  assert len(pairs) == 1 and pairs[0].is_random_next and pairs[0].random_from_same_document
  # The same window with documents outside it: B comes from those.
  outside = instances.Negatives([(docs[7], len(docs[7]))], num_documents=5)
  for seed in range(50):
    [pair] = instances.create_pairs_from_document(alone, 0, 32, 0.1, random.Random(seed),
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
  original states it (random_b_source and truncate_pair for its parts)."""
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
      instances.truncate_pair(tokens_a, tokens_b, max_num_tokens, rng)
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
        assert instances.create_pairs_from_document(
            docs, d, max_seq_length, 0.3, ours, negatives) == reference_pairs(
                docs, d, max_seq_length, 0.3, plain, negatives)
        assert ours.random() == plain.random()


def test_pairs_exact_for_a_seed():
  docs = make_documents(random.Random(17), 8, 1, 15, 1, 20)
  a = [instances.create_pairs_from_document(docs, d, 40, 0.1, random.Random(3)) for d in range(8)]
  b = [instances.create_pairs_from_document(docs, d, 40, 0.1, random.Random(3)) for d in range(8)]
  assert a == b


def test_build_instance():
  tokens, num_a = instances.build_instance([7, 8], [9], CLS, SEP)
  assert tokens == [CLS, 7, 8, SEP, 9, SEP] and num_a == 4
