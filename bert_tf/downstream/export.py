"""Where a fine-tuning run keeps its model, and writing that model as a
SavedModel: the steps every task kind's export shares. Each kind's export
module (classification/classifier_export.py, tagging/tagger_export.py,
span/answer_export.py) adds its serving module, which owns its signatures.

A run of the finetune tool keeps each seed's TensorBoard logs in
`seed_dir(output_dir, seed)` (output_dir/seed_<seed>/) and its first seed's
model there as the checkpoint `finetuned_prefix(config)`; run_squad keeps
its span model as output_dir/model. `read_finetuned` reads such a
checkpoint into a model built as it was trained, `check_export_dir`
refuses before training an --export_dir the export would refuse after it,
and `write_module` writes a serving module (a temporary directory renamed
when complete, so export_dir never holds half an export).
"""

import os

import tensorflow as tf
from absl import logging

from bert_tf.io import file_io as files_lib
from bert_tf.downstream import finetune


def seed_dir(output_dir, seed):
  """A fine-tuning seed's folder: output_dir/seed_<seed>."""
  return os.path.join(output_dir, f"seed_{seed}")


def finetuned_prefix(config):
  """The checkpoint of the model a fine-tuning run saved: its first seed's,
  output_dir/seed_<seed>/model."""
  return os.path.join(seed_dir(config.output_dir, config.seed), finetune.CHECKPOINT_NAME)


def read_finetuned(model, prefix, missing=None, init_checkpoint=""):
  """Reads the checkpoint `prefix` into `model` (each of the model's
  objects must be there) and returns the model, its encoder read as the
  run's init_checkpoint's objective means it (finetune.read_as_trained: a
  left-to-right LM's causally). missing: the FileNotFoundError's message
  when there is no checkpoint at prefix (None: the reader's own error)."""
  if missing is not None and not files_lib.exists(prefix + ".index"):
    raise FileNotFoundError(missing)
  tf.train.Checkpoint(model=model).read(prefix).assert_existing_objects_matched()
  return finetune.read_as_trained(model, init_checkpoint)


def check_export_dir(config, export_dir, overwrite=False):
  """Refuses, before any training, an export_dir (--export_dir) that
  exists (without overwrite), a run that trains nothing (do_train
  false), or a SentencePiece tokenizer.json (no graph tokenizer). Nothing
  for an empty export_dir.

  Raises:
    FileExistsError, ValueError: one line naming --export_dir.
  """
  from bert_tf.serving import saved_model  # pylint: disable=g-import-not-at-top
  if not export_dir:
    return
  if not config.do_train:
    raise ValueError(f"--export_dir={export_dir}: --do_train=false trains nothing to export")
  files_lib.check_absent(export_dir, overwrite, "--export_dir")
  if config.spm_model_file:
    try:
      saved_model.graph_sentencepiece(config.spm_model_file)
    except ValueError as e:
      raise ValueError(f"--export_dir={export_dir}: {e}") from None


def signature_names(module):
  """A serving module's signatures by name, serving_default aside."""
  return sorted(set(module.signature_functions()) - {"serving_default"})


def write_module(make_module, export_dir, overwrite=False, what="model"):
  """Refuses an existing export_dir (without overwrite) before building
  the serving module `make_module()` (its checks may raise ValueError),
  then writes it with its signatures to export_dir atomically. `what` names
  the model in the log. Returns the module.

  Raises:
    FileExistsError: export_dir exists and overwrite is false.
  """
  files_lib.check_absent(export_dir, overwrite, "export_dir")
  module = make_module()
  module.write(export_dir, overwrite)
  logging.info("Wrote %s SavedModel (signatures %s) to %s", what,
               ", ".join(signature_names(module)), export_dir)
  return module


def written_line(export_dir, module):
  """What a tool prints of an export: "wrote SavedModel DIR (signatures
  classify, classify_ids)"."""
  names = signature_names(module)
  return (f"wrote SavedModel {export_dir} (signature{'s' if len(names) > 1 else ''} "
          f"{', '.join(names)})")
