"""Tests of bert_tf.data.pretraining.corpus_scan: the input cut into chunks of whole
documents, read back as lines, and dealt into blocks drawn from all over it
(test_writer.py: how the records come out of them)."""

import numpy as np

from bert_tf.data.pretraining import corpus_scan


def test_chunks_are_contiguous_runs_of_whole_documents(corpus):
  path = corpus["corpus"]
  size = len(open(path, "rb").read())
  chunks = corpus_scan.scan_chunks([path], 300)
  assert len(chunks) >= 20
  assert [c.index for c in chunks] == list(range(len(chunks)))
  assert chunks[0].start == 0 and chunks[-1].end == size
  assert all(a.end == b.start for a, b in zip(chunks, chunks[1:]))
  assert all(c.end - c.start >= 300 for c in chunks[:-1])
  documents = []
  for chunk in chunks:
    docs, bad = corpus_scan.read_chunk_documents(chunk)
    assert bad == 0 and docs and len(docs) == chunk.documents
    assert chunk.first_document == len(documents)
    documents.extend(docs)
  assert documents == corpus["docs"]


def test_blocks_are_seeded_uniform_draws_of_the_chunks(corpus):
  chunks = corpus_scan.scan_chunks([corpus["corpus"]], 300)
  blocks = corpus_scan.group_blocks(chunks, 1500, random_seed=7)
  assert len(blocks) >= 4
  # Every chunk in exactly one block; blocks of at least block_bytes but the
  # last, and no more than that and half of it.
  assert sorted(c.index for b in blocks for c in b.chunks) == list(range(len(chunks)))
  assert all(b.nbytes >= 1500 for b in blocks)
  assert blocks[-1].nbytes < 1500 * 1.5 + 1000
  # Not contiguous: a block's chunks come from all over the input (a run of
  # n chunks would span n - 1; two uniform draws of 35 span ~12 on average).
  spread = [max(c.index for c in b.chunks) - min(c.index for c in b.chunks) for b in blocks]
  assert np.mean(spread) > 3 * np.mean([len(b.chunks) - 1 for b in blocks])
  # Seeded: the same for a seed, other for another; a small input is one
  # block in input order.
  assert corpus_scan.group_blocks(chunks, 1500, 7) == blocks
  assert corpus_scan.group_blocks(chunks, 1500, 8) != blocks
  whole = corpus_scan.group_blocks(chunks, 10 ** 9, 7)
  assert len(whole) == 1 and [c.index for c in whole[0].chunks] == list(range(len(chunks)))
