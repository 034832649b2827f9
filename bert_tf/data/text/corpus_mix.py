"""Two corpora of different topics as one, document by document: a corpus
on which a change of topic is there to be found (what NSP's random
negatives give away).

`interleave` mixes the documents of two corpora in the original format
(one sentence a line, a blank line between documents), the first
`documents` of each, in a seeded random order: every stretch of the result
holds both topics, and so does every N-th document (the held-out split).
Strict alternation would not do: with an even --heldout_every every
held-out document would come from one corpus, and the held-out pairs would
hold no change of topic at all.
"""

import random

from bert_tf.io import file_io as files
from bert_tf.data.text import split


def interleave(first, second, documents=None, seed=12345):
  """The first `documents` (default: as many as the shorter has) of each
  list, in a random order of `seed` (each list's own order kept)."""
  count = min(len(first), len(second)) if documents is None else documents
  if count > min(len(first), len(second)):
    raise ValueError(f"--mix_documents={count}: the corpora hold {len(first)} and "
                     f"{len(second)} documents")
  sources = [0] * count + [1] * count
  random.Random(seed).shuffle(sources)
  queues = [iter(first[:count]), iter(second[:count])]
  return [next(queues[k]) for k in sources]


def mix_into(text, other_path, output, documents=None):
  """Writes `text`'s documents interleaved with those of the corpus file
  `other_path` to `output` (atomically, through file_io); returns (documents
  written, bytes)."""
  if not files.exists(other_path):
    raise FileNotFoundError(f"--mix_with={other_path}: no such file")
  with files.open_file(other_path, "r") as f:
    other = split.documents_of(f.read())
  mixed = interleave(split.documents_of(text), other, documents)
  data = ("\n\n".join(mixed) + "\n").encode("utf-8")
  files.atomic_write(output, data)
  return len(mixed), len(data)
