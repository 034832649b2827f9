"""Writes the bundled sample corpus: the Python standard library's docstrings,
one sentence a line and a blank line between modules, in the original BERT
input format (bert_tf.data.stdlib_corpus says how).

    python -m bert_tf.sample_corpus --output data/sample_corpus.txt
"""

from absl import app
from absl import flags

from bert_tf import cli
from bert_tf.data.stdlib_corpus import write_corpus

FLAGS = flags.FLAGS


def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  flags.DEFINE_string("output", None, "The corpus file to write.", flag_values=flag_values)


def main(argv):
  del argv
  if not FLAGS.output:
    raise app.UsageError("--output is required")
  docs, lines, size = write_corpus(FLAGS.output)
  print(f"sample corpus: {docs} documents, {lines} sentences, {size / 1e6:.2f} MB -> "
        f"{FLAGS.output}")


def run():
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
