"""The pairing and masking rules of original BERT pretraining data.

Pure functions over token ids with an explicit `random.Random`: exact for a
seed, testable without TensorFlow. They state the algorithm of
google-research/bert's `create_pretraining_data.py`:

* `create_pairs_from_document` cuts a document into (A, B, is_random_next)
  pairs: sentences accumulate up to a target length (max_seq_length - 3, or a
  random shorter one with probability short_seq_prob), A takes a random
  prefix of them, and B is either the rest or (probability 0.5, or always for
  a one-sentence chunk) a run of sentences from another document, in which
  case the unused sentences of the chunk are put back.
* `truncate_pair` trims the longer side, one token at a time, from a random end.
* `mask_tokens` applies the 80/10/10 rule to up to max_predictions_per_seq
  positions (15% of the tokens), never [CLS] or [SEP]; with whole-word
  masking, a word and its ## pieces are masked together.

Documents are lists of sentences; sentences are lists of token ids.
"""

import dataclasses
import itertools

_chain = itertools.chain


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


def truncate_pair(tokens_a, tokens_b, max_num_tokens, rng):
  """Trims `tokens_a`/`tokens_b` in place until together they fit.

  The rule: while too long, the longer list (B on a tie) loses one token,
  from its front or its back with probability 0.5 each (trimming only one
  end would bias the model towards text near sentence starts or ends).
  Which side loses each token depends only on the lengths, so the number of
  tokens each side loses is computed directly, and how many of them come off
  the front is one binomial draw per side: the same distribution as trimming
  token by token, without a loop over every trimmed token.
  """
  len_a, len_b = len(tokens_a), len(tokens_b)
  excess = len_a + len_b - max_num_tokens
  if excess <= 0:
    return
  gap = abs(len_a - len_b)
  if excess <= gap:
    trim_a, trim_b = (excess, 0) if len_a > len_b else (0, excess)
  else:
    # Down to equal lengths, then alternately B, A, B, ...
    rest = excess - gap
    trim_a = (gap if len_a > len_b else 0) + rest // 2
    trim_b = (gap if len_b > len_a else 0) + rest - rest // 2
  for tokens, trim in ((tokens_a, trim_a), (tokens_b, trim_b)):
    if trim:
      front = bin(rng.getrandbits(trim)).count("1")
      del tokens[:front]
      del tokens[len(tokens) - (trim - front):]


def create_pairs_from_document(documents, document_index, max_seq_length,
                               short_seq_prob, rng):
  """Cuts one document into sentence pairs for next sentence prediction.

  Args:
    documents: list of documents (lists of non-empty lists of int ids); the
      window that random B segments are drawn from.
    document_index: which document to cut.
    max_seq_length: int, length of [CLS] A [SEP] B [SEP] after truncation.
    short_seq_prob: probability of a shorter random target length, so the
      model also sees the short sequences of fine-tuning.
    rng: random.Random.
  Returns:
    list of (tokens_a, tokens_b, is_random_next), with
    len(tokens_a) + len(tokens_b) <= max_seq_length - 3, both non-empty.
  """
  document = documents[document_index]
  max_num_tokens = max_seq_length - 3
  target_length = max_num_tokens
  if rng.random() < short_seq_prob:
    target_length = rng.randint(2, max_num_tokens)

  pairs = []
  chunk = []
  chunk_length = 0
  i = 0
  while i < len(document):
    sentence = document[i]
    chunk.append(sentence)
    chunk_length += len(sentence)
    if i == len(document) - 1 or chunk_length >= target_length:
      a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
      tokens_a = list(_chain(*chunk[:a_end]))
      tokens_b = []
      if len(chunk) == 1 or rng.random() < 0.5:
        is_random_next = True
        target_b_length = target_length - len(tokens_a)
        # Ten tries for a document other than this one; a window of one
        # document has no other, and then this one serves.
        for _ in range(10):
          random_index = rng.randint(0, len(documents) - 1)
          if random_index != document_index:
            break
        random_document = documents[random_index]
        for sentence_b in random_document[rng.randint(0, len(random_document) - 1):]:
          tokens_b.extend(sentence_b)
          if len(tokens_b) >= target_b_length:
            break
        # The sentences of the chunk that B did not use are not wasted: the
        # next chunk starts with them.
        i -= len(chunk) - a_end
      else:
        is_random_next = False
        tokens_b = list(_chain(*chunk[a_end:]))
      truncate_pair(tokens_a, tokens_b, max_num_tokens, rng)
      pairs.append((tokens_a, tokens_b, is_random_next))
      chunk = []
      chunk_length = 0
    i += 1
  return pairs


def num_to_predict(num_tokens, masked_lm_prob, max_predictions_per_seq):
  """How many positions of a sequence of `num_tokens` (with [CLS]/[SEP]) to predict."""
  return min(max_predictions_per_seq, max(1, int(round(num_tokens * masked_lm_prob))))


def mask_tokens(tokens, masked_lm_prob, max_predictions_per_seq, vocab, rng,
                do_whole_word_mask=False):
  """Chooses masked-LM positions and applies the 80/10/10 rule.

  Args:
    tokens: list of int ids, [CLS] A [SEP] B [SEP].
    masked_lm_prob: share of tokens to predict.
    max_predictions_per_seq: cap on predictions.
    vocab: MaskingVocab.
    rng: random.Random.
    do_whole_word_mask: mask a word and its '##' pieces together.
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

  output = list(tokens)
  mask_id, size = vocab.mask_id, vocab.size
  for i in chosen:
    # 80% [MASK]; 10% unchanged and 10% a random token, so the model cannot
    # rely on [MASK] marking the only positions worth a good representation.
    if rng.random() < 0.8:
      output[i] = mask_id
    elif rng.random() < 0.5:
      pass
    else:
      output[i] = rng.randint(0, size - 1)
  positions = sorted(chosen)
  labels = [tokens[i] for i in positions]
  return output, positions, labels


def build_instance(tokens_a, tokens_b, cls_id, sep_id):
  """[CLS] A [SEP] B [SEP] and the number of segment-0 tokens."""
  return [cls_id] + tokens_a + [sep_id] + tokens_b + [sep_id], len(tokens_a) + 2


def mask_batch(sequences, masked_lm_prob, max_predictions_per_seq, vocab, gen):
  """`mask_tokens` for many sequences at once, vectorized with numpy.

  Same rule and distribution as `mask_tokens` without whole-word masking:
  a uniform random subset of num_to_predict non-[CLS]/[SEP] positions, each
  independently 80% [MASK], 10% unchanged, 10% a uniform random id.

  Args:
    sequences: list of N lists of int ids, [CLS] A [SEP] B [SEP].
    masked_lm_prob, max_predictions_per_seq, vocab: as for mask_tokens.
    gen: numpy.random.Generator.
  Returns:
    (output, positions, labels, counts): output int64 [N, L] (L = longest
    sequence; zero beyond each length), positions and labels int64 [N, P]
    (P = max_predictions_per_seq; sorted positions first, then zeros), and
    counts int64 [N], the number of predictions of each sequence.
  """
  import numpy as np
  tokens, positions, labels, new, counts = choose_masks(
      sequences, masked_lm_prob, max_predictions_per_seq, vocab, gen)
  output = tokens.copy()
  k = new.shape[1]
  selected = np.arange(k) < counts[:, None]
  rows = np.broadcast_to(np.arange(len(sequences))[:, None], selected.shape)
  output[rows[selected], positions[:, :k][selected]] = new[selected]
  return output, positions, labels, counts


def choose_masks(sequences, masked_lm_prob, max_predictions_per_seq, vocab, gen):
  """The vectorized draw behind mask_batch.

  Returns:
    (tokens, positions, labels, new, counts): tokens int64 [N, L] padded
    input; positions, labels int64 [N, P] as for mask_batch; new int64
    [N, K] (K = counts.max()), the id that goes to each chosen position.
  """
  import numpy as np
  n = len(sequences)
  lengths = np.fromiter(map(len, sequences), np.int64, n)
  width = int(lengths.max())
  tokens = np.zeros((n, width), np.int64)
  for i, seq in enumerate(sequences):
    tokens[i, :len(seq)] = seq
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
  new = np.where(u < 0.8, vocab.mask_id, np.where(v < 0.5, labels, random_ids))
  pad = max_predictions_per_seq - k
  positions = np.pad(np.where(selected, positions, 0), ((0, 0), (0, pad)))
  labels = np.pad(np.where(selected, labels, 0), ((0, 0), (0, pad)))
  return tokens, positions, labels, np.where(selected, new, 0), counts
