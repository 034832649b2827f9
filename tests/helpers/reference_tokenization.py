"""The original BERT tokenization rules (BasicTokenizer, then
WordpieceTokenizer) restated in plain Python, slow: the oracle that the
batched tensorflow-text tokenizer (bert_tf.data.tokenizers.tokenization) is checked
against, code point by code point, and the baseline of
bench/bench_tokenization.py. The character classes are those of
bert_tf.data.tokenizers.unicode_tables (the golden tests check them against the
original's own output)."""

import re
import unicodedata

from bert_tf.data.tokenizers import tokenizer_graph
from bert_tf.data.tokenizers import unicode_tables
from bert_tf.data.tokenizers import wordpiece_vocab


def reference_basic_tokenize(text, do_lower_case, special_tokens=()):
  """The rules before WordPiece, in plain Python: text -> list[str] words.

  Args:
    text: str.
    do_lower_case: lower-case and strip accents.
    special_tokens: literal strings (e.g. "[MASK]") to keep as single words,
      never lower-cased nor split; recognized after the cleanup step.
  """
  if special_tokens:
    text = "".join(ch for ch in text if not unicode_tables.is_dropped(ch))
    pattern = "(" + "|".join(re.escape(t) for t in special_tokens) + ")"
    segments = re.split(pattern, text)
  else:
    segments = [text]
  words = []
  for i, segment in enumerate(segments):
    if i % 2:  # odd segments are the captured special tokens
      words.append(segment)
    else:
      words.extend(_basic_words(segment, do_lower_case))
  return words


def _basic_words(text, do_lower_case):
  """Cleanup, CJK isolation, whitespace split, lower/accents, punct split."""
  spaced = []
  for ch in text:
    if unicode_tables.is_dropped(ch):
      continue
    if unicode_tables.is_whitespace(ch):
      spaced.append(" ")
    elif unicode_tables.is_cjk(ord(ch)):
      spaced.append(f" {ch} ")
    else:
      spaced.append(ch)
  words = []
  for word in "".join(spaced).split():
    if do_lower_case:
      word = unicodedata.normalize("NFD", word.lower())
      word = "".join(ch for ch in word if unicodedata.category(ch) != "Mn")
    run = []
    for ch in word:
      if unicode_tables.is_punctuation(ch):
        if run:
          words.append("".join(run))
          run = []
        words.append(ch)
      else:
        run.append(ch)
    if run:
      words.append("".join(run))
  # The original splits on whitespace once more after the punctuation split.
  return [w for word in words for w in word.split()]


def _wordpiece(word, vocab, unk_token):
  if len(word) > tokenizer_graph.MAX_CHARS_PER_WORD:
    return [unk_token]
  pieces = []
  start = 0
  while start < len(word):
    end = len(word)
    while end > start:
      piece = word[start:end]
      if start > 0:
        piece = wordpiece_vocab.SUBWORD_PREFIX + piece
      if piece in vocab:
        break
      end -= 1
    else:  # no prefix of the rest is in the vocab: the whole word is unknown
      return [unk_token]
    pieces.append(piece)
    start = end
  return pieces


def reference_tokenize(text, vocab_dict, do_lower_case, keep_special_tokens=False,
                       unk_token=wordpiece_vocab.UNK_TOKEN):
  """The original BERT tokenization rules in plain Python (slow; for tests).

  Args:
    text: str.
    vocab_dict: a container of the vocabulary tokens (dict token -> id, set).
    do_lower_case: lower-case and strip accents.
    keep_special_tokens: keep the literal strings [PAD] [UNK] [CLS] [SEP]
      [MASK] that are in the vocab as single tokens, never lower-cased (the
      original splits "[MASK]" into "[", "mask", "]"; this is our extension
      for fill-mask input).
    unk_token: the token for words that cannot be tokenized.

  Returns:
    list[str], the WordPiece tokens.
  """
  specials = ()
  if keep_special_tokens:
    specials = tuple(t for t in wordpiece_vocab.SPECIAL_TOKENS if t in vocab_dict)
  tokens = []
  for word in reference_basic_tokenize(text, do_lower_case, specials):
    if word in specials:
      tokens.append(word)
    else:
      tokens.extend(_wordpiece(word, vocab_dict, unk_token))
  return tokens
