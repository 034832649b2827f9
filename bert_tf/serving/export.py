"""Export of a pretrained BERT, the driver of `bert_tf.export_saved_model`:
read a checkpoint once, write the outputs asked for:

  export_dir            the serving SavedModel (`saved_model`)
  tf1_checkpoint_out    the original TF1 checkpoint layout (`tf1_export`)
  keras_hub_preset_out  a keras-hub preset (`keras_hub_preset`)
  hf_out                a Hugging Face transformers folder (`hf_export`)

The objective the checkpoint records (training.objectives) decides the
network read (a distillation run's student) and the SavedModel's heads and
text signatures.

The checkpoint may be a transformers folder; its config.json then gives the
BertConfig when no bert_config_file is given (a given one must agree), and
its vocab (vocab.txt, or tokenizer.json's WordPiece vocab) when no vocab_file is.
"""

import dataclasses

from bert_tf.io import file_io as files_lib
from bert_tf.data.tokenizers import sentencepiece_vocab
from bert_tf.data.tokenizers import wordpiece_vocab
from bert_tf.models import hf_checkpoint
from bert_tf.serving import hf_export
from bert_tf.serving import keras_hub_preset
from bert_tf.serving import saved_model
from bert_tf.serving import tf1_export
from bert_tf.training import checkpoints
from bert_tf.training import objectives


@dataclasses.dataclass(frozen=True)
class ExportOptions:
  """What `run_export` reads and writes; each output is optional.
  bert_config_file and vocab_file may be None for a transformers folder
  checkpoint (its config.json and vocab.txt)."""
  bert_config_file: str | None
  checkpoint: str
  vocab_file: str | None
  do_lower_case: bool = True
  export_dir: str | None = None
  max_seq_length: int | None = None  # None: saved_model.default_max_seq_length(config)
  top_k: int = 5
  text_signatures: bool = True
  tf1_checkpoint_out: str | None = None
  keras_hub_preset_out: str | None = None
  hf_out: str | None = None
  spm_model_file: str | None = None  # a SentencePiece model (ALBERT's) for vocab_file
  overwrite: bool = False


def run_export(options):
  """Loads the checkpoint once and writes every output `options` asks for.

  Every output is checked for being writable before the (slow) model load, so
  a refused overwrite fails fast.

  Returns:
    dict output name -> path written.
  """
  outputs = {"export_dir": options.export_dir,
             "tf1_checkpoint_out": options.tf1_checkpoint_out,
             "keras_hub_preset_out": options.keras_hub_preset_out,
             "hf_out": options.hf_out}
  outputs = {k: v for k, v in outputs.items() if v}
  if not outputs:
    raise ValueError("nothing to write: give export_dir, tf1_checkpoint_out, "
                     "keras_hub_preset_out or hf_out")
  for name, path in outputs.items():
    paths = (tf1_export.tf1_checkpoint_files(path, options.spm_model_file)
             if name == "tf1_checkpoint_out" else [path])
    for p in paths:
      files_lib.check_absent(p, options.overwrite, name)
  if (not options.spm_model_file and not options.vocab_file
      and hf_checkpoint.is_hf_folder(options.checkpoint)):
    # An ALBERT folder's spiece.model, or the Unigram tokenizer.json
    # transformers 5 saves in its place.
    spm = hf_checkpoint.spm_path(options.checkpoint)
    if spm:
      options = dataclasses.replace(options, spm_model_file=spm)
  if options.spm_model_file:
    # ALBERT's tokenization: the SavedModel's text signatures and the TF1
    # release layout carry the SentencePiece model.
    if "keras_hub_preset_out" in outputs:
      raise ValueError("keras_hub_preset_out with spm_model_file: not supported (its "
                       "tokenizer is WordPiece); write export_dir, tf1_checkpoint_out or hf_out")
    bert_config = hf_checkpoint.config_for(options.bert_config_file, options.checkpoint,
                                           "bert_config_file")
    vocab = sentencepiece_vocab.load_sentencepiece(options.spm_model_file).vocab
  else:
    bert_config, vocab_file, _, _ = hf_checkpoint.model_files(
        options.checkpoint, options.bert_config_file, options.vocab_file)
    options = dataclasses.replace(options, vocab_file=vocab_file)
    vocab = wordpiece_vocab.load_vocab(options.vocab_file)
  max_seq_length = options.max_seq_length or saved_model.default_max_seq_length(bert_config)
  saved_model.check_export_args(bert_config, vocab, max_seq_length, options.top_k)
  objective = objectives.from_checkpoint(options.checkpoint)
  pretrainer, _ = checkpoints.load_pretrainer(bert_config, options.checkpoint, objective)
  if options.export_dir:
    saved_model.export_saved_model(
        pretrainer, options.vocab_file, options.do_lower_case, options.export_dir,
        max_seq_length=max_seq_length, top_k=options.top_k,
        text_signatures=options.text_signatures, overwrite=options.overwrite,
        spm_model_file=options.spm_model_file)
  if options.tf1_checkpoint_out:
    tf1_export.write_tf1_checkpoint(pretrainer, options.tf1_checkpoint_out,
                                    options.vocab_file, overwrite=options.overwrite,
                                    spm_model_file=options.spm_model_file)
  if options.keras_hub_preset_out:
    keras_hub_preset.save_keras_hub_preset(
        pretrainer, options.vocab_file, options.do_lower_case, options.keras_hub_preset_out,
        max_seq_length=max_seq_length, overwrite=options.overwrite)
  if options.hf_out:
    hf_export.write_hf_folder(pretrainer, objective, options.vocab_file, options.do_lower_case,
                              options.hf_out, overwrite=options.overwrite,
                              spm_model_file=options.spm_model_file)
  return outputs
