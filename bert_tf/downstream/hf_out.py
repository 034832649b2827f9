"""`--hf_out` of a fine-tuned model, for every task kind: the model a run
saved, read from its checkpoint and written as a transformers folder of the
kind's head class (`TaskKind.hf_head`: *ForSequenceClassification,
*ForTokenClassification, *ForQuestionAnswering; the kind's `write_hf` and
`check_outputs` call `write_head` and `check_out` here;
serving.hf_export.write_hf_head_folder writes the folder).

The family written (transformers' model_type) is the network's
(models.tf1_checkpoint.model_type): the fine-tuned model's own encoder, or,
when init_checkpoint's objective builds its own encoder
(`Objective.builds_own_encoder`, ELECTRA's discriminator), the network that
objective builds, whose encoder fine-tuning trained.
"""

from bert_tf.io import file_io as files_lib
from bert_tf.models import hf_config
from bert_tf.models import tf1_checkpoint
from bert_tf.serving import hf_export

FROZEN_TAGGER = ("hf_out: a --frozen_encoder tagger's head reads the last four layers "
                 "concatenated, which no transformers *ForTokenClassification has")


def _own_encoder_objective(init_checkpoint):
  """The objective of init_checkpoint when it builds its own encoder
  (fine-tuning then trains that encoder: finetune.build_classifier); None
  for any other checkpoint, a keras-hub preset or none."""
  from bert_tf.downstream.classification import classifier  # pylint: disable=g-import-not-at-top
  from bert_tf.training import checkpoints, objectives  # pylint: disable=g-import-not-at-top
  if not init_checkpoint or classifier.is_keras_hub_preset(init_checkpoint):
    return None
  saved = objectives.from_checkpoint(checkpoints.resolve_checkpoint(init_checkpoint))
  return saved if saved.builds_own_encoder else None


def _refuse_causal(init_checkpoint):
  """Refuses a model whose encoder init_checkpoint's objective reads
  causally (finetune.read_as_trained): transformers' head classes would
  drop the mask."""
  from bert_tf.downstream import finetune  # pylint: disable=g-import-not-at-top
  saved = finetune.init_objective(init_checkpoint)
  if saved is not None and saved.causal_encoder:
    raise ValueError(hf_export.CAUSAL_ENCODER)


def check_out(config, bert_config, hf_head, out_dir, overwrite=False):
  """Refuses, before any training, an `out_dir` (--hf_out) that write_head
  would refuse after it: one that exists (without overwrite), a run that
  trains nothing (do_train false), a sequence classifier on an encoder its
  objective builds (ELECTRA's: transformers' head is not ours), an encoder
  its objective reads causally (a left-to-right LM's). Nothing for an empty
  out_dir.

  Raises:
    FileExistsError, ValueError: one line naming --hf_out.
  """
  del bert_config  # the family comes from the checkpoint's objective
  if not out_dir:
    return
  if not config.do_train:
    raise ValueError(f"--hf_out={out_dir}: --do_train=false trains nothing to write "
                     f"(--init_checkpoint is the transformers folder already)")
  files_lib.check_absent(out_dir, overwrite, "--hf_out")
  _refuse_causal(config.init_checkpoint)
  if (hf_head == hf_config.SEQUENCE_CLASSIFICATION
      and _own_encoder_objective(config.init_checkpoint) is not None):
    raise ValueError(hf_export.ELECTRA_CLASSIFIER)


def write_head(config, bert_config, hf_head, build, prefix, out_dir, labels=None,
               regression=False, overwrite=False, missing=None):
  """Reads the model `build(encoder)` makes (encoder None: its own) from
  the checkpoint `prefix` a fine-tuning run wrote, writes it as a
  transformers folder of `hf_head` in out_dir (labels as id2label;
  regression: problem_type "regression"; an ALBERT fine-tuned with a
  SentencePiece model, config.spm_model_file, gets its spiece.model and an
  AlbertTokenizer), and prints where. missing: the FileNotFoundError's
  message when prefix holds no checkpoint (export.read_finetuned). Returns
  the architecture."""
  from bert_tf.downstream import export  # pylint: disable=g-import-not-at-top
  if missing is not None and not files_lib.exists(prefix + ".index"):
    raise FileNotFoundError(missing)  # before any network is built
  _refuse_causal(config.init_checkpoint)
  saved = _own_encoder_objective(config.init_checkpoint)
  network = None if saved is None else saved.export_objective.build_model(bert_config)
  model = export.read_finetuned(build(None if network is None else network.encoder), prefix)
  model_type = tf1_checkpoint.model_type(model if network is None else network)
  architecture = hf_export.write_hf_head_folder(
      model.encoder, bert_config, model_type, hf_head, model.head.kernel.numpy(),
      model.head.bias.numpy(), config.vocab_file, config.do_lower_case, out_dir,
      labels=labels, regression=regression, overwrite=overwrite,
      spm_model_file=config.spm_model_file or None)
  print(f"wrote {out_dir} {architecture}")
  return architecture
