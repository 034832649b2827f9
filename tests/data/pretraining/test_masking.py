"""Tests of bert_tf.data.pretraining.masking: the 80/10/10 masking rule of original
BERT, as pure functions with a seeded RNG (the pairing and truncation rules:
test_instances.py).

No TensorFlow here: the rules must be checkable (and usable) without it.
"""

import collections
import random
import subprocess
import sys

import numpy as np
import pytest

from bert_tf.data.pretraining import masking

from helpers import batch_masking

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
  code = "import bert_tf.data.pretraining.masking, sys; assert 'tensorflow' not in sys.modules, 'tensorflow imported'"
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


@pytest.mark.parametrize("shares", [(1.0, None, None), (0.5, 0.3, None), (0.6, None, 0.4)])
def test_other_replacement_shares_in_both_implementations(shares):
  rule = masking.Replacement.of_shares(*shares)
  expected = rule.shares  # (masked, random, kept)
  assert abs(sum(expected) - 1.0) < 1e-12
  rng = random.Random(9)
  sequences = [random_sequence(rng, 128) for _ in range(2500)]
  single = np.zeros(3)
  for tokens in sequences:
    output, positions, _ = masking.mask_tokens(tokens, 0.15, 20, BIG_VOCAB, rng,
                                               replacement=rule)
    single += outcome_counts(tokens, output, positions, MASK)
  tokens, lengths = _padded_array(sequences)
  positions, labels, new, counts = masking.choose_masks_padded(
      tokens, lengths, 0.15, 20, BIG_VOCAB, np.random.default_rng(9), rule)
  output = masking.apply_masks_padded(tokens, positions, new, counts)
  batch = np.array(masking.count_outcomes_padded(output, positions, labels, counts, MASK))
  # outcome_counts orders (masked, kept, random); ~48k predictions: se < 0.3pp.
  for counts_of in (single, batch):
    got = counts_of / counts_of.sum()
    np.testing.assert_allclose([got[0], got[2], got[1]], expected, atol=0.012)
  if shares[0] == 1.0:
    assert single[1] == single[2] == 0 and batch[1] == batch[2] == 0


def _padded_array(sequences):
  lengths = np.array([len(s) for s in sequences], np.int64)
  tokens = np.zeros((len(sequences), int(lengths.max())), np.int64)
  for i, s in enumerate(sequences):
    tokens[i, :len(s)] = s
  return tokens, lengths


def test_the_default_shares_are_the_originals_draws_exactly():
  # 0.1 / (0.1 + 0.1) is exactly 0.5: stating the default shares gives the
  # original's thresholds, so the records' bytes do not change.
  assert masking.Replacement.of_shares(0.8, 0.1, 0.1) == masking.ORIGINAL
  assert masking.Replacement.of_shares() == masking.Replacement(0.8, 0.5)
  assert masking.Replacement.of_shares(0.8, None, 0.1) == masking.ORIGINAL


@pytest.mark.parametrize("shares, message", [
    ((1.2, None, None), "--masked_token_share=1.2"),
    ((0.8, 0.3, None), "must be non-negative and add up to 1"),
    ((0.8, 0.1, 0.2), "must be non-negative and add up to 1"),
    ((0.8, -0.1, None), "--random_token_share=-0.1")])
def test_impossible_shares_name_the_flag(shares, message):
  with pytest.raises(ValueError, match=message):
    masking.Replacement.of_shares(*shares)
