"""The per-block algorithm: each pass over a block's documents pairs (or
packs), masks and serializes all its instances at once; a unit is one pass
over one block, its instances shuffled; BlockProcessor runs units for
either driver."""

import random

from bert_tf.data.pretraining import block_sentences
from bert_tf.data.pretraining import instances
from bert_tf.data.pretraining import masking
from bert_tf.data.records import schema
from bert_tf.data.pretraining import seeds
from bert_tf.data.pretraining import token_cache

HISTOGRAM_BUCKET = 16  # tokens per bucket of the length histogram


class BlockStats:
  """What a block wrote: counts for the manifest.

  sentence_negatives counts the pairs labelled 1: a random B (nsp) or A and
  B swapped (sop); nsp_random_from_same_document the random Bs (nsp only)
  that had to come from A's own document.
  """

  FIELDS = ("documents", "sentences", "instances", "tokens", "predictions",
            "masked", "kept", "random", "sentence_negatives", "nsp_random_from_same_document",
            "undecodable_bytes")
  # Keys of to_dict (the manifest's counts, the shards' stats files) where
  # they differ from the field: the manifest's names stay as they are.
  KEYS = {"sentence_negatives": "nsp_random"}

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
    d = {self.KEYS.get(name, name): getattr(self, name) for name in self.FIELDS}
    d["length_histogram"] = list(self.length_histogram)
    d.update(self.extra)
    return d

  @classmethod
  def from_dict(cls, d):
    stats = cls(len(d["length_histogram"]))
    for name in cls.FIELDS:
      setattr(stats, name, d[cls.KEYS.get(name, name)])
    stats.length_histogram = list(d["length_histogram"])
    return stats


def pass_records(sentences, seed, options, masking_vocab, encoder):
  """One pass of the original algorithm over a block's documents.

  The options pick the variant: sentence pairs with NSP labels (the
  original), with SOP labels, or packed sentences without a label
  (options.sentence_task / packing); masks of single units or n-grams
  (max_ngram), or none at all (dynamic_masking: the pipeline masks).
  Instances go from one stage to the next as padded arrays, each stage
  working on the whole pass at once where its rule allows.

  Args:
    sentences: block_sentences.BlockSentences of the block.
    seed: int, this pass's seed (seeds.pass_seed).
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
    stats.sentence_negatives = int(labels.sum())
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
  if options.packing == "sentence_pair":
    for doc_index in range(len(documents)):
      for pair in instances.sentence_pairs_from_document(documents, doc_index,
                                                         options.max_seq_length, rng):
        ids, num_a = instances.build_instance(pair.tokens_a, pair.tokens_b, cls_id, sep_id)
        sequences.append(ids)
        num_as.append(num_a)
        labels.append(schema.IS_RANDOM if pair.is_random_next else schema.IS_NEXT)
    labels = np.array(labels, np.int64)
  elif options.packing != "segment_pair":
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
        np.random.default_rng(seed), options.replacement)
    return masking.apply_masks_padded(tokens, positions, new, counts), positions, labels, counts
  sequences = [row[:n] for row, n in zip(tokens.tolist(), lengths.tolist())]
  if options.max_ngram > 1:
    masked = [masking.mask_tokens_ngram(
        sequence, options.masked_lm_prob, options.max_predictions_per_seq, masking_vocab, rng,
        do_whole_word_mask=options.do_whole_word_mask, max_ngram=options.max_ngram,
        replacement=options.replacement)[:3]
              for sequence in sequences]
  else:
    masked = [masking.mask_tokens(
        sequence, options.masked_lm_prob, options.max_predictions_per_seq, masking_vocab, rng,
        do_whole_word_mask=True, replacement=options.replacement) for sequence in sequences]
  output, _ = _padded([m[0] for m in masked])
  counts = np.array([len(m[1]) for m in masked], np.int64)
  positions = np.zeros((len(masked), options.max_predictions_per_seq), np.int64)
  labels = np.zeros_like(positions)
  for i, (_, row_positions, row_labels) in enumerate(masked):
    positions[i, :len(row_positions)] = row_positions
    labels[i, :len(row_labels)] = row_labels
  return output, positions, labels, counts


def unit_records(sentences, pass_index, options, masking_vocab, encoder):
  """One unit: pass `pass_index` over a block, its instances shuffled.

  The block's documents, sentences and undecodable bytes are counted in its
  pass-0 unit (a block counts them once).
  """
  index = sentences.tokenized.index
  records, stats = pass_records(sentences, seeds.pass_seed(options.random_seed, index, pass_index),
                                options, masking_vocab, encoder)
  random.Random(seeds.unit_seed(options.random_seed, index, pass_index)).shuffle(records)
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
    self._sentences = None  # block_sentences.BlockSentences of the last block seen

  def tokenize(self, block):
    return token_cache.tokenize_block(block, self.tokenizer, self.options.decode_errors)

  def unit(self, tokenized, pass_index):
    """(records, stats) of pass `pass_index` over `tokenized`."""
    if self._sentences is None or self._sentences.tokenized.index != tokenized.index:
      self._sentences = block_sentences.BlockSentences(tokenized, self.negative_pool,
                                                       self.whole_input)
    return unit_records(self._sentences, pass_index, self.options, self.masking_vocab,
                        self.encoder)

  def __call__(self, block):
    """[(pass index, records, stats)] of every pass over `block`."""
    tokenized = self.tokenize(block)
    return [(p,) + self.unit(tokenized, p) for p in range(self.options.dupe_factor)]
