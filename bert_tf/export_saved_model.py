"""Exports a pretrained BERT for serving (and to other checkpoint formats).

  python -m bert_tf.export_saved_model \\
    --bert_config_file=configs/bert_base.json --checkpoint=/tmp/pretrain \\
    --vocab_file=vocab.txt --do_lower_case --export_dir=/tmp/bert_savedmodel

--checkpoint takes a training output directory (its latest checkpoint), a
checkpoint prefix, an original TF1 BERT checkpoint (.../bert_model.ckpt), or
a Hugging Face transformers folder (config.json + model.safetensors; its
config.json and vocab.txt stand in for --bert_config_file and --vocab_file).
Any of --export_dir, --tf1_checkpoint_out, --keras_hub_preset_out and
--hf_out may be given; the checkpoint is read once. See bert_tf/serving/export.py for the signatures.
"""

from absl import app
from absl import flags

from bert_tf import cli
from bert_tf.cli import shared_flags
from bert_tf.serving import export

FLAGS = flags.FLAGS


def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  f = flag_values
  shared_flags.define_model_files(f)
  flags.DEFINE_string(
      "checkpoint", None,
      "Training output directory (latest checkpoint), checkpoint prefix, original "
      "TF1 BERT checkpoint prefix (.../bert_model.ckpt), or transformers folder "
      "(config.json + model.safetensors).", flag_values=f)
  flags.DEFINE_integer(
      "max_seq_length", None,
      "Longest [CLS] ... [SEP] that fill_mask / next_sentence (and the keras-hub "
      "preset's preprocessor) build; longer text is truncated (and flagged). "
      "Default: 128, or max_position_embeddings if smaller.",
      flag_values=f)
  flags.DEFINE_integer("top_k", 5, "Fills that fill_mask returns for each [MASK].", flag_values=f)
  flags.DEFINE_string("export_dir", None, "SavedModel directory to create.", flag_values=f)
  flags.DEFINE_bool(
      "text_signatures", True,
      "Include fill_mask and next_sentence (need tensorflow-text's ops to load). "
      "--notext_signatures gives a SavedModel that stock TF Serving loads.", flag_values=f)
  flags.DEFINE_string(
      "tf1_checkpoint_out", None,
      "Also write the weights under the original TF1 names at this prefix "
      "(.../bert_model.ckpt), with bert_config.json and vocab.txt beside it, as a "
      "released model is laid out.", flag_values=f)
  flags.DEFINE_string(
      "keras_hub_preset_out", None,
      "Also write the encoder + preprocessor (tokenizer, sequence length "
      "--max_seq_length) as a keras-hub preset directory.", flag_values=f)
  flags.DEFINE_string(
      "hf_out", None,
      "Also write a Hugging Face transformers folder (config.json, model.safetensors, "
      "vocab.txt, tokenizer config) that transformers 5 loads as it is: "
      "BertForPreTraining / BertForMaskedLM / AlbertForPreTraining / "
      "ElectraForPreTraining (+ generator/ ElectraForMaskedLM).", flag_values=f)
  flags.DEFINE_bool("overwrite", False, "Replace outputs that exist already.", flag_values=f)


def main(argv):
  del argv
  if not FLAGS.checkpoint:
    raise app.UsageError("--checkpoint is required")
  if not (FLAGS.export_dir or FLAGS.tf1_checkpoint_out or FLAGS.keras_hub_preset_out
          or FLAGS.hf_out):
    raise app.UsageError("nothing to write: give --export_dir, --tf1_checkpoint_out, "
                         "--keras_hub_preset_out or --hf_out")
  cli.note_vocab_not_read(FLAGS)
  from bert_tf.models import hf_checkpoint  # pylint: disable=g-import-not-at-top
  casing = None
  try:  # a transformers folder --checkpoint holds the config and the vocab
    if not FLAGS.spm_model_file:
      _, _, _, casing = hf_checkpoint.model_files(FLAGS.checkpoint, FLAGS.bert_config_file,
                                               FLAGS.vocab_file)
  except ValueError as e:
    raise app.UsageError(str(e)) from None
  overrides = {}
  if casing is not None and not FLAGS["do_lower_case"].present:
    overrides["do_lower_case"] = casing  # the folder's tokenizer's
  options = cli.options_from_flags(export.ExportOptions, FLAGS, **overrides)
  written = export.run_export(options)
  for name, path in written.items():  # once, on stdout (the library logs what it wrote)
    print(f"{name}: {path}")


def run():
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
