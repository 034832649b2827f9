"""Tests of bert_tf.data.tokenizers.wordpiece_vocab: reading a vocab file, its special
token ids and subword flags, and the errors that name the file."""

import hashlib

import pytest

from bert_tf.data.tokenizers import wordpiece_vocab

from helpers.vocab import SPECIALS, write_lines


def test_load_vocab(tmp_path):
  path = tmp_path / "vocab.txt"
  data = "[PAD]\r\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n  the \nrun\n##ning\n".encode()
  path.write_bytes(data)
  vocab = wordpiece_vocab.load_vocab(str(path))
  assert vocab.tokens == SPECIALS + ["the", "run", "##ning"]
  assert vocab.size == len(vocab) == 8
  assert (vocab.pad_id, vocab.unk_id, vocab.cls_id, vocab.sep_id,
          vocab.mask_id) == (0, 1, 2, 3, 4)
  assert vocab.token_to_id["##ning"] == 7
  assert vocab.is_subword.tolist() == [False] * 7 + [True]
  assert vocab.sha256 == hashlib.sha256(data).hexdigest()
  assert vocab.path == str(path)


def test_load_original_vocab(original_vocab):
  assert original_vocab.size == 30522
  assert (original_vocab.pad_id, original_vocab.unk_id, original_vocab.cls_id,
          original_vocab.sep_id, original_vocab.mask_id) == (0, 100, 101, 102, 103)


def test_load_vocab_errors(tmp_path):
  with pytest.raises(FileNotFoundError, match="nope.txt"):
    wordpiece_vocab.load_vocab(str(tmp_path / "nope.txt"))
  bad = write_lines(tmp_path / "bad.txt", ["[PAD]", "[UNK]", "[SEP]", "a"])
  with pytest.raises(ValueError, match=r"bad\.txt.*\[CLS\] \[MASK\]"):
    wordpiece_vocab.load_vocab(bad)
  dup = write_lines(tmp_path / "dup.txt", SPECIALS + ["a", "b", "a"])
  with pytest.raises(ValueError, match=r"dup\.txt.*'a'.*lines 6 and 8"):
    wordpiece_vocab.load_vocab(dup)
  empty = write_lines(tmp_path / "empty.txt", SPECIALS + ["", "a"])
  with pytest.raises(ValueError, match=r"empty\.txt: line 6 is empty"):
    wordpiece_vocab.load_vocab(empty)
  pad = write_lines(tmp_path / "pad.txt", ["[UNK]", "[PAD]"] + SPECIALS[2:])
  with pytest.raises(ValueError, match=r"pad\.txt: \[PAD\] must be id 0"):
    wordpiece_vocab.load_vocab(pad)
  latin1 = tmp_path / "latin1.txt"
  latin1.write_bytes("\n".join(SPECIALS + ["caf\u00e9"]).encode("latin-1"))
  with pytest.raises(ValueError, match="latin1.txt: not UTF-8"):
    wordpiece_vocab.load_vocab(str(latin1))
