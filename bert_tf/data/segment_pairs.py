"""Held-out segment pairs built like pretraining pairs, for the sentence
heads and the frozen linear probes of compare_objectives.

The pretraining writer (bert_tf.data.pretraining.instances) pairs a segment A of whole
sentences with a segment B, together up to max_seq_length - 3 tokens. These
pairs are built the same way from held-out documents (token ids of
sentences), with negatives of three kinds:

  nsp_random    B is the rest of A's text (positive), or text from another,
                random document (negative): BERT's NSP pairs. A change of
                topic gives most negatives away.
  nsp_same_doc  negatives from A's own document, starting at least two
                sentences away from A's text: topic no longer tells them
                apart, only coherence does. (B starts a sentence or more
                after the end of A's text, or ends a sentence or more
                before A.)
  sop           A and B in order (positive) or swapped (negative): ALBERT's.

Each pair is positive or negative with probability 1/2. Anchors are
non-overlapping chunks of consecutive sentences that reach the length,
cut at a random sentence boundary into A and B, as the writer cuts them
(one chunk's A and B need at least two sentences). A pair longer than the
length is cut in its longer segment, A from the front and B from the
back (the writer cuts from random ends; these cuts keep the boundary
between A and B, which the heads judge). Everything is a pure
function of the documents, the length and the seed.

Labels follow the records: 0 is the natural pair (B follows A, in order),
1 the negative (NSP's "random", SOP's "swapped"), so a head's class 0 reads
the same for NSP and SOP heads.
"""

import random

from bert_tf.data import pair_tasks

TASKS = pair_tasks.TASKS  # the same three tasks as the sentence-level pair tasks


def _chunks(document, max_tokens, rng):
  """Non-overlapping (start, end) sentence ranges of `document` (a list of
  token-id lists) of at least two sentences, each filled as the writer
  fills its chunks: sentences are added until the target length is reached
  (the pair is then cut to max_tokens, so natural pairs are as long as
  negatives, as in pretraining); the target is max_tokens, or one time in
  ten a random length 2..max_tokens (the writer's short_seq_prob)."""
  chunks, start = [], 0
  while start < len(document) - 1:
    target = rng.randint(2, max_tokens) if rng.random() < 0.1 else max_tokens
    end, length = start, 0
    while end < len(document) and (end - start < 2 or length < target):
      length += len(document[end])
      end += 1
    if end - start >= 2:
      chunks.append((start, end))
    start = end
  return chunks


def _fill(document, start, want, limit=None):
  """Tokens of `document` from sentence `start` on, whole sentences before
  sentence `limit` (default: the end), until `want` tokens are reached (at
  least one sentence). (tokens, end)."""
  limit = len(document) if limit is None else limit
  tokens, end = [], start
  while end < limit and (not tokens or len(tokens) < want):
    tokens.extend(document[end])
    end += 1
  return tokens, end


def _truncate(a, b, max_tokens):
  """Cuts the longer of a and b until both fit: A from its front, B from
  its back, so the boundary between them stays."""
  while len(a) + len(b) > max_tokens:
    if len(a) > len(b):
      a.pop(0)
    else:
      b.pop()


def segment_pairs(documents, task, max_tokens, seed=12345):
  """The pairs of one task over held-out `documents`.

  Args:
    documents: list of documents, each a list of sentences as lists of
      token ids (no [CLS]/[SEP]).
    task: one of TASKS.
    max_tokens: tokens of A and B together (max_seq_length - 3).
    seed: int; the same inputs give the same pairs.

  Returns:
    list of (document index, tokens_a, tokens_b, label): label 0 for the
    natural pair, 1 for the negative. An anchor whose negative cannot be
    drawn (nsp_same_doc in a document too short) gives no pair.

  Raises:
    ValueError: an unknown task, or fewer than two documents for
      nsp_random.
  """
  pair_tasks.check_task(task, len(documents), "segment pair task")
  rng = random.Random(f"{seed}:pairs:{task}")
  pairs = []
  for d, document in enumerate(documents):
    for start, end in _chunks(document, max_tokens, rng):
      cut = rng.randint(start + 1, end - 1)
      a = [t for s in document[start:cut] for t in s]
      b = [t for s in document[cut:end] for t in s]
      label = int(rng.random() < 0.5)
      if label and task == "sop":
        a, b = b, a
      elif label and task == "nsp_random":
        other = rng.randrange(len(documents) - 1)
        other += other >= d  # any document but this one
        source = documents[other]
        b, _ = _fill(source, rng.randrange(len(source)), max_tokens - len(a))
      elif label:
        # nsp_same_doc: B starts after a gap of at least one sentence past
        # A's text (not its continuation), or ends a sentence before it.
        starts = list(range(start - 1)) + list(range(end + 1, len(document)))
        if not starts:
          continue
        j = rng.choice(starts)
        b, _ = _fill(document, j, max_tokens - len(a), limit=start - 1 if j < start else None)
      _truncate(a, b, max_tokens)
      if a and b:
        pairs.append((d, a, b, label))
  return pairs


def split_pairs(pairs, dev_every=5):
  """(train, dev) pairs without the document index, split by document:
  dev holds the pairs of every `dev_every`-th document."""
  train = [p[1:] for p in pairs if p[0] % dev_every != dev_every - 1]
  dev = [p[1:] for p in pairs if p[0] % dev_every == dev_every - 1]
  return train, dev
