"""The character classes of the original BERT tokenizer's rules, from the
running Python's `unicodedata` (as the original's are): per character (the
reference rules in tests/helpers/reference_tokenization.py), per code point as
numpy tables, as RE2 character classes for the graph (tokenizer_graph), and
the characters where TensorFlow's ICU lower-cases or decomposes otherwise
(probed with TensorFlow, imported then).
"""

import functools
import sys
import unicodedata

import numpy as np

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
# (`is_control` there); tab, newline and carriage return are whitespace.
_CONTROL_CATEGORIES = ("Cc", "Cf")


def is_cjk(cp):
  return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def is_whitespace(ch):
  return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def is_control(ch):
  if ch in "\t\n\r":
    return False
  return unicodedata.category(ch) in _CONTROL_CATEGORIES


def is_dropped(ch):
  cp = ord(ch)
  return cp == 0 or cp == 0xFFFD or is_control(ch)


def is_punctuation(ch):
  cp = ord(ch)
  if any(lo <= cp <= hi for lo, hi in _ASCII_PUNCT_RANGES):
    return True
  return unicodedata.category(ch).startswith("P")


@functools.lru_cache(maxsize=None)
def code_point_flags(n=sys.maxunicode + 1):
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
def regex_classes(ascii_only=False):
  """RE2 character classes of the code points of each kind the rules use.

  Built from this Python's `unicodedata`, so the TensorFlow path classifies
  each character exactly like the reference rules do (RE2's own \\p{..}
  tables follow another Unicode version, and RE2's \\s is ASCII only).

  Args:
    ascii_only: only the code points below 128 (for text known to be ASCII:
      no table of the whole code space to build).

  Returns:
    dict kind -> "[...]" with kinds dropped, non_ascii_space, punct, mn, cjk
    (a kind with no code point is None).
  """
  f = code_point_flags(128) if ascii_only else code_point_flags()
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


SIGMAS = (0x3C2, 0x3C3)  # final and medial small sigma


@functools.lru_cache(maxsize=None)
def lowercase_problems():
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
  f = code_point_flags()
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
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
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
def nfd_problems():
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
  f = code_point_flags()
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
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_text as tf_text  # pylint: disable=g-import-not-at-top
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
