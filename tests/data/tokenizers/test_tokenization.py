"""Tests of bert_tf.data.tokenizers.tokenization: the tf-text path gives the original's ids."""

import json
import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.tokenizers import tokenization as tk
from bert_tf.data.tokenizers import tokenizer_graph
from bert_tf.data.tokenizers import unicode_tables
from bert_tf.data.tokenizers import wordpiece_vocab

from helpers import reference_tokenization
from helpers.vocab import SPECIALS, write_lines


# Text a user might feed: several scripts, accents, case, odd whitespace,
# control characters, emoji, symbols, special-token look-alikes.
TEXTS = [
    "Hello, World! The quick brown fox jumped over the lazy dog's back.",
    "UNwant\u00e9d,running  isn't it?  \"Quoted\" (parens) [brackets] {braces}",
    "Stra\u00dfe GR\u00dcSSE \u00c4pfel \u00f6l \u00dcbung \u1e9e gro\u00df",
    "Fran\u00e7ais: \u00e9l\u00e8ve, na\u00efve, c\u0153ur, \u00e0 l'\u00e9cole; No\u00ebl\u2026",
    "\u4e2d\u6587\u5b57\u7b26\u6d4b\u8bd5\u3002\u4eca\u5929\u5929\u6c14\u5f88\u597d\uff01abc\u5b57def",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3068\u30ab\u30bf\u30ab\u30ca\u3001\u6f22\u5b57\u3002",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u0401\u043b\u043a\u0430 \u0419\u043e\u0433\u0443\u0440\u0442",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645\u061f \u0627\u0644\u0639\u064e\u0631\u064e\u0628\u0650\u064a\u064e\u0651\u0629",
    "emoji \U0001f600\U0001f44d\U0001f3fd ok\U0001f600ok \u2764\ufe0f family \U0001f468\u200d\U0001f469\u200d\U0001f467",
    "ctrl a\x00b\ufffdc\x07d\x1be\u200bf\u200eg tab\there\nnew\rline\x0bvt\x0cff",
    "spaces\u00a0nbsp\u3000ideographic\u2028line\u2029para\u2003em\u202fnarrow\x85nel",
    "\u0130stanbul \u039f\u0394\u039f\u03a3 \u039f\u0394\u039f\u03a3. \u03a3\u039f\u03a6\u0399\u0391 \u01c5 \ufb01ne \uff21\uff22\uff23",
    "$5 +3 = 8 @user #tag 50% a^b `x` ~y | \u20ac5 \u00a9 \u2122 \u00b1 \u00bf\u00a1 \u00ab\u00bb \u2013\u2014",
    "a " + "x" * 201 + " b " + "y" * 200 + " " + "\u00e9" * 150 + " " + "\u0436" * 201,
    "Text with [MASK] and [mask] and x[CLS]y [SEP][PAD] [UNK] [unused1] [MA SK]",
    "",
    "   ",
    "\u0915\u094d\u0937\u093f \u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22 \ud55c\uad6d\uc5b4 \u05e2\u05d1\u05e8\u05d9\u05ea \u10d0\u10d1",
    # Private use and unassigned (kept, unlike controls), the latter also ones
    # tensorflow-text's newer NFD decomposes or reorders, next to [MASK].
    "Private\ue000use \U000f0000 unassigned\U0003fffe T\U000105c9\u0301x "
    "[MASK]\ue000 a\U0001d16d\U00011f41\U0001d165 \U0001612a\U00016121.",
]


def _tiny_vocab_tokens():
  """Specials, a few words and pieces, and the characters of TEXTS (some of
  them only alone, so words using them as continuation become [UNK])."""
  tokens = list(SPECIALS) + ["the", "quick", "brown", "##s", "un", "##want",
                             "##ed", "runn", "##ing", "hello", "world", "x",
                             "##x", "y", "##y", "\u00e9", "##\u00e9",
                             "\u0436", "##\u0436", "stra", "##\u00dfe", "##"]
  chars = set()
  for text in TEXTS:
    for lower in (True, False):
      for word in reference_tokenization.reference_basic_tokenize(text, lower):
        chars.update(word)
  for i, ch in enumerate(sorted(chars)):
    tokens.append(ch)
    if i % 3:
      tokens.append("##" + ch)
  seen = set()
  return [t for t in tokens if not (t in seen or seen.add(t))]


@pytest.fixture(scope="module")
def tiny_vocab():
  return wordpiece_vocab.Vocab(_tiny_vocab_tokens())


def _ids_to_tokens(vocab, values, row_splits):
  return [[vocab.tokens[i] for i in values[a:b]]
          for a, b in zip(row_splits[:-1], row_splits[1:])]


def _assert_same_as_reference(tokenizer, texts, keep_special_tokens=False):
  values, row_splits = tokenizer.tokenize_to_ids(texts)
  assert values.dtype == np.int64 and row_splits.dtype == np.int64
  assert row_splits.shape == (len(texts) + 1,)
  ours = _ids_to_tokens(tokenizer.vocab, values, row_splits)
  for text, got in zip(texts, ours):
    want = reference_tokenization.reference_tokenize(text, tokenizer.vocab.token_to_id,
                                 tokenizer.do_lower_case, keep_special_tokens)
    assert got == want, f"text {text!r}"


# ----------------------------------------------------------------------------
# The reference states the original rules (known answers)
# ----------------------------------------------------------------------------


def test_reference_basic_rules():
  basic = reference_tokenization.reference_basic_tokenize
  assert basic(" \tHeLLo!how  \n Are yoU?  ", True) == [
      "hello", "!", "how", "are", "you", "?"]
  assert basic(" \tHeLLo!how  \n Are yoU?  ", False) == [
      "HeLLo", "!", "how", "Are", "yoU", "?"]
  assert basic("H\u00e9llo na\u00efve", True) == ["hello", "naive"]
  assert basic("H\u00e9llo", False) == ["H\u00e9llo"]
  assert basic("ah\u535a\u63a8zz", True) == ["ah", "\u535a", "\u63a8", "zz"]
  # str.lower, not case folding: sharp s stays, final sigma, dotted I.
  assert basic("STRA\u00dfE \u039f\u0394\u039f\u03a3 \u0130", True) == [
      "stra\u00dfe", "\u03bf\u03b4\u03bf\u03c2", "i"]
  # Cleanup: NUL, U+FFFD, controls (Cc) and format characters (Cf) dropped;
  # private-use (Co) and unassigned (Cn) stay in the word; Zs and U+2028
  # separate.
  assert basic("a\x00b\ufffdc\x07d\u200be\x85f", True) == ["abcdef"]
  assert basic("a\ue000b \U000f0000 c\U0003fffe", True) == [
      "a\ue000b", "\U000f0000", "c\U0003fffe"]
  assert basic("a\u00a0b\u3000c\u2028d", True) == ["a", "b", "c", "d"]
  # ASCII symbols are punctuation; other symbols are not.
  assert basic("$5+3 \u20ac5 \U0001f600!", True) == [
      "$", "5", "+", "3", "\u20ac5", "\U0001f600", "!"]
  assert basic("[MASK]", False) == ["[", "MASK", "]"]
  assert basic("x[MASK]y", False, special_tokens=("[MASK]",)) == [
      "x", "[MASK]", "y"]


def test_reference_wordpiece_rules():
  vocab = {t: i for i, t in enumerate(
      ["[UNK]", "want", "##want", "##ed", "wa", "un", "runn", "##ing", ","])}
  ref = lambda text: reference_tokenization.reference_tokenize(text, vocab, True)
  assert ref("UNwant\u00e9d,running") == [
      "un", "##want", "##ed", ",", "runn", "##ing"]
  assert ref("unwantedX running") == ["[UNK]", "runn", "##ing"]
  assert ref("") == []
  long_word = "un" + "want" * 49 + "ed"  # 200 characters: still split
  assert ref(long_word)[:2] == ["un", "##want"]
  assert ref(long_word + "ed") == ["[UNK]"]  # 202 characters


# ----------------------------------------------------------------------------
# The original's real output (../shared/reference/golden)
# ----------------------------------------------------------------------------


def _golden(shared_dir, do_lower_case):
  """(texts, tokens, ids) of the golden lines of one casing: what the original
  FullTokenizer(bert-base-uncased vocab, do_lower_case) produced."""
  path = os.path.join(shared_dir, "reference", "golden", "tokenization.jsonl")
  with open(path, encoding="utf-8") as f:
    rows = [json.loads(line) for line in f if line.strip()]
  rows = [r for r in rows if r["do_lower_case"] == do_lower_case]
  assert len(rows) >= 40, f"{path}: expected the 42 lines of each casing"
  return ([r["text"] for r in rows], [r["tokens"] for r in rows],
          [r["ids"] for r in rows])


def _golden_vocab(shared_dir):
  return wordpiece_vocab.load_vocab(os.path.join(shared_dir, "vocab", "bert-base-uncased-vocab.txt"))


def _mismatches(texts, got, want):
  """Lines where got != want, named by their start (the golden lines start
  with their Unicode category or edge case)."""
  return [(ascii(text[:24]), g, w)
          for text, g, w in zip(texts, got, want) if g != w]


@pytest.mark.parametrize("do_lower_case", [True, False])
@pytest.mark.parametrize("keep_special_tokens", [False, True])
def test_tf_tokenizer_matches_original_golden(shared_dir, do_lower_case,
                                              keep_special_tokens):
  # The tf-text path of the data writer and the export. No golden line holds
  # a special token, so keep_special_tokens must change nothing (its
  # placeholders must not collide with characters the text keeps).
  texts, tokens, ids = _golden(shared_dir, do_lower_case)
  vocab = _golden_vocab(shared_dir)
  tokenizer = tk.BatchTokenizer(vocab, do_lower_case, keep_special_tokens)
  values, row_splits = tokenizer.tokenize_to_ids(texts)
  got_ids = [values[a:b].tolist() for a, b in zip(row_splits[:-1], row_splits[1:])]
  bad = _mismatches(texts, got_ids, ids)
  assert not bad, f"{len(bad)} of {len(texts)} lines differ: {bad}"
  assert _ids_to_tokens(vocab, values, row_splits) == tokens


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_reference_matches_original_golden(shared_dir, do_lower_case):
  texts, tokens, _ = _golden(shared_dir, do_lower_case)
  vocab = _golden_vocab(shared_dir)
  got = [reference_tokenization.reference_tokenize(text, vocab.token_to_id, do_lower_case)
         for text in texts]
  bad = _mismatches(texts, got, tokens)
  assert not bad, f"{len(bad)} of {len(texts)} lines differ: {bad}"


# ----------------------------------------------------------------------------
# tf-text path == reference
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_matches_reference_tiny_vocab(tiny_vocab, do_lower_case):
  tokenizer = tk.BatchTokenizer(tiny_vocab, do_lower_case)
  _assert_same_as_reference(tokenizer, TEXTS)
  tokens = tokenizer.tokenize(TEXTS[1])
  assert "[UNK]" in tokens and "##want" in tokens  # the vocab is exercised


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_matches_reference_original_vocab(original_vocab, do_lower_case):
  tokenizer = tk.BatchTokenizer(original_vocab, do_lower_case)
  _assert_same_as_reference(tokenizer, TEXTS)
  assert tokenizer.tokenize("UNwant\u00e9d,running") == (
      ["unwanted", ",", "running"] if do_lower_case
      else ["[UNK]", ",", "running"])


def test_matches_reference_on_kjv(shared_dir, original_vocab):
  with open(os.path.join(shared_dir, "corpora", "kjv.txt"), encoding="utf-8") as f:
    lines = f.read().split("\n")
  lines = lines[::10][:3000]  # spread over the whole book
  tokenizer = tk.BatchTokenizer(original_vocab, do_lower_case=True)
  _assert_same_as_reference(tokenizer, lines)
  values, _ = tokenizer.tokenize_to_ids(lines)
  assert len(values) > 50000


def _sweep_code_points():
  """Every BMP code point and samples of the other planes, among them the
  characters unassigned in Python's Unicode (14) that tensorflow-text's newer
  ICU decomposes or gives a combining class (U+105C9, U+10D69.., U+11383..,
  U+16121.., U+16D68.., U+1E4EC..)."""
  cps = [cp for cp in range(0x10000) if not 0xD800 <= cp <= 0xDFFF]
  for lo, hi in [(0x10000, 0x10800), (0x10D40, 0x10D90), (0x10EC0, 0x10F00),
                 (0x11380, 0x113E0), (0x11F00, 0x11F60), (0x16100, 0x16140),
                 (0x16D40, 0x16D80), (0x1E030, 0x1E090), (0x1E4D0, 0x1E600),
                 (0x1D400, 0x1D800), (0x1F000, 0x1FB00),
                 (0x20000, 0x20100), (0x2A6D0, 0x2A710), (0x2B810, 0x2B830),
                 (0x2CEA0, 0x2CEC0), (0x2F800, 0x2FA30), (0xE0000, 0xE0080),
                 (0xF0000, 0xF0010), (0x10FFF0, 0x110000)]:
    cps.extend(range(lo, hi))
  return cps


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_every_character_matches_reference(do_lower_case):
  # Each character inside a word, around a Greek capital sigma (the
  # final-sigma rule looks at cased and case-ignorable neighbours) and
  # between two spacing marks of combining classes 226 and 216 (NFD would
  # reorder it if it had a class), through the rules before WordPiece. The
  # reference is right here: the golden tests check it against the original.
  texts = [f"A{c}b{c} \u039f\u03a3{c} {c}\u03a3 \u0391\u03a3{c}\u03b2 "
           f"\U0001d16d{c}\U0001d165"
           for c in map(chr, _sweep_code_points())]
  basic = tokenizer_graph.WordSplitter(do_lower_case)
  words = basic.tokenize(tf.constant(texts))
  values = words.flat_values.numpy()
  splits = words.row_splits.numpy()
  mismatches = []
  for i, text in enumerate(texts):
    got = [w.decode("utf-8") for w in values[splits[i]:splits[i + 1]]]
    want = reference_tokenization.reference_basic_tokenize(text, do_lower_case)
    if got != want:
      mismatches.append((ascii(text), got, want))
  assert not mismatches, f"{len(mismatches)} mismatches, e.g. {mismatches[:5]}"


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_ascii_path_matches_the_whole_path(do_lower_case):
  # Lines that are all ASCII skip the passes that change no ASCII character
  # (tokenize_to_ids picks the path per line): each of the 128 characters
  # inside a word, alone, between punctuation and around spaces, with and
  # without special-token placeholders, gives the words of the whole path.
  texts = [f"A{c}b{c} {c}Zz{c}, x{c}[MASK]{c}y {c}" for c in map(chr, range(128))]
  texts += TEXTS[:1] + ["", "  ", "\t\x00\x7f", "UPPER lower MiXeD [SEP][CLS]x"]
  assert all(t.isascii() for t in texts)
  for specials in ((), wordpiece_vocab.SPECIAL_TOKENS):
    basic = tokenizer_graph.WordSplitter(do_lower_case, specials)
    whole = basic.tokenize(tf.constant(texts)).to_list()
    fast = basic.tokenize(tf.constant(texts), ascii_only=True).to_list()
    assert fast == whole
    assert [[w.decode() for w in ws] for ws in whole] == [
        reference_tokenization.reference_basic_tokenize(t, do_lower_case, specials) for t in texts]


def test_ascii_input_never_probes_icu_nor_builds_the_unicode_tables(tiny_vocab):
  # The probes of ICU against Python's Unicode (0.4 s) and the character
  # tables of the whole code space (0.4 s) wait for the first text that is
  # not ASCII.
  unicode_tables.regex_classes.cache_clear()  # pylint: disable=protected-access
  unicode_tables.code_point_flags.cache_clear()  # pylint: disable=protected-access
  tokenizer = tk.BatchTokenizer(tiny_vocab, do_lower_case=True)
  tokenizer.tokenize_to_ids(["Plain ASCII, as most corpora are.", "x"])
  assert tokenizer.tf_module.basic._fixes is None  # pylint: disable=protected-access
  built = unicode_tables.code_point_flags.cache_info().currsize  # pylint: disable=protected-access
  unicode_tables.code_point_flags(128)  # pylint: disable=protected-access
  assert unicode_tables.code_point_flags.cache_info().currsize == built == 1  # only ASCII's  # pylint: disable=protected-access
  _assert_same_as_reference(tokenizer, ["Stra\u00dfe \u039f\u03a3 caf\u00e9", "ascii"])
  assert tokenizer.tf_module.basic._fixes is not None  # pylint: disable=protected-access
  assert unicode_tables.code_point_flags.cache_info().currsize == 2  # pylint: disable=protected-access


def test_mixed_ascii_and_other_lines_keep_their_order(tiny_vocab):
  # ASCII lines and the others go through two functions and are merged back.
  tokenizer = tk.BatchTokenizer(tiny_vocab, do_lower_case=True)
  texts = [TEXTS[i % len(TEXTS)] for i in range(3 * len(TEXTS))]
  assert 0 < sum(t.isascii() for t in texts) < len(texts)
  _assert_same_as_reference(tokenizer, texts)
  _assert_same_as_reference(tokenizer, texts[::-1])
  values, splits = tokenizer.tokenize_to_ids([t.encode("utf-8") for t in texts])
  want, want_splits = tokenizer.tokenize_to_ids(texts)
  assert values.tolist() == want.tolist() and splits.tolist() == want_splits.tolist()


@pytest.mark.parametrize("threads", [2, 3])
def test_large_batches_run_in_chunks_on_threads_with_the_same_ids(tiny_vocab, monkeypatch, threads):
  # Chunks of 3 lines (empty lines at their edges, ASCII and other lines
  # mixed) are tokenized on threads and put back together in order.
  tokenizer = tk.BatchTokenizer(tiny_vocab, do_lower_case=True)
  texts = [TEXTS[i % len(TEXTS)] if i % 4 else "" for i in range(40)]
  want, want_splits = tokenizer.tokenize_to_ids(texts)
  used = []
  real_run_chunk = tk._run_chunk  # pylint: disable=protected-access
  monkeypatch.setattr(tk, "_CHUNK_LINES", 3)
  monkeypatch.setattr(tk, "_tokenizer_threads", lambda: threads)
  monkeypatch.setattr(tk, "_run_chunk", lambda fn, t: used.append(len(t)) or real_run_chunk(fn, t))
  values, splits = tokenizer.tokenize_to_ids(texts)
  assert values.tolist() == want.tolist() and splits.tolist() == want_splits.tolist()
  assert splits.dtype == want_splits.dtype and values.dtype == want.dtype
  assert len(used) == 2 * threads and sum(used) == len(texts)  # both paths, `threads` chunks each
  _assert_same_as_reference(tokenizer, texts)


def test_invalid_utf8_is_dropped_like_the_original(tiny_vocab):
  tokenizer = tk.BatchTokenizer(tiny_vocab, do_lower_case=True)
  ids = tokenizer.tf_tokenize(tf.constant([b"x\xffx\xe4 y", b"xx y"]))
  assert ids[0].numpy().tolist() == ids[1].numpy().tolist()


def test_long_words_count_characters_not_bytes():
  # 2-byte and 4-byte characters: tf-text limits bytes, the original chars.
  vocab = wordpiece_vocab.Vocab(SPECIALS + ["x", "##x", "\u0436", "##\u0436", "\U0001f600",
                               "##\U0001f600"])
  tokenizer = tk.BatchTokenizer(vocab, do_lower_case=False)
  for ch in ["x", "\u0436", "\U0001f600"]:
    assert len(tokenizer.tokenize(ch * 200)) == 200
    assert tokenizer.tokenize(ch * 201) == ["[UNK]"]
  _assert_same_as_reference(tokenizer, ["\u0436" * 199 + " x", "\U0001f600" * 201])


def test_unsplittable_word_is_one_unk(tiny_vocab):
  vocab = wordpiece_vocab.Vocab(SPECIALS + ["ab", "##c", "a"])
  tokenizer = tk.BatchTokenizer(vocab, do_lower_case=True)
  assert tokenizer.tokenize("abc ABC abd ab") == ["ab", "##c", "ab", "##c",
                                                  "[UNK]", "ab"]


# ----------------------------------------------------------------------------
# Special tokens written in the text
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_keep_special_tokens(tiny_vocab, do_lower_case):
  text = "the [MASK] fox, x[CLS]y [SEP][PAD] [mask] [UNK]"
  plain = tk.BatchTokenizer(tiny_vocab, do_lower_case)
  assert "[MASK]" not in plain.tokenize(text)
  assert plain.tokenize("[MASK]")[0] == "["  # the original's behaviour
  keep = tk.BatchTokenizer(tiny_vocab, do_lower_case, keep_special_tokens=True)
  tokens = keep.tokenize(text)
  assert tokens[1] == "[MASK]"
  assert tokens.count("[MASK]") == 1  # "[mask]" is not special: case-sensitive
  for special in ("[CLS]", "[SEP]", "[PAD]", "[UNK]"):
    assert special in tokens
  values, _ = keep.tokenize_to_ids([text])
  assert values[1] == tiny_vocab.mask_id
  _assert_same_as_reference(keep, TEXTS + [text], keep_special_tokens=True)


def test_keep_special_tokens_absent_from_vocab():
  vocab = wordpiece_vocab.Vocab(["[UNK]", "[CLS]", "[SEP]", "[MASK]", "[", "]", "pad",
                    "##d", "p", "##a"])  # no [PAD]
  keep = tk.BatchTokenizer(vocab, do_lower_case=True, keep_special_tokens=True)
  assert keep.tokenize("[PAD] [MASK]") == ["[", "pad", "]", "[MASK]"]
  _assert_same_as_reference(keep, ["[PAD] [MASK]x"], keep_special_tokens=True)


# ----------------------------------------------------------------------------
# Batches, graphs and SavedModel
# ----------------------------------------------------------------------------


def test_tokenize_to_ids_batches(tiny_vocab):
  tokenizer = tk.BatchTokenizer(tiny_vocab, do_lower_case=True)
  values, row_splits = tokenizer.tokenize_to_ids([])
  assert values.shape == (0,) and row_splits.tolist() == [0]
  values, row_splits = tokenizer.tokenize_to_ids(["", "the quick", " ", "x"])
  assert row_splits.tolist() == [0, 0, 2, 2, 3]
  assert [tiny_vocab.tokens[i] for i in values] == ["the", "quick", "x"]


def test_tf_tokenize_in_tf_function(tiny_vocab):
  tokenizer = tk.BatchTokenizer(tiny_vocab, do_lower_case=True)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def padded(texts):
    return tokenizer.tf_tokenize(texts).to_tensor(default_value=-1)

  out = padded(tf.constant(["the quick", "hello"])).numpy()
  want0 = [tiny_vocab.token_to_id[t] for t in ("the", "quick")]
  assert out.tolist() == [want0, [tiny_vocab.token_to_id["hello"], -1]]


def test_saved_model_round_trip(tmp_path, tiny_vocab):
  vocab_path = write_lines(tmp_path / "vocab.txt", tiny_vocab.tokens)
  vocab = wordpiece_vocab.load_vocab(vocab_path)
  tokenizer = tk.BatchTokenizer(vocab, do_lower_case=True, keep_special_tokens=True)

  class Exported(tf.Module):

    def __init__(self):
      super().__init__()
      self.tokenizer = tokenizer.make_tf_module(vocab_path)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def token_ids(self, texts):
      ids = self.tokenizer.tokenize_eager(texts)
      return {"ids": ids.to_tensor(), "lengths": ids.row_lengths()}

  texts = ["The [MASK] fox.", TEXTS[2], TEXTS[4], TEXTS[-1]]
  export_dir = str(tmp_path / "saved")
  tf.saved_model.save(Exported(), export_dir)
  os.remove(vocab_path)  # the SavedModel must not need the original file
  loaded = tf.saved_model.load(export_dir)
  got = loaded.token_ids(tf.constant(texts))
  values, row_splits = tokenizer.tokenize_to_ids(texts)
  assert got["lengths"].numpy().tolist() == np.diff(row_splits).tolist()
  want = tf.RaggedTensor.from_row_splits(values, row_splits).to_tensor()
  assert got["ids"].numpy().tolist() == want.numpy().tolist()
  ragged = loaded.tokenizer.tokenize(tf.constant(texts))
  assert ragged.flat_values.numpy().tolist() == values.tolist()
  assert _ids_to_tokens(vocab, values, row_splits)[-1] == reference_tokenization.reference_tokenize(
      texts[-1], vocab.token_to_id, True, keep_special_tokens=True)
  asset = loaded.tokenizer.vocab_file.asset_path.numpy().decode()
  assert asset.startswith(export_dir) and os.path.exists(asset)
  with open(asset, encoding="utf-8") as f:
    assert f.read().split() == vocab.tokens
