"""Random documents of token ids as the writer's blocks and negative pools hold them."""

import numpy as np

from bert_tf.data.pretraining import negative_pool
from bert_tf.data.pretraining import token_cache


VOCAB_SIZE = 300


def flat_block(index, documents):
  """TokenizedBlock of documents (lists of lists of ids)."""
  sentences = [s for d in documents for s in d]
  return token_cache.TokenizedBlock(
      index=index, values=np.array([t for s in sentences for t in s], np.int32),
      sentence_splits=np.cumsum([0] + [len(s) for s in sentences]).astype(np.int64),
      document_splits=np.cumsum([0] + [len(d) for d in documents]).astype(np.int64))


def random_documents(rng, num_docs):
  return [[[rng.randrange(5, VOCAB_SIZE) for _ in range(rng.randint(1, 30))]
           for _ in range(rng.randint(1, 12))] for _ in range(num_docs)]


def random_pool(rng, num_blocks):
  """A NegativePool of entries of random blocks, and its entries as lists."""
  entries = [(rng.randrange(num_blocks), random_documents(rng, 1)[0]) for _ in range(12)]
  values, splits, entry_splits, starts = [], [0], [0], []
  for _, sentences in entries:
    for sentence in sentences:
      values += sentence
      splits.append(len(values))
    entry_splits.append(len(splits) - 1)
    starts.append(rng.randint(1, len(sentences)))
  pool = negative_pool.NegativePool(
      values=np.array(values, np.int32), sentence_splits=np.array(splits, np.int64),
      entry_splits=np.array(entry_splits, np.int64), entry_starts=np.array(starts, np.int64),
      entry_block=np.array([b for b, _ in entries], np.int64),
      block_documents=np.full(num_blocks, 5, np.int64), num_documents=5 * num_blocks + 3)
  return pool, entries
