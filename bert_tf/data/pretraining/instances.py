"""The pairing rule of original BERT pretraining data: documents -> (A, B) pairs.

Pure functions over token ids with an explicit `random.Random`: exact for a
seed, testable without TensorFlow. They state the algorithm of
google-research/bert's `create_pretraining_data.py`:

* `pair_spans_from_document` cuts a document into (A, B, is_random_next)
  pairs: sentences accumulate up to a target length (max_seq_length - 3, or a
  random shorter one with probability short_seq_prob), A takes a random
  prefix of them, and B is either the rest or (probability 0.5, or always for
  a one-sentence chunk) a run of sentences from another document, in which
  case the unused sentences of the chunk are put back. The other document is
  uniform over all documents but A's own: those of the window passed in, and
  those outside it, which a `Negatives` sample stands for.
  It works on sentences laid end to end in one token array: it gives token
  ranges, never copying a token (the writer's form).
* `truncate_pair_at_random_ends` trims the longer side, one token at a time, from a random
  end (`truncation`: how many tokens from each end).
* `build_instance` lays out [CLS] A [SEP] B [SEP].

Documents are lists of sentences; sentences are lists of token ids. The
masking rule applied to the instances is in bert_tf.data.pretraining.masking.
"""

import bisect
import collections
import dataclasses
import itertools

_chain = itertools.chain


class Pair(collections.namedtuple(
    "Pair", ["tokens_a", "tokens_b", "is_random_next", "random_from_same_document"])):
  """One (A, B) pair. random_from_same_document: a random B that came from
  A's own document, which happens only when no other document exists."""
  __slots__ = ()


@dataclasses.dataclass(frozen=True)
class Negatives:
  """Where random B segments come from outside the window of documents.

  Attributes:
    segments: sequence of (sentences, num_starts): sentences a non-empty
      list of sentences (lists of int ids) of one document outside the
      window, B starting at a uniform one of the first num_starts (>= 1) and
      running on as far as it needs. A uniform sample of the documents
      outside the window, each entry a stretch of its document in which a
      uniform start is uniform over the document's sentences. Any object
      with len() and [] serves (the writer's is backed by arrays).
    num_documents: how many documents lie outside the window; with the
      window's own, it sets the share of random Bs drawn from `segments`, so
      that B's document is uniform over all documents but A's, as in the
      original, which holds the whole corpus as one window.
  """
  segments: object = ()
  num_documents: int = 0


NO_NEGATIVES = Negatives()


def truncation(len_a, len_b, max_num_tokens, rng):
  """How `truncate_pair_at_random_ends` trims sides of `len_a` and `len_b` tokens.

  The rule: while too long, the longer side (B on a tie) loses one token,
  from its front or its back with probability 0.5 each (trimming only one
  end would bias the model towards text near sentence starts or ends).
  Which side loses each token depends only on the lengths, so the number of
  tokens each side loses is computed directly, and how many of them come off
  the front is one binomial draw per side (A's, then B's; none for a side
  that keeps all its tokens): the same distribution as trimming token by
  token, without a loop over every trimmed token.

  Returns:
    (front_a, back_a, front_b, back_b): tokens to drop from each end.
  """
  excess = len_a + len_b - max_num_tokens
  if excess <= 0:
    return 0, 0, 0, 0
  gap = abs(len_a - len_b)
  if excess <= gap:
    trim_a, trim_b = (excess, 0) if len_a > len_b else (0, excess)
  else:
    # Down to equal lengths, then alternately B, A, B, ...
    rest = excess - gap
    trim_a = (gap if len_a > len_b else 0) + rest // 2
    trim_b = (gap if len_b > len_a else 0) + rest - rest // 2
  front_a = bin(rng.getrandbits(trim_a)).count("1") if trim_a else 0
  front_b = bin(rng.getrandbits(trim_b)).count("1") if trim_b else 0
  return front_a, trim_a - front_a, front_b, trim_b - front_b


def truncate_pair_at_random_ends(tokens_a, tokens_b, max_num_tokens, rng):
  """Trims `tokens_a`/`tokens_b` in place until together they fit, by the
  rule of `truncation`."""
  front_a, back_a, front_b, back_b = truncation(len(tokens_a), len(tokens_b), max_num_tokens, rng)
  for tokens, front, back in ((tokens_a, front_a, back_a), (tokens_b, front_b, back_b)):
    if front or back:
      del tokens[:front]
      del tokens[len(tokens) - back:]


def random_b_source(documents, document_index, negatives, rng):
  """The sentences a random B starts from, for a pair of document `document_index`.

  B's document is uniform over every document but A's: one of the window's
  others with probability others / (others + negatives.num_documents), else
  a uniform draw from `negatives.segments`. Within the window, the
  original's rule: ten uniform tries for another document; should all ten
  hit A's, a uniform other one (the original would then take A's own).

  Returns:
    (sentences, start, same_document): B is a run of sentences[start:];
    same_document is True only when there is no other document at all (a
    window of one document and no negatives), and then A's document serves.
  """
  others = len(documents) - 1
  segments = negatives.segments
  if (len(segments) and negatives.num_documents > 0
      and rng.random() * (others + negatives.num_documents) >= others):
    sentences, num_starts = segments[rng.randrange(len(segments))]
    return sentences, rng.randrange(num_starts), False
  for _ in range(10):
    random_index = rng.randint(0, len(documents) - 1)
    if random_index != document_index:
      break
  else:
    if others == 0:
      random_document = documents[document_index]
      return random_document, rng.randint(0, len(random_document) - 1), True
    random_index = rng.randrange(others)
    random_index += random_index >= document_index
  random_document = documents[random_index]
  return random_document, rng.randint(0, len(random_document) - 1), False


def pair_spans_from_document(documents, document_index, sentence_starts, max_seq_length,
                             short_seq_prob, rng, negatives=NO_NEGATIVES):
  """The pairing rule on sentences laid end to end: one document -> pairs of
  token ranges (the tokens themselves are never touched).

  Sentences accumulate into a chunk up to the target length (pair_lengths);
  A takes a random prefix of the chunk's sentences; B is the rest of the
  chunk, or (probability 0.5, or always for a one-sentence chunk) a run of
  sentences from another document (random_b_source) that stops once it
  reaches the length A leaves of the target, the chunk's sentences after A
  then starting the next chunk; truncation (`truncation`) trims the pair.

  Args:
    documents: sequence of ranges of sentence ids, one per document of the
      window, A's among them; a document's sentences have consecutive ids.
    document_index: which document to cut.
    sentence_starts: list of int, token offset of each sentence id in the
      flat token array, and one more entry (the end of the last sentence):
      sentence k is tokens [sentence_starts[k], sentence_starts[k + 1]),
      never empty.
    max_seq_length: int, length of [CLS] A [SEP] B [SEP] after truncation.
    short_seq_prob: probability of a shorter random target length, so the
      model also sees the short sequences of fine-tuning.
    rng: random.Random.
    negatives: Negatives whose segments are (range of sentence ids,
      num_starts), in the same table.
  Returns:
    list of (a_start, a_end, b_start, b_end, is_random_next,
    random_from_same_document) tuples: A is tokens [a_start, a_end), B
    tokens [b_start, b_end) of the flat token array, both non-empty and
    together at most max_seq_length - 3 long; the flags are bool.
  """
  document = documents[document_index]
  max_num_tokens, target_length = pair_lengths(max_seq_length, short_seq_prob, rng)
  starts = sentence_starts
  randint, random = rng.randint, rng.random
  pairs = []
  first, doc_end = document[0], document[-1] + 1
  while first < doc_end:
    # The chunk: sentences [first, end), the shortest run reaching the
    # target, or the rest of the document.
    end = bisect.bisect_left(starts, starts[first] + target_length, first + 1, doc_end)
    a_end = randint(first + 1, end - 1) if end - first >= 2 else first + 1
    a_start, a_stop = starts[first], starts[a_end]
    if end - first == 1 or random() < 0.5:
      is_random_next = True
      source, k, same_document = random_b_source(documents, document_index, negatives, rng)
      k = source[k]
      # B runs from sentence k until it reaches the length A leaves.
      b_end = bisect.bisect_left(starts, starts[k] + target_length - (a_stop - a_start), k + 1,
                                 source[-1] + 1)
      b_start, b_stop = starts[k], starts[b_end]
      # The sentences of the chunk that B did not use are not wasted: the
      # next chunk starts with them.
      end = a_end
    else:
      is_random_next = same_document = False
      b_start, b_stop = a_stop, starts[end]
    front_a, back_a, front_b, back_b = truncation(
        a_stop - a_start, b_stop - b_start, max_num_tokens, rng)
    pairs.append((a_start + front_a, a_stop - back_a, b_start + front_b, b_stop - back_b,
                  is_random_next, same_document))
    first = end
  return pairs


def pair_lengths(max_seq_length, short_seq_prob, rng):
  """(max_num_tokens, target_length) of one document's pairs: the room for A
  and B in [CLS] A [SEP] B [SEP], and the length a chunk aims at: that room,
  or with probability short_seq_prob a random one in [2, max_num_tokens] (one
  draw of rng), so the model also sees the short sequences of fine-tuning."""
  max_num_tokens = max_seq_length - 3
  target_length = max_num_tokens
  if rng.random() < short_seq_prob:
    target_length = rng.randint(2, max_num_tokens)
  return max_num_tokens, target_length


def build_instance(tokens_a, tokens_b, cls_id, sep_id):
  """[CLS] A [SEP] B [SEP] and the number of segment-0 tokens."""
  return [cls_id] + tokens_a + [sep_id] + tokens_b + [sep_id], len(tokens_a) + 2


# ---------------------------------------------------------------------------
# ALBERT's sentence order prediction (SOP) and RoBERTa's sentence packing
# ---------------------------------------------------------------------------

def create_sop_pairs_from_document(document, max_seq_length, short_seq_prob, rng):
  """Cuts one document into sentence pairs for sentence order prediction.

  ALBERT's rule (google-research/albert, create_pretraining_data.py with its
  default random_next_sentence=False): the chunking, target length and
  choice of A's end are exactly `pair_spans_from_document`'s; B is always
  the rest of the chunk, and with probability 0.5 A and B are swapped
  (is_random_next=True: the label, 1 = swapped, ALBERT's convention under
  the name next_sentence_labels). No other document is ever used.

  Where we differ: ALBERT gives a chunk of a single sentence (a document's
  last leftover sentence, a one-sentence document, one sentence longer than
  the target) a B from a random document, labelled 1 as if swapped, so some
  "swapped" pairs are really NSP negatives. We skip such a chunk instead:
  a pair of one document needs two segments, and splitting inside the
  sentence would make the order task one of word order inside a sentence
  (an easier, different signal). The cost is the text of those chunks in
  this pass; a corpus of only one-sentence documents yields nothing (the
  writer then stops with an error naming the flag).

  Args:
    document: list of non-empty lists of int ids (sentences).
    max_seq_length: int, length of [CLS] A [SEP] B [SEP] after truncation.
    short_seq_prob: probability of a shorter random target length.
    rng: random.Random.
  Returns:
    list of Pair (random_from_same_document False), A and B non-empty,
    len(A) + len(B) <= max_seq_length - 3; is_random_next True when swapped.
  """
  max_num_tokens, target_length = pair_lengths(max_seq_length, short_seq_prob, rng)
  pairs = []
  chunk = []
  chunk_length = 0
  for i, sentence in enumerate(document):
    chunk.append(sentence)
    chunk_length += len(sentence)
    if i == len(document) - 1 or chunk_length >= target_length:
      if len(chunk) >= 2:
        a_end = rng.randint(1, len(chunk) - 1)
        tokens_a = list(_chain(*chunk[:a_end]))
        tokens_b = list(_chain(*chunk[a_end:]))
        swapped = rng.random() < 0.5
        if swapped:
          tokens_a, tokens_b = tokens_b, tokens_a
        truncate_pair_at_random_ends(tokens_a, tokens_b, max_num_tokens, rng)
        pairs.append(Pair(tokens_a, tokens_b, swapped, False))
      chunk = []
      chunk_length = 0
  return pairs


def sentence_pairs_from_document(documents, document_index, max_seq_length, rng):
  """RoBERTa's SENTENCE-PAIR input (Liu et al. 2019, section 4.2): each
  input a pair of natural sentences, with next-sentence prediction.

  Each sentence of the document that has a next one is an A; with
  probability 0.5 its B is that next sentence (is_random_next False), else
  one sentence of another document (`random_b_source`: uniform over the
  others, a uniform sentence of it). A pair longer than max_seq_length - 3
  tokens is trimmed at random ends (`truncate_pair_at_random_ends`). A
  document of one sentence gives no pair (it has no next sentence, so it
  would give only negatives). The pairs are much shorter than
  max_seq_length; the paper raised the batch size to keep the tokens per
  batch.

  Args:
    documents: list of documents, each a list of non-empty lists of int ids
      (sentences); B's documents are drawn from these.
    document_index: the document whose sentences are the As.
    max_seq_length: int, the length of [CLS] A [SEP] B [SEP] at most.
    rng: random.Random.
  Returns:
    list of Pair, A one sentence and B one sentence (both copies), both
    non-empty; random_from_same_document only when there is no other
    document.
  """
  document = documents[document_index]
  max_num_tokens = max_seq_length - 3
  pairs = []
  for i in range(len(document) - 1):
    tokens_a = list(document[i])
    is_random = rng.random() < 0.5
    same_document = False
    if is_random:
      source, start, same_document = random_b_source(documents, document_index, NO_NEGATIVES,
                                                     rng)
      tokens_b = list(source[start])
    else:
      tokens_b = list(document[i + 1])
    truncate_pair_at_random_ends(tokens_a, tokens_b, max_num_tokens, rng)
    pairs.append(Pair(tokens_a, tokens_b, is_random, same_document))
  return pairs


def pack_sentences(documents, max_seq_length, rng, cross_documents=True, sep_id=None):
  """RoBERTa's FULL-SENTENCES (cross_documents) / DOC-SENTENCES packing.

  Whole sentences are packed contiguously, in order, up to
  max_seq_length - 2 tokens (room for [CLS] ... [SEP]). With
  cross_documents, packing runs on into the next document with one extra
  `sep_id` between the two documents (it counts towards the length); an
  instance that starts a document starts with its first sentence, never
  with a separator. Without it, an instance never spans two documents, so
  the last instance of a document is shorter. A sentence longer than the
  limit is cut to it, from its front or back at random token by token, as
  the original truncates (`truncate_pair_at_random_ends` with an empty B), and fills an
  instance alone.

  Unlike RoBERTa (which packs its whole corpus in order), the order of the
  documents is the caller's: the writer packs one block's documents in that
  pass's shuffled order, so an instance crosses only between documents of
  one block, and each dupe_factor pass packs differently. short_seq_prob is
  not used: RoBERTa's inputs are always as full as the sentences allow.

  Args:
    documents: list of documents (lists of non-empty lists of int ids).
    max_seq_length: int.
    rng: random.Random (drawn from only to cut over-long sentences).
    cross_documents: bool, FULL-SENTENCES (True) or DOC-SENTENCES (False).
    sep_id: int, [SEP]'s id (needed with cross_documents).
  Returns:
    list of lists of int ids, each non-empty and at most max_seq_length - 2
    long, without [CLS]/[SEP] around them (see build_single).
  """
  limit = max_seq_length - 2
  packed = []
  current = []
  for document in documents:
    if not cross_documents and current:
      packed.append(current)
      current = []
    for k, sentence in enumerate(document):
      if len(sentence) > limit:
        sentence = list(sentence)
        truncate_pair_at_random_ends(sentence, [], limit, rng)
      separator = cross_documents and k == 0 and bool(current)
      if len(current) + separator + len(sentence) > limit:
        packed.append(current)
        current = []
        separator = False
      if separator:
        current.append(sep_id)
      current.extend(sentence)
  if current:
    packed.append(current)
  return packed


def build_single(tokens, cls_id, sep_id):
  """[CLS] tokens [SEP] and its number of segment-0 tokens (all of them)."""
  ids = [cls_id] + tokens + [sep_id]
  return ids, len(ids)
