"""Writes the bundled sample corpus: the Python standard library's docstrings,
one sentence a line and a blank line between modules, in the original BERT
input format (bert_tf.data.text.stdlib_corpus says how).

    python -m bert_tf.sample_corpus --output data/sample_corpus.txt

With --mix_with, its documents are mixed with another corpus's (the first
--mix_documents of each, in a seeded random order): a corpus of two clearly different topics, e.g.
Python's docstrings and the King James Bible's documents, on which NSP's
random negatives can be told apart by topic alone (bert_tf.data.text.corpus_mix):

    python -m bert_tf.sample_corpus --output /tmp/topics.txt --mix_with=../shared/corpora/kjv.txt

The docstrings are this Python's, so another Python writes another sample.
--sample=FILE mixes a sample file instead (data/sample_corpus.txt as
the quickstart wrote it, or a copy made on another machine): the mix is a
function of the two files' bytes alone. docs/reproductions.md's corpus is
Python 3.11.7's sample mixed so.
"""

from absl import app
from absl import flags

from bert_tf import cli
from bert_tf.data.text.stdlib_corpus import write_corpus
from bert_tf.io import file_io as files

FLAGS = flags.FLAGS


def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  flags.DEFINE_string("output", None, "The corpus file to write.", flag_values=flag_values)
  flags.DEFINE_string("mix_with", "", "Another corpus (one sentence a line, a blank line "
                      "between documents) whose documents are mixed with the sample's.",
                      flag_values=flag_values)
  flags.DEFINE_string("sample", "", "With --mix_with: a sample corpus file to mix (e.g. "
                      "data/sample_corpus.txt, the bundled one) instead of this Python's "
                      "docstrings.", flag_values=flag_values)
  flags.DEFINE_integer("mix_documents", None, "With --mix_with: the first N documents of "
                       "each (default: as many as the shorter has).", flag_values=flag_values)


def main(argv):
  del argv
  if not FLAGS.output:
    raise app.UsageError("--output is required")
  if FLAGS.sample and not FLAGS.mix_with:
    raise app.UsageError("--sample is read with --mix_with only (without it the sample is "
                         "written from this Python's docstrings)")
  if FLAGS.mix_with:
    from bert_tf.data.text import corpus_mix  # pylint: disable=g-import-not-at-top
    from bert_tf.data.text import stdlib_corpus  # pylint: disable=g-import-not-at-top
    try:
      if FLAGS.sample:
        text = files.read_text(FLAGS.sample, "sample corpus")
      else:
        text, _, _ = stdlib_corpus.corpus_text()
      count, size = corpus_mix.mix_into(text, FLAGS.mix_with, FLAGS.output, FLAGS.mix_documents)
    except (ValueError, FileNotFoundError) as e:
      raise app.UsageError(str(e)) from None
    source = FLAGS.sample or "this Python's docstrings"
    print(f"mixed corpus: {count // 2} sample documents ({source}) mixed with {count // 2} of "
          f"{FLAGS.mix_with}, {size / 1e6:.2f} MB -> {FLAGS.output}")
    return
  docs, lines, size = write_corpus(FLAGS.output)
  print(f"sample corpus: {docs} documents, {lines} sentences, {size / 1e6:.2f} MB -> "
        f"{FLAGS.output}")


def run():
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
