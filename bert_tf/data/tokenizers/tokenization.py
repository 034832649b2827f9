"""Batched WordPiece tokenization with exactly the ids of the original BERT tokenizer.

The original tokenizer (google-research/bert `BasicTokenizer` followed by
`WordpieceTokenizer`) applies these rules, in this order:

1. Cleanup: drop U+0000, U+FFFD and the control and format characters
   (categories Cc and Cf) except tab, newline and carriage return; map
   whitespace (space, tab, newline, carriage return, category Zs) to a space.
   Private-use (Co), unassigned (Cn) and surrogate (Cs) code points stay: they
   are ordinary characters of a word, which WordPiece makes [UNK] unless the
   vocab has them.
2. Surround each CJK ideograph with spaces so it becomes a word of its own.
3. Split on whitespace (Python `str.split()`).
4. With lower-casing only: lower-case each word (`str.lower()`), decompose it
   (NFD) and drop the nonspacing marks (category Mn), i.e. strip accents.
5. Split each word into runs of non-punctuation and single punctuation
   characters (ASCII 33-47, 58-64, 91-96, 123-126 and categories P*).
6. WordPiece each word: greedy longest match first, continuation pieces
   prefixed with "##"; a word over 200 characters, or one that cannot be
   covered by vocabulary pieces, becomes a single [UNK].

The rules follow the Unicode tables of the running Python's `unicodedata`,
as the original's do (tests/data/tokenizers/test_tokenization.py compares both paths
with the original's own output in ../shared/reference/golden).

tests/helpers/reference_tokenization.py states those rules in plain Python.
`BatchTokenizer` (this module: lines in, numpy ids out, large batches on
threads) runs them as the TensorFlow / tensorflow-text ops of
tokenizer_graph, with the character classes of unicode_tables, and gives
the reference's ids for every character (the tests sweep the code space):
- the character classes of the regular expressions are generated from
  Python's own `unicodedata`, not taken from RE2's tables (another Unicode
  version; RE2's \s is ASCII only);
- lower-casing is ICU's full case mapping (`tf.strings.lower` with utf-8),
  which is `str.lower` ('ß' stays 'ß', final sigma), unlike the case folding
  of tensorflow-text's own BERT normalizer; the characters TensorFlow's ICU
  does not know yet (Unicode 14) are corrected to Python's mapping;
- accent stripping is tensorflow-text's NFD, whose ICU is newer than Python's
  Unicode: the characters Python has unassigned and that ICU decomposes or
  gives a combining class are kept whole and in place, as Python does;
- tf-text's WordPiece limits words in bytes, the original in characters: words
  over 200 characters are made [UNK] before WordPiece.
The graph runs the steps on whole lines (spaces around CJK characters first,
then lower-casing, then spaces around punctuation, one split), which is the
same as the original's per-word steps because whitespace ends every context
those steps look at.
"""

import concurrent.futures
import functools
import os

import numpy as np
import tensorflow as tf

from bert_tf.data.tokenizers import tokenizer_graph
from bert_tf.data.tokenizers import wordpiece_vocab

# A batch of at least twice this many lines is tokenized in chunks, one a
# thread: the ops of one call run on one core (tf-text's and the string ops
# are loops over the batch), and TensorFlow lets go of Python's lock while
# they run: 1.5x on 2 cores for 4 MB of text (bench/bench_tokenization.py).
_CHUNK_LINES = 4096


def _tokenizer_threads():
  return max(1, min(os.cpu_count() or 1, 8))


def _thread_pool(threads):
  # One per process: a forked child has none of its parent's threads.
  return _thread_pool_of(threads, os.getpid())


@functools.lru_cache(maxsize=None)
def _thread_pool_of(threads, pid):
  del pid
  return concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="tokenizer")


def _run_chunk(fn, texts):
  ids = fn(tf.constant(texts, tf.string))
  return ids.flat_values.numpy(), ids.row_splits.numpy()


class BatchTokenizer:
  """Batched BERT tokenizer (tensorflow-text ops), exact against the original.

  Args:
    vocab: a `wordpiece_vocab.Vocab`.
    do_lower_case: lower-case and strip accents (uncased models).
    keep_special_tokens: keep [PAD] [UNK] [CLS] [SEP] [MASK] written in the
      text as single tokens (for fill-mask input); False is the original
      behaviour and what the data writer uses.
  """

  def __init__(self, vocab, do_lower_case, keep_special_tokens=False):
    self.vocab = vocab
    self.do_lower_case = bool(do_lower_case)
    self.keep_special_tokens = bool(keep_special_tokens)
    self._tf_module = None

  @property
  def tf_module(self):
    """The `tokenizer_graph.TokenizerModule` that tokenize_to_ids and tf_tokenize run (built on
    first use: building the WordPiece model of a 30k vocab takes a moment)."""
    if self._tf_module is None:
      self._tf_module = self.make_tf_module()
    return self._tf_module

  def make_tf_module(self, vocab_asset_path=None):
    """A new `tokenizer_graph.TokenizerModule` (tf.Module) with this tokenizer's settings.

    Assign it as an attribute of the exported module so that it is tracked;
    `vocab_asset_path` (default: the vocab's path) becomes its asset.
    """
    return tokenizer_graph.TokenizerModule(self.vocab, self.do_lower_case, self.keep_special_tokens,
                       vocab_asset_path=vocab_asset_path)

  def tf_tokenize(self, texts):
    """texts: tf.string [batch] -> tf.RaggedTensor int64 [batch, (tokens)].

    Graph-compatible: call it inside a tf.function (it traces the ops into
    the caller's graph).
    """
    return self.tf_module.tokenize_eager(texts)

  def tokenize_to_ids(self, texts):
    """Tokenizes a batch of lines.

    Args:
      texts: list[str] (or bytes) of length n.

    Returns:
      (values np.int64 [total tokens], row_splits np.int64 [n + 1]): the ids of
      text i are values[row_splits[i]:row_splits[i + 1]].
    """
    if not len(texts):
      return np.zeros([0], np.int64), np.zeros([1], np.int64)
    # ASCII lines (most of most corpora) skip the passes that cannot change
    # them; the others take the whole path, and the two are merged in order.
    is_ascii = np.fromiter((t.isascii() for t in texts), bool, len(texts))
    if is_ascii.all():
      return self._run(self.tf_module.tokenize_ascii, texts)
    if not is_ascii.any():
      return self._run(self.tf_module.tokenize, texts)
    parts = [self._run(fn, [t for t, a in zip(texts, is_ascii) if a == want])
             for fn, want in ((self.tf_module.tokenize_ascii, True),
                              (self.tf_module.tokenize, False))]
    lengths = np.zeros(len(texts), np.int64)
    lengths[is_ascii] = np.diff(parts[0][1])
    lengths[~is_ascii] = np.diff(parts[1][1])
    row_splits = np.concatenate([[0], np.cumsum(lengths)])
    # Each token's line is ascii or not: fill the two kinds' slots in order.
    token_is_ascii = np.repeat(is_ascii, lengths)
    values = np.empty(row_splits[-1], np.int64)
    values[token_is_ascii] = parts[0][0]
    values[~token_is_ascii] = parts[1][0]
    return values, row_splits

  @staticmethod
  def _run(fn, texts):
    """fn over `texts`; a large batch in chunks on threads (see _CHUNK_LINES)."""
    threads = _tokenizer_threads()
    if len(texts) < 2 * _CHUNK_LINES or threads == 1:
      return _run_chunk(fn, texts)
    n = min(threads, len(texts) // _CHUNK_LINES)
    bounds = [len(texts) * i // n for i in range(n + 1)]
    parts = list(_thread_pool(threads).map(
        lambda i: _run_chunk(fn, texts[bounds[i]:bounds[i + 1]]), range(n)))
    ends = np.cumsum([0] + [splits[-1] for _, splits in parts])
    return (np.concatenate([values for values, _ in parts]),
            np.concatenate([[0]] + [splits[1:] + end for (_, splits), end in zip(parts, ends)]))

  def tokenize(self, text):
    """text: str -> list[str] of WordPiece tokens."""
    values, _ = self.tokenize_to_ids([text])
    return [self.vocab.tokens[i] for i in values]


def tokenizer_for(vocab_file, do_lower_case, spm_model_file=None):
  """The data writer's tokenizer: a BatchTokenizer on the WordPiece
  `vocab_file`, or with `spm_model_file` a SentencePiece model's by ALBERT's
  rules (`sentencepiece_vocab`; vocab_file is not read then, as in
  google-research/albert).

  Raises:
    FileNotFoundError, ValueError: a missing or bad vocab or model.
  """
  if spm_model_file:
    from bert_tf.data.tokenizers import sentencepiece_vocab  # pylint: disable=g-import-not-at-top
    return sentencepiece_vocab.SentencePieceTokenizer(
        sentencepiece_vocab.load_sentencepiece(spm_model_file), do_lower_case)
  return BatchTokenizer(wordpiece_vocab.load_vocab(vocab_file), do_lower_case)
