"""Builds a BERT-style WordPiece vocabulary from raw text.

    python -m bert_tf.build_vocab --input_file=corpus/*.txt \
        --vocab_file=vocab.txt --vocab_size=30522 --do_lower_case=True

The vocab's layout and the learner are described in bert_tf.data.vocab.
"""

from absl import app
from absl import flags
from absl import logging

from bert_tf import cli
from bert_tf.data.vocab import build_vocab, write_vocab

def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  f = flag_values
  flags.DEFINE_string("input_file", None,
                      "Comma-separated glob(s) of text files, one sentence a line.", flag_values=f)
  flags.DEFINE_string("vocab_file", None, "Output vocab file.", flag_values=f)
  flags.DEFINE_integer("vocab_size", 30522,
                       "Most tokens in the vocab (special and unused included).", flag_values=f)
  flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents.", flag_values=f)
  flags.DEFINE_integer("min_frequency", 1,
                       "Least count of a learned multi-character token.", flag_values=f)
  flags.DEFINE_integer("max_lines", 0, "Read at most this many lines (0: all).", flag_values=f)
  flags.DEFINE_integer("num_unused", 0, "Number of [unused{i}] tokens to reserve.", flag_values=f)
  flags.DEFINE_integer("max_token_length", 50,
                       "Longest learned token, in characters.", flag_values=f)


FLAGS = flags.FLAGS


def main(argv):
  del argv
  if not FLAGS.input_file:
    raise app.UsageError("--input_file is required")
  if not FLAGS.vocab_file:
    raise app.UsageError("--vocab_file is required")
  if FLAGS.vocab_size < 1:
    raise app.UsageError(f"--vocab_size={FLAGS.vocab_size} must be positive")
  if FLAGS.max_lines < 0:
    raise app.UsageError(f"--max_lines={FLAGS.max_lines} must be >= 0")
  tokens = build_vocab(FLAGS.input_file, FLAGS.vocab_size, FLAGS.do_lower_case,
                       min_frequency=FLAGS.min_frequency,
                       max_lines=FLAGS.max_lines or None,
                       num_unused=FLAGS.num_unused,
                       max_token_length=FLAGS.max_token_length)
  write_vocab(tokens, FLAGS.vocab_file)
  logging.info("wrote %d tokens to %s", len(tokens), FLAGS.vocab_file)


def run():
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
