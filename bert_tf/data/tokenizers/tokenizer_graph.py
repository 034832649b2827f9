"""The tokenizer as TensorFlow / tensorflow-text graph ops: WordSplitter
(the rules before WordPiece: text -> words) and TokenizerModule (text ->
WordPiece ids, a tf.Module a SavedModel can carry). See tokenization for
the rules and how the graph matches the original's."""

import re

import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.data.tokenizers import unicode_tables
from bert_tf.data.tokenizers import wordpiece_vocab

# The original gives [UNK] for a word longer than this many characters.
MAX_CHARS_PER_WORD = 200

# Stand-ins for special tokens inside WordSplitter: the tag characters
# U+E0020..U+E007F (category Cf), which the cleanup has removed from the text
# before they are put in, and which no later rule changes (not cased, no
# decomposition, not a mark, punctuation, CJK nor whitespace).
_PLACEHOLDER_BASE = 0xE0020
_MAX_PLACEHOLDERS = 96


def _holding_any(code_points):
  """An RE2 pattern that fully matches a text holding any of `code_points`."""
  return "(?s).*[" + "".join(f"\\x{{{cp:X}}}" for cp in code_points) + "].*"


def _replace_code_points(values, keys, targets):
  """values int32 [n]: each one found in `keys` (ascending, int32 [k >= 1])
  becomes the `targets` entry at the same position; the rest stay."""
  at = tf.minimum(tf.searchsorted(keys, values), tf.size(keys) - 1)
  return tf.where(tf.equal(tf.gather(keys, at), values),
                  tf.gather(targets, at), values)


class WordSplitter(tf.Module):
  """The rules before WordPiece (cleanup ... punctuation split) as graph ops.

  Args:
    do_lower_case: lower-case and strip accents.
    special_tokens: literal strings (e.g. "[MASK]") kept as single words,
      never lower-cased nor split.
  """

  def __init__(self, do_lower_case, special_tokens=(), name=None):
    super().__init__(name=name)
    self._do_lower_case = bool(do_lower_case)
    # The character classes of the regular expressions (`_patterns`) come
    # from tables of the whole code space, built when the first non-ASCII
    # text is traced: the ASCII path needs only ASCII's (0.4 s less).
    # The corrections for ICU's lower-casing and NFD (`_icu_fixes`) are
    # probed when first needed: all-ASCII text never needs them (0.4 s).
    self._fixes = None
    # Special tokens become tag characters (see _PLACEHOLDER_BASE) while the
    # rules run: the cleanup has removed them from the text, and the rules
    # leave them alone.
    if len(special_tokens) > _MAX_PLACEHOLDERS:
      raise ValueError(f"at most {_MAX_PLACEHOLDERS} special tokens, "
                       f"got {len(special_tokens)}")
    self._specials = [(re.escape(t), chr(_PLACEHOLDER_BASE + i), t)
                      for i, t in enumerate(special_tokens)]

  @staticmethod
  def _patterns(ascii_only):
    """(dropped, split_off, space, mn): the regular expressions of the rules,
    for ASCII text only or for any text (space and mn are None for ASCII)."""
    classes = unicode_tables.regex_classes(ascii_only)
    # Spaces around CJK ideographs and punctuation in one pass, after
    # lower-casing: neither is cased nor case-ignorable, so they end the
    # final-sigma context just as the spaces the original puts there.
    split_off = "[" + "".join(classes[k][1:-1] for k in ("punct", "cjk") if classes[k]) + "]"
    # ASCII whitespace is left to tf.strings.split: replacing every space
    # would cost more than the rest of the cleanup together.
    return classes["dropped"], split_off, classes["non_ascii_space"], classes["mn"]

  def _icu_fixes(self):
    """(lower_fix, nfd_fix), each None when ICU agrees with Python; probed
    once, eagerly even while a function is being traced."""
    if self._fixes is None:
      with tf.init_scope():
        nfd_fix = lower_fix = None
        code_points, stand_ins = unicode_tables.nfd_problems()
        if len(code_points):
          nfd_fix = (_holding_any(code_points), tf.constant(code_points),
                     tf.constant(stand_ins))
        code_points, lowered, stand_ins = unicode_tables.lowercase_problems()
        if len(code_points):
          lower_fix = (_holding_any(code_points), tf.constant(code_points),
                       tf.constant(lowered), tf.constant(stand_ins))
        self._fixes = (lower_fix, nfd_fix)
    return self._fixes

  def tokenize(self, texts, ascii_only=False):
    """Splits texts into words (traced into the caller's tf.function).

    Args:
      texts: tf.string [batch], UTF-8 (invalid bytes are dropped).
      ascii_only: the caller promises every text is ASCII (bytes < 0x80);
        the passes that change nothing in ASCII text are left out (UTF-8
        repair, non-ASCII spaces, NFD and mark stripping) and lower-casing
        is ASCII's, about a third less time with the same words.

    Returns:
      tf.RaggedTensor string [batch, (words)].
    """
    if not ascii_only:
      # Invalid UTF-8 becomes U+FFFD, which the cleanup drops: what the
      # original's convert_to_unicode (decode("utf-8", "ignore")) does with
      # bytes; its input reading under Python 3 decodes strictly and raises
      # instead (the data writer's --decode_errors=strict).
      texts = tf.strings.unicode_transcode(
          texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)
    dropped_re, split_off_re, space_re, mn_re = self._patterns(ascii_only)
    texts = tf.strings.regex_replace(texts, dropped_re, "")
    for pattern, placeholder, _ in self._specials:
      texts = tf.strings.regex_replace(texts, pattern, f" {placeholder} ")
    if ascii_only:
      if self._do_lower_case:
        # str.lower of ASCII is A-Z -> a-z; NFD changes no ASCII character
        # and ASCII has no nonspacing mark. (The placeholders are tag
        # characters: no case, no decomposition.)
        texts = tf.strings.lower(texts)
    else:
      texts = tf.strings.regex_replace(texts, space_re, " ")
      if self._do_lower_case:
        # Whole lines at once: the original lower-cases each word, but the
        # final-sigma rule (the only context-dependent one) never looks across
        # whitespace or a CJK ideograph, so the result is the same.
        texts = self._lower(texts)
        texts = self._strip_accents(texts, mn_re)
    texts = tf.strings.regex_replace(texts, split_off_re, r" \0 ")
    words = tf.strings.split(texts)  # ASCII whitespace; [batch, (words)]
    if self._specials:
      flat = words.flat_values
      for _, placeholder, token in self._specials:
        flat = tf.where(tf.equal(flat, placeholder), token, flat)
      words = words.with_flat_values(flat)
    return words

  def _strip_accents(self, texts, mn_re):
    """NFD, then drop the nonspacing marks (Mn, the class `mn_re`), keeping
    whole the characters tensorflow-text's NFD decomposes and Python's does
    not (unicode_tables.nfd_problems)."""
    stripped = tf.strings.regex_replace(
        tf_text.normalize_utf8(texts, "NFD"), mn_re, "")
    nfd_fix = self._icu_fixes()[1]
    if nfd_fix is None:
      return stripped
    pattern, code_points, stand_ins = nfd_fix
    # Only the (rare) texts holding such a character: again, with a stand-in
    # for each of them during NFD.
    rows = tf.where(tf.strings.regex_full_match(texts, pattern))
    chars = tf.strings.unicode_decode(tf.gather_nd(texts, rows), "UTF-8")
    protected = tf.strings.unicode_encode(chars.with_flat_values(
        _replace_code_points(chars.flat_values, code_points, stand_ins)), "UTF-8")
    done = tf.strings.regex_replace(
        tf_text.normalize_utf8(protected, "NFD"), mn_re, "")
    chars = tf.strings.unicode_decode(done, "UTF-8")
    restored = tf.strings.unicode_encode(chars.with_flat_values(
        _replace_code_points(chars.flat_values, stand_ins, code_points)), "UTF-8")
    return tf.tensor_scatter_nd_update(stripped, rows, restored)

  def _lower(self, texts):
    """str.lower of each text: ICU, corrected where it lags Python's Unicode."""
    lowered = tf.strings.lower(texts, encoding="utf-8")
    lower_fix = self._icu_fixes()[0]
    if lower_fix is None:
      return lowered
    pattern, code_points, lower_cps, stand_ins = lower_fix
    # Only the (rare) texts with a character ICU does not know take this
    # path: lower-case them twice, once with Python's lower-case of those
    # characters and once with stand-ins of the same final-sigma role, and
    # take the sigmas from the second.
    rows = tf.where(tf.strings.regex_full_match(texts, pattern))
    chars = tf.strings.unicode_decode(tf.gather_nd(texts, rows), "UTF-8")
    flat = chars.flat_values
    at = tf.minimum(tf.searchsorted(code_points, flat),
                    tf.size(code_points) - 1)
    ordinary = tf.not_equal(tf.gather(code_points, at), flat)

    def icu_lower(flat_cps):
      encoded = tf.strings.unicode_encode(chars.with_flat_values(flat_cps),
                                          "UTF-8")
      return tf.strings.unicode_decode(
          tf.strings.lower(encoded, encoding="utf-8"), "UTF-8")

    fixed = icu_lower(tf.where(ordinary, flat, tf.gather(lower_cps, at)))
    roles = icu_lower(tf.where(ordinary, flat, tf.gather(stand_ins, at)))
    is_sigma = tf.logical_or(tf.equal(fixed.flat_values, unicode_tables.SIGMAS[0]),
                             tf.equal(fixed.flat_values, unicode_tables.SIGMAS[1]))
    merged = fixed.with_flat_values(
        tf.where(is_sigma, roles.flat_values, fixed.flat_values))
    return tf.tensor_scatter_nd_update(
        lowered, rows, tf.strings.unicode_encode(merged, "UTF-8"))


class TokenizerModule(tf.Module):
  """The whole tokenizer as a `tf.Module`: graph ops only, SavedModel-ready.

  The WordPiece model (tensorflow-text `FastWordpieceTokenizer`) is built from
  the vocabulary list at construction and saved as a constant of the traced
  function; `vocab_file` (a `tf.saved_model.Asset`, when a path is known)
  carries the vocab file into the SavedModel's assets/ for its users.

  Args:
    vocab: a `wordpiece_vocab.Vocab`.
    do_lower_case: lower-case and strip accents.
    keep_special_tokens: see `tokenization.BatchTokenizer`.
    vocab_asset_path: the file to track as the vocab asset (default
      `vocab.path`).
  """

  def __init__(self, vocab, do_lower_case, keep_special_tokens=False,
               vocab_asset_path=None, name=None):
    super().__init__(name=name)
    self._unk_token = wordpiece_vocab.UNK_TOKEN
    asset_path = vocab_asset_path or vocab.path
    self.vocab_file = tf.saved_model.Asset(asset_path) if asset_path else None
    self.vocab_size = tf.constant(vocab.size, tf.int64)
    specials = ()
    if keep_special_tokens:
      specials = tuple(t for t in wordpiece_vocab.SPECIAL_TOKENS if t in vocab.token_to_id)
    self.basic = WordSplitter(do_lower_case, specials)
    # 4 bytes per character at most: long enough for any word of up to
    # MAX_CHARS_PER_WORD characters; longer words are made [UNK] beforehand
    # because tf-text counts bytes where the original counts characters.
    self._wordpiece = tf_text.FastWordpieceTokenizer(
        vocab=vocab.tokens, suffix_indicator=wordpiece_vocab.SUBWORD_PREFIX,
        max_bytes_per_word=4 * MAX_CHARS_PER_WORD, token_out_type=tf.int64,
        unknown_token=self._unk_token, no_pretokenization=True,
        support_detokenization=False)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
  def tokenize(self, texts):
    """texts: tf.string [batch] -> tf.RaggedTensor int64 [batch, (tokens)]."""
    return self.tokenize_eager(texts)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
  def tokenize_ascii(self, texts):
    """`tokenize` of texts that are all ASCII (the caller checks): the same
    ids, about a third faster (see WordSplitter.tokenize)."""
    return self.tokenize_eager(texts, ascii_only=True)

  def tokenize_eager(self, texts, ascii_only=False):
    """Same as `tokenize` without a tf.function of its own: runs eagerly, or
    traces its ops into the caller's tf.function (what an export calls)."""
    words = self.basic.tokenize(texts, ascii_only=ascii_only)
    flat = words.flat_values
    # Counting characters only where there are enough bytes saves a pass.
    maybe_long = tf.where(tf.strings.length(flat) > MAX_CHARS_PER_WORD)
    too_long = tf.gather_nd(maybe_long, tf.where(tf.strings.length(
        tf.gather_nd(flat, maybe_long), unit="UTF8_CHAR") > MAX_CHARS_PER_WORD))
    flat = tf.tensor_scatter_nd_update(
        flat, too_long, tf.fill(tf.shape(too_long)[:1], self._unk_token))
    ids = self._wordpiece.tokenize(flat)  # [n_words, (pieces)]
    # Compose text -> word -> piece into text -> piece.
    text_splits = tf.gather(ids.row_splits, words.row_splits)
    return tf.RaggedTensor.from_row_splits(ids.flat_values, text_splits,
                                           validate=False)
