"""A block's sentences laid end to end with the negative pool's, and where
each document's random next-sentence B is drawn from."""

from bert_tf.data.pretraining import instances


class BlockSentences:
  """A block's sentences and the negative pool's, laid end to end: what the
  passes over a block read (built once per block and worker).

  Where a random B comes from (the original: any document of the input but
  A's, uniform): a block whose input is the whole input uses that rule as
  it is. Otherwise the block is a uniform sample of the input's chunks
  (corpus_scan.group_blocks), and B's document is uniform over the block's documents
  of *other chunks* than A's: over the run every document of the input
  serves as B equally often, as in the original, and no B comes from A's
  neighbourhood in the input (a chunk is a stretch of it). A block of one
  chunk has no such document: it uses the negative pool, the documents
  drawn from the whole input during the scan.

  Attributes:
    tokenized: the token_cache.TokenizedBlock.
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
