"""Raw text -> masked, NSP-paired TFRecords in the original BERT schema.

The original `create_pretraining_data.py` holds the whole corpus and every
instance in RAM and uses one core. Here memory is bounded by a few blocks
whatever the corpus size, and the records are still a global mix of it:

- A cheap scan cuts the input into *chunks*: runs of whole documents of
  about block_bytes / CHUNKS_PER_BLOCK bytes. The chunks are dealt into
  *blocks* of about `block_bytes` in a seeded random order (group_blocks),
  so a block is a uniform sample of the whole input: of every file and
  every region of each. A block is the unit of tokenizing.
- Within a block the original algorithm runs unchanged: tokenize every
  line, drop empty documents, and for each of `dupe_factor` passes shuffle
  documents, cut each into pairs and mask each pair. A pass handles all its
  instances at once: pairs are token ranges of the block's flat token array
  (instances.pair_spans_from_document), laid out, masked and serialized as
  padded arrays with numpy (masking.choose_masks_padded,
  schema.ExampleEncoder.encode_batch); the records are those of the
  per-instance functions (tests/data/test_passes.py).
- Random next-sentence Bs: the original draws B's document uniformly from
  all documents of the input. A block that is the whole input does exactly
  that. Otherwise B's document is uniform over the block's documents of
  *other chunks* than A's (BlockSentences): blocks are uniform samples, so
  over the run every document of the input serves as B as often as in the
  original, and none comes from A's neighbourhood in the input. Blocks of a
  single chunk (documents longer than a chunk) draw from the *negative
  pool*, a seeded uniform sample of up to NEGATIVE_POOL_DOCUMENTS documents
  of the whole input drawn during the scan.
- Output order: a *unit* is one pass over one block, its instances
  shuffled. Units are written pass-major (stream_units): every block's pass
  0, then every block's pass 1 in another random order, and so on. So any
  stretch of the output is a uniform sample of the input, and a document's
  dupe_factor copies lie a pass apart. The later passes read the blocks'
  tokens from a scratch cache beside the output (TokenCache), removed at
  the end.
- Each unit gets its own seeded `random.Random`, derived from `random_seed`,
  the block and the pass, so what it produces does not depend on which
  process ran it: the output is byte-identical for any number of workers
  and for either driver (this local one with processes, or
  `bert_tf.data.beam`).

Output: with `output_dir`, `num_output_shards` files, shard k holding a
contiguous stretch of the units, each file written under a temporary name
and renamed when complete together with a small stats file; a run started
again after a kill reuses the complete shards. With `output_files` (the
original flag), instances are dealt round-robin to the files, which are
renamed into place at the end.
"""

import codecs
import collections
import contextlib
import dataclasses
import hashlib
import json
import multiprocessing
import os
import random
import re
import time

from absl import logging

from bert_tf.data import files as files_lib
from bert_tf.data import instances
from bert_tf.data import masking
from bert_tf.data import schema

_BLANK_LINE = re.compile(rb"\n[ \t\r\f\v]*\n")
_NON_SPACE = re.compile(rb"\S")
_READ_CHUNK = 8 << 20
HISTOGRAM_BUCKET = 16  # tokens per bucket of the length histogram
# The negative pool: documents sampled from the whole input, and the words of
# each that are kept (those of a shorter document: all). Memory: about
# 2048 x (512 + max_seq_length) words, a few MB, whatever the corpus size.
NEGATIVE_POOL_DOCUMENTS = 2048
NEGATIVE_POOL_WORDS = 512
# A block is about this many chunks of block_bytes / CHUNKS_PER_BLOCK each,
# drawn from all over the input (group_blocks).
CHUNKS_PER_BLOCK = 64
SENTENCE_TASKS = ("nsp", "sop", "none")
PACKINGS = ("segment_pair", "full_sentences", "doc_sentences")


@dataclasses.dataclass(frozen=True)
class DataOptions:
  """What the records contain; the original script's flags, same defaults."""
  max_seq_length: int = 128
  max_predictions_per_seq: int = 20
  masked_lm_prob: float = 0.15
  short_seq_prob: float = 0.1
  dupe_factor: int = 10
  random_seed: int = 12345
  do_lower_case: bool = True
  do_whole_word_mask: bool = False
  block_bytes: int = 1 << 20
  # Input bytes that are not UTF-8: "ignore" drops and counts them; "strict"
  # stops with an error naming the file and offset, as the original does
  # under Python 3 (its text-mode GFile decodes strictly).
  decode_errors: str = "ignore"
  # RoBERTa / ALBERT variants; the defaults are the original's records.
  # sentence_task: "nsp" (the original), "sop" (ALBERT's sentence order:
  # next_sentence_labels = 1 when A and B are swapped), "none" (no label).
  sentence_task: str = "nsp"
  # packing: "segment_pair" ([CLS] A [SEP] B [SEP], the original),
  # "full_sentences" / "doc_sentences" (RoBERTa's: one segment of whole
  # sentences, across / within documents; see instances.pack_sentences).
  packing: str = "segment_pair"
  # Masked spans of 1..max_ngram units, n with probability ~ 1/n (ALBERT's).
  max_ngram: int = 1
  # Write the real tokens and no masked_lm_* features: the input pipeline
  # masks each example anew (bert_tf.data.dynamic_masking).
  dynamic_masking: bool = False

  def validate(self):
    """Raises ValueError naming the flag and value of an impossible option."""
    if self.max_seq_length < 5:
      raise ValueError(f"--max_seq_length={self.max_seq_length}: must be at least 5 "
                       "([CLS] A [SEP] B [SEP] with non-empty A and B)")
    if self.max_predictions_per_seq < 1:
      raise ValueError(f"--max_predictions_per_seq={self.max_predictions_per_seq}: must be at least 1")
    if not 0.0 < self.masked_lm_prob <= 1.0:
      raise ValueError(f"--masked_lm_prob={self.masked_lm_prob}: must be in (0, 1]")
    if not 0.0 <= self.short_seq_prob <= 1.0:
      raise ValueError(f"--short_seq_prob={self.short_seq_prob}: must be in [0, 1]")
    if self.dupe_factor < 1:
      raise ValueError(f"--dupe_factor={self.dupe_factor}: must be at least 1")
    if self.block_bytes < 1:
      raise ValueError(f"--block_bytes={self.block_bytes}: must be positive")
    if self.decode_errors not in ("ignore", "strict"):
      raise ValueError(f"--decode_errors={self.decode_errors}: must be ignore or strict")
    if self.sentence_task not in SENTENCE_TASKS:
      raise ValueError(f"--sentence_task={self.sentence_task}: must be one of "
                       f"{', '.join(SENTENCE_TASKS)}")
    if self.packing not in PACKINGS:
      raise ValueError(f"--packing={self.packing}: must be one of {', '.join(PACKINGS)}")
    if self.sentence_task != "none" and self.packing != "segment_pair":
      raise ValueError(f"--sentence_task={self.sentence_task} needs --packing=segment_pair "
                       f"(a sentence pair), not --packing={self.packing}; use "
                       "--sentence_task=none with it")
    if self.sentence_task == "none" and self.packing == "segment_pair":
      raise ValueError("--sentence_task=none needs --packing=full_sentences or doc_sentences "
                       "(--packing=segment_pair makes sentence pairs for nsp or sop)")
    if self.max_ngram < 1:
      raise ValueError(f"--max_ngram={self.max_ngram}: must be at least 1")


@dataclasses.dataclass(frozen=True)
class Chunk:
  """A run of whole documents: bytes [start, end) of one input file, holding
  `documents` documents (as the scan counts them: text between blank lines);
  `index`: its place in the input's chunks; `first_document`: the
  input-wide index of its first document."""
  index: int
  path: str
  start: int
  end: int
  documents: int
  first_document: int


@dataclasses.dataclass(frozen=True)
class Block:
  """The unit of work: chunks of the input drawn from all over it (see
  group_blocks), read in this order. documents: the scan's count."""
  index: int
  chunks: tuple
  documents: int = 0

  @property
  def nbytes(self):
    return sum(c.end - c.start for c in self.chunks)


# ---------------------------------------------------------------------------
# Input: globs -> files -> blocks
# ---------------------------------------------------------------------------

def scan_chunks(files, chunk_bytes, sampler=None):
  """Cuts the input files into chunks of whole documents.

  Reads each file once, in large chunks, cutting at the first blank line
  after every `chunk_bytes`: memory stays that of a read buffer whatever the
  corpus size. A file ends a document (the original ran the last document
  of one file into the first of the next).

  Args:
    files: input paths.
    chunk_bytes: int, bytes of text per chunk (at least).
    sampler: optional NegativeSampler, shown every chunk's documents.
  Returns:
    list of Chunk, in input order.
  Raises:
    ValueError naming a file that is empty or holds only blank lines.
  """
  import tensorflow as tf
  chunks = []
  seen = [0]  # documents before the next chunk

  def add_chunk(path, start, end, raw):
    documents = [d for d in _BLANK_LINE.split(raw) if _NON_SPACE.search(d)]
    chunks.append(Chunk(len(chunks), path, start, end, len(documents), seen[0]))
    seen[0] += len(documents)
    if sampler is not None:
      sampler.add(len(chunks) - 1, documents)

  for path in files:
    size = tf.io.gfile.stat(path).length
    if size == 0:
      raise ValueError(f"{path}: input file is empty")
    has_text = False
    start = 0
    with tf.io.gfile.GFile(path, "rb") as f:
      buf = b""
      buf_offset = 0  # file offset of buf[0]; buf always holds [start, end of read)
      while True:
        chunk = f.read(_READ_CHUNK)
        if not has_text and chunk and _NON_SPACE.search(chunk):
          has_text = True
        buf += chunk
        # Cut at the first blank line at least chunk_bytes after `start`.
        while True:
          target = start + chunk_bytes - buf_offset
          if target >= len(buf):
            break
          m = _BLANK_LINE.search(buf, max(target - 1, 0))
          if not m:
            break
          cut = buf_offset + m.end()
          add_chunk(path, start, cut, buf[start - buf_offset:m.end()])
          start = cut
        if not chunk:
          break
        # Keep only what a future cut may need.
        keep_from = max(0, min(start - buf_offset, len(buf) - 4096))
        buf = buf[keep_from:]
        buf_offset += keep_from
    if not has_text:
      raise ValueError(f"{path}: input file has no text (only blank lines)")
    if start < size:
      add_chunk(path, start, size, buf[start - buf_offset:])
  return chunks


def chunk_bytes_of(block_bytes):
  """Bytes per chunk: a block holds about CHUNKS_PER_BLOCK of them."""
  return max(1, block_bytes // CHUNKS_PER_BLOCK)


def group_blocks(chunks, block_bytes, random_seed):
  """Deals the chunks into blocks of about `block_bytes`, in a seeded random
  order: each block is a uniform sample of the input's chunks (of every
  file and every region of each), not a contiguous stretch of it.

  An input of at most `block_bytes` is one block, its chunks in input order
  (the original's whole corpus). A last block of less than half
  `block_bytes` joins the one before it.
  """
  import numpy as np
  total = sum(c.end - c.start for c in chunks)
  if total <= block_bytes or len(chunks) == 1:
    order = range(len(chunks))
  else:
    order = np.random.default_rng(_seed(random_seed, "chunk_order")).permutation(
        len(chunks)).tolist()
  groups, current, size = [], [], 0
  for c in order:
    current.append(chunks[c])
    size += chunks[c].end - chunks[c].start
    if size >= block_bytes:
      groups.append(current)
      current, size = [], 0
  if current:
    if groups and size < block_bytes / 2:
      groups[-1].extend(current)
    else:
      groups.append(current)
  return [Block(i, tuple(g), sum(c.documents for c in g)) for i, g in enumerate(groups)]


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
    self._gen = np.random.default_rng(_seed(random_seed, "negative_pool"))
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
    sentence_offset + k (see BlockSentences)."""
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


class _ByteCounter:
  """Counts bytes that are not UTF-8, replaced by U+FFFD while decoding."""
  count = 0

  @classmethod
  def handler(cls, err):
    cls.count += err.end - err.start
    return ("\ufffd", err.end)


codecs.register_error("bert_tf_count", _ByteCounter.handler)


def read_chunk_documents(chunk, decode_errors="ignore"):
  """Returns (documents, undecodable_bytes) of one chunk: documents as lists
  of lines.

  Raises ValueError naming the file and byte offset of the first byte that
  is not UTF-8 when decode_errors is "strict".
  """
  import tensorflow as tf
  with tf.io.gfile.GFile(chunk.path, "rb") as f:
    f.seek(chunk.start)
    raw = f.read(chunk.end - chunk.start)
  if decode_errors == "strict":
    try:
      raw.decode("utf-8")
    except UnicodeDecodeError as e:
      raise ValueError(f"{chunk.path}: byte {chunk.start + e.start} is not UTF-8 ({e.reason}); "
                       "--decode_errors=ignore drops and counts such bytes") from None
  before = _ByteCounter.count
  text = raw.decode("utf-8", errors="bert_tf_count")
  bad = _ByteCounter.count - before
  # The original's readline() (TensorFlow's GFile) drops every carriage
  # return, mid-line ones too: "ab\rcd" is the word "abcd" there.
  text = text.replace("\r", "")
  documents = [[]]
  # Lines end at "\n" only, as with the original's readline(): str.splitlines
  # would also cut at form feeds, vertical tabs, U+2028 etc., making two
  # sentences of what the original reads as one.
  for line in text.split("\n"):
    line = line.strip()
    if not line:
      if documents[-1]:
        documents.append([])
    else:
      documents[-1].append(line)
  if not documents[-1]:
    documents.pop()
  return documents, bad


# ---------------------------------------------------------------------------
# One block: tokenize (driver), pair + mask + serialize each pass (workers)
# ---------------------------------------------------------------------------

def _seed(*parts):
  digest = hashlib.sha256(":".join(["bert_tf"] + [str(p) for p in parts]).encode()).digest()
  return int.from_bytes(digest[:8], "little")


def pass_seed(random_seed, block_index, pass_index):
  """Seed of one pass over one block: independent of worker and driver."""
  return _seed(random_seed, block_index, pass_index)


@dataclasses.dataclass
class TokenizedBlock:
  """A block's documents as flat arrays (cheap to send to a worker).

  values: int32 [tokens]; sentence_splits: int64 [sentences + 1] into values;
  document_splits: int64 [documents + 1] into sentences; chunk_splits:
  int64 [chunks + 1] into documents (None: one chunk); document_ids: int64
  [documents], each document's input-wide index (None: not known). No empty
  sentence or document.
  """
  index: int
  values: "np.ndarray"
  sentence_splits: "np.ndarray"
  document_splits: "np.ndarray"
  undecodable_bytes: int = 0
  nbytes: int = 0
  chunk_splits: "np.ndarray" = None
  document_ids: "np.ndarray" = None

  def documents(self):
    """list of documents, each a list of sentences (lists of int ids)."""
    values = self.values.tolist()
    splits = self.sentence_splits.tolist()
    sentences = [values[a:b] for a, b in zip(splits[:-1], splits[1:])]
    doc_splits = self.document_splits.tolist()
    return [sentences[a:b] for a, b in zip(doc_splits[:-1], doc_splits[1:])]

  def to_bytes(self):
    """The arrays as one .npz payload (the token cache's file)."""
    import io
    import numpy as np
    buffer = io.BytesIO()
    # Two bytes a token where the ids allow (any vocab under 65,536 entries).
    values = self.values
    if not len(values) or (values.min() >= 0 and values.max() < 1 << 16):
      values = values.astype(np.uint16)
    np.savez(buffer, index=self.index, values=values, sentence_splits=self.sentence_splits,
             document_splits=self.document_splits, undecodable_bytes=self.undecodable_bytes,
             nbytes=self.nbytes, chunk_splits=self.chunk_splits, document_ids=self.document_ids)
    return buffer.getvalue()

  @classmethod
  def from_bytes(cls, payload):
    import io
    import numpy as np
    with np.load(io.BytesIO(payload)) as z:
      return cls(int(z["index"]), z["values"].astype(np.int32), z["sentence_splits"],
                 z["document_splits"],
                 int(z["undecodable_bytes"]), int(z["nbytes"]), z["chunk_splits"],
                 z["document_ids"])


def tokenize_block(block, tokenizer, decode_errors="ignore"):
  """Reads and tokenizes one block; drops token-less lines and empty documents."""
  import numpy as np
  texts, bad, chunk_of_text, ids = [], 0, [], []
  for c, chunk in enumerate(block.chunks):
    documents, chunk_bad = read_chunk_documents(chunk, decode_errors)
    texts += documents
    bad += chunk_bad
    chunk_of_text += [c] * len(documents)
    # The scan counts documents as this read does, but for Unicode spaces
    # alone on a line; ids stay within the chunk's range.
    ids += [chunk.first_document + min(k, max(chunk.documents - 1, 0))
            for k in range(len(documents))]
  lines = [line for doc in texts for line in doc]
  if lines:
    values, splits = tokenizer.tokenize_to_ids(lines)
  else:
    values, splits = np.zeros([0], np.int64), np.zeros([1], np.int64)
  lengths = np.diff(splits)
  keep = lengths > 0
  doc_of_line = np.repeat(np.arange(len(texts)), [len(d) for d in texts])
  kept_docs = doc_of_line[keep]
  sentence_splits = np.concatenate([[0], np.cumsum(lengths[keep])])
  # A document starts at each sentence whose document differs from the previous one's.
  starts = np.flatnonzero(np.diff(kept_docs, prepend=-1) != 0) if len(kept_docs) else np.zeros([0], np.int64)
  document_splits = np.concatenate([starts, [len(kept_docs)]]).astype(np.int64)
  kept_texts = kept_docs[starts] if len(kept_docs) else np.zeros([0], np.int64)
  chunk_of_doc = np.array(chunk_of_text, np.int64)[kept_texts]
  chunk_splits = np.searchsorted(chunk_of_doc, np.arange(len(block.chunks) + 1)).astype(np.int64)
  return TokenizedBlock(block.index, values.astype(np.int32), sentence_splits.astype(np.int64),
                        document_splits, bad, block.nbytes, chunk_splits,
                        np.array(ids, np.int64)[kept_texts])


class BlockStats:
  """What a block wrote: counts for the manifest."""

  FIELDS = ("documents", "sentences", "instances", "tokens", "predictions",
            "masked", "kept", "random", "nsp_random", "nsp_random_from_same_document",
            "undecodable_bytes")

  def __init__(self, num_buckets):
    import numpy as np
    for name in self.FIELDS:
      setattr(self, name, 0)
    self.length_histogram = [0] * num_buckets
    # The input-wide index of each random B's document (int64 array), kept
    # apart from to_dict: what the run's source counts are made from.
    self.b_documents = np.zeros([0], np.int64)
    self.extra = {}  # the run's own totals (SourceCounts.totals), in to_dict

  @classmethod
  def for_options(cls, options):
    return cls(options.max_seq_length // HISTOGRAM_BUCKET + 1)

  def merge(self, other, with_documents=True):
    """Adds other's counts; and its random Bs' documents unless not
    with_documents (a run's totals count them in a SourceCounts instead)."""
    import numpy as np  # pylint: disable=g-import-not-at-top
    for name in self.FIELDS:
      setattr(self, name, getattr(self, name) + getattr(other, name))
    self.length_histogram = [a + b for a, b in zip(self.length_histogram, other.length_histogram)]
    if with_documents and len(other.b_documents):
      self.b_documents = np.concatenate([self.b_documents, other.b_documents])

  def to_dict(self):
    d = {name: getattr(self, name) for name in self.FIELDS}
    d["length_histogram"] = list(self.length_histogram)
    d.update(self.extra)
    return d

  @classmethod
  def from_dict(cls, d):
    stats = cls(len(d["length_histogram"]))
    for name in cls.FIELDS:
      setattr(stats, name, d[name])
    stats.length_histogram = list(d["length_histogram"])
    return stats


class BlockSentences:
  """A block's sentences and the negative pool's, laid end to end: what the
  passes over a block read (built once per block and worker).

  Where a random B comes from (the original: any document of the input but
  A's, uniform): a block whose input is the whole input uses that rule as
  it is. Otherwise the block is a uniform sample of the input's chunks
  (group_blocks), and B's document is uniform over the block's documents
  of *other chunks* than A's: over the run every document of the input
  serves as B equally often, as in the original, and no B comes from A's
  neighbourhood in the input (a chunk is a stretch of it). A block of one
  chunk has no such document: it uses the negative pool, the documents
  drawn from the whole input during the scan.

  Attributes:
    tokenized: the TokenizedBlock.
    values: int32 [tokens], the block's tokens, then the pool's (when the
      block uses it).
    starts: list of int [sentences + 1], the offset in values of each
      sentence's first token, the block's sentences first, and the end.
    documents: list of range, the sentence ids of each document of the block.
    negatives: instances.Negatives, the pool's documents of other blocks as
      ranges of sentence ids (NO_NEGATIVES where the block does not use it).
    chunk_of_document: list of int, each document's chunk; windows: None, or
      per chunk the list of the block's documents of other chunks and one
      more slot, for A (see b_window).
  """

  def __init__(self, tokenized, negative_pool=None, whole_input=None):
    import numpy as np
    self.tokenized = tokenized
    doc_splits = tokenized.document_splits.tolist()
    self.documents = [range(a, b) for a, b in zip(doc_splits[:-1], doc_splits[1:])]
    if whole_input is None:
      whole_input = negative_pool is None
    chunk_splits = tokenized.chunk_splits
    self.windows = None
    self.chunk_of_document = None
    if not whole_input and chunk_splits is not None and len(chunk_splits) > 2:
      bounds = chunk_splits.tolist()
      self.chunk_of_document = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds)).tolist()
      windows = [self.documents[:a] + self.documents[b:] + [None]
                 for a, b in zip(bounds[:-1], bounds[1:])]
      if all(len(w) > 1 for w, a, b in zip(windows, bounds[:-1], bounds[1:]) if b > a):
        self.windows = windows
    values, splits = tokenized.values, tokenized.sentence_splits
    self.negatives = instances.NO_NEGATIVES
    self._pool = None
    if negative_pool is not None and not whole_input and self.windows is None:
      self.negatives = negative_pool.for_block(tokenized.index, len(splits) - 1)
    if len(self.negatives.segments):
      self._pool = negative_pool
      values = np.concatenate([values, negative_pool.values])
      splits = np.concatenate([splits[:-1], len(tokenized.values) + negative_pool.sentence_splits])
    self.values = values
    self.starts = splits.tolist()
    self._document_lists = None

  def b_window(self, document_index):
    """(window, index of A in it): the documents a random B for document
    `document_index` of the block is drawn from, by random_b_source."""
    if self.windows is None:
      return self.documents, document_index
    window = self.windows[self.chunk_of_document[document_index]]
    window[-1] = self.documents[document_index]
    return window, len(window) - 1

  def source_documents(self, b_starts):
    """The input-wide document index of random Bs starting at token offsets
    `b_starts` (int64 array), or -1 where not known."""
    import numpy as np
    tokenized = self.tokenized
    block_tokens = len(tokenized.values)
    sentence = np.searchsorted(self.starts, b_starts, side="right") - 1
    out = np.full(len(b_starts), -1, np.int64)
    inside = b_starts < block_tokens
    if tokenized.document_ids is not None:
      doc = np.searchsorted(tokenized.document_splits, sentence[inside], side="right") - 1
      out[inside] = tokenized.document_ids[doc]
    if self._pool is not None and self._pool.entry_document is not None and (~inside).any():
      pool_sentence = sentence[~inside] - (len(tokenized.sentence_splits) - 1)
      entry = np.searchsorted(self._pool.entry_splits, pool_sentence, side="right") - 1
      out[~inside] = self._pool.entry_document[entry]
    return out

  def document_lists(self):
    """The block's documents as lists of sentences (lists of int ids)."""
    if self._document_lists is None:
      self._document_lists = self.tokenized.documents()
    return self._document_lists


def pass_records(sentences, seed, options, masking_vocab, encoder):
  """One pass of the original algorithm over a block's documents.

  The options pick the variant: sentence pairs with NSP labels (the
  original), with SOP labels, or packed sentences without a label
  (options.sentence_task / packing); masks of single units or n-grams
  (max_ngram), or none at all (dynamic_masking: the pipeline masks).
  Instances go from one stage to the next as padded arrays, each stage
  working on the whole pass at once where its rule allows.

  Args:
    sentences: BlockSentences of the block.
    seed: int, this pass's seed (pass_seed).
    options: DataOptions.
    masking_vocab: masking.MaskingVocab.
    encoder: schema.ExampleEncoder.
  Returns:
    (records, stats): serialized tf.train.Examples, and BlockStats (documents
    and sentences not counted: a block counts them once).
  """
  import numpy as np
  rng = random.Random(seed)
  stats = BlockStats.for_options(options)
  tokens, lengths, num_as, labels = _pass_instances(sentences, options, masking_vocab, rng, stats)
  if not len(lengths):
    return [], stats
  tokens, positions, lm_ids, counts = _pass_masks(tokens, lengths, seed, options, masking_vocab,
                                                  rng)
  records = encoder.encode_batch(tokens, lengths, num_as, positions, lm_ids, counts, labels)
  stats.instances = len(records)
  stats.tokens = int(lengths.sum())
  stats.length_histogram = np.bincount(
      lengths // HISTOGRAM_BUCKET, minlength=len(stats.length_histogram)).tolist()
  if labels is not None:
    stats.nsp_random = int(labels.sum())
  if positions is not None:
    stats.masked, stats.kept, stats.random = masking.count_outcomes_padded(
        tokens, positions, lm_ids, counts, masking_vocab.mask_id)
    stats.predictions = int(counts.sum())
  return records, stats


def _pass_instances(sentences, options, masking_vocab, rng, stats):
  """The unmasked instances of one pass: (tokens, lengths, num_as, labels).

  tokens: int64 [N, L], [CLS] A [SEP] B [SEP] (or [CLS] tokens [SEP]) in
  the first lengths[i] entries of row i, zero-padded, L = lengths.max();
  lengths, num_as (segment-0 tokens): int64 [N]; labels: int64 [N],
  IS_NEXT / IS_RANDOM (sop: 1 = swapped), or None for sentence_task none.
  """
  import numpy as np
  cls_id, sep_id = masking_vocab.cls_id, masking_vocab.sep_id
  if options.packing == "segment_pair" and options.sentence_task == "nsp":
    order = list(range(len(sentences.documents)))
    rng.shuffle(order)
    spans = []
    if sentences.windows is None:  # one window: the block's documents, shuffled
      documents = [sentences.documents[i] for i in order]
      for doc_index in range(len(documents)):
        spans += instances.pair_spans_from_document(
            documents, doc_index, sentences.starts, options.max_seq_length,
            options.short_seq_prob, rng, sentences.negatives)
    else:
      for i in order:
        window, a_index = sentences.b_window(i)
        spans += instances.pair_spans_from_document(
            window, a_index, sentences.starts, options.max_seq_length,
            options.short_seq_prob, rng, sentences.negatives)
    spans = np.array(spans, np.int64).reshape(-1, 6)
    stats.nsp_random_from_same_document = int(spans[:, 5].sum())
    random_rows = (spans[:, 4] == 1) & (spans[:, 5] == 0)
    stats.b_documents = sentences.source_documents(spans[random_rows, 2])
    tokens, lengths, num_as = _pair_tokens(sentences.values, spans[:, :4], cls_id, sep_id)
    labels = np.where(spans[:, 4] == 1, schema.IS_RANDOM, schema.IS_NEXT)
    return tokens, lengths, num_as, labels
  documents = list(sentences.document_lists())
  rng.shuffle(documents)
  sequences, num_as, labels = [], [], []
  if options.packing != "segment_pair":
    for packed in instances.pack_sentences(
        documents, options.max_seq_length, rng,
        cross_documents=options.packing == "full_sentences", sep_id=sep_id):
      ids, num_a = instances.build_single(packed, cls_id, sep_id)
      sequences.append(ids)
      num_as.append(num_a)
    labels = None
  else:
    for document in documents:
      for pair in instances.create_sop_pairs_from_document(
          document, options.max_seq_length, options.short_seq_prob, rng):
        ids, num_a = instances.build_instance(pair.tokens_a, pair.tokens_b, cls_id, sep_id)
        sequences.append(ids)
        num_as.append(num_a)
        labels.append(schema.IS_RANDOM if pair.is_random_next else schema.IS_NEXT)
    labels = np.array(labels, np.int64)
  tokens, lengths = _padded(sequences)
  return tokens, lengths, np.array(num_as, np.int64), labels


def _pair_tokens(values, spans, cls_id, sep_id):
  """[CLS] A [SEP] B [SEP] of each pair, laid out as instances.build_instance does.

  Args:
    values: int array [tokens]; spans: int64 [N, 4], (a_start, a_end,
      b_start, b_end): A is values[a_start:a_end], B values[b_start:b_end],
      both non-empty.
  Returns:
    (tokens, lengths, num_as): tokens int64 [N, L], row i zero-padded after
    its lengths[i] entries, L = lengths.max(); lengths and num_as (the
    segment-0 tokens, len(A) + 2) int64 [N].
  """
  import numpy as np
  if not len(spans):
    return np.zeros((0, 0), np.int64), np.zeros([0], np.int64), np.zeros([0], np.int64)
  a_start, a_end, b_start, b_end = spans.T
  len_a = a_end - a_start
  lengths = len_a + (b_end - b_start) + 3
  rows = np.arange(len(spans))
  column = np.arange(int(lengths.max()))[None]
  # Column j of a row is A's token j - 1 up to A's end, then B's j - len_a - 2.
  index = np.where(column <= len_a[:, None], (a_start - 1)[:, None], (b_start - len_a - 2)[:, None])
  tokens = values.take(index + column, mode="clip").astype(np.int64)
  tokens[:, 0] = cls_id
  tokens[rows, len_a + 1] = sep_id
  tokens[rows, lengths - 1] = sep_id
  tokens *= column < lengths[:, None]
  return tokens, lengths, len_a + 2


def _padded(sequences):
  """(int64 [N, L] zero-padded rows, int64 [N] lengths) of lists of ids."""
  import numpy as np
  lengths = np.fromiter(map(len, sequences), np.int64, len(sequences))
  tokens = np.zeros((len(sequences), int(lengths.max()) if len(sequences) else 0), np.int64)
  for i, sequence in enumerate(sequences):
    tokens[i, :len(sequence)] = sequence
  return tokens, lengths


def _pass_masks(tokens, lengths, seed, options, masking_vocab, rng):
  """The masked instances: (output, positions, labels, counts).

  output: int64 [N, L], tokens with the masks in; positions, labels: int64
  [N, P], each row's sorted positions and the original ids there, then
  zeros; counts: int64 [N], predictions per row. positions, labels and
  counts are None with dynamic masking (the input pipeline masks).
  """
  import numpy as np
  if options.dynamic_masking:
    return tokens, None, None, None
  if options.max_ngram == 1 and not options.do_whole_word_mask:
    positions, labels, new, counts = masking.choose_masks_padded(
        tokens, lengths, options.masked_lm_prob, options.max_predictions_per_seq, masking_vocab,
        np.random.default_rng(seed))
    return masking.apply_masks_padded(tokens, positions, new, counts), positions, labels, counts
  sequences = [row[:n] for row, n in zip(tokens.tolist(), lengths.tolist())]
  if options.max_ngram > 1:
    masked = [masking.mask_tokens_ngram(
        sequence, options.masked_lm_prob, options.max_predictions_per_seq, masking_vocab, rng,
        do_whole_word_mask=options.do_whole_word_mask, max_ngram=options.max_ngram)[:3]
              for sequence in sequences]
  else:
    masked = [masking.mask_tokens(
        sequence, options.masked_lm_prob, options.max_predictions_per_seq, masking_vocab, rng,
        do_whole_word_mask=True) for sequence in sequences]
  output, _ = _padded([m[0] for m in masked])
  counts = np.array([len(m[1]) for m in masked], np.int64)
  positions = np.zeros((len(masked), options.max_predictions_per_seq), np.int64)
  labels = np.zeros_like(positions)
  for i, (_, row_positions, row_labels) in enumerate(masked):
    positions[i, :len(row_positions)] = row_positions
    labels[i, :len(row_labels)] = row_labels
  return output, positions, labels, counts


def unit_seed(random_seed, block_index, pass_index):
  """Seed of the shuffle of one unit's instances (one pass over one block)."""
  return _seed(random_seed, block_index, pass_index, "order")


def stream_units(num_blocks, dupe_factor, random_seed):
  """The order of the output: (pass, block) units, pass-major.

  Pass 0 visits the blocks in index order (the order they are tokenized
  in); every later pass in its own seeded random order. A block is a uniform
  sample of the input, so any stretch of the stream is one, and the
  dupe_factor copies of a document lie one pass apart and at unrelated
  places within their passes: spread over the whole run, as the original's
  global shuffle spreads them.
  """
  import numpy as np
  units = [(0, b) for b in range(num_blocks)]
  for p in range(1, dupe_factor):
    order = np.random.default_rng(_seed(random_seed, "pass_order", p)).permutation(num_blocks)
    units += [(p, int(b)) for b in order]
  return units


def unit_records(sentences, pass_index, options, masking_vocab, encoder):
  """One unit: pass `pass_index` over a block, its instances shuffled.

  The block's documents, sentences and undecodable bytes are counted in its
  pass-0 unit (a block counts them once).
  """
  index = sentences.tokenized.index
  records, stats = pass_records(sentences, pass_seed(options.random_seed, index, pass_index),
                                options, masking_vocab, encoder)
  random.Random(unit_seed(options.random_seed, index, pass_index)).shuffle(records)
  if pass_index == 0:
    _count_block(stats, sentences.tokenized)
  return records, stats


def _count_block(stats, tokenized):
  """What a block counts once, not per pass."""
  stats.documents = len(tokenized.document_splits) - 1
  stats.sentences = len(tokenized.sentence_splits) - 1
  stats.undecodable_bytes = tokenized.undecodable_bytes


def masking_vocab_of(vocab):
  return masking.MaskingVocab(
      size=vocab.size, cls_id=vocab.cls_id, sep_id=vocab.sep_id, mask_id=vocab.mask_id,
      is_subword=tuple(bool(x) for x in vocab.is_subword))


class BlockProcessor:
  """Tokenizes blocks and runs units over them: what a Beam worker (or this
  process, with one worker) runs."""

  def __init__(self, tokenizer, options, negative_pool, whole_input):
    self.tokenizer = tokenizer
    self.options = options
    self.negative_pool = negative_pool
    self.whole_input = whole_input
    self.masking_vocab = masking_vocab_of(tokenizer.vocab)
    self.encoder = schema.ExampleEncoder(options.max_seq_length, options.max_predictions_per_seq,
                                         tokenizer.vocab.size)
    self._sentences = None  # BlockSentences of the last block seen

  def tokenize(self, block):
    return tokenize_block(block, self.tokenizer, self.options.decode_errors)

  def unit(self, tokenized, pass_index):
    """(records, stats) of pass `pass_index` over `tokenized`."""
    if self._sentences is None or self._sentences.tokenized.index != tokenized.index:
      self._sentences = BlockSentences(tokenized, self.negative_pool, self.whole_input)
    return unit_records(self._sentences, pass_index, self.options, self.masking_vocab,
                        self.encoder)

  def __call__(self, block):
    """[(pass index, records, stats)] of every pass over `block`."""
    tokenized = self.tokenize(block)
    return [(p,) + self.unit(tokenized, p) for p in range(self.options.dupe_factor)]


# Worker processes pair, mask and serialize; they never import TensorFlow.
_WORKER = {}


def _init_worker(options, shared):
  _WORKER["options"] = options
  _WORKER["shared"] = shared  # the queue _WorkerPool.share fills, one item a worker


def _run_unit(tokenized, pass_index):
  options = _WORKER["options"]
  if "pool" not in _WORKER:  # the first unit of this worker
    masking_vocab, negative_pool, whole_input = _WORKER["shared"].get()
    _WORKER.update(vocab=masking_vocab, pool=negative_pool, whole=whole_input, block=None,
                   encoder=schema.ExampleEncoder(options.max_seq_length,
                                                 options.max_predictions_per_seq,
                                                 masking_vocab.size))
  sentences = _WORKER["block"]  # BlockSentences of the last block seen
  if sentences is None or sentences.tokenized.index != tokenized.index:
    sentences = _WORKER["block"] = BlockSentences(tokenized, _WORKER["pool"], _WORKER["whole"])
  records, stats = unit_records(sentences, pass_index, options, _WORKER["vocab"],
                                _WORKER["encoder"])
  return records, stats.to_dict(), stats.b_documents


class TokenCache:
  """Tokenized blocks kept for the later passes, which visit the blocks in
  other orders than pass 0 (stream_units): one .npz file a block in a scratch
  folder beside the output (through tf.io.gfile), named by the run's
  fingerprint, removed when the run ends. The block tokenized last stays in
  memory (a run of one block never touches the folder)."""

  def __init__(self, folder, use_files):
    self.folder = folder
    self.use_files = use_files
    self._last = None

  def _path(self, index):
    return f"{self.folder}/block-{index:08d}.npz"

  def get(self, block, tokenize):
    """The TokenizedBlock of `block`, from the cache or by `tokenize(block)`."""
    import tensorflow as tf
    if self._last is not None and self._last.index == block.index:
      return self._last
    path = self._path(block.index)
    if self.use_files and tf.io.gfile.exists(path):
      with tf.io.gfile.GFile(path, "rb") as f:
        self._last = TokenizedBlock.from_bytes(f.read())
      return self._last
    self._last = tokenize(block)
    if self.use_files:
      tf.io.gfile.makedirs(self.folder)
      files_lib.atomic_write(path, self._last.to_bytes())
    return self._last

  def remove(self):
    import tensorflow as tf
    if self.use_files and tf.io.gfile.exists(self.folder):
      tf.io.gfile.rmtree(self.folder)


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------

class FlagError(ValueError):
  """A missing or contradictory flag of the data tool (its usage error)."""


@dataclasses.dataclass(frozen=True)
class Outputs:
  """Where records go: `files` (dealt round-robin, the original's
  --output_file) or `directory` with `num_shards` files (resumable)."""
  files: tuple = ()
  directory: str = ""
  num_shards: int = 1
  gzip: bool = False

  @classmethod
  def from_flags(cls, output_file, output_dir, num_output_shards, gzip):
    """The Outputs of --output_file (comma-separated paths) or --output_dir
    with --num_output_shards; raises FlagError unless exactly one is given
    and the shard count is positive."""
    if bool(output_file) == bool(output_dir):
      raise FlagError("give exactly one of --output_file and --output_dir")
    if num_output_shards < 1:
      raise FlagError(f"--num_output_shards={num_output_shards}: must be at least 1")
    if output_file:
      return cls(files=tuple(p.strip() for p in output_file.split(",") if p.strip()),
                 gzip=gzip)
    return cls(directory=output_dir, num_shards=num_output_shards, gzip=gzip)

  def folders(self):
    """The folders the outputs go to."""
    return [self.directory] if self.directory else [os.path.dirname(p) for p in self.files]

  def paths(self):
    if self.files:
      return list(self.files)
    ext = ".tfrecord.gz" if self.gzip else ".tfrecord"
    return [f"{self.directory.rstrip('/')}/pretrain-{k:05d}-of-{self.num_shards:05d}{ext}"
            for k in range(self.num_shards)]

  def manifest_path(self):
    from bert_tf.data import manifest
    if self.files:
      return manifest.manifest_path_for_file(self.files[0])
    return manifest.manifest_path_for_dir(self.directory)


class _Progress:
  """Logs documents/s, instances/s and an ETA by input bytes."""

  def __init__(self, total_bytes, every_seconds=5.0):
    self.total = max(total_bytes, 1)
    self.done = 0
    self.docs = 0
    self.instances = 0
    self.start = time.time()
    self.last = self.start
    self.every = every_seconds

  def update(self, nbytes, stats, force=False):
    self.done += nbytes
    self.docs += stats.documents
    self.instances += stats.instances
    now = time.time()
    if force or now - self.last >= self.every:
      self.last = now
      elapsed = max(now - self.start, 1e-9)
      eta = elapsed * (self.total - self.done) / max(self.done, 1)
      logging.info("%5.1f%% of input | %d documents (%.0f/s) | %d instances (%.0f/s) | ETA %s",
                   100.0 * self.done / self.total, self.docs, self.docs / elapsed,
                   self.instances, self.instances / elapsed, _hms(eta))


def _hms(seconds):
  seconds = int(seconds)
  return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _fingerprint(files, options, vocab):
  """What must match for a complete shard of an earlier run to be reused."""
  import tensorflow as tf
  inputs = [(p, tf.io.gfile.stat(p).length) for p in files]
  payload = json.dumps({"inputs": inputs, "options": dataclasses.asdict(options),
                        "vocab": vocab.sha256, "schema": schema.SCHEMA_VERSION,
                        "negative_pool": [NEGATIVE_POOL_DOCUMENTS, NEGATIVE_POOL_WORDS],
                        "layout": ["chunks", CHUNKS_PER_BLOCK, "pass-major"]},
                       sort_keys=True)
  return hashlib.sha256(payload.encode()).hexdigest()


def _check_writable(paths):
  import tensorflow as tf
  for path in paths:
    parent = path.rsplit("/", 1)[0] if "/" in path else "."
    try:
      tf.io.gfile.makedirs(parent)
      probe = f"{path}.probe-{os.getpid()}"
      with tf.io.gfile.GFile(probe, "w") as f:
        f.write("")
      tf.io.gfile.remove(probe)
    except Exception as e:  # noqa: BLE001 - any failure means "cannot write here"
      raise PermissionError(f"cannot write output {path}: {type(e).__name__}: "
                            f"{str(e).splitlines()[0] if str(e) else ''}") from None


@dataclasses.dataclass(frozen=True)
class RunPlan:
  """What both drivers work from, decided before any record is written.

  files: input paths; paths: output paths; blocks: list of Block;
  negative_pool: NegativePool, or None where no block needs it;
  whole_input: bool, the input is one block; num_documents: documents of
  the input; fingerprint: str, what a reusable shard of an earlier run must
  match; units: list of (pass, block), the output's order (stream_units);
  shard_of_unit: list of int, unit position -> shard (with --output_dir:
  shard k holds a contiguous stretch of the units).
  """
  files: list
  paths: list
  blocks: list
  negative_pool: object
  whole_input: bool
  num_documents: int
  fingerprint: str
  units: list
  shard_of_unit: list

  def scratch_folder(self, outputs):
    """Where the token cache of this run goes (beside the output)."""
    if outputs.directory:
      return f"{outputs.directory.rstrip('/')}/.tokens-{self.fingerprint[:16]}"
    parent, name = files_lib.parent_of(self.paths[0]), os.path.basename(self.paths[0])
    return f"{parent.rstrip('/')}/.{name}.tokens-{self.fingerprint[:16]}"


def plan_run(input_patterns, outputs, tokenizer, options):
  """Expands the inputs, checks the outputs can be written, scans the input
  into chunks (sampling the negative pool), deals them into blocks, orders
  the output, and tokenizes the pool if a block needs it.

  Raises:
    ValueError / FileNotFoundError / PermissionError naming the bad input
    or output.
  """
  files = files_lib.expand_patterns(input_patterns)
  paths = outputs.paths()
  _check_writable(paths)
  sampler = NegativeSampler(options.random_seed, tail_words=options.max_seq_length - 3)
  started = time.time()
  chunks = scan_chunks(files, chunk_bytes_of(options.block_bytes), sampler)
  blocks = group_blocks(chunks, options.block_bytes, options.random_seed)
  whole_input = len(blocks) == 1
  # A block of one chunk (documents longer than a chunk) has no document of
  # another chunk to take a random B from: the pool serves it.
  needs_pool = (not whole_input and options.sentence_task == "nsp"
                and any(sum(c.documents > 0 for c in b.chunks) < 2 for b in blocks))
  pool = tokenize_negative_pool(sampler, blocks, tokenizer) if needs_pool else None
  logging.info("input: %d files, %.1f MB, %d documents, %d chunks in %d blocks of ~%.2f MB "
               "drawn from all of the input%s (%.1f s)",
               len(files), sum(c.end - c.start for c in chunks) / 1e6, sampler.documents_seen,
               len(chunks), len(blocks), options.block_bytes / 1e6,
               f"; negative pool for single-chunk blocks: {len(pool.entry_block)} documents"
               if pool is not None else "", time.time() - started)
  units = stream_units(len(blocks), options.dupe_factor, options.random_seed)
  num_shards = len(paths)
  return RunPlan(files=files, paths=paths, blocks=blocks, negative_pool=pool,
                 whole_input=whole_input, num_documents=sampler.documents_seen,
                 fingerprint=_fingerprint(files, options, tokenizer.vocab), units=units,
                 shard_of_unit=[u * num_shards // len(units) for u in range(len(units))])


class ShardWriter:
  """Writes one --output_dir shard: records under a temporary name, renamed
  into place when complete, then its stats file, the proof of completeness
  (killed in between, a stale shard of another run never gets this run's
  stats). Both drivers write their shards with it."""

  def __init__(self, path, fingerprint, gzip):
    import tensorflow as tf
    self.path = path
    self._fingerprint = fingerprint
    # Held open until close(): the rename happens when the stack is closed.
    self._rename = contextlib.ExitStack()
    tmp = self._rename.enter_context(files_lib.atomic_path(path, path + ".tmp"))
    self._writer = tf.io.TFRecordWriter(tmp, options="GZIP" if gzip else None)

  def write(self, records):
    for record in records:
      self._writer.write(record)

  def close(self, stats):
    """Closes the file, renames it into place, writes its stats (BlockStats,
    and the documents of its random Bs with their counts)."""
    import numpy as np
    self._writer.close()
    self._rename.close()
    documents, counts = np.unique(np.asarray(stats.b_documents, np.int64), return_counts=True)
    files_lib.write_json(self.path + ".stats.json", {
        "fingerprint": self._fingerprint, "stats": stats.to_dict(),
        "random_b_documents": [documents.tolist(), counts.tolist()]})


class SourceCounts:
  """How often each document of the input served as a random B."""

  def __init__(self, num_documents):
    import numpy as np
    # 4 bytes a document: 24 MB for Wikipedia's ~6 M articles.
    self.counts = np.zeros(max(num_documents, 1), np.int32)

  def add(self, ids):
    import numpy as np
    if len(ids):
      ids = np.asarray(ids, np.int64)
      np.add.at(self.counts, ids[ids >= 0], 1)

  def totals(self):
    """The manifest's counts: distinct documents, and the most one served."""
    import numpy as np
    return {"nsp_random_documents": int(np.count_nonzero(self.counts)),
            "nsp_random_most_per_document": int(self.counts.max())}


def read_complete_shard(path, fingerprint):
  """BlockStats of a complete shard of an earlier run with this fingerprint, or None."""
  import tensorflow as tf
  stats_path = path + ".stats.json"
  if not (tf.io.gfile.exists(path) and tf.io.gfile.exists(stats_path)):
    return None
  with tf.io.gfile.GFile(stats_path) as f:
    saved = json.load(f)
  if saved.get("fingerprint") != fingerprint:
    return None
  import numpy as np
  stats = BlockStats.from_dict(saved["stats"])
  documents, counts = saved.get("random_b_documents", [[], []])
  stats.b_documents = np.repeat(np.array(documents, np.int64), np.array(counts, np.int64))
  return stats


def finish_run(plan, outputs, vocab, options, total, started, num_workers, reused, driver,
               sources=None):
  """Checks the run wrote something, warns about what the data lacks, and
  writes the manifest; returns it. Both drivers end here.

  Args:
    sources: SourceCounts of the run's random Bs (NSP runs), or None.
  Raises:
    ValueError, leaving no output under a final name, when no instance
    could be made.
  """
  import tensorflow as tf
  if total.instances == 0:
    # An error leaves nothing under a final name: not even empty files that
    # look like a result, or stats that a rerun would take as complete shards.
    for path in plan.paths:
      for leftover in (path, path + ".stats.json"):
        if tf.io.gfile.exists(leftover):
          tf.io.gfile.remove(leftover)
    if options.sentence_task == "sop" and total.sentences > 0:
      raise ValueError(f"--sentence_task=sop: no instance could be made from "
                       f"{len(plan.files)} file(s): no document has two sentences (a sentence "
                       "order pair needs two consecutive segments of one document)")
    raise ValueError(f"--input_file: no instance could be made from {len(plan.files)} file(s) "
                     "(no line has a token in this vocab)")
  if total.nsp_random_from_same_document:
    logging.warning("the whole input holds a single document: %d random next-sentence B "
                    "segments (of %d) came from A's own document", total.nsp_random_from_same_document,
                    total.nsp_random)
  if sources is not None and options.sentence_task == "nsp":
    total.extra = sources.totals()
  manifest = manifest_of_run(plan.files, plan.paths, outputs, vocab, options, total,
                             time.time() - started, num_workers, reused,
                             driver=None if driver == "local" else driver)
  return manifest.write(outputs.manifest_path()).to_dict()


class _WorkerPool:
  """Worker processes for the passes (spawned: they never import TensorFlow).

  They start first, so that they come up while this process imports
  TensorFlow and plans the run (spawning them later, with the negative pool
  as an argument, kept this process waiting 0.35 s: a child reads its
  arguments only once its own imports are done). What they all need and
  only the plan knows, the masking vocab and the negative pool, `share`
  puts on a queue, one copy a worker, which each takes at its first pass.
  """

  def __init__(self, num_workers, options):
    self.processes = num_workers
    ctx = multiprocessing.get_context("spawn")
    self._shared = ctx.Queue()
    self._pool = ctx.Pool(num_workers, initializer=_init_worker,
                          initargs=(options, self._shared))

  def share(self, masking_vocab, negative_pool, whole_input):
    for _ in range(self.processes):  # sent by the queue's own thread
      self._shared.put((masking_vocab, negative_pool, whole_input))

  def run_unit(self, tokenized, pass_index):
    """AsyncResult of the pass `pass_index` over `tokenized` (after share)."""
    return self._pool.apply_async(_run_unit, (tokenized, pass_index))

  def close(self):
    self._pool.terminate()
    self._pool.join()
    # Copies no worker took (a run with fewer tasks than workers, or an
    # error) are dropped rather than waited for at exit.
    self._shared.cancel_join_thread()
    self._shared.close()


def _map_units(plan, todo, tokenizer, options, pool, cache):
  """Yields (unit position, records, stats) for the unit positions `todo`,
  in order.

  This process reads and tokenizes each block (tf-text, C++) when its first
  unit comes, or takes it from the token cache; each unit is a task for a
  worker process. At most a few units are in flight, so memory does not
  grow with the corpus.
  """
  processor = BlockProcessor(tokenizer, options, plan.negative_pool, plan.whole_input)
  if pool is None:
    for u in todo:
      p, b = plan.units[u]
      tokenized = cache.get(plan.blocks[b], processor.tokenize)
      records, stats = processor.unit(tokenized, p)
      yield u, records, stats
    return
  in_flight = collections.deque()
  max_in_flight = 2 * pool.processes + 2

  def finish_oldest():
    u, future = in_flight.popleft()
    records, stats_dict, b_documents = future.get()
    stats = BlockStats.from_dict(stats_dict)
    stats.b_documents = b_documents
    return u, records, stats

  for u in todo:
    p, b = plan.units[u]
    tokenized = cache.get(plan.blocks[b], processor.tokenize)
    in_flight.append((u, pool.run_unit(tokenized, p)))
    while len(in_flight) > max_in_flight:
      yield finish_oldest()
  while in_flight:
    yield finish_oldest()


def create_pretraining_data(input_patterns, outputs, vocab_file, options,
                            num_workers=1):
  """Writes pretraining records and their manifest; the library entry.

  Args:
    input_patterns: comma-separated globs or a list of them; text with one
      sentence a line and a blank line between documents.
    outputs: Outputs.
    vocab_file: WordPiece vocab, one token a line.
    options: DataOptions.
    num_workers: processes; 1 runs in this process.
  Returns:
    The manifest dict (also written beside the records).
  """
  started = time.time()
  options.validate()
  pool = _WorkerPool(num_workers, options) if num_workers > 1 else None
  cache = None
  try:
    from bert_tf.data import tokenization  # TensorFlow's import, while the workers start
    vocab = tokenization.load_vocab(vocab_file)  # names missing special tokens
    tokenizer = tokenization.Tokenizer(vocab, options.do_lower_case)
    plan = plan_run(input_patterns, outputs, tokenizer, options)
    if pool is not None:
      pool.share(masking_vocab_of(vocab), plan.negative_pool, plan.whole_input)
    cache = TokenCache(plan.scratch_folder(outputs),
                       use_files=len(plan.blocks) > 1 and options.dupe_factor > 1)
    total, reused, sources = _write(plan, outputs, tokenizer, options, pool, cache)
  finally:
    if pool is not None:
      pool.close()
    if cache is not None:
      cache.remove()
  return finish_run(plan, outputs, vocab, options, total, started, num_workers, reused, "local",
                    sources)


def _write(plan, outputs, tokenizer, options, pool, cache):
  """Writes the records of `plan`; returns (BlockStats of all, reused
  shards, SourceCounts)."""
  import tensorflow as tf
  blocks, paths, units = plan.blocks, plan.paths, plan.units
  total = BlockStats.for_options(options)
  sources = SourceCounts(plan.num_documents)
  progress = _Progress(sum(b.nbytes for b in blocks))
  reused = 0

  def unit_bytes(u):  # progress: a block's bytes, spread over its passes
    return blocks[units[u][1]].nbytes / options.dupe_factor

  def count(stats):
    sources.add(stats.b_documents)
    total.merge(stats, with_documents=False)

  if outputs.files:
    # The original's --output_file: deal instances round-robin.
    compression = "GZIP" if outputs.gzip else None
    with files_lib.atomic_paths(paths, [f"{p}.tmp-bert_tf" for p in paths]) as tmp_paths, \
        contextlib.ExitStack() as opened:  # closed (all records flushed) before the renames
      writers = [opened.enter_context(tf.io.TFRecordWriter(p, options=compression))
                 for p in tmp_paths]
      n = 0
      for u, records, stats in _map_units(plan, range(len(units)), tokenizer, options, pool,
                                          cache):
        for record in records:
          writers[n % len(writers)].write(record)
          n += 1
        count(stats)
        progress.update(unit_bytes(u), stats)
    progress.update(0, BlockStats.for_options(options), force=True)
    return total, reused, sources

  num_shards = outputs.num_shards
  if len(units) < num_shards:
    logging.warning("%d blocks x %d passes for %d shards: %d shards will be empty; lower "
                    "--block_bytes or --num_output_shards", len(blocks), options.dupe_factor,
                    num_shards, num_shards - len(units))
  shard_of_unit = plan.shard_of_unit
  shard_bytes = collections.Counter()
  for u, k in enumerate(shard_of_unit):
    shard_bytes[k] += unit_bytes(u)
  pending = []
  for k, path in enumerate(paths):
    stats = read_complete_shard(path, plan.fingerprint)
    if stats is None:
      pending.append(k)
      continue
    count(stats)
    reused += 1
    progress.update(shard_bytes[k], stats)
  if reused:
    logging.info("reusing %d complete shards of an earlier run", reused)
  pending_set = set(pending)
  todo = [u for u in range(len(units)) if shard_of_unit[u] in pending_set]
  remaining = collections.Counter(shard_of_unit[u] for u in todo)
  writers = {}
  shard_stats = {k: BlockStats.for_options(options) for k in pending}

  def finish(k):
    # A shard without units is an empty, valid file.
    writer = writers.pop(k, None) or ShardWriter(paths[k], plan.fingerprint, outputs.gzip)
    writer.close(shard_stats[k])

  for k in [k for k in pending if remaining[k] == 0]:
    finish(k)
  for u, records, stats in _map_units(plan, todo, tokenizer, options, pool, cache):
    k = shard_of_unit[u]
    if k not in writers:
      writers[k] = ShardWriter(paths[k], plan.fingerprint, outputs.gzip)
    writers[k].write(records)
    shard_stats[k].merge(stats)
    count(stats)
    progress.update(unit_bytes(u), stats)
    remaining[k] -= 1
    if remaining[k] == 0:
      finish(k)
  progress.update(0, BlockStats.for_options(options), force=True)
  return total, reused, sources


def manifest_of_run(files, paths, outputs, vocab, options, total, elapsed, num_workers,
                    reused, driver=None):
  """The run's manifest.Manifest: options, vocab, counts, shares, histogram."""
  from bert_tf.data import manifest as manifest_lib
  return manifest_lib.Manifest.from_totals(
      input_files=files, output_files=paths, vocab=vocab, options=options,
      gzip=outputs.gzip, totals=total.to_dict(), bucket_tokens=HISTOGRAM_BUCKET,
      seconds=elapsed, num_workers=num_workers, reused_shards=reused,
      schema_version=schema.SCHEMA_VERSION, driver=driver)


def default_num_workers():
  return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else (os.cpu_count() or 1))


def num_workers_of(flag_value):
  """--num_workers, None or 0 meaning all cores; raises FlagError below 1."""
  num_workers = flag_value or default_num_workers()
  if num_workers < 1:
    raise FlagError(f"--num_workers={num_workers}: must be at least 1")
  return num_workers


@contextlib.contextmanager
def removed_if_left_empty(folders):
  """On an error, removes the folders (and their missing parents) that did
  not exist before and hold no file: a failed run leaves no empty output
  folder behind. Folders with files stay (shards a rerun resumes from)."""
  import tensorflow as tf
  new = []
  for folder in folders:
    outermost = ""
    while folder and not tf.io.gfile.exists(folder):
      outermost, folder = folder, os.path.dirname(folder.rstrip("/"))
    if outermost:
      new.append(outermost)
  try:
    yield
  except BaseException:
    for folder in new:
      if tf.io.gfile.exists(folder) and not any(
          files for _, _, files in tf.io.gfile.walk(folder)):
        tf.io.gfile.rmtree(folder)
    raise


def log_summary(manifest, outputs):
  """Logs a finished run's summary from its manifest dict (what both drivers
  return): what was written, how fast, the masking and sentence-pair shares,
  and where the manifest is."""
  counts, shares = manifest["counts"], manifest["shares"]
  logging.info("wrote %d instances from %d documents to %d file(s) in %.1f s (%.0f instances/s)",  # noqa
               counts["instances"], counts["documents"], len(manifest["files"]),
               manifest["run"]["seconds"],
               counts["instances"] / max(manifest["run"]["seconds"], 1e-9))
  logging.info("mean tokens %.1f | predictions/instance %.2f | [MASK] %.3f kept %.3f random %.3f "
               "| NSP random %.3f | undecodable bytes %d", shares["mean_tokens"],
               shares["predictions_per_instance"], shares["masked"], shares["kept"],
               shares["random"], shares["nsp_random"], counts["undecodable_bytes"])
  logging.info("manifest: %s", outputs.manifest_path())
