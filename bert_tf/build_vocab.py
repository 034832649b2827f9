"""Builds a BERT-style WordPiece vocabulary from raw text, and the model
config that goes with it.

    python -m bert_tf.build_vocab --input_file=corpus/*.txt \\
        --vocab_file=vocab.txt --vocab_size=30522 --do_lower_case=True \\
        --bert_config_template=configs/bert_base.json --bert_config_out=bert_config.json

With --spm_model_file=30k-clean.model instead of --vocab_file it trains an
ALBERT-style SentencePiece model (google-research/albert's spm_train settings;
bert_tf.data.tokenizers.sentencepiece_learning) for create_pretraining_data
--spm_model_file.

A small corpus has fewer distinct tokens than --vocab_size asks for; the vocab
is then smaller, and the model's vocab_size must be its real size:
--bert_config_out writes a copy of --bert_config_template with that size.
The vocab's layout and the learner are described in bert_tf.data.tokenizers.vocab_learning.
"""

from absl import app
from absl import flags
from absl import logging

from bert_tf import cli
from bert_tf.cli import shared_flags
from bert_tf.data.tokenizers.vocab_learning import build_vocab, write_vocab
from bert_tf.models.config import BertConfig
from bert_tf.models.config import write_bert_config


def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  f = flag_values
  flags.DEFINE_string("input_file", None,
                      "Comma-separated glob(s) of text files, one sentence a line.", flag_values=f)
  flags.DEFINE_string("vocab_file", None, "Output vocab file.", flag_values=f)
  flags.DEFINE_string("spm_model_file", None, "Instead of --vocab_file: train a SentencePiece "
                      "model (ALBERT's settings) and write it here (.vocab beside it).",
                      flag_values=f)
  flags.DEFINE_integer("vocab_size", 30522,
                       "Most tokens in the vocab (special and unused included).", flag_values=f)
  shared_flags.define_do_lower_case(f)
  flags.DEFINE_integer("min_frequency", 1,
                       "Least count of a learned multi-character token.", flag_values=f)
  flags.DEFINE_integer("max_lines", 0, "Read at most this many lines (0: all).", flag_values=f)
  flags.DEFINE_integer("num_unused", 0, "Number of [unused{i}] tokens to reserve.", flag_values=f)
  flags.DEFINE_integer("max_token_length", 50,
                       "Longest learned token, in characters.", flag_values=f)
  flags.DEFINE_string("bert_config_template", None,
                      "A bert_config.json (e.g. configs/bert_tiny.json) to copy to "
                      "--bert_config_out with vocab_size set to the built vocab's size.",
                      flag_values=f)
  flags.DEFINE_string("bert_config_out", None,
                      "Where to write that config (with --bert_config_template).", flag_values=f)


FLAGS = flags.FLAGS


def main(argv):
  del argv
  if not FLAGS.input_file:
    raise app.UsageError("--input_file is required")
  if bool(FLAGS.vocab_file) == bool(FLAGS.spm_model_file):
    raise app.UsageError("give one of --vocab_file (WordPiece) and --spm_model_file "
                         "(SentencePiece)")
  if FLAGS.vocab_size < 1:
    raise app.UsageError(f"--vocab_size={FLAGS.vocab_size} must be positive")
  if FLAGS.max_lines < 0:
    raise app.UsageError(f"--max_lines={FLAGS.max_lines} must be >= 0")
  if bool(FLAGS.bert_config_template) != bool(FLAGS.bert_config_out):
    raise app.UsageError("--bert_config_template and --bert_config_out go together")
  if FLAGS.bert_config_template:  # a bad template fails now, not after the vocab is built
    try:
      BertConfig.from_json_file(FLAGS.bert_config_template)
    except (ValueError, OSError) as e:
      raise app.UsageError(f"--bert_config_template: {e}") from None
  if FLAGS.spm_model_file:
    from bert_tf.data.tokenizers import sentencepiece_learning  # pylint: disable=g-import-not-at-top
    size = sentencepiece_learning.train_sentencepiece(
        FLAGS.input_file, FLAGS.spm_model_file, FLAGS.vocab_size, FLAGS.do_lower_case,
        max_lines=FLAGS.max_lines or None).vocab.size
    if FLAGS.bert_config_out:
      write_bert_config(FLAGS.bert_config_template, size, FLAGS.bert_config_out)
    return
  tokens = build_vocab(FLAGS.input_file, FLAGS.vocab_size, FLAGS.do_lower_case,
                       min_frequency=FLAGS.min_frequency,
                       max_lines=FLAGS.max_lines or None,
                       num_unused=FLAGS.num_unused,
                       max_token_length=FLAGS.max_token_length)
  write_vocab(tokens, FLAGS.vocab_file)
  logging.info("wrote %d tokens to %s", len(tokens), FLAGS.vocab_file)
  if FLAGS.bert_config_out:
    write_bert_config(FLAGS.bert_config_template, len(tokens), FLAGS.bert_config_out)
    logging.info("wrote %s with vocab_size=%d to %s", FLAGS.bert_config_template, len(tokens),
                 FLAGS.bert_config_out)
  elif len(tokens) < FLAGS.vocab_size:
    logging.warning("the vocab has %d tokens, fewer than --vocab_size=%d: use vocab_size=%d in "
                    "the model's bert_config.json (--bert_config_template and "
                    "--bert_config_out write one)", len(tokens), FLAGS.vocab_size, len(tokens))


def run():
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
