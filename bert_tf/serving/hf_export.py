"""A Hugging Face transformers folder of a pretrained model (`--hf_out`):
what `AutoModelForPreTraining.from_pretrained(DIR)` and
`AutoTokenizer.from_pretrained(DIR)` load as they are (transformers 5 reads
no TensorFlow format).

  DIR/config.json              architectures, sizes, hidden_act (ours "gelu" is
                               transformers' "gelu_new": both the tanh GELU)
  DIR/model.safetensors        the weights under transformers' names
  DIR/vocab.txt                the WordPiece vocab (spiece.model: a SentencePiece ALBERT's)
  DIR/tokenizer_config.json    BertTokenizer (ElectraTokenizer), its casing
  DIR/special_tokens_map.json
  DIR/generator/...            ELECTRA only: the generator, the same five files

Which class each objective becomes: masked LM + NSP or SOP ->
BertForPreTraining (AlbertForPreTraining for an ALBERT config); masked LM
alone -> BertForMaskedLM (AlbertForMaskedLM); ELECTRA -> the discriminator
as ElectraForPreTraining, the generator as ElectraForMaskedLM in
`generator/`; a distilled student -> its BERT class.
"""

import json
import os

from absl import logging
import numpy as np
import tensorflow as tf

from bert_tf.io import file_io as files_lib
from bert_tf.data.tokenizers import sentencepiece_vocab
from bert_tf.data.tokenizers import wordpiece_vocab
from bert_tf.models import hf_checkpoint as hf
from bert_tf.models import hf_config
from bert_tf.models import hf_names
from bert_tf.models import tf1_checkpoint

ELECTRA_CLASSIFIER = ("hf_out: ElectraForSequenceClassification's head is dense -> GELU -> "
                      "out_proj on the [CLS] vector, bert_tf's one dense layer on it: no "
                      "exact mapping, not written (QA and tagging heads are)")
CAUSAL_ENCODER = ("hf_out: this encoder is read left to right (its objective, a left-to-right "
                  "LM, trained it under a causal mask) and transformers' BERT classes for "
                  "these heads have no causal-encoder option: the folder would drop the "
                  "mask, not written (export a SavedModel instead)")
SENTENCEPIECE_NOT_ALBERT = ("hf_out with spm_model_file: transformers has a SentencePiece "
                            "tokenizer for ALBERT only (the model is not ALBERT)")


def _write_folder(folder, config_dict, weights, vocab_file, tokenizer_config,
                  spm_model_file=None):
  files_lib.makedirs(folder)
  with files_lib.open_file(os.path.join(folder, hf.CONFIG_NAME), "w") as f:
    f.write(json.dumps(config_dict, indent=2, sort_keys=True) + "\n")
  with files_lib.open_file(os.path.join(folder, hf.WEIGHTS_NAME), "wb") as f:
    f.write(hf.safetensors_bytes(weights))
  if spm_model_file:  # a spiece.model, or the Unigram tokenizer.json read in its place
    name = hf.TOKENIZER_NAME if spm_model_file.endswith(".json") else hf.SPIECE_NAME
    files_lib.copy(spm_model_file, os.path.join(folder, name), overwrite=True)
  else:
    files_lib.copy(vocab_file, os.path.join(folder, hf.VOCAB_NAME), overwrite=True)
  with files_lib.open_file(os.path.join(folder, hf.TOKENIZER_CONFIG_NAME), "w") as f:
    f.write(json.dumps(tokenizer_config, indent=2, sort_keys=True) + "\n")
  specials = {k: tokenizer_config[k] for k in
              ("unk_token", "sep_token", "pad_token", "cls_token", "mask_token")}
  with files_lib.open_file(os.path.join(folder, "special_tokens_map.json"), "w") as f:
    f.write(json.dumps(specials, indent=2, sort_keys=True) + "\n")


def write_hf_folder(pretrainer, objective, vocab_file, do_lower_case, out_dir,
                    overwrite=False, spm_model_file=None):
  """Writes `pretrainer` as a transformers folder (see the module docstring).

  Args:
    pretrainer: the network `objective.export_objective` builds (a
      BertPretrainer, or an ElectraPretrainer), weights read.
    objective: the training.objectives Objective the checkpoint records.
    vocab_file: the vocab the model was trained with.
    do_lower_case: the tokenizer's casing (uncased models).
    out_dir: the folder to create (local or gs://); written under a
      temporary name and renamed when complete.
    overwrite: replace an existing out_dir.
    spm_model_file: an ALBERT model's SentencePiece model instead of
      vocab_file: written as spiece.model with an AlbertTokenizer config
      (transformers' AlbertTokenizer then tokenizes; it differs from
      google-research/albert's rules in places, see docs/interchange.md).

  Returns:
    The transformers architecture written (e.g. "BertForPreTraining").

  Raises:
    FileExistsError: out_dir exists and overwrite is false.
    ValueError: the vocab's size is not the config's vocab_size, or the
      objective reads its encoder causally (`CAUSAL_ENCODER`).
  """
  if objective.export_objective.causal_encoder:
    raise ValueError(CAUSAL_ENCODER)
  config = pretrainer.config
  if spm_model_file:
    if tf1_checkpoint.model_type(pretrainer) != hf_config.ALBERT_MODEL_TYPE:
      raise ValueError(SENTENCEPIECE_NOT_ALBERT)
    spm_model = sentencepiece_vocab.load_sentencepiece(spm_model_file)
    vocab, spm_model_file = spm_model.vocab, spm_model.path
  else:
    vocab = wordpiece_vocab.load_vocab(vocab_file)
  if vocab.size != config.vocab_size:
    raise ValueError(f"vocab file {vocab_file} has {vocab.size} tokens but the bert_config's "
                     f"vocab_size is {config.vocab_size}")
  # The Vocab has [CLS], [SEP], [MASK] and [UNK]; padding is id 0 (the
  # original's), whatever token is there.
  special_ids = {"[PAD]": vocab.pad_id, "[CLS]": vocab.cls_id, "[SEP]": vocab.sep_id}
  model_type = tf1_checkpoint.model_type(pretrainer)
  export = objective.export_objective
  architecture = hf_config.architecture_for(model_type, export.sentence_name is not None)
  if export.sentence_task == "nsp" and model_type == hf_config.ALBERT_MODEL_TYPE:
    logging.warning("hf_out: the ALBERT model's next-sentence head becomes "
                    "AlbertForPreTraining's sop_classifier (index 1: B is random, not "
                    "swapped)")
  if export.sentence_task == "sop" and model_type == hf_config.BERT_MODEL_TYPE:
    logging.info("hf_out: the sentence-order head becomes BertForPreTraining's "
                 "seq_relationship (index 1: A and B swapped)")
  weights = hf_names.to_hf(tf1_checkpoint.tf1_weights_from_model(pretrainer), model_type,
                           architecture)
  tokenizer = hf_config.tokenizer_config(
      model_type, do_lower_case, config.max_position_embeddings,
      pad_token=vocab.tokens[vocab.pad_id], sentencepiece=bool(spm_model_file))
  configs = {"": hf_config.config_json(config, architecture, special_ids)}
  # A network with a generator (ELECTRA's and its variants') says so by its
  # `generator_config`: the generator goes to its own folder.
  generator = getattr(pretrainer, "generator_config", None)
  if generator is not None:
    width = config.embedding_size or config.hidden_size
    gen = generator.replace(embedding_size=width)
    configs[hf.GENERATOR_DIR] = hf_config.config_json(gen, hf.ELECTRA_MASKED_LM, special_ids)
    if config.hidden_act == "gelu":
      logging.info("hf_out: transformers' ElectraForMaskedLM runs its head's GELU exactly; "
                   "this generator was trained with the tanh GELU (logits differ slightly)")
  with files_lib.atomic_dir(out_dir, overwrite, "hf_out") as tmp:
    for sub, config_dict in configs.items():
      _write_folder(os.path.join(tmp, sub) if sub else tmp, config_dict, weights[sub],
                    vocab_file, tokenizer, spm_model_file)
  logging.info("Wrote transformers folder %s (%s%s)", out_dir, architecture,
               f", generator in {hf.GENERATOR_DIR}/" if generator is not None else "")
  return architecture


def _vocab_of(vocab_file, spm_model_file, vocab_size):
  """(Vocab, the spm file to copy or None) of an export; raises ValueError
  when its size is not the config's."""
  if spm_model_file:
    spm_model = sentencepiece_vocab.load_sentencepiece(spm_model_file)
    vocab, spm_model_file = spm_model.vocab, spm_model.path
  else:
    vocab = wordpiece_vocab.load_vocab(vocab_file)
  if vocab.size != vocab_size:
    raise ValueError(f"vocab file {spm_model_file or vocab_file} has {vocab.size} tokens but "
                     f"the bert_config's vocab_size is {vocab_size}")
  return vocab, spm_model_file


def write_hf_head_folder(encoder, config, model_type, task, kernel, bias, vocab_file,
                         do_lower_case, out_dir, labels=None, regression=False,
                         overwrite=False, spm_model_file=None):
  """Writes a fine-tuned model as a transformers folder of its task's class
  (BertForSequenceClassification, BertForQuestionAnswering,
  BertForTokenClassification; Albert*, Electra* likewise).

  Our heads are one Dense layer: the classifier's on the pooled output
  (after dropout), the span head's and a tagger's on every position's
  vector; transformers' `classifier` / `qa_outputs` Linear is the same map
  (weight = kernel transposed). ELECTRA's sequence classifier is not: its
  head is dense -> GELU -> out_proj on the [CLS] vector, ours one dense
  layer on it, so that one is refused.

  Args:
    encoder: the fine-tuned model's encoder (a BertBackbone, an ALBERT
      one, or ELECTRA's discriminator).
    config: its BertConfig.
    model_type: transformers' model family (hf_config.BERT_MODEL_TYPE,
      ALBERT_MODEL_TYPE or ELECTRA_MODEL_TYPE: which names the encoder has).
    task: hf_config.SEQUENCE_CLASSIFICATION, QUESTION_ANSWERING or
      TOKEN_CLASSIFICATION.
    kernel, bias: the head's Dense weights ([hidden, n], [n]; question
      answering: n = 2, start then end).
    vocab_file, do_lower_case, spm_model_file: the tokenizer (as
      write_hf_folder's).
    out_dir: the folder to create (atomically).
    labels: the output names in order (id2label; classification, tagging).
    regression: a one-output regression (problem_type "regression").
    overwrite: replace an existing out_dir.

  Returns:
    The transformers architecture written.

  Raises:
    FileExistsError: out_dir exists and overwrite is false.
    ValueError: ELECTRA sequence classification, a head of the wrong shape,
      a vocab whose size is not the config's, or spm_model_file with a
      model that is not ALBERT.
  """
  if model_type == hf_config.ELECTRA_MODEL_TYPE and task == hf_config.SEQUENCE_CLASSIFICATION:
    raise ValueError(ELECTRA_CLASSIFIER)
  if spm_model_file and model_type != hf_config.ALBERT_MODEL_TYPE:
    raise ValueError(SENTENCEPIECE_NOT_ALBERT)
  kernel, bias = np.asarray(kernel, np.float32), np.asarray(bias, np.float32)
  outputs = 2 if task == hf_config.QUESTION_ANSWERING else (1 if regression else len(labels))
  if kernel.shape != (config.hidden_size, outputs) or bias.shape != (outputs,):
    raise ValueError(f"hf_out: head kernel {list(kernel.shape)} / bias {list(bias.shape)} do "
                     f"not fit hidden_size {config.hidden_size} and {outputs} outputs")
  vocab, spm_model_file = _vocab_of(vocab_file, spm_model_file, config.vocab_size)
  architecture = hf_config.head_architecture(model_type, task)
  tf1 = tf1_checkpoint.encoder_tf1_weights(
      encoder, electra=model_type == hf_config.ELECTRA_MODEL_TYPE)
  weights = hf_names.to_hf(tf1, model_type, architecture)[""]
  module = hf_config.HEAD_MODULES[task]
  weights[f"{module}.weight"], weights[f"{module}.bias"] = kernel.T, bias
  special_ids = {"[PAD]": vocab.pad_id, "[CLS]": vocab.cls_id, "[SEP]": vocab.sep_id}
  config_dict = hf_config.config_json(config, architecture, special_ids)
  if task != hf_config.QUESTION_ANSWERING:
    config_dict.update(hf_config.label_fields(labels, regression))
    if task == hf_config.TOKEN_CLASSIFICATION:
      config_dict.pop("problem_type")
  tokenizer = hf_config.tokenizer_config(
      model_type, do_lower_case, config.max_position_embeddings,
      pad_token=vocab.tokens[vocab.pad_id], sentencepiece=bool(spm_model_file))
  with files_lib.atomic_dir(out_dir, overwrite, "hf_out") as tmp:
    _write_folder(tmp, config_dict, weights, vocab_file, tokenizer, spm_model_file)
  logging.info("Wrote transformers folder %s (%s)", out_dir, architecture)
  return architecture
