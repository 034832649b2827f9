"""Fixtures shared by the data tests."""

import os

import pytest

from bert_tf.data.tokenizers import wordpiece_vocab

from helpers import doc_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
  """the writer tests' corpus (helpers/doc_corpus.py) and vocab (no run of the writer)."""
  root = tmp_path_factory.mktemp("corpus")
  vocab = doc_corpus.write_vocab(root / "vocab.txt")
  path = root / "corpus.txt"
  return {"corpus": str(path), "vocab": vocab, "docs": doc_corpus.write_corpus(path)}


@pytest.fixture(scope="module")
def original_vocab():
  """The original BERT-Base uncased vocab of ../shared (skips without it)."""
  path = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                       "shared", "vocab",
                                       "bert-base-uncased-vocab.txt"))
  if not os.path.exists(path):
    pytest.skip(f"needs ../shared (original vocab), not present at {path}")
  return wordpiece_vocab.load_vocab(path)
