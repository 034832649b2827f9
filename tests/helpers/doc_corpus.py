"""The writer tests' corpus: documents whose every token names its document
(doc<d>) or is a letter, with its vocab, and records read back."""

import random

import tensorflow as tf


NUM_DOCS = 40


LETTERS = "abcdefghijklmnopqrstuvwxyz"


SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


VOCAB = (SPECIALS + [".", ","] + [f"doc{d}" for d in range(NUM_DOCS)] + list(LETTERS)
         + ["##" + c for c in LETTERS] + ["##ing"])


TOKEN_ID = {t: i for i, t in enumerate(VOCAB)}


CLS, SEP, MASK = TOKEN_ID["[CLS]"], TOKEN_ID["[SEP]"], TOKEN_ID["[MASK]"]


DOC_OF_ID = {TOKEN_ID[f"doc{d}"]: d for d in range(NUM_DOCS)}


def write_vocab(path):
  path.write_text("".join(t + "\n" for t in VOCAB))
  return str(path)


def document_lines(rng, d, min_sentences=5, max_sentences=20):
  words = [f"doc{d}", f"doc{d}", f"Doc{d}", f"doc{d}s", f"doc{d}ing", "the"]
  return [" ".join(rng.choice(words) for _ in range(rng.randint(3, 15))) + " ."
          for _ in range(rng.randint(min_sentences, max_sentences))]


def write_corpus(path, num_docs=NUM_DOCS, seed=0):
  """One sentence a line, a blank line between documents; returns the documents."""
  rng = random.Random(seed)
  docs = [document_lines(rng, d % NUM_DOCS) for d in range(num_docs)]
  path.write_text("\n\n".join("\n".join(doc) for doc in docs) + "\n")
  return docs


def read_records(paths, compression=None):
  records = []
  for path in paths:
    records.extend(r.numpy() for r in tf.data.TFRecordDataset(path, compression_type=compression))
  return records
