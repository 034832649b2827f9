"""The data writer's input: files cut into chunks of whole documents by a
cheap scan, chunks dealt into blocks drawn from all over the input, and the
documents of a chunk read back as lines."""

import codecs
import dataclasses
import re

from bert_tf.io import file_io
from bert_tf.data.pretraining import seeds

_BLANK_LINE = re.compile(rb"\n[ \t\r\f\v]*\n")
_NON_SPACE = re.compile(rb"\S")
_READ_CHUNK = 8 << 20

# A block is about this many chunks of block_bytes / CHUNKS_PER_BLOCK each,
# drawn from all over the input (group_blocks).
CHUNKS_PER_BLOCK = 64


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


def scan_chunks(files, chunk_bytes, sampler=None):
  """Cuts the input files into chunks of whole documents.

  Reads each file once, in large chunks, cutting at the first blank line
  after every `chunk_bytes`: memory stays that of a read buffer whatever the
  corpus size. A file ends a document (the original ran the last document
  of one file into the first of the next).

  Args:
    files: input paths.
    chunk_bytes: int, bytes of text per chunk (at least).
    sampler: optional negative_pool.NegativeSampler, shown every chunk's documents.
  Returns:
    list of Chunk, in input order.
  Raises:
    ValueError naming a file that is empty or holds only blank lines.
  """
  chunks = []
  seen = [0]  # documents before the next chunk

  def add_chunk(path, start, end, raw):
    documents = [d for d in _BLANK_LINE.split(raw) if _NON_SPACE.search(d)]
    chunks.append(Chunk(len(chunks), path, start, end, len(documents), seen[0]))
    seen[0] += len(documents)
    if sampler is not None:
      sampler.add(len(chunks) - 1, documents)

  for path in files:
    size = file_io.size(path)
    if size == 0:
      raise ValueError(f"{path}: input file is empty")
    has_text = False
    start = 0
    with file_io.open_file(path, "rb") as f:
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
    order = np.random.default_rng(seeds.derived_seed(random_seed, "chunk_order")).permutation(
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
  with file_io.open_file(chunk.path, "rb") as f:
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
