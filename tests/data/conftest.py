"""Fixtures shared by the data tests."""

import os

import pytest

from bert_tf.data import wordpiece_vocab

import test_writer as tw


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
  """test_writer's corpus and vocab (no run of the writer)."""
  root = tmp_path_factory.mktemp("corpus")
  vocab = tw.write_vocab(root / "vocab.txt")
  path = root / "corpus.txt"
  return {"corpus": str(path), "vocab": vocab, "docs": tw.write_corpus(path)}


@pytest.fixture(scope="module")
def original_vocab():
  """The original BERT-Base uncased vocab of ../shared (skips without it)."""
  path = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                       "shared", "vocab",
                                       "bert-base-uncased-vocab.txt"))
  if not os.path.exists(path):
    pytest.skip(f"needs ../shared (original vocab), not present at {path}")
  return wordpiece_vocab.load_vocab(path)
