"""Splits a corpus into training and held-out text by document.

    python -m bert_tf.split_corpus --input_file=corpus.txt \
        --train_file=train.txt --heldout_file=heldout.txt --heldout_every=10

The input is in the original BERT format: one sentence a line, a blank line
between documents. Every --heldout_every-th document goes to the held-out
file, the others to the training file, in order: whole documents, so no
held-out sentence, nor its neighbours, is seen in training (what the
quickstart evaluates on).
"""

from absl import app
from absl import flags
from absl import logging

from bert_tf import cli

FLAGS = flags.FLAGS


def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  f = flag_values
  flags.DEFINE_string("input_file", None, "The corpus: one text file.", flag_values=f)
  flags.DEFINE_string("train_file", None, "Output: the training documents.", flag_values=f)
  flags.DEFINE_string("heldout_file", None, "Output: the held-out documents.", flag_values=f)
  flags.DEFINE_integer("heldout_every", 10,
                       "Every N-th document is held out (10: a tenth).", flag_values=f)


def split_documents(text, every):
  """(train, held-out) lists of the documents of `text` (str, separated by
  blank lines, stripped of surrounding newlines): every `every`-th is held out."""
  documents = [d.strip("\n") for d in text.replace("\r\n", "\n").split("\n\n") if d.strip()]
  train = [d for i, d in enumerate(documents) if i % every != every - 1]
  held = [d for i, d in enumerate(documents) if i % every == every - 1]
  return train, held


def split_corpus(corpus, train_path, heldout_path, every=10):
  """Writes every `every`-th document of `corpus` to `heldout_path`, the
  others to `train_path` (each atomically). Returns (train, held-out) counts.

  Raises:
    ValueError: `every` < 2, or too few documents for a held-out one.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert_tf.data.files import atomic_write  # pylint: disable=g-import-not-at-top
  if every < 2:
    raise ValueError(f"--heldout_every={every}: must be at least 2")
  with tf.io.gfile.GFile(corpus, "r") as f:
    train, held = split_documents(f.read(), every)
  if not held:
    raise ValueError(
        f"{corpus}: {len(train)} document(s), fewer than --heldout_every={every}, so none "
        "is held out (documents are separated by blank lines)")
  for path, docs in ((train_path, train), (heldout_path, held)):
    atomic_write(path, "\n\n".join(docs) + "\n")
  return len(train), len(held)


def main(argv):
  del argv
  for name in ("input_file", "train_file", "heldout_file"):
    if not FLAGS[name].value:
      raise app.UsageError(f"--{name} is required")
  n_train, n_held = split_corpus(FLAGS.input_file, FLAGS.train_file, FLAGS.heldout_file,
                                 FLAGS.heldout_every)
  logging.info("%d documents -> %s, %d held out -> %s", n_train, FLAGS.train_file, n_held,
               FLAGS.heldout_file)


def run():
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
