"""A block's tokens as flat arrays (TokenizedBlock, what workers receive),
and the scratch cache that keeps them for the later passes."""

import dataclasses

from bert_tf.io import file_io as files_lib
from bert_tf.data.pretraining import corpus_scan


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
    documents, chunk_bad = corpus_scan.read_chunk_documents(chunk, decode_errors)
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


class TokenCache:
  """Tokenized blocks kept for the later passes, which visit the blocks in
  other orders than pass 0 (writer.stream_units): one .npz file a block in a scratch
  folder beside the output (through file_io), named by the run's
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
    if self._last is not None and self._last.index == block.index:
      return self._last
    path = self._path(block.index)
    if self.use_files and files_lib.exists(path):
      with files_lib.open_file(path, "rb") as f:
        self._last = TokenizedBlock.from_bytes(f.read())
      return self._last
    self._last = tokenize(block)
    if self.use_files:
      files_lib.makedirs(self.folder)
      files_lib.atomic_write(path, self._last.to_bytes())
    return self._last

  def remove(self):
    if self.use_files and files_lib.exists(self.folder):
      files_lib.rmtree(self.folder)
