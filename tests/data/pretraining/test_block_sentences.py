"""Tests of bert_tf.data.pretraining.block_sentences: a block's sentences laid end to end
(with the negative pool's when it uses it), and where each document's random
B is drawn from (test_passes.py: the records made from them)."""

import dataclasses
import random

import numpy as np

from bert_tf.data.pretraining import block_sentences

from helpers.token_blocks import flat_block, random_documents, random_pool


def chunked_block(index, chunks):
  """TokenizedBlock of chunks (lists of documents), each document's input-wide
  index its position in the block."""
  documents = [d for chunk in chunks for d in chunk]
  return dataclasses.replace(
      flat_block(index, documents),
      chunk_splits=np.cumsum([0] + [len(c) for c in chunks]).astype(np.int64),
      document_ids=np.arange(len(documents), dtype=np.int64))


def test_sentences_are_the_blocks_laid_end_to_end():
  documents = random_documents(random.Random(1), 5)
  sentences = block_sentences.BlockSentences(flat_block(0, documents))
  flat = [s for d in documents for s in d]
  assert [r.stop - r.start for r in sentences.documents] == [len(d) for d in documents]
  assert [sentences.values[a:b].tolist() for a, b in zip(sentences.starts, sentences.starts[1:])
          ] == flat
  assert sentences.document_lists() == documents
  # The whole input: B from any other document of the block, as the original.
  window, a_index = sentences.b_window(3)
  assert window == sentences.documents and a_index == 3


def test_a_random_b_comes_from_the_other_chunks_of_the_block():
  rng = random.Random(2)
  chunks = [random_documents(rng, n) for n in (3, 2, 4)]
  sentences = block_sentences.BlockSentences(chunked_block(0, chunks), whole_input=False)
  chunk_of = [c for c, chunk in enumerate(chunks) for _ in chunk]
  for d in range(len(chunk_of)):
    window, a_index = sentences.b_window(d)
    assert window[a_index] == sentences.documents[d] and a_index == len(window) - 1
    others = [sentences.documents.index(w) for w in window[:-1]]
    assert sorted(others) == [e for e in range(len(chunk_of)) if chunk_of[e] != chunk_of[d]]
  # Blocks of other chunks need no pool: none is laid in.
  assert not len(sentences.negatives.segments)
  # The input-wide document of a B starting at a sentence's first token.
  starts = np.array(sentences.starts[:-1], np.int64)
  doc_of_sentence = np.repeat(np.arange(len(chunk_of)),
                              [r.stop - r.start for r in sentences.documents])
  np.testing.assert_array_equal(sentences.source_documents(starts), doc_of_sentence)


def test_a_block_of_one_chunk_draws_from_the_pool_of_other_blocks():
  rng = random.Random(3)
  pool, entries = random_pool(rng, num_blocks=3)
  documents = random_documents(rng, 4)
  sentences = block_sentences.BlockSentences(chunked_block(1, [documents]), pool)
  assert sentences.windows is None
  others = [sentences_ for b, sentences_ in entries if b != 1]
  assert len(sentences.negatives.segments) == len(others)
  block_tokens = sum(len(s) for d in documents for s in d)
  assert sentences.values[:block_tokens].tolist() == [t for d in documents for s in d for t in s]
  for (ids, _), entry in zip(sentences.negatives.segments, others):
    assert [sentences.values[sentences.starts[k]:sentences.starts[k + 1]].tolist()
            for k in ids] == entry
