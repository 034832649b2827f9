"""Documents of a corpus in the original format, and its split by document.

The original BERT input format is one sentence a line with a blank line
between documents. `split_corpus` holds out every N-th whole document, so no
held-out sentence, nor its neighbours, is seen in training.
"""

import hashlib

from bert_tf.io import file_io as files


def documents_of(text):
  """The documents of `text` (str): blocks between blank lines, stripped of
  surrounding newlines, empty ones dropped; \\r\\n read as \\n."""
  return [d.strip("\n") for d in text.replace("\r\n", "\n").split("\n\n") if d.strip()]


def split_by_hash(key):
  """"train" (80%), "dev" (10%) or "test" (10%), by the SHA-256 of `key`
  (str): the downstream tasks' deterministic splits."""
  digest = hashlib.sha256(key.encode("utf-8")).digest()
  bucket = int.from_bytes(digest[:8], "big") % 10
  return "test" if bucket == 0 else "dev" if bucket == 1 else "train"


def split_documents(text, every):
  """(train, held-out) lists of the documents of `text`: every `every`-th is
  held out."""
  documents = documents_of(text)
  train = [d for i, d in enumerate(documents) if i % every != every - 1]
  held = [d for i, d in enumerate(documents) if i % every == every - 1]
  return train, held


def split_corpus(corpus, train_path, heldout_path, every=10):
  """Writes every `every`-th document of `corpus` to `heldout_path`, the
  others to `train_path` (each atomically). Returns (train, held-out) counts.

  Raises:
    ValueError: `every` < 2, or too few documents for a held-out one.
  """
  if every < 2:
    raise ValueError(f"--heldout_every={every}: must be at least 2")
  with files.open_file(corpus, "r") as f:
    train, held = split_documents(f.read(), every)
  if not held:
    raise ValueError(
        f"{corpus}: {len(train)} document(s), fewer than --heldout_every={every}, so none "
        "is held out (documents are separated by blank lines)")
  for path, docs in ((train_path, train), (heldout_path, held)):
    files.atomic_write(path, "\n\n".join(docs) + "\n")
  return len(train), len(held)
