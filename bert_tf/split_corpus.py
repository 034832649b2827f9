"""Splits a corpus into training and held-out text by document.

    python -m bert_tf.split_corpus --input_file=corpus.txt \\
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
from bert_tf.data.text.split import split_corpus, split_documents  # noqa: F401  (the library)

FLAGS = flags.FLAGS


def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  f = flag_values
  flags.DEFINE_string("input_file", None, "The corpus: one text file.", flag_values=f)
  flags.DEFINE_string("train_file", None, "Output: the training documents.", flag_values=f)
  flags.DEFINE_string("heldout_file", None, "Output: the held-out documents.", flag_values=f)
  flags.DEFINE_integer("heldout_every", 10,
                       "Every N-th document is held out (10: a tenth).", flag_values=f)


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
