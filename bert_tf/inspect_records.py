r"""Reads pretraining TFRecords back and reports what is in them.

Checks every record against the schema and computes, from the records alone
(not the manifest), the figures that say whether the data is what BERT
pretraining expects: instances, mean real tokens, predictions per instance,
the [MASK] / kept / random split, the share of random next sentences, the
share of short instances. Works on records of the original script too.

  python -m bert_tf.inspect_records --input_file='out/*.tfrecord' \
    --vocab_file=vocab.txt
"""

import json

from absl import app
from absl import flags

from bert_tf import cli
from bert_tf.data.stats import record_statistics

FLAGS = flags.FLAGS


def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  flags.DEFINE_string("input_file", None, "Records to inspect (comma-separated globs).",
                      flag_values=flag_values)
  flags.DEFINE_string("vocab_file", None, "Vocab the records were written with (for the [MASK] id).",
                      flag_values=flag_values)


def main(argv):
  del argv
  for name in ("input_file", "vocab_file"):
    if not FLAGS[name].value:
      raise app.UsageError(f"--{name} is required")
  from bert_tf.data import tokenization
  vocab = tokenization.load_vocab(FLAGS.vocab_file)
  stats = record_statistics(FLAGS.input_file, vocab.mask_id)
  print(json.dumps(stats, indent=1))


def run():
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
