"""The masking rule of original BERT pretraining data.

Pure functions over token ids with an explicit `random.Random`: exact for a
seed, testable without TensorFlow. They state the algorithm of
google-research/bert's `create_pretraining_data.py` (the pairing rule is
in bert_tf.data.pretraining.instances):

* `mask_tokens` applies the 80/10/10 rule to up to max_predictions_per_seq
  positions (15% of the tokens), never [CLS] or [SEP]; with whole-word
  masking, a word and its ## pieces are masked together.
* `mask_tokens_ngram` is ALBERT's n-gram rule (--max_ngram > 1): spans of
  1..N consecutive units (words with whole-word masking, else WordPieces),
  n drawn with probability proportional to 1/n; `choose_ngram_spans` is its
  selection, returning the spans.
* `mask_tokens` and `mask_tokens_ngram` draw the 80/10/10 outcomes with
  `mask_chosen`; all of them put the chosen ids in place with `apply_masks`,
  and `count_outcomes` tells [MASK] / kept / random apart. `Replacement`
  holds the rule's shares (--masked_token_share, --random_token_share,
  --kept_token_share; 0.8 / 0.1 / 0.1 by default).
* `choose_masks_padded`, `apply_masks_padded` and `count_outcomes_padded`
  draw the same as `mask_tokens` without whole-word masking (vectorized
  with numpy), apply_masks and count_outcomes for a batch held in one
  padded array (the writer's form: no per-sequence Python).
* `pack_subword_ids` / `unpack_subword_ids`: the vocab's '##' flags in a
  few KB of text, for a manifest that lets the input pipeline mask records
  on the fly (bert_tf.data.input.dynamic_masking) without the vocab file.

Documents are lists of sentences; sentences are lists of token ids.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class MaskingVocab:
  """What the masking rule needs to know about the vocab.

  Attributes:
    size: number of entries (random replacements draw from all of them, as
      the original does, special tokens included).
    cls_id, sep_id, mask_id: ids of [CLS], [SEP], [MASK].
    is_subword: sequence of bool by id, True for '##' pieces (used only by
      whole-word masking).
  """
  size: int
  cls_id: int
  sep_id: int
  mask_id: int
  is_subword: tuple = ()


@dataclasses.dataclass(frozen=True)
class Replacement:
  """What a chosen position becomes: [MASK] with probability `mask`, else
  its own id with probability `keep_of_rest`, else a uniform random id: the
  original's two draws (0.8, then 0.5), so the default rule consumes the
  same random numbers and writes the same bytes.

  `of_shares` builds it from the three shares a user states.
  """
  mask: float = 0.8
  keep_of_rest: float = 0.5

  @classmethod
  def of_shares(cls, masked=0.8, random=None, kept=None):
    """The rule of [MASK] / random-id / kept shares. A share left None
    takes what the others leave (both None: half of the rest each, as
    the original). ValueError naming the share of an impossible rule."""
    for name, value in (("masked_token_share", masked), ("random_token_share", random),
                        ("kept_token_share", kept)):
      if value is not None and not 0.0 <= value <= 1.0:
        raise ValueError(f"--{name}={value}: must be in [0, 1]")
    if random is None and kept is None:
      return cls(masked, 0.5)
    # Rounded: 1 - 0.8 - 0.1 is 0.09999999999999998 in floats, not 0.1.
    if random is None:
      random = round(1.0 - masked - kept, 12)
    elif kept is None:
      kept = round(1.0 - masked - random, 12)
    if min(random, kept) < -1e-9 or abs(masked + random + kept - 1.0) > 1e-6:
      raise ValueError(f"--masked_token_share={masked:g}, --random_token_share={random:g} "
                       f"and --kept_token_share={kept:g} must be non-negative and add up to 1")
    random, kept = max(random, 0.0), max(kept, 0.0)
    # kept / (kept + random): 0.1 / 0.2 is exactly 0.5, the original's draw.
    return cls(masked, kept / (kept + random) if kept + random > 0 else 0.0)

  @property
  def shares(self):
    """(masked, random, kept) shares of the chosen positions."""
    rest = 1.0 - self.mask
    return self.mask, rest * (1.0 - self.keep_of_rest), rest * self.keep_of_rest


ORIGINAL = Replacement()


def num_to_predict(num_tokens, masked_lm_prob, max_predictions_per_seq):
  """How many positions of a sequence of `num_tokens` (with [CLS]/[SEP]) to predict."""
  return min(max_predictions_per_seq, max(1, int(round(num_tokens * masked_lm_prob))))


def mask_tokens(tokens, masked_lm_prob, max_predictions_per_seq, vocab, rng,
                do_whole_word_mask=False, replacement=ORIGINAL):
  """Chooses masked-LM positions and applies the 80/10/10 rule.

  Args:
    tokens: list of int ids, [CLS] A [SEP] B [SEP].
    masked_lm_prob: share of tokens to predict.
    max_predictions_per_seq: cap on predictions.
    vocab: MaskingVocab.
    rng: random.Random.
    do_whole_word_mask: mask a word and its '##' pieces together.
    replacement: Replacement, the 80/10/10 rule by default.
  Returns:
    (output_tokens, positions, labels): the input with replacements, the
    sorted predicted positions, and the original ids there.
  """
  cls_id, sep_id = vocab.cls_id, vocab.sep_id
  want = num_to_predict(len(tokens), masked_lm_prob, max_predictions_per_seq)
  if do_whole_word_mask:
    is_subword = vocab.is_subword
    words = []
    for i, t in enumerate(tokens):
      if t == cls_id or t == sep_id:
        continue
      if words and is_subword[t]:
        words[-1].append(i)
      else:
        words.append([i])
    rng.shuffle(words)
    chosen = []
    for word in words:
      if len(chosen) >= want:
        break
      # A word that does not fit is skipped whole, never split.
      if len(chosen) + len(word) > want:
        continue
      chosen.extend(word)
  else:
    # Every position but [CLS] and [SEP], found by C-level scans.
    candidates = list(range(len(tokens)))
    specials = []
    for special in (cls_id, sep_id):
      j = -1
      while True:
        try:
          j = tokens.index(special, j + 1)
        except ValueError:
          break
        specials.append(j)
    for j in sorted(specials, reverse=True):
      del candidates[j]
    # A uniform sample in random order is what "shuffle, take the first k"
    # draws, at a fraction of the cost.
    chosen = rng.sample(candidates, min(want, len(candidates)))

  return mask_chosen(tokens, chosen, vocab, rng, replacement)


def mask_chosen(tokens, chosen, vocab, rng, replacement=ORIGINAL):
  """The 80/10/10 rule at the `chosen` positions, drawn in their order.

  Args:
    tokens: list of int ids. chosen: list of int positions, in the order
      they were drawn (the order the rule's draws follow). vocab: a
      MaskingVocab. rng: random.Random.
  Returns:
    (output_tokens, positions, labels): the masked ids, the chosen positions
    sorted, the original ids at them.
  """
  mask_id, size = vocab.mask_id, vocab.size
  new_ids = []
  for i in chosen:
    # 80% [MASK]; 10% unchanged and 10% a random token, so the model cannot
    # rely on [MASK] marking the only positions worth a good representation.
    if rng.random() < replacement.mask:
      new_ids.append(mask_id)
    elif rng.random() < replacement.keep_of_rest:
      new_ids.append(tokens[i])
    else:
      new_ids.append(rng.randint(0, size - 1))
  positions = sorted(chosen)
  labels = [tokens[i] for i in positions]
  return apply_masks(tokens, chosen, new_ids), positions, labels


def apply_masks(tokens, positions, new_ids):
  """The input with `new_ids` put at `positions`: the one place the
  80/10/10 draws (of either masking path) reach the tokens.

  Args:
    tokens: list of int ids. positions, new_ids: equal-length lists of int.
  Returns:
    a new list of int ids.
  """
  output = list(tokens)
  for position, new_id in zip(positions, new_ids):
    output[position] = new_id
  return output


def count_outcomes(output, positions, labels, mask_id):
  """(masked, kept, random): how many predicted positions hold [MASK], their
  original id, or another id. A random draw that hit [MASK] or the original
  id counts as such, as a reader of the records would count it."""
  masked = kept = 0
  for position, label in zip(positions, labels):
    new = output[position]
    if new == mask_id:
      masked += 1
    elif new == label:
      kept += 1
  return masked, kept, len(positions) - masked - kept


def choose_masks_padded(tokens, lengths, masked_lm_prob, max_predictions_per_seq, vocab, gen,
                        replacement=ORIGINAL):
  """`mask_tokens`' draw (without whole-word masking) for many sequences at
  once, vectorized with numpy: the same rule and distribution, a uniform
  random subset of num_to_predict non-[CLS]/[SEP] positions, each
  independently 80% [MASK], 10% unchanged, 10% a uniform random id.

  Args:
    tokens: int array [N, L], row i holding a sequence ([CLS] A [SEP] B
      [SEP]) in its first lengths[i] entries, L = lengths.max() (the width
      sets the draws: the same array gives the same masks).
    lengths: int64 [N].
    masked_lm_prob, max_predictions_per_seq, vocab: as for mask_tokens.
    gen: numpy.random.Generator. replacement: Replacement.
  Returns:
    (positions, labels, new, counts): positions, labels int64 [N, P] (P =
    max_predictions_per_seq; sorted positions first, then zeros); new int64
    [N, K] (K = counts.max()), the id that goes to each chosen position;
    counts int64 [N], the number of predictions of each sequence.
  """
  import numpy as np
  n, width = tokens.shape
  valid = ((np.arange(width) < lengths[:, None]) & (tokens != vocab.cls_id)
           & (tokens != vocab.sep_id))
  # np.round, like Python's round, rounds halves to even.
  counts = np.minimum(np.minimum(max_predictions_per_seq,
                                 np.maximum(1, np.round(lengths * masked_lm_prob).astype(np.int64))),
                      valid.sum(axis=1))
  k = int(counts.max())
  # The k smallest of uniform keys over the valid positions are a uniform
  # random subset of them; ordering those k by key gives the first counts[i]
  # for every row.
  keys = gen.random((n, width))
  keys[~valid] = 2.0
  part = np.argpartition(keys, k - 1, axis=1)[:, :k] if k < width else np.argsort(keys, axis=1)
  order = np.argsort(np.take_along_axis(keys, part, axis=1), axis=1)
  chosen = np.take_along_axis(part, order, axis=1)[:, :k]
  selected = np.arange(k) < counts[:, None]
  positions = np.sort(np.where(selected, chosen, width), axis=1)
  selected = positions < width
  safe = np.where(selected, positions, 0)
  labels = np.take_along_axis(tokens, safe, axis=1)
  u = gen.random((n, k))
  v = gen.random((n, k))
  random_ids = gen.integers(0, vocab.size, (n, k))
  new = np.where(u < replacement.mask, vocab.mask_id,
                 np.where(v < replacement.keep_of_rest, labels, random_ids))
  pad = max_predictions_per_seq - k
  positions = np.pad(np.where(selected, positions, 0), ((0, 0), (0, pad)))
  labels = np.pad(np.where(selected, labels, 0), ((0, 0), (0, pad)))
  return positions, labels, np.where(selected, new, 0), counts


def apply_masks_padded(tokens, positions, new, counts):
  """`apply_masks` of a batch: tokens with the first counts[i] of new[i] put
  at positions[i]. tokens int [N, L]; positions [N, >= K]; new [N, K]
  (K = counts.max()); counts [N]. Returns a new [N, L] array."""
  import numpy as np
  output = tokens.copy()
  k = new.shape[1]
  rows, slots = np.nonzero(np.arange(k) < counts[:, None])
  output[rows, positions[rows, slots]] = new[rows, slots]
  return output


def count_outcomes_padded(output, positions, labels, counts, mask_id):
  """`count_outcomes` summed over a batch: (masked, kept, random) ints.

  output int [N, L], the masked tokens; positions, labels int [N, P], the
  first counts[i] of row i real (the rest ignored); counts [N].
  """
  import numpy as np
  real = np.arange(positions.shape[1]) < counts[:, None]
  new = np.take_along_axis(output, np.where(real, positions, 0), axis=1)
  masked = real & (new == mask_id)
  kept = real & ~masked & (new == labels)
  num_masked, num_kept = int(masked.sum()), int(kept.sum())
  return num_masked, num_kept, int(counts.sum()) - num_masked - num_kept


def ngram_weights(max_ngram):
  """Probabilities of span lengths 1..max_ngram: proportional to 1/n (ALBERT's
  favor_shorter_ngram default). list of float, summing to 1."""
  raw = [1.0 / n for n in range(1, max_ngram + 1)]
  total = sum(raw)
  return [w / total for w in raw]


def mask_units(tokens, vocab, do_whole_word_mask):
  """The units masking picks from: lists of positions, in order.

  Every position but [CLS] and [SEP]; with whole-word masking a '##' piece
  joins the unit before it (as in the original, even across a [SEP]).
  """
  cls_id, sep_id = vocab.cls_id, vocab.sep_id
  units = []
  for i, t in enumerate(tokens):
    if t == cls_id or t == sep_id:
      continue
    if do_whole_word_mask and units and vocab.is_subword[t]:
      units[-1].append(i)
    else:
      units.append([i])
  return units


def choose_ngram_spans(units, want, max_ngram, rng):
  """ALBERT's n-gram selection: which spans of units to predict.

  The rule (google-research/albert, create_masked_lm_predictions): visit
  the units in random order; at each, draw n in 1..max_ngram with
  probability proportional to 1/n (n capped by the units left from it:
  ALBERT's slices end at the last unit, so a span there may hold fewer);
  while the span of n units starting there would push the predictions
  past `want`, try n - 1, down to 1; a span that still does not fit, or
  that overlaps a chosen one, is skipped; stop once `want` are chosen.
  With max_ngram=1 it is the original's whole-word rule (and, over single
  WordPieces, a uniform random subset).

  Where we differ: ALBERT draws n from numpy's global, unseeded generator,
  so its data is not reproducible; here every draw comes from `rng`.

  Args:
    units: list of lists of positions (mask_units).
    want: int, predictions wanted (num_to_predict).
    max_ngram: int >= 1.
    rng: random.Random.
  Returns:
    list of spans in the order chosen, each a list of unit indices
    (consecutive); their positions total at most `want`.
  """
  cum = [0]
  for unit in units:
    cum.append(cum[-1] + len(unit))
  cum_weights = []
  total = 0.0
  for w in ngram_weights(max_ngram):
    total += w
    cum_weights.append(total)
  order = list(range(len(units)))
  rng.shuffle(order)
  covered = [False] * len(units)
  spans = []
  count = 0
  for start in order:
    if count >= want:
      break
    longest = min(max_ngram, len(units) - start)
    # n ~ 1/n over 1..longest: a draw over the truncated weights.
    u = rng.random() * cum_weights[longest - 1]
    n = 1
    while n < longest and u >= cum_weights[n - 1]:
      n += 1
    while n > 1 and count + cum[start + n] - cum[start] > want:
      n -= 1
    size = cum[start + n] - cum[start]
    if count + size > want or any(covered[start:start + n]):
      continue
    for k in range(start, start + n):
      covered[k] = True
    spans.append(list(range(start, start + n)))
    count += size
  return spans


def mask_tokens_ngram(tokens, masked_lm_prob, max_predictions_per_seq, vocab, rng,
                      do_whole_word_mask=False, max_ngram=3, replacement=ORIGINAL):
  """`mask_tokens` with n-gram spans (ALBERT's rule, see choose_ngram_spans).

  The 80/10/10 rule applies to each position of a span on its own, as in
  ALBERT (SpanBERT replaces whole spans alike; ALBERT does not).

  Returns:
    (output_tokens, positions, labels, span_lengths): as mask_tokens, and
    the number of units of each chosen span.
  """
  want = num_to_predict(len(tokens), masked_lm_prob, max_predictions_per_seq)
  units = mask_units(tokens, vocab, do_whole_word_mask)
  spans = choose_ngram_spans(units, want, max_ngram, rng)
  chosen = [i for span in spans for k in span for i in units[k]]
  return (*mask_chosen(tokens, chosen, vocab, rng, replacement), [len(s) for s in spans])


def pack_subword_ids(is_subword):
  """The '##' flags of a vocab (sequence of bool by id) as a short ASCII
  string: the flag bits, zlib-compressed, base64 (about 2 KB for BERT's
  30522 ids)."""
  import base64
  import zlib
  bits = bytearray((len(is_subword) + 7) // 8)
  for i, flag in enumerate(is_subword):
    if flag:
      bits[i >> 3] |= 1 << (i & 7)
  return base64.b64encode(zlib.compress(bytes(bits), 9)).decode("ascii")


def unpack_subword_ids(packed, size):
  """The inverse of pack_subword_ids: tuple of `size` bools."""
  import base64
  import zlib
  bits = zlib.decompress(base64.b64decode(packed.encode("ascii")))
  if len(bits) != (size + 7) // 8:
    raise ValueError(f"subword flags hold {len(bits) * 8} bits, not {size}")
  return tuple(bool(bits[i >> 3] >> (i & 7) & 1) for i in range(size))
