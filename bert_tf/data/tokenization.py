"""WordPiece tokenization with exactly the ids of the original BERT tokenizer.

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
as the original's do (tests/data/test_tokenization.py compares both paths
with the original's own output in ../shared/reference/golden).

`reference_tokenize` states those rules in plain Python. `Tokenizer` runs them
as TensorFlow / tensorflow-text ops, batched, and gives the reference's ids
for every character (the tests sweep the code space):
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
import hashlib
import os
import re
import sys
import unicodedata

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.data import files

PAD_TOKEN = "[PAD]"
UNK_TOKEN = "[UNK]"
CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
MASK_TOKEN = "[MASK]"
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)
SUBWORD_PREFIX = "##"
# The original gives [UNK] for a word longer than this many characters.
MAX_CHARS_PER_WORD = 200

# CJK Unified Ideographs blocks and compatibility ideographs that the original
# treats as words of their own. Hangul, kana etc. are not in here on purpose:
# they are written with spaces between words.
_CJK_RANGES = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F), (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)
_ASCII_PUNCT_RANGES = ((33, 47), (58, 64), (91, 96), (123, 126))
# Control and format characters (Cc, Cf) that the original drops
# (`_is_control` there); tab, newline and carriage return are whitespace.
_CONTROL_CATEGORIES = ("Cc", "Cf")
# Stand-ins for special tokens inside TFBasicTokenizer: the tag characters
# U+E0020..U+E007F (category Cf), which the cleanup has removed from the text
# before they are put in, and which no later rule changes (not cased, no
# decomposition, not a mark, punctuation, CJK nor whitespace).
_PLACEHOLDER_BASE = 0xE0020
_MAX_PLACEHOLDERS = 96


# ----------------------------------------------------------------------------
# Character classes (shared by the reference and the regular expressions)
# ----------------------------------------------------------------------------


def _is_cjk(cp):
  return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def _is_whitespace(ch):
  return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch):
  if ch in "\t\n\r":
    return False
  return unicodedata.category(ch) in _CONTROL_CATEGORIES


def _is_dropped(ch):
  cp = ord(ch)
  return cp == 0 or cp == 0xFFFD or _is_control(ch)


def _is_punctuation(ch):
  cp = ord(ch)
  if any(lo <= cp <= hi for lo, hi in _ASCII_PUNCT_RANGES):
    return True
  return unicodedata.category(ch).startswith("P")


def _is_split_space(ch):
  # What separates words after cleanup: the mapped whitespace plus whatever
  # else `str.split()` treats as whitespace (U+2028, U+2029) and survived it.
  return _is_whitespace(ch) or (ch.isspace() and not _is_dropped(ch))


@functools.lru_cache(maxsize=None)
def _code_point_flags(n=sys.maxunicode + 1):
  """Per code point (numpy bool arrays over 0..n-1, by default the whole
  code space): the kinds the rules use, computed from this Python's
  `unicodedata` in bulk (C-level maps, numpy), the same predicates as the
  per-character functions above. The whole code space takes 0.4 s."""
  cp = np.arange(n)
  chars = list(map(chr, range(n)))
  cats = np.array(list(map(unicodedata.category, chars)))
  first = cats.astype("<U1")
  isspace = np.zeros(n, bool)
  isspace[[ord(c) for c in filter(str.isspace, chars)]] = True
  cjk = np.zeros(n, bool)
  for lo, hi in _CJK_RANGES:
    cjk[lo:hi + 1] = True
  punct = first == "P"
  for lo, hi in _ASCII_PUNCT_RANGES:
    punct[lo:hi + 1] = True
  tab_nl_cr = np.isin(cp, (9, 10, 13))
  control = np.isin(cats, _CONTROL_CATEGORIES) & ~tab_nl_cr
  dropped = (cp == 0) | (cp == 0xFFFD) | control
  whitespace = (cp == 32) | tab_nl_cr | (cats == "Zs")
  split_space = whitespace | (isspace & ~dropped)
  return {"cats": cats, "first": first, "cjk": cjk, "punct": punct, "dropped": dropped,
          "split_space": split_space, "mn": cats == "Mn", "chars": chars}


@functools.lru_cache(maxsize=None)
def _regex_classes(ascii_only=False):
  """RE2 character classes of the code points of each kind the rules use.

  Built from this Python's `unicodedata`, so the TensorFlow path classifies
  each character exactly like `reference_tokenize` does (RE2's own \\p{..}
  tables follow another Unicode version, and RE2's \\s is ASCII only).

  Args:
    ascii_only: only the code points below 128 (for text known to be ASCII:
      no table of the whole code space to build).

  Returns:
    dict kind -> "[...]" with kinds dropped, non_ascii_space, punct, mn, cjk
    (a kind with no code point is None).
  """
  f = _code_point_flags(128) if ascii_only else _code_point_flags()
  n = len(f["cats"])
  # Unassigned code points (most of the code space) are no space and no
  # punctuation; leaving them out keeps those classes short.
  unassigned = f["cats"] == "Cn"
  surrogate = np.zeros(n, bool)
  surrogate[0xD800:0xE000] = True  # never in valid UTF-8 (RE2 rejects them)
  # ASCII whitespace is left to tf.strings.split.
  non_ascii_space = f["split_space"] & (np.arange(n) > 127) & ~unassigned
  masks = {"dropped": f["dropped"], "non_ascii_space": non_ascii_space,
           "punct": f["punct"] & ~unassigned, "mn": f["mn"], "cjk": f["cjk"]}
  classes = {}
  for kind, mask in masks.items():
    edges = np.diff(np.concatenate([[0], (mask & ~surrogate).astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
    parts = [f"\\x{{{lo:X}}}" if lo == hi else f"\\x{{{lo:X}}}-\\x{{{hi:X}}}"
             for lo, hi in zip(starts.tolist(), ends.tolist())]
    classes[kind] = "[" + "".join(parts) + "]" if parts else None
  return classes


_SIGMAS = (0x3C2, 0x3C3)  # final and medial small sigma


@functools.lru_cache(maxsize=None)
def _lowercase_problems():
  """The characters that ICU lower-cases differently from str.lower.

  tf.strings.lower uses TensorFlow's ICU, whose Unicode version is older than
  Python's: letters and marks new in Unicode 14 (e.g. U+2C2F, U+10570,
  U+1AC1) are unknown to it, so it neither lower-cases them nor counts them
  as cased or case-ignorable in the final-sigma rule. Found by probing ICU
  and Python with each character alone and around a capital sigma. Only
  characters that reach lower-casing are probed (not dropped, not
  whitespace, not CJK), and of the other letters (Lo) only cased ones.
  Private-use, unassigned and surrogate code points (Co, Cn, Cs) reach it
  too but are not probed: both leave them alone and count them neither cased
  nor case-ignorable (what Python's newer Unicode leaves unassigned, ICU's
  older one does too); the every-code-point test checks it.

  Returns:
    (code_points, lowered, stand_ins): np.int32 arrays [n], sorted by code
    point: Python's lower-case of each (one code point), and a character
    ICU knows with the same role in the final-sigma rule ("a": cased,
    U+200B: case-ignorable, U+E100 private use: neither).
  """
  f = _code_point_flags()
  keep = ~((f["first"] == "C") | f["cjk"] | f["dropped"] | f["split_space"])
  chars = f["chars"]
  # Of the other letters (Lo), only cased ones.
  for cp in np.flatnonzero(keep & (f["cats"] == "Lo")).tolist():
    ch = chars[cp]
    if not (ch.islower() or ch.isupper()):
      keep[cp] = False
  candidates = [chars[cp] for cp in np.flatnonzero(keep).tolist()]
  contexts = ("{}", "\u0391\u03a3{}", "\u0391\u03a3{}\u03b2", "{}\u03a3",
              "\u03b1{}\u03a3")
  probes = [c.format(ch) for ch in candidates for c in contexts]
  icu = tf.strings.lower(tf.constant(probes), encoding="utf-8").numpy()
  problems = sorted({candidates[i // len(contexts)]
                     for i, (p, q) in enumerate(zip(probes, icu))
                     if p.lower() != q.decode("utf-8")})
  code_points, lowered, stand_ins = [], [], []
  for ch in problems:
    if len(ch.lower()) != 1:
      continue  # none known; the fix below maps one code point to one
    followed = ("\u0391\u03a3" + ch).lower()[1]
    skipped = ("\u0391\u03a3" + ch + "\u03b2").lower()[1]
    if followed == "\u03c3":
      stand_in = "a"  # cased, not case-ignorable
    elif skipped == "\u03c3":
      stand_in = "\u200b"  # case-ignorable
    else:
      stand_in = "\ue100"
    code_points.append(ord(ch))
    lowered.append(ord(ch.lower()))
    stand_ins.append(ord(stand_in))
  return (np.array(code_points, np.int32), np.array(lowered, np.int32),
          np.array(stand_ins, np.int32))


@functools.lru_cache(maxsize=None)
def _nfd_problems():
  """The characters that tensorflow-text's NFD treats unlike Python's.

  tensorflow-text's ICU is newer than Python's Unicode (16 against 14 here):
  it decomposes characters that Python still has unassigned (e.g. U+105C9
  into U+105D2 U+0307, whose mark the accent stripping would then drop), and
  gives some of them a combining class, so that NFD reorders them among
  marks; the original keeps them whole and in place (an unassigned code point
  is a starter). Decompositions and classes of assigned characters never
  change (Unicode's normalization stability), so only the unassigned (Cn)
  code points of the planes with assignments (0-3, 14) are probed: alone,
  after U+0345 (class 240) and before U+0334 (class 1).

  Returns:
    (code_points, stand_ins): np.int32 arrays [n], both ascending: each
    problem character and the format character (Cf) that stands in for it
    while NFD runs. The stand-ins were dropped by the cleanup, so the text
    holds none of them; they are starters (combining class 0) like the
    unassigned characters, NFD leaves them alone, and no later rule looks at
    them. The tag characters are left to the special-token placeholders.

  Raises:
    ValueError: more problem characters than stand-ins (a far newer ICU).
  """
  f = _code_point_flags()
  cats, chars = f["cats"], f["chars"]
  planes = np.zeros(len(cats), bool)
  planes[:0x40000] = True
  planes[0xE0000:0xF0000] = True
  planes[0xD800:0xE000] = False  # surrogates: not UTF-8
  candidates = [chars[cp] for cp in np.flatnonzero(planes & (cats == "Cn")).tolist()]
  pool = [chars[cp] for cp in np.flatnonzero(cats == "Cf").tolist()
          if cp > 0x7F and not 0xE0000 <= cp <= 0xE007F]
  pool = [ch for ch in pool
          if unicodedata.normalize("NFD", ch) == ch and ch.lower() == ch
          and unicodedata.combining(ch) == 0 and not ch.isspace()]
  probes = (candidates + ["\u0345" + ch for ch in candidates]
            + [ch + "\u0334" for ch in candidates] + pool)
  icu = tf_text.normalize_utf8(tf.constant(probes), "NFD").numpy()
  # Python's NFD of each probe is the probe itself (no candidate decomposes
  # or reorders in Python; U+0345 and U+0334 alone stay).
  n = len(candidates)
  differs = [p.encode("utf-8") != q for p, q in zip(probes, icu)]
  problems = [ch for i, ch in enumerate(candidates)
              if differs[i] or differs[n + i] or differs[2 * n + i]]
  pool = [ch for ch, bad in zip(pool, differs[3 * n:]) if not bad]
  if len(problems) > len(pool):
    raise ValueError(
        f"tensorflow-text's NFD decomposes {len(problems)} characters that "
        f"Python's unicodedata {unicodedata.unidata_version} has unassigned: "
        f"more than the {len(pool)} stand-ins available")
  return (np.array([ord(ch) for ch in problems], np.int32),
          np.array([ord(ch) for ch in pool[:len(problems)]], np.int32))


def _holding_any(code_points):
  """An RE2 pattern that fully matches a text holding any of `code_points`."""
  return "(?s).*[" + "".join(f"\\x{{{cp:X}}}" for cp in code_points) + "].*"


def _replace_code_points(values, keys, targets):
  """values int32 [n]: each one found in `keys` (ascending, int32 [k >= 1])
  becomes the `targets` entry at the same position; the rest stay."""
  at = tf.minimum(tf.searchsorted(keys, values), tf.size(keys) - 1)
  return tf.where(tf.equal(tf.gather(keys, at), values),
                  tf.gather(targets, at), values)


# ----------------------------------------------------------------------------
# Vocabulary
# ----------------------------------------------------------------------------


class Vocab:
  """A WordPiece vocabulary: one token a line, id = line number (from 0).

  Attributes:
    tokens: list[str], token of each id.
    token_to_id: dict str -> int.
    size: number of tokens.
    sha256: hex digest of the file bytes (identifies the vocab in manifests;
      for a vocab made from a list, of the file `bert_tf.data.vocab.write_vocab`
      would write).
    path: the file it was read from (or None).
    pad_id, unk_id, cls_id, sep_id, mask_id: ids of the special tokens
      (pad_id is 0: the original pads with 0 whether or not [PAD] exists).
    is_subword: np.bool_ [size], True where the token starts with "##".
  """

  def __init__(self, tokens, path=None, sha256=None):
    tokens = list(tokens)
    token_to_id = {}
    for i, token in enumerate(tokens):
      if not token:
        raise ValueError(f"vocab {path or '<list>'}: line {i + 1} is empty")
      if token in token_to_id:
        raise ValueError(
            f"vocab {path or '<list>'}: token {token!r} appears twice "
            f"(lines {token_to_id[token] + 1} and {i + 1})")
      token_to_id[token] = i
    missing = [t for t in (CLS_TOKEN, SEP_TOKEN, MASK_TOKEN, UNK_TOKEN)
               if t not in token_to_id]
    if missing:
      raise ValueError(
          f"vocab {path or '<list>'}: missing special token(s) {' '.join(missing)}")
    if PAD_TOKEN in token_to_id and token_to_id[PAD_TOKEN] != 0:
      raise ValueError(
          f"vocab {path or '<list>'}: {PAD_TOKEN} must be id 0 (line 1), "
          f"found at line {token_to_id[PAD_TOKEN] + 1}")
    if sha256 is None:
      sha256 = hashlib.sha256(
          "".join(t + "\n" for t in tokens).encode("utf-8")).hexdigest()
    self.tokens = tokens
    self.token_to_id = token_to_id
    self.size = len(tokens)
    self.sha256 = sha256
    self.path = path
    self.pad_id = 0
    self.unk_id = token_to_id[UNK_TOKEN]
    self.cls_id = token_to_id[CLS_TOKEN]
    self.sep_id = token_to_id[SEP_TOKEN]
    self.mask_id = token_to_id[MASK_TOKEN]
    self.is_subword = np.array(
        [t.startswith(SUBWORD_PREFIX) for t in tokens], dtype=bool)

  def __len__(self):
    return self.size

  def __repr__(self):
    return f"Vocab(size={self.size}, path={self.path!r}, sha256={self.sha256[:12]})"


def load_vocab(path):
  """Reads a vocab file (one token a line, surrounding whitespace stripped).

  Raises:
    FileNotFoundError: no such file.
    ValueError: not UTF-8, an empty or duplicate line, a special token of
      [CLS] [SEP] [MASK] [UNK] missing, or [PAD] present but not at id 0.
  """
  text = files.read_text(path, "vocab")
  lines = text.split("\n")
  if lines and lines[-1] == "":  # the newline that ends the last line
    lines.pop()
  return Vocab([line.strip() for line in lines], path=path,
               sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())


# ----------------------------------------------------------------------------
# Reference: the original rules in plain Python
# ----------------------------------------------------------------------------

def reference_basic_tokenize(text, do_lower_case, special_tokens=()):
  """The rules before WordPiece, in plain Python: text -> list[str] words.

  Args:
    text: str.
    do_lower_case: lower-case and strip accents.
    special_tokens: literal strings (e.g. "[MASK]") to keep as single words,
      never lower-cased nor split; recognized after the cleanup step.
  """
  if special_tokens:
    text = "".join(ch for ch in text if not _is_dropped(ch))
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
    if _is_dropped(ch):
      continue
    if _is_whitespace(ch):
      spaced.append(" ")
    elif _is_cjk(ord(ch)):
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
      if _is_punctuation(ch):
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
  if len(word) > MAX_CHARS_PER_WORD:
    return [unk_token]
  pieces = []
  start = 0
  while start < len(word):
    end = len(word)
    while end > start:
      piece = word[start:end]
      if start > 0:
        piece = SUBWORD_PREFIX + piece
      if piece in vocab:
        break
      end -= 1
    else:  # no prefix of the rest is in the vocab: the whole word is unknown
      return [unk_token]
    pieces.append(piece)
    start = end
  return pieces


def reference_tokenize(text, vocab_dict, do_lower_case, keep_special_tokens=False,
                       unk_token=UNK_TOKEN):
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
    specials = tuple(t for t in SPECIAL_TOKENS if t in vocab_dict)
  tokens = []
  for word in reference_basic_tokenize(text, do_lower_case, specials):
    if word in specials:
      tokens.append(word)
    else:
      tokens.extend(_wordpiece(word, vocab_dict, unk_token))
  return tokens


# ----------------------------------------------------------------------------
# TensorFlow / tensorflow-text implementation
# ----------------------------------------------------------------------------


class TFBasicTokenizer(tf.Module):
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
    classes = _regex_classes(ascii_only)
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
        code_points, stand_ins = _nfd_problems()
        if len(code_points):
          nfd_fix = (_holding_any(code_points), tf.constant(code_points),
                     tf.constant(stand_ins))
        code_points, lowered, stand_ins = _lowercase_problems()
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
    not (_nfd_problems)."""
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
    is_sigma = tf.logical_or(tf.equal(fixed.flat_values, _SIGMAS[0]),
                             tf.equal(fixed.flat_values, _SIGMAS[1]))
    merged = fixed.with_flat_values(
        tf.where(is_sigma, roles.flat_values, fixed.flat_values))
    return tf.tensor_scatter_nd_update(
        lowered, rows, tf.strings.unicode_encode(merged, "UTF-8"))


class TFTokenizer(tf.Module):
  """The whole tokenizer as a `tf.Module`: graph ops only, SavedModel-ready.

  The WordPiece model (tensorflow-text `FastWordpieceTokenizer`) is built from
  the vocabulary list at construction and saved as a constant of the traced
  function; `vocab_file` (a `tf.saved_model.Asset`, when a path is known)
  carries the vocab file into the SavedModel's assets/ for its users.

  Args:
    vocab: a `Vocab`.
    do_lower_case: lower-case and strip accents.
    keep_special_tokens: see `Tokenizer`.
    vocab_asset_path: the file to track as the vocab asset (default
      `vocab.path`).
  """

  def __init__(self, vocab, do_lower_case, keep_special_tokens=False,
               vocab_asset_path=None, name=None):
    super().__init__(name=name)
    self._unk_token = UNK_TOKEN
    asset_path = vocab_asset_path or vocab.path
    self.vocab_file = tf.saved_model.Asset(asset_path) if asset_path else None
    self.vocab_size = tf.constant(vocab.size, tf.int64)
    specials = ()
    if keep_special_tokens:
      specials = tuple(t for t in SPECIAL_TOKENS if t in vocab.token_to_id)
    self.basic = TFBasicTokenizer(do_lower_case, specials)
    # 4 bytes per character at most: long enough for any word of up to
    # MAX_CHARS_PER_WORD characters; longer words are made [UNK] beforehand
    # because tf-text counts bytes where the original counts characters.
    self._wordpiece = tf_text.FastWordpieceTokenizer(
        vocab=vocab.tokens, suffix_indicator=SUBWORD_PREFIX,
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
    ids, about a third faster (see TFBasicTokenizer.tokenize)."""
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


class Tokenizer:
  """Batched BERT tokenizer (tensorflow-text ops), exact against the original.

  Args:
    vocab: a `Vocab`.
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
    """The `TFTokenizer` that tokenize_to_ids and tf_tokenize run (built on
    first use: building the WordPiece model of a 30k vocab takes a moment)."""
    if self._tf_module is None:
      self._tf_module = self.make_tf_module()
    return self._tf_module

  def make_tf_module(self, vocab_asset_path=None):
    """A new `TFTokenizer` (tf.Module) with this tokenizer's settings.

    Assign it as an attribute of the exported module so that it is tracked;
    `vocab_asset_path` (default: the vocab's path) becomes its asset.
    """
    return TFTokenizer(self.vocab, self.do_lower_case, self.keep_special_tokens,
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
