"""Tests of bert_tf.data.pretraining.token_cache: a block's tokens as flat arrays, their
bytes, and the scratch cache the later passes read them from."""

import os

import numpy as np
import pytest

from bert_tf.data.pretraining import corpus_scan
from bert_tf.data.pretraining import token_cache
from bert_tf.data.tokenizers import tokenization
from bert_tf.data.tokenizers import wordpiece_vocab


@pytest.mark.parametrize("top_id", [65535, 65536, 250_000])
def test_tokenized_block_bytes_keep_every_id(top_id):
  values = np.array([0, 5, top_id - 1, top_id], np.int32)
  block = token_cache.TokenizedBlock(3, values, np.array([0, 2, 4]), np.array([0, 2]), 1, 99,
                                np.array([0, 1]), np.array([7]))
  back = token_cache.TokenizedBlock.from_bytes(block.to_bytes())
  np.testing.assert_array_equal(back.values, values)
  assert back.values.dtype == np.int32 and (back.index, back.undecodable_bytes) == (3, 1)


def test_token_cache_gives_back_what_was_tokenized_and_a_new_run_reuses_it(corpus, tmp_path):
  chunks = corpus_scan.scan_chunks([corpus["corpus"]], 300)
  blocks = corpus_scan.group_blocks(chunks, 1500, random_seed=7)
  tokenizer = tokenization.BatchTokenizer(wordpiece_vocab.load_vocab(corpus["vocab"]), True)
  calls = []

  def tokenize(block):
    calls.append(block.index)
    return token_cache.tokenize_block(block, tokenizer)

  folder = str(tmp_path / ".tokens-x")
  cache = token_cache.TokenCache(folder, use_files=True)
  first = [cache.get(b, tokenize) for b in blocks[:3]]
  again = token_cache.TokenCache(folder, use_files=True)  # a rerun after a kill
  for block, expected in zip(blocks[:3], first):
    got = again.get(block, tokenize)
    for name in ("values", "sentence_splits", "document_splits", "chunk_splits",
                 "document_ids"):
      np.testing.assert_array_equal(getattr(got, name), getattr(expected, name))
    assert got.values.dtype == np.int32  # stored in two bytes a token, read back as ids
    assert (got.index, got.nbytes) == (expected.index, expected.nbytes)
  assert calls == [0, 1, 2]
  again.remove()
  assert not os.path.exists(folder)
