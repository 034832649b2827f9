"""The main job, end to end on the bundled sample corpus (12 to 45 minutes
on 2 loaded CPU cores: README.md):

  sample corpus -> WordPiece vocab -> pretraining records (train + held-out)
  -> train a small BERT (MLM + NSP) -> export a SavedModel -> fill-mask demo

Each stage prints what it did. Every stage is the same library function the
command-line tools call, with small settings.

  python -m bert_tf.quickstart --output_dir=runs/quickstart
"""

import os

from absl import flags
from absl import logging

from bert_tf import cli
from bert_tf.cli import shared_flags

_TINY_CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "configs", "bert_tiny.json")


def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  f = flag_values
  flags.DEFINE_string("output_dir", "runs/quickstart", "Where everything is written.", flag_values=f)
  flags.DEFINE_string("corpus", "data/sample_corpus.txt",
                      "Input text; generated from the Python standard library's docstrings "
                      "(bert_tf.sample_corpus) when the file does not exist.", flag_values=f)
  flags.DEFINE_integer("vocab_size", 8000, "WordPiece vocab size.", flag_values=f)
  flags.DEFINE_string("bert_config_template", _TINY_CONFIG,
                      "Model config; the quickstart sets its vocab_size to the vocab's and its "
                      "max_position_embeddings to --max_seq_length.", flag_values=f)
  flags.DEFINE_integer("train_steps", 6000, "Training steps.", flag_values=f)
  flags.DEFINE_integer("dupe_factor", 20, "Masked copies of the corpus (different masks and pairs).", flag_values=f)
  flags.DEFINE_integer("batch_size", 32, "Training batch size.", flag_values=f)
  flags.DEFINE_integer("max_seq_length", 64,
                       "Tokens per instance ([CLS] A [SEP] B [SEP]); masked-LM predictions "
                       "per instance are 15% of it, rounded up.", flag_values=f)
  shared_flags.define_learning_rate(f, 2e-3)
  shared_flags.define_adam_beta2(f, 0.98)
  flags.DEFINE_float("dropout", 0.0,
                     "hidden_dropout_prob and attention_probs_dropout_prob of the model (the "
                     "template's 0.1 regularizes long runs; a ten-minute run learns faster "
                     "without).", flag_values=f)
  shared_flags.define_jit_compile(f, True)
  flags.DEFINE_bool("overwrite", True, "Start from scratch when output_dir exists.", flag_values=f)


def main(argv):
  del argv
  from bert_tf.cli import quickstart_stages
  quickstart_stages.run_quickstart(cli.options_from_flags(quickstart_stages.QuickstartOptions))


def run():
  logging.set_verbosity(logging.WARNING)
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
