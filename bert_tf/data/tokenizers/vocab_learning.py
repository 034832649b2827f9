"""Learns a BERT-style WordPiece vocabulary from raw text.

Layout of the written vocab (one token a line, id = line number):
  [PAD] [UNK] [CLS] [SEP] [MASK]   ids 0..4
  [unused0] ... [unused{n-1}]      --num_unused reserve, default none
  every character of the corpus   sorted by code point
  learned words and subwords       most frequent first ("##" = continuation)

Words come from the same rules as `tokenization.BatchTokenizer` (cleanup,
lower-casing, accent stripping, punctuation and CJK split), so every word of
the corpus tokenizes without [UNK] with the built vocab: each character is in
it both alone and as "##" continuation. The learner is tensorflow-text's
WordPiece learner (`wordpiece_tokenizer_learner_lib.learn_with_thresh`), driven
by a geometric search over the count threshold, which needs far fewer passes
than its own linear bisection when the threshold that fits is small.
"""

import collections
import math
import time

from absl import logging
import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner_lib

from bert_tf.io import file_io as files_lib
from bert_tf.data.tokenizers import tokenizer_graph
from bert_tf.data.tokenizers import wordpiece_vocab

_READ_CHUNK_BYTES = 16 << 20
_LOG_EVERY_S = 10.0


def line_batches(files, max_lines, batch_lines):
  """Yields (lines: list[bytes], bytes_read) batches, max_lines in all."""
  lines_left = max_lines if max_lines else math.inf
  for path in files:
    with files_lib.open_file(path, "rb") as f:
      tail = b""
      while lines_left > 0:
        chunk = f.read(_READ_CHUNK_BYTES)
        if not chunk:
          lines = [tail] if tail else []
        else:
          lines = (tail + chunk).split(b"\n")
          tail = lines.pop()
        lines = lines[:lines_left] if lines_left < len(lines) else lines
        lines_left -= len(lines)
        for i in range(0, len(lines), batch_lines):
          batch = lines[i:i + batch_lines]
          yield batch, sum(len(line) + 1 for line in batch)
        if not chunk:
          break
    if lines_left <= 0:
      return


def count_words(input_patterns, do_lower_case, max_lines=None, batch_lines=8192):
  """Counts the words of the corpus after the tokenizer's pre-tokenization (WordSplitter).

  Args:
    input_patterns: comma-separated glob(s) (str) or a list of them.
    do_lower_case: lower-case and strip accents, as the tokenizer will.
    max_lines: read at most this many lines in all (None or 0: all).
    batch_lines: lines per TensorFlow call.

  Returns:
    collections.Counter str word -> count.
  """
  files = files_lib.expand_patterns(input_patterns)
  total_bytes = sum(files_lib.size(p) for p in files)
  basic = tokenizer_graph.WordSplitter(do_lower_case)
  split = tf.function(basic.tokenize,
                      input_signature=[tf.TensorSpec([None], tf.string)])
  byte_counts = collections.Counter()
  n_lines = n_bytes = 0
  start = last_log = time.time()
  for lines, size in line_batches(files, max_lines, batch_lines):
    words, counts = tf.unique_with_counts(split(tf.constant(lines)).flat_values)[::2]
    byte_counts.update(dict(zip(words.numpy(), counts.numpy().tolist())))
    n_lines += len(lines)
    n_bytes += size
    now = time.time()
    if now - last_log > _LOG_EVERY_S:
      last_log = now
      rate = n_bytes / (now - start)
      logging.info("counted %d lines, %.1f MB, %.2f MB/s, ETA %.0f s", n_lines,
                   n_bytes / 1e6, rate / 1e6,
                   max(total_bytes - n_bytes, 0) / max(rate, 1.0))
  elapsed = time.time() - start
  word_counts = collections.Counter(
      {w.decode("utf-8"): c for w, c in byte_counts.items()})
  logging.info("counted %d lines (%.1f MB) in %.1f s (%.2f MB/s): %d words, "
               "%d distinct", n_lines, n_bytes / 1e6, elapsed,
               n_bytes / 1e6 / max(elapsed, 1e-9), sum(word_counts.values()),
               len(word_counts))
  return word_counts


def _fit(tokens, mandatory, budget):
  """Keeps every mandatory token and the first `budget` others, in order."""
  kept = []
  for token in tokens:
    if token in mandatory:
      kept.append(token)
    elif budget > 0:
      kept.append(token)
      budget -= 1
  return kept


def learn_vocab(word_counts, vocab_size, reserved_tokens, min_frequency=1,
                max_token_length=50, slack_ratio=0.05, num_iterations=4):
  """Learns a WordPiece vocab of at most `vocab_size` tokens from word counts.

  Args:
    word_counts: dict str word -> count (pre-tokenized words).
    vocab_size: the most tokens to return, reserved ones included.
    reserved_tokens: list[str], first in the vocab in this order.
    min_frequency: a learned (multi-character) token needs at least this
      many occurrences.
    max_token_length: longest learned token in characters (longer words are
      still covered by pieces).
    slack_ratio: stop searching once within this fraction below vocab_size.
    num_iterations: passes of the learner per threshold.

  Returns:
    list[str]: reserved tokens, the single characters (sorted), then learned
    tokens by decreasing count. Fewer than vocab_size when the corpus has
    fewer tokens of count >= min_frequency.

  Raises:
    ValueError: no words, or vocab_size too small for the reserved tokens
      plus every character alone and as "##" continuation.
  """
  if not word_counts:
    raise ValueError("the corpus has no words")
  chars = sorted({ch for word in word_counts for ch in word})
  mandatory = set(reserved_tokens) | set(chars) | {
      wordpiece_vocab.SUBWORD_PREFIX + ch for ch in chars}
  if vocab_size < len(mandatory):
    raise ValueError(
        f"--vocab_size={vocab_size} is smaller than the {len(reserved_tokens)} "
        f"reserved tokens plus {2 * len(chars)} character tokens ({len(chars)} "
        f"characters, alone and with ##): need at least {len(mandatory)}")
  counts = [(w, c) for w, c in word_counts.items()
            if len(w) <= max_token_length and w not in reserved_tokens]
  counts.sort(key=lambda wc: (-wc[1], wc[0]))
  params = learner_lib.Params(
      upper_thresh=None, lower_thresh=None, num_iterations=num_iterations,
      max_input_tokens=-1, max_token_length=max_token_length,
      max_unique_chars=len(chars), vocab_size=vocab_size,
      slack_ratio=slack_ratio, include_joiner_token=True,
      joiner=wordpiece_vocab.SUBWORD_PREFIX, reserved_tokens=list(reserved_tokens))

  def learn(thresh):
    t0 = time.time()
    tokens = learner_lib.learn_with_thresh(counts, thresh, params)
    # Characters of words the learner did not see (longer than
    # max_token_length) still have to be in the vocab.
    present = set(tokens)
    head = list(reserved_tokens) + chars
    head_set = set(head)
    rest = [t for t in tokens if t not in head_set]
    rest += sorted(mandatory - present - head_set)
    tokens = head + rest
    logging.info("threshold %d: %d tokens (%.1f s)", thresh, len(tokens),
                 time.time() - t0)
    return tokens

  lo = max(int(min_frequency), 1)
  hi = max(counts[0][1] if counts else 1, lo)
  # The vocab shrinks as the threshold grows; the lowest threshold gives the
  # largest vocab, and is the answer when even that one fits.
  too_big = learn(lo)
  if len(too_big) <= vocab_size:
    if len(too_big) < vocab_size:
      # The caller says what to do about it (bert_tf.build_vocab: the model
      # config's vocab_size); the returned length is the vocab's size.
      logging.info(
          "built %d tokens, fewer than the %d asked for: the corpus has no more "
          "tokens with count >= %d", len(too_big), vocab_size, lo)
    return too_big
  best = None
  floor = vocab_size * (1 - slack_ratio)
  while lo < hi:
    # Geometric midpoint: the size falls roughly as a power of the
    # threshold, so this halves the search in log space.
    mid = max(lo + 1, min(hi, int(round(math.sqrt(lo * hi)))))
    tokens = learn(mid)
    if len(tokens) > vocab_size:
      lo, too_big = mid, tokens
      if mid == hi:
        break
    else:
      best, hi = tokens, mid
      if len(tokens) >= floor or hi - lo <= 1:
        break
  if best is None:  # even the highest threshold is too big: cut by count
    return _fit(too_big, mandatory, vocab_size - len(mandatory))
  # Fill up to exactly vocab_size with the most frequent further tokens of
  # the next lower threshold's vocab.
  present = set(best)
  extra = [t for t in too_big if t not in present][:vocab_size - len(best)]
  logging.info("%d tokens at count threshold %d, plus %d from threshold %d",
               len(best), hi, len(extra), lo)
  return best + extra


def build_vocab(input_patterns, vocab_size, do_lower_case, min_frequency=1,
                max_lines=None, num_unused=0, max_token_length=50):
  """Counts words in the input files and learns a WordPiece vocab.

  Args:
    input_patterns: comma-separated glob(s) (str) or a list of them.
    vocab_size: the most tokens in the vocab (special and unused included).
    do_lower_case: lower-case and strip accents (must match the Tokenizer's
      setting later used with this vocab).
    min_frequency: a learned multi-character token needs this many
      occurrences.
    max_lines: read at most this many lines (None or 0: all).
    num_unused: number of "[unused{i}]" tokens reserved after the specials.
    max_token_length: longest learned token, in characters.

  Returns:
    list[str], the vocab tokens in id order.

  Raises:
    FileNotFoundError: a pattern matches no file.
    ValueError: empty corpus, or vocab_size too small.
  """
  if num_unused < 0:
    raise ValueError(f"--num_unused={num_unused} must be >= 0")
  start = time.time()
  word_counts = count_words(input_patterns, do_lower_case, max_lines=max_lines)
  if not word_counts:
    raise ValueError(f"--input_file {input_patterns!r}: the corpus has no words")
  reserved = [wordpiece_vocab.PAD_TOKEN, wordpiece_vocab.UNK_TOKEN,
              wordpiece_vocab.CLS_TOKEN, wordpiece_vocab.SEP_TOKEN,
              wordpiece_vocab.MASK_TOKEN]
  reserved += [f"[unused{i}]" for i in range(num_unused)]
  tokens = learn_vocab(word_counts, vocab_size, reserved,
                       min_frequency=min_frequency,
                       max_token_length=max_token_length)
  logging.info("vocab of %d tokens (requested %d) built in %.1f s",
               len(tokens), vocab_size, time.time() - start)
  return tokens


def write_vocab(tokens, path):
  """Writes one token a line to `path` atomically (temp name, then rename)."""
  files_lib.atomic_write(path, "".join(token + "\n" for token in tokens))
