"""Tests of bert_tf.split_corpus: a held-out split by whole documents."""

import collections
import os
import subprocess
import sys

import pytest

from bert_tf import split_corpus

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _corpus(n_docs):
  return "\n\n".join(f"doc {i} line one.\ndoc {i} line two." for i in range(n_docs)) + "\n"


def test_every_nth_document_is_held_out_whole():
  train, held = split_corpus.split_documents("\n\n\n" + _corpus(25).replace("\n", "\r\n"), 10)
  assert [d.split()[1] for d in held] == ["9", "19"]
  assert len(train) == 23 and all(d.count("\n") == 1 for d in train + held)
  assert not {d.split()[1] for d in train} & {"9", "19"}


def test_files_and_errors(tmp_path):
  corpus = tmp_path / "corpus.txt"
  corpus.write_text(_corpus(12))
  out = tmp_path / "split"
  counts = split_corpus.split_corpus(str(corpus), str(out / "train.txt"),
                                     str(out / "heldout.txt"), every=5)
  assert counts == (10, 2)
  held = (out / "heldout.txt").read_text()
  assert held == "doc 4 line one.\ndoc 4 line two.\n\ndoc 9 line one.\ndoc 9 line two.\n"
  assert (out / "train.txt").read_text().count("\n\n") == 9
  with pytest.raises(ValueError, match=r"12 document\(s\), fewer than --heldout_every=20"):
    split_corpus.split_corpus(str(corpus), str(tmp_path / "x" / "a"), str(tmp_path / "x" / "b"),
                              every=20)
  with pytest.raises(ValueError, match="--heldout_every=1: must be at least 2"):
    split_corpus.split_corpus(str(corpus), str(tmp_path / "x" / "a"), str(tmp_path / "x" / "b"),
                              every=1)
  assert not os.path.exists(tmp_path / "x")


def test_cli(tmp_path):
  corpus = tmp_path / "corpus.txt"
  corpus.write_text(_corpus(30))
  child = subprocess.run(
      [sys.executable, "-m", "bert_tf.split_corpus", f"--input_file={corpus}",
       f"--train_file={tmp_path / 'train.txt'}", f"--heldout_file={tmp_path / 'heldout.txt'}"],
      cwd=REPO, capture_output=True, text=True, timeout=300)
  assert child.returncode == 0, child.stderr
  assert "27 documents -> " in child.stderr and "3 held out" in child.stderr
  assert (tmp_path / "heldout.txt").read_text().count("\n\n") == 2


def test_a_hash_split_is_stable_and_80_10_10():
  from bert_tf.data.text import split as split_lib  # pylint: disable=g-import-not-at-top
  counts = collections.Counter(split_lib.split_by_hash(f"names\t{i}") for i in range(20000))
  assert abs(counts["train"] / 20000 - 0.8) < 0.01
  assert abs(counts["dev"] / 20000 - 0.1) < 0.01 and abs(counts["test"] / 20000 - 0.1) < 0.01
  # Pinned: the names and name_cloze files built before this function
  # existed split their lines this way (checked byte for byte on topics.txt).
  assert [split_lib.split_by_hash(f"names\t{i}") for i in range(12)] == [
      "train", "train", "dev", "train", "train", "test", "train", "train", "train", "train",
      "train", "dev"]
