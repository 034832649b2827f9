"""ALBERT's SentencePiece tokenization as graph ops (`sentencepiece_vocab`'s
rules in TensorFlow, for SavedModel text signatures).

The same steps as `sentencepiece_vocab.SentencePieceVocab.tokenize`:
whitespace runs to one space and the ends stripped (Python's str.isspace
characters), NFKD (tensorflow-text's ICU), the characters Python's
unicodedata.combining marks dropped, lower-casing as str.lower
(tokenizer_graph's ICU lower-casing with its corrections), the model's
pieces (tensorflow-text's SentencepieceTokenizer, the model's own
normalization included), and the digit-comma rule. The character classes
are built from this Python's unicodedata, as the Python rules use it; where
ICU's NFKD follows another Unicode version than Python's the two may differ
(tests compare them on the golden lines and on mixed scripts). One more
difference is tensorflow-text's: where two orders of the same pieces score
the same, its SentencePiece breaks the tie otherwise than the sentencepiece
package ("000" as "0" + "00" or "00" + "0" in a model with both and no
"000"); the ids then hold the same pieces in another order.
"""

import functools
import sys
import unicodedata

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.data.tokenizers import sentencepiece_vocab
from bert_tf.data.tokenizers import tokenizer_graph


def _re2_class(mask):
  """An RE2 character class of the code points where `mask` holds."""
  mask = mask.copy()
  mask[0xD800:0xE000] = False  # surrogates: never in valid UTF-8
  edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
  starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
  parts = [f"\\x{{{lo:X}}}" if lo == hi else f"\\x{{{lo:X}}}-\\x{{{hi:X}}}"
           for lo, hi in zip(starts.tolist(), ends.tolist())]
  return "[" + "".join(parts) + "]"


@functools.lru_cache(maxsize=None)
def _classes():
  """RE2 classes of Python's whitespace, combining and digit characters."""
  n = sys.maxunicode + 1
  space, combining, digit = (np.zeros(n, bool) for _ in range(3))
  for cp in range(n):
    ch = chr(cp)
    space[cp] = ch.isspace()
    combining[cp] = unicodedata.combining(ch) != 0
    digit[cp] = ch.isdigit()
  return _re2_class(space), _re2_class(combining), _re2_class(digit)


class SentencePieceModule(tf.Module):
  """tokenize(texts: tf.string [batch]) -> int64 RaggedTensor [batch, (ids)],
  ALBERT's tokenization of each raw text with `model`
  (a sentencepiece_vocab.SentencePieceVocab)."""

  def __init__(self, model, do_lower_case, keep_mask=False, name=None):
    """keep_mask: "[MASK]" written in the text becomes the [MASK] id (for
    fill-mask input; SentencePiece never makes a control symbol of text)."""
    super().__init__(name=name)
    self._do_lower_case = bool(do_lower_case)
    self._keep_mask = bool(keep_mask)
    self._mask_id = tf.constant(model.vocab.mask_id, tf.int64)
    self._sp = tf_text.SentencepieceTokenizer(model=model.model_proto, out_type=tf.string)
    self._space, self._combining, self._digit = _classes()
    self._lowercaser = tokenizer_graph.WordSplitter(do_lower_case=True)

  def preprocess(self, texts):
    """sentencepiece_vocab.preprocess_text of each text."""
    texts = tf.strings.regex_replace(texts, self._space + "+", " ")
    texts = tf.strings.regex_replace(texts, "^ | $", "")
    texts = tf_text.normalize_utf8(texts, "NFKD")
    texts = tf.strings.regex_replace(texts, self._combining, "")
    if self._do_lower_case:
      texts = self._lowercaser._lower(texts)  # pylint: disable=protected-access
    return texts

  def pieces(self, texts):
    """The pieces of preprocessed texts, the digit-comma rule applied:
    string RaggedTensor [batch, (pieces)]."""
    pieces = self._sp.tokenize(texts)
    flat = pieces.flat_values
    n = tf.shape(flat, out_type=tf.int64)[0]
    flagged = tf.strings.regex_full_match(flat, "(?s).*" + self._digit + ",")
    # The piece without its comma (one byte) and word-start markers, encoded
    # again, then the comma as its own piece.
    stripped = tf.strings.regex_replace(
        tf.strings.substr(flat, tf.zeros_like(tf.strings.length(flat)),
                          tf.maximum(tf.strings.length(flat) - 1, 0)),
        sentencepiece_vocab.WORD_START, "")
    again = self._sp.tokenize(stripped)
    again = tf.concat([again, tf.RaggedTensor.from_tensor(tf.fill([n, 1], ","))], axis=1)
    singles = tf.RaggedTensor.from_tensor(flat[:, None])
    both = tf.concat([singles, again], axis=0)
    chosen = tf.gather(both, tf.where(flagged, n + tf.range(n), tf.range(n)))
    splits = tf.gather(chosen.row_splits, pieces.row_splits)
    return tf.RaggedTensor.from_row_splits(chosen.flat_values, splits)

  def tokenize(self, texts):
    """ids of each raw text: int64 RaggedTensor [batch, (ids)]."""
    pieces = self.pieces(self.preprocess(texts))
    ids = tf.cast(self._sp.string_to_id(pieces.flat_values), tf.int64)
    return pieces.with_flat_values(ids)

  def tokenize_eager(self, texts):
    """`tokenize`, with "[MASK]" kept when keep_mask: each text's parts
    between "[MASK]"s tokenized on their own, the [MASK] id between them
    (tokenizer_graph.TokenizerModule's interface)."""
    if not self._keep_mask:
      return self.tokenize(texts)
    parts = tf.strings.split(texts, sep="[MASK]")  # [batch, (parts)]
    ids = self.tokenize(parts.flat_values)  # [parts, (ids)]
    masks = tf.RaggedTensor.from_tensor(tf.fill([tf.shape(ids.row_splits)[0] - 1, 1],
                                                self._mask_id))
    with_mask = tf.concat([ids, masks], axis=1)
    per_text = tf.RaggedTensor.from_row_splits(
        with_mask.flat_values, tf.gather(with_mask.row_splits, parts.row_splits))
    return per_text[:, :-1]  # no [MASK] after a text's last part
