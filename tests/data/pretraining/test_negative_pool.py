"""Tests of bert_tf.data.pretraining.negative_pool: the documents the scan samples from
the whole input, for blocks of a single chunk (test_writer.py: the random
Bs of a run)."""

import collections
import random

import numpy as np

from bert_tf.data.pretraining import corpus_scan
from bert_tf.data.pretraining import negative_pool


def test_negative_pool_is_a_uniform_sample_of_the_whole_input(tmp_path):
  # 300 documents of 1 to 40 lines in 3 files, a pool of 64 of them, each
  # a window in which a uniform start is uniform over the document's lines.
  root = tmp_path / "many"
  root.mkdir()
  rng = random.Random(9)
  num_docs, per_file = 300, 100
  lengths = [rng.randint(1, 40) for _ in range(num_docs)]
  for f in range(3):
    docs = ["\n".join(f"d{d} l{j} " + "x " * rng.randint(0, 6) for j in range(lengths[d]))
            for d in range(f * per_file, (f + 1) * per_file)]
    (root / f"f{f}.txt").write_text("\n\n".join(docs) + "\n")
  files = sorted(str(p) for p in root.glob("f*.txt"))
  first_doc, start_line = collections.Counter(), collections.Counter()
  for seed in range(60):
    sampler = negative_pool.NegativeSampler(seed, tail_words=20, size=64, window_words=30)
    chunks = corpus_scan.scan_chunks(files, 2000, sampler)
    assert sampler.documents_seen == num_docs == sum(c.documents for c in chunks)
    assert len(sampler.entries) == 64
    docs = [int(lines[0].split()[0][1:]) for _, lines, _, _ in sampler.entries]
    assert len(set(docs)) == 64  # without replacement
    for (chunk_index, lines, starts, index), d in zip(sampler.entries, docs):
      assert chunks[chunk_index].path == files[d // per_file]
      assert index == d  # the input-wide index of the document
      assert all(int(line.split()[0][1:]) == d for line in lines)
      js = [int(line.split()[1][1:]) for line in lines]
      assert js == list(range(js[0], js[0] + len(js)))  # a run of the document
      assert 1 <= starts <= len(lines)
      # B may start in the window and run on for 20 words or to the end.
      tail = lines[starts:]
      assert js[-1] == lengths[d] - 1 or sum(len(t.split()) for t in tail) >= 20
      first_doc[d] += 1
      for j in js[:starts]:
        start_line[d, j] += 1 / starts
  # Documents: uniform (64/300 of them each seed); start lines: uniform in
  # each document.
  expected = 60 * 64 / num_docs
  assert abs(np.mean(list(first_doc.values())) - expected) < 1
  assert max(first_doc.values()) < 3 * expected and len(first_doc) > 0.95 * num_docs
  # A line is a start with probability 1/length of its document: compare the
  # first, middle and last thirds of the long documents with that.
  thirds = np.zeros(3)
  expected_thirds = np.zeros(3)
  for d in range(num_docs):
    if lengths[d] >= 30:
      for j in range(lengths[d]):
        thirds[3 * j // lengths[d]] += start_line[d, j]
        expected_thirds[3 * j // lengths[d]] += first_doc[d] / lengths[d]
  assert expected_thirds.min() > 150
  np.testing.assert_allclose(thirds / expected_thirds, 1, atol=0.2)
