"""Two corpora of different topics as one, document by document: a corpus
on which a change of topic is there to be found (what NSP's random
negatives give away).

`interleave` alternates the documents of two corpora in the original
format (one sentence a line, a blank line between documents), taking the
first `documents` of each, so every stretch of the result holds both
topics and the split's every N-th document draws from both alike.
"""

import tensorflow as tf

from bert_tf import file_io as files
from bert_tf.data import split


def interleave(first, second, documents=None):
  """[first[0], second[0], first[1], second[1], ...] over the first
  `documents` (default: as many as the shorter has) of each list."""
  count = min(len(first), len(second)) if documents is None else documents
  if count > min(len(first), len(second)):
    raise ValueError(f"--mix_documents={count}: the corpora hold {len(first)} and "
                     f"{len(second)} documents")
  return [d for pair in zip(first[:count], second[:count]) for d in pair]


def mix_into(text, other_path, output, documents=None):
  """Writes `text`'s documents interleaved with those of the corpus file
  `other_path` to `output` (atomically, through gfile); returns (documents
  written, bytes)."""
  if not tf.io.gfile.exists(other_path):
    raise FileNotFoundError(f"--mix_with={other_path}: no such file")
  with tf.io.gfile.GFile(other_path, "r") as f:
    other = split.documents_of(f.read())
  mixed = interleave(split.documents_of(text), other, documents)
  data = ("\n\n".join(mixed) + "\n").encode("utf-8")
  files.atomic_write(output, data)
  return len(mixed), len(data)
