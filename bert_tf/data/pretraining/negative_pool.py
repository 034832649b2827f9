"""The negative pool: documents sampled from the whole input during the
scan, where a block of a single chunk takes its random next-sentence Bs
from (see block_sentences.BlockSentences)."""

import dataclasses

from bert_tf.data.pretraining import instances
from bert_tf.data.pretraining import seeds

# The negative pool: documents sampled from the whole input, and the words of
# each that are kept (those of a shorter document: all). Memory: about
# 2048 x (512 + max_seq_length) words, a few MB, whatever the corpus size.
NEGATIVE_POOL_DOCUMENTS = 2048
NEGATIVE_POOL_WORDS = 512


class NegativeSampler:
  """Draws the negative pool while the scan shows it every document.

  A reservoir (Algorithm R, numpy draws seeded by `random_seed` alone): after
  the scan, a uniform sample of min(size, documents) documents of the whole
  input. A document is kept as a *window*: its lines cut greedily into runs
  of at least `window_words` words, the run holding a uniform random line
  taken, so that a start drawn uniformly in the window is uniform over the
  document's lines, as the original's is; then the lines after it until
  `tail_words` more words, for B to run on (B never needs more tokens than
  max_seq_length - 3, and a word is at least one token).
  """

  def __init__(self, random_seed, tail_words, size=NEGATIVE_POOL_DOCUMENTS,
               window_words=NEGATIVE_POOL_WORDS):
    import numpy as np
    self._gen = np.random.default_rng(seeds.derived_seed(random_seed, "negative_pool"))
    self._size = size
    self._window_words = window_words
    self._tail_words = tail_words
    self.documents_seen = 0
    self.entries = []  # (chunk index, [line str], number of start lines, document index)

  def add(self, chunk_index, documents):
    """documents: list of bytes, the text of each document of the block."""
    import numpy as np
    n0 = self.documents_seen
    self.documents_seen += len(documents)
    # Document n (0-based) takes slot j ~ U[0, n] if j < size.
    slots = self._gen.integers(0, np.arange(n0 + 1, self.documents_seen + 1))
    for i in np.flatnonzero(slots < self._size).tolist():
      entry = (chunk_index,) + self._window(documents[i]) + (n0 + i,)
      if n0 + i < self._size:
        self.entries.append(entry)
      else:
        self.entries[slots[i]] = entry

  def _window(self, text):
    lines = [line.strip() for line in text.decode("utf-8", errors="replace").split("\n")]
    lines = [line for line in lines if line]
    if not lines:  # only Unicode spaces: no sentence (dropped when tokenized)
      return [], 0
    words = [len(line.split()) for line in lines]
    pick = int(self._gen.integers(0, len(lines)))
    first = 0
    count = 0
    for i, w in enumerate(words):  # the greedy run of >= window_words words holding `pick`
      count += w
      if count >= self._window_words or i == len(lines) - 1:
        if i >= pick:
          end = i + 1
          break
        first, count = i + 1, 0
    tail = end
    count = 0
    while tail < len(lines) and count < self._tail_words:
      count += words[tail]
      tail += 1
    return lines[first:tail], end - first


@dataclasses.dataclass
class NegativePool:
  """The negative pool, tokenized, as flat arrays (cheap to send to workers).

  values: int32 [tokens]; sentence_splits: int64 [sentences + 1] into values;
  entry_splits: int64 [entries + 1] into sentences; entry_starts: int64
  [entries], how many of an entry's first sentences B may start at;
  entry_block: int64 [entries], the block of the entry's document;
  entry_document: int64 [entries], the input-wide index of the entry's
  document; block_documents: int64 [blocks], documents of each block (the
  scan's count); num_documents: documents of the whole input.
  """
  values: "np.ndarray"
  sentence_splits: "np.ndarray"
  entry_splits: "np.ndarray"
  entry_starts: "np.ndarray"
  entry_block: "np.ndarray"
  block_documents: "np.ndarray"
  num_documents: int
  entry_document: "np.ndarray" = None

  def for_block(self, block_index, sentence_offset):
    """instances.Negatives of a block: the pool's documents of other blocks,
    each a range of sentence ids, the pool's sentence k having id
    sentence_offset + k (see block_sentences.BlockSentences)."""
    import numpy as np
    outside = self.num_documents - int(self.block_documents[block_index])
    rows = np.flatnonzero(self.entry_block != block_index)
    if not len(rows) or outside <= 0:
      return instances.NO_NEGATIVES
    return instances.Negatives(_PoolEntries(self, rows, sentence_offset), outside)


class _PoolEntries:
  """Sequence of (range of sentence ids, starts) of some pool entries."""

  def __init__(self, pool, rows, sentence_offset):
    self._rows = rows.tolist()
    self._splits = (pool.entry_splits + sentence_offset).tolist()
    self._starts = pool.entry_starts.tolist()

  def __len__(self):
    return len(self._rows)

  def __getitem__(self, i):
    row = self._rows[i]
    return range(self._splits[row], self._splits[row + 1]), self._starts[row]


def tokenize_negative_pool(sampler, blocks, tokenizer):
  """NegativePool of what `sampler` drew, tokenized in one batch; drops
  token-less lines, and entries left with no line B may start at."""
  import numpy as np
  block_of_chunk = {c.index: b.index for b in blocks for c in b.chunks}
  lines = [line for entry in sampler.entries for line in entry[1]]
  values, splits = tokenizer.tokenize_to_ids(lines)
  lengths = np.diff(splits)
  use = np.zeros(len(lines), bool)
  entry_splits, entry_starts, entry_block, entry_document = [0], [], [], []
  line = 0
  for chunk_index, entry_lines, starts, document in sampler.entries:
    kept = lengths[line:line + len(entry_lines)] > 0
    kept_starts = int(kept[:starts].sum())
    if kept_starts:
      use[line:line + len(entry_lines)] = kept
      entry_splits.append(entry_splits[-1] + int(kept.sum()))
      entry_starts.append(kept_starts)
      entry_block.append(block_of_chunk[chunk_index])
      entry_document.append(document)
    line += len(entry_lines)
  return NegativePool(
      values=values[np.repeat(use, lengths)].astype(np.int32),
      sentence_splits=np.concatenate([[0], np.cumsum(lengths[use])]).astype(np.int64),
      entry_splits=np.array(entry_splits, np.int64),
      entry_starts=np.array(entry_starts, np.int64),
      entry_block=np.array(entry_block, np.int64),
      block_documents=np.array([b.documents for b in blocks], np.int64),
      num_documents=sampler.documents_seen,
      entry_document=np.array(entry_document, np.int64))
