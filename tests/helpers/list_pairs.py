"""The pairing rule on documents given as lists of lists: what the tests
run instance by instance (tests/data/pretraining/test_instances.py, test_passes.py) to
check the writer's form, instances.pair_spans_from_document on one flat
token array."""

from bert_tf.data.pretraining import instances


def create_pairs_from_document(documents, document_index, max_seq_length,
                               short_seq_prob, rng, negatives=instances.NO_NEGATIVES):
  """Cuts one document into sentence pairs for next sentence prediction.

  The rule of instances.pair_spans_from_document, on documents given as lists:
  exactly its pairs (and its draws of rng), with the tokens spelled out.

  Args:
    documents: list of documents (lists of non-empty lists of int ids); the
      window of documents, A's among them (the original's: the whole corpus).
    document_index: which document to cut.
    max_seq_length: int, length of [CLS] A [SEP] B [SEP] after truncation.
    short_seq_prob: probability of a shorter random target length, so the
      model also sees the short sequences of fine-tuning.
    rng: random.Random.
    negatives: instances.Negatives, random B sources outside the window
      (none: the window is the whole input).
  Returns:
    list of instances.Pair, with len(tokens_a) + len(tokens_b) <= max_seq_length - 3,
    both non-empty.
  """
  table = _SentenceTable()
  windows = [table.add(document) for document in documents]
  spans = instances.pair_spans_from_document(
      windows, document_index, table.starts, max_seq_length, short_seq_prob, rng,
      instances.Negatives(_TableSegments(negatives.segments, table), negatives.num_documents))
  tokens = table.tokens
  return [instances.Pair(tokens[a_lo:a_hi], tokens[b_lo:b_hi], bool(is_random), bool(same))
          for a_lo, a_hi, b_lo, b_hi, is_random, same in spans]


class _SentenceTable:
  """Sentences laid end to end: tokens, a flat list of ids, and starts, the
  offset of each sentence's first token (and one past the last)."""

  def __init__(self):
    self.tokens = []
    self.starts = [0]

  def add(self, sentences):
    """Appends sentences (lists of int ids); returns the range of their ids."""
    first = len(self.starts) - 1
    for sentence in sentences:
      self.tokens.extend(sentence)
      self.starts.append(len(self.tokens))
    return range(first, len(self.starts) - 1)


class _TableSegments:
  """Negatives.segments of lists, put into a _SentenceTable as they are drawn."""

  def __init__(self, segments, table):
    self._segments, self._table = segments, table

  def __len__(self):
    return len(self._segments)

  def __getitem__(self, i):
    sentences, num_starts = self._segments[i]
    return self._table.add(sentences), num_starts
