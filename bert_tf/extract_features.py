"""Writes per-token encoder hidden states of text as JSON lines: the original
google-research/bert extract_features.py, for any encoder bert_tf reads.

    python -m bert_tf.extract_features --input_file=lines.txt \\
      --output_file=features.jsonl --bert_config_file=model/bert_config.json \\
      --init_checkpoint=model --vocab_file=model/vocab.txt --layers=-1,-2,-3,-4

One example a line (`text_a ||| text_b` for a pair); each output line is
{"linex_index": i, "features": [{"token": ..., "layers": [{"index": -1,
"values": [...]}, ...]}, ...]} with every token, [CLS] and [SEP] included,
values rounded to 6 decimals (see bert_tf/downstream/features/extract.py). The output
file appears whole or not at all. --init_checkpoint takes a bert_tf run
directory or checkpoint, an original TF1 checkpoint, a keras-hub preset
directory or a transformers folder (which also gives the config and vocab);
an ALBERT model's SentencePiece model is --spm_model_file, in the place of
--vocab_file.
"""

from absl import app
from absl import flags
from absl import logging

from bert_tf import cli
from bert_tf.cli import shared_flags

FLAGS = flags.FLAGS
# The task kind (bert_tf/downstream/registry.py) this tool runs names it.
TOOL = "extract_features"


def define_flags(flag_values):
  """The tool's flags, as the original's."""
  f = flag_values
  flags.DEFINE_string("input_file", None, "Text, one example a line; `A ||| B` is a pair.",
                      flag_values=f)
  flags.DEFINE_string("output_file", None, "JSON lines, one per input line.", flag_values=f)
  flags.DEFINE_string("layers", "-1,-2,-3,-4", "Comma-separated layer indexes (-1: the last "
                      "transformer layer).", flag_values=f)
  shared_flags.define_model_files(f)
  shared_flags.define_encoder_checkpoint(f)
  flags.DEFINE_integer("max_seq_length", 128, "[CLS] A [SEP] B [SEP] length; longer input "
                       "is cut as the original (longer side first).", flag_values=f)
  flags.DEFINE_integer("batch_size", 32, "Examples per forward pass.", flag_values=f)


def main(argv):
  del argv
  for name in ("input_file", "output_file", "init_checkpoint"):
    if not FLAGS[name].value:
      raise app.UsageError(f"--{name} is required")
  from bert_tf.downstream import registry  # pylint: disable=g-import-not-at-top
  kind = registry.for_tool(TOOL)
  bert_config, vocab_file, spm_model_file, casing = cli.model_files(FLAGS)
  values = {name: FLAGS[name].value for name in (
      "input_file", "output_file", "init_checkpoint", "do_lower_case", "layers",
      "max_seq_length", "batch_size")}
  values.update(vocab_file=vocab_file or "", spm_model_file=spm_model_file or "")
  if casing is not None:  # a transformers folder's tokenizer's
    values["do_lower_case"] = casing
  config = kind.config_for(values)
  logging.set_verbosity(logging.INFO)
  results = kind.run(config, bert_config)
  print("\n".join(kind.summary_lines(config, results)))
  return 0


def run():
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
