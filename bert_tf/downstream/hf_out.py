"""`--hf_out` of a fine-tuned model: the classifier or tagger the finetune
tool trained, or the span model run_squad trained, read from the checkpoint
the run saved and written as a transformers *ForSequenceClassification,
*ForTokenClassification or *ForQuestionAnswering folder
(serving.hf_export.write_hf_head_folder writes the folder).
"""

import os

import tensorflow as tf

from bert_tf.io import file_io as files_lib
from bert_tf.models import hf_config
from bert_tf.serving import hf_export

FROZEN_TAGGER = ("hf_out: a --frozen_encoder tagger's head reads the last four layers "
                 "concatenated, which no transformers *ForTokenClassification has")


def _model_type(bert_config, init_checkpoint):
  """"bert", "albert" or "electra": the family a model fine-tuned from
  init_checkpoint has (ELECTRA fine-tunes its discriminator's encoder:
  finetune.build_classifier)."""
  from bert_tf.downstream.classification import classifier  # pylint: disable=g-import-not-at-top
  from bert_tf.training import checkpoints, objectives  # pylint: disable=g-import-not-at-top
  if init_checkpoint and not classifier.is_keras_hub_preset(init_checkpoint):
    saved = objectives.from_checkpoint(checkpoints.resolve_checkpoint(init_checkpoint))
    if saved.builds_own_encoder:
      return "electra"
  return "albert" if bert_config.is_albert else "bert"


def _fine_tuned_model(build, bert_config, init_checkpoint, prefix):
  """(model_type, the model `build(encoder)` gives, read from the checkpoint
  `prefix` a fine-tuning run wrote)."""
  from bert_tf.models import electra  # pylint: disable=g-import-not-at-top
  model_type, encoder = _model_type(bert_config, init_checkpoint), None
  if model_type == "electra":
    encoder = electra.build_discriminator_encoder(bert_config)
  model = build(encoder)
  tf.train.Checkpoint(model=model).read(prefix).assert_existing_objects_matched()
  return model_type, model


def check_finetuned_out(config, bert_config, out_dir, overwrite=False):
  """Refuses, before any training, an `out_dir` (--hf_out) that
  write_finetuned would refuse after it: one that exists (without
  overwrite), a run that trains nothing (do_train false), a frozen-encoder
  tagger, an ELECTRA sequence classifier. Nothing for an empty out_dir.

  Raises:
    FileExistsError, ValueError: one line naming --hf_out.
  """
  if not out_dir:
    return
  if not config.do_train:
    raise ValueError(f"--hf_out={out_dir}: --do_train=false trains nothing to write "
                     f"(--init_checkpoint is the transformers folder already)")
  files_lib.check_absent(out_dir, overwrite, "--hf_out")
  if config.task_type == "tagging":
    if getattr(config, "frozen_encoder", False):
      raise ValueError(FROZEN_TAGGER)
  elif _model_type(bert_config, config.init_checkpoint) == "electra":
    raise ValueError(hf_export.ELECTRA_CLASSIFIER)


def write_finetuned(config, bert_config, results, out_dir, overwrite=False):
  """Writes the classifier `classification.finetune_tsv.run(config, bert_config)`
  saved (its first seed's) as a transformers *ForSequenceClassification
  folder, or the tagger `downstream.tagging.tagging.run` saved as a
  *ForTokenClassification one, its labels as id2label (see write_hf_head_folder), and prints
  where; nothing for an empty out_dir. Returns the architecture or None."""
  if not out_dir:
    return None
  from bert_tf.downstream.classification import classifier  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream import finetune  # pylint: disable=g-import-not-at-top
  labels = results["labels"]
  regression = results.get("task_type") == "regression"
  tagger = results.get("task_type") == "tagging"
  if tagger and getattr(config, "frozen_encoder", False):
    raise ValueError(FROZEN_TAGGER)
  prefix = os.path.join(config.output_dir, f"seed_{config.seed}", finetune.CHECKPOINT_NAME)
  if tagger:
    from bert_tf.downstream.tagging import token_head  # pylint: disable=g-import-not-at-top
    build = lambda encoder: token_head.BertTokenTagger(bert_config, len(labels), encoder=encoder)
  else:
    build = lambda encoder: classifier.BertClassifier(bert_config, len(labels) or 1,
                                                      encoder=encoder)
  model_type, model = _fine_tuned_model(build, bert_config, config.init_checkpoint, prefix)
  architecture = hf_export.write_hf_head_folder(
      model.encoder, bert_config, model_type,
      hf_config.TOKEN_CLASSIFICATION if tagger else hf_config.SEQUENCE_CLASSIFICATION,
      model.head.kernel.numpy(), model.head.bias.numpy(), config.vocab_file,
      config.do_lower_case, out_dir, labels=labels, regression=regression, overwrite=overwrite,
      spm_model_file=config.spm_model_file or None)
  print(f"wrote {out_dir} {architecture}")
  return architecture


def write_span_model(config, bert_config, out_dir, overwrite=False):
  """Writes the span model `downstream.span.squad_finetune.run` saved
  (output_dir/model) as a transformers *ForQuestionAnswering folder, and
  prints where; nothing for an empty out_dir. An ALBERT fine-tuned with a
  SentencePiece model (config.spm_model_file) gets its spiece.model and an
  AlbertTokenizer. Returns the architecture or None."""
  if not out_dir:
    return None
  from bert_tf.downstream.span import span_head  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.span import squad_finetune  # pylint: disable=g-import-not-at-top
  prefix = os.path.join(config.output_dir, squad_finetune.CHECKPOINT_NAME)
  if not files_lib.exists(prefix + ".index"):
    raise FileNotFoundError(f"hf_out: no fine-tuned span model {prefix} (train with do_train)")
  model_type, model = _fine_tuned_model(
      lambda encoder: span_head.BertSpanModel(bert_config, encoder=encoder),
      bert_config, config.init_checkpoint, prefix)
  architecture = hf_export.write_hf_head_folder(
      model.encoder, bert_config, model_type, hf_config.QUESTION_ANSWERING,
      model.head.kernel.numpy(), model.head.bias.numpy(), config.vocab_file,
      config.do_lower_case, out_dir, overwrite=overwrite,
      spm_model_file=config.spm_model_file or None)
  print(f"wrote {out_dir} {architecture}")
  return architecture
