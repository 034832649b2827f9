"""Export of a pretrained BERT: one SavedModel for serving, the original TF1
checkpoint layout, and a keras-hub preset.

The SavedModel carries the vocab as an asset and has these signatures
(`batch` and `seq` are any size; `seq` up to max_position_embeddings):

  serving_default, also named pretraining (stock TensorFlow ops only):
    input_ids, input_mask, segment_ids  int32 [batch, seq]
    masked_lm_positions                 int32 [batch, predictions]
    -> masked_lm_log_probs      float32 [batch, predictions, vocab_size]
       next_sentence_log_probs  float32 [batch, 2]; index 0 = B follows A
                                (objective mlm_nsp), or
       sentence_order_log_probs float32 [batch, 2]; index 0 = A, B in order
                                (mlm_sop); neither for MLM alone (mlm)
  encode (stock TensorFlow ops only):
    input_ids, input_mask, segment_ids  int32 [batch, seq]
    -> sequence_output float32 [batch, seq, hidden], pooled_output float32 [batch, hidden]
  fill_mask (needs tensorflow-text's ops):
    text string [batch], each with one or more [MASK]
    -> top_k_tokens string [batch, max_masks, k], top_k_ids int32 [batch, max_masks, k],
       top_k_probs float32 [batch, max_masks, k] (best first), mask_positions int32
       [batch, max_masks] (index in [CLS] text [SEP]), num_masks int32 [batch],
       truncated bool [batch], error string [batch] ("" when the example is fine).
       max_masks is the batch's largest num_masks; the slots past an example's
       num_masks hold "", -1, 0.0 and -1. The text is cut to max_seq_length - 2
       wordpieces; [MASK]s cut off are not answered.
  next_sentence (needs tensorflow-text's ops):
    text_a, text_b string [batch]
    -> is_next_probability float32 [batch] (probability that B follows A),
       truncated bool [batch], error string [batch]; [CLS] A [SEP] B [SEP] is
       cut to max_seq_length as the original's classifier does (longer side first)
  sentence_order (mlm_sop, instead of next_sentence; tensorflow-text's ops):
    text_a, text_b string [batch]
    -> in_order_probability float32 [batch] (probability that A comes before
       B in the text), truncated, error as next_sentence
  replaced_token_detection (electra; tensorflow-text's ops):
    text string [batch]
    -> tokens string [batch, seq] ([CLS] wordpieces [SEP], "" past the end),
       replaced_probability float32 [batch, seq] (the discriminator's
       probability that the token was replaced; 0 past the end), truncated
       bool [batch], error string [batch]; text cut to max_seq_length - 2

For ELECTRA (objective electra) the discriminator is the encoder (`encode`;
its pooled_output is the [CLS] vector, as ELECTRA has no pooler), the
generator answers `fill_mask` and `pretraining`'s masked_lm_log_probs, and
`pretraining` adds replaced_probability float32 [batch, seq].

The objective (training.objectives) decides which sentence outputs and
signatures exist; a checkpoint records its objective, an original TF1
checkpoint is taken as MLM + NSP.

Because TensorFlow checks every op of every function when it loads a
SavedModel, a server without tensorflow-text's ops (stock TF Serving) cannot
load an export that has the text signatures at all; `text_signatures=False`
writes the ids-in signatures only, which stock TF Serving loads.
"""

import dataclasses
import json
import os

from absl import logging
import tensorflow as tf

from bert_tf import file_io as files_lib
from bert_tf.models import config as config_lib
from bert_tf.models import modeling
from bert_tf.models import tf1_checkpoint
from bert_tf.data import tokenizer_graph
from bert_tf.data import wordpiece_vocab
from bert_tf.training import checkpoints
from bert_tf.training import objectives

# Errors reported per example by the text signatures (the batch still runs).
ERROR_EMPTY_TEXT = "empty text"
ERROR_NO_MASK = "no [MASK] in text"
ERROR_MASKS_TRUNCATED = "every [MASK] lies beyond max_seq_length"
ERROR_EMPTY_TEXT_A = "empty text_a"
ERROR_EMPTY_TEXT_B = "empty text_b"


# ------------------------------------------------------------------------------
# Checkpoints
# ------------------------------------------------------------------------------


# One owner for finding a checkpoint and reading weights: training's.
resolve_checkpoint = checkpoints.resolve_checkpoint


def load_pretrainer(bert_config, checkpoint, objective=None):
  """Builds the objective's pretrainer (a BertPretrainer, or an
  ElectraPretrainer for ELECTRA) and fills every weight from a checkpoint.

  Args:
    bert_config: a config.BertConfig.
    checkpoint: see `checkpoints.resolve_checkpoint`: a training output
      directory, a checkpoint prefix, or an original TF1 BERT checkpoint.
    objective: an objectives name; None takes the one the checkpoint
      records (MLM + NSP when it records none, as the original's).

  Returns:
    (pretrainer, prefix): the built modeling.BertPretrainer and the
    checkpoint prefix actually read.

  Raises:
    FileNotFoundError: no checkpoint there.
    ValueError: the checkpoint does not match the config (a shape names the
      variable and both shapes; a weight count names num_hidden_layers).
  """
  if objective is None:
    objective = objectives.from_checkpoint(checkpoints.resolve_checkpoint(checkpoint))
  elif isinstance(objective, str):
    objective = objectives.get(objective)
  # A distillation checkpoint holds student and teacher: export the student,
  # built as its own objective (its heads) and read from model/student.
  model_objective = getattr(objective, "student_objective", objective)
  pretrainer = model_objective.build_model(bert_config)  # creates every weight
  report = checkpoints.read_weights(
      pretrainer, checkpoint, require_all=True,
      root=getattr(objective, "checkpoint_root", checkpoints.MODEL_ROOT))
  logging.info("Read %d weights from %s checkpoint %s", len(report.initialized),
               "original TF1" if report.format == "tf1" else "bert_tf", report.prefix)
  return pretrainer, report.prefix


# ------------------------------------------------------------------------------
# The serving module
# ------------------------------------------------------------------------------


def _ids_spec(name, width=None):
  return tf.TensorSpec([None, width], tf.int32, name=name)


def _truncate_pair_lengths(len_a, len_b, max_total):
  """Lengths that the original's pair truncation leaves.

  The original pops one token at a time from the end of the longer segment
  (from B on a tie) until the pair fits; in closed form A keeps
  min(len_a, max(max_total - len_b, ceil(max_total / 2))) tokens and B what
  is left of max_total. int64 [batch] each.
  """
  half_up = (max_total + 1) // 2
  keep_a = tf.minimum(len_a, tf.maximum(max_total - len_b, half_up))
  keep_b = tf.minimum(len_b, max_total - keep_a)
  return keep_a, keep_b


def _check_export_args(bert_config, vocab, max_seq_length, top_k):
  if vocab.size != bert_config.vocab_size:
    raise ValueError(
        f"vocab file {vocab.path} has {vocab.size} tokens but the bert_config's "
        f"vocab_size is {bert_config.vocab_size}; export with the vocab the model "
        f"was trained with")
  if not 5 <= max_seq_length <= bert_config.max_position_embeddings:
    raise ValueError(
        f"max_seq_length={max_seq_length} must lie in [5, max_position_embeddings="
        f"{bert_config.max_position_embeddings}]")
  if not 1 <= top_k <= vocab.size:
    raise ValueError(f"top_k={top_k} must lie in [1, vocab size {vocab.size}]")


class _Untracked:
  """Holds a model without making it a dependency of a tf.Module."""

  def __init__(self, model):
    self.model = model


def _tf_variables(model):
  """The distinct tf.Variables under a Keras 3 model's weights, in order: what
  an export module tracks in place of the model (see BertServingModule)."""
  seen, variables = set(), []
  for weight in model.weights:
    variable = getattr(weight, "value", weight)
    if id(variable) not in seen:
      seen.add(id(variable))
      variables.append(variable)
  return variables


class BertServingModule(tf.Module):
  """The object a SavedModel export saves: the model, vocab and signatures.

  Attributes:
    pretrainer: the modeling.BertPretrainer (not itself saved).
    model_variables: its tf.Variables, which the SavedModel saves.
    vocab_file: tf.saved_model.Asset of the vocab the text signatures use.
    objective: the training.objectives objective the model was built for.
    pretraining, encode, fill_mask, next_sentence / sentence_order: the
      signature functions (the text ones only with text_signatures; the
      sentence one as the objective has it).
  """

  def __init__(self, pretrainer, vocab_file, do_lower_case, max_seq_length=128,
               top_k=5, text_signatures=True):
    """Checks the arguments against each other and traces nothing yet.

    Raises:
      ValueError: the vocab's size is not bert_config.vocab_size, or
        max_seq_length / top_k are out of range.
    """
    super().__init__(name="bert_tf_serving")
    bert_config = pretrainer.config
    vocab = wordpiece_vocab.load_vocab(vocab_file)
    _check_export_args(bert_config, vocab, max_seq_length, top_k)
    # A Keras 3 variable wraps a tf.Variable. Saving the Keras objects
    # themselves gives each weight a second variable in the SavedModel's
    # graph, which is what TF1-style loaders (TF Serving's C++ loader)
    # restore, while the functions read the first, never-restored one. So,
    # as keras.export.ExportArchive does, the module tracks the underlying
    # tf.Variables only and holds the model out of tracking.
    # A distillation model (student + teacher) exports its student.
    pretrainer = getattr(pretrainer, "student", pretrainer)
    self._holder = _Untracked(pretrainer)
    self.objective = objectives.of_model(pretrainer)
    self.model_variables = _tf_variables(pretrainer)
    self.vocab_file = tf.saved_model.Asset(vocab_file)
    self._vocab = vocab
    self._max_positions = bert_config.max_position_embeddings
    self._max_seq_length = max_seq_length
    self._top_k = top_k
    self.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False, name="do_lower_case")
    self.max_seq_length = tf.Variable(max_seq_length, trainable=False, name="max_seq_length")
    self.top_k = tf.Variable(top_k, trainable=False, name="top_k")

    ids = [_ids_spec("input_ids"), _ids_spec("input_mask"), _ids_spec("segment_ids")]
    self.pretraining = tf.function(
        self._pretraining, input_signature=ids + [_ids_spec("masked_lm_positions")])
    self.encode = tf.function(self._encode, input_signature=ids)
    self._signature_names = ["serving_default", "pretraining", "encode"]
    if text_signatures:
      # The original tokenization (the data writer's) for next_sentence; the
      # same with [MASK] (and the other special tokens) kept whole for fill_mask.
      self.tokenizer = tokenizer_graph.TokenizerModule(
          vocab, do_lower_case, vocab_asset_path=vocab_file)
      self.mask_tokenizer = tokenizer_graph.TokenizerModule(
          vocab, do_lower_case, keep_special_tokens=True, vocab_asset_path=vocab_file)
      self._id_to_token = tf.constant(vocab.tokens, tf.string)
      self.fill_mask = tf.function(
          self._fill_mask, input_signature=[tf.TensorSpec([None], tf.string, name="text")])
      self._signature_names.append("fill_mask")
      pair_spec = [tf.TensorSpec([None], tf.string, name="text_a"),
                   tf.TensorSpec([None], tf.string, name="text_b")]
      if self.objective.sentence_name == "next_sentence":
        self.next_sentence = tf.function(self._next_sentence, input_signature=pair_spec)
        self._signature_names.append("next_sentence")
      elif self.objective.sentence_name == "sentence_order":
        self.sentence_order = tf.function(self._sentence_order, input_signature=pair_spec)
        self._signature_names.append("sentence_order")
      if "replaced_token_detection" in self.objective.signatures:
        self.replaced_token_detection = tf.function(
            self._replaced_token_detection,
            input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        self._signature_names.append("replaced_token_detection")

  @property
  def pretrainer(self):
    """The modeling.BertPretrainer whose weights the export holds."""
    return self._holder.model

  def signature_functions(self):
    """dict signature name -> tf.function (with an input_signature)."""
    return {name: getattr(self, "pretraining" if name == "serving_default" else name)
            for name in self._signature_names}

  # -- ids in ------------------------------------------------------------------

  def _check_length(self, input_ids):
    return [tf.debugging.assert_less_equal(
        tf.shape(input_ids)[1], self._max_positions,
        message=f"sequence longer than max_position_embeddings={self._max_positions}")]

  def _pretraining(self, input_ids, input_mask, segment_ids, masked_lm_positions):
    """Log-probs of the pretraining heads; see the module docstring."""
    with tf.control_dependencies(self._check_length(input_ids)):
      outputs = self.pretrainer(
          {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids,
           "masked_lm_positions": masked_lm_positions}, training=False)
    result = {
        "masked_lm_log_probs": tf.nn.log_softmax(tf.cast(outputs["mlm_logits"], tf.float32)),
    }
    if self.objective.sentence_name:
      result[f"{self.objective.sentence_name}_log_probs"] = tf.nn.log_softmax(
          tf.cast(outputs["nsp_logits"], tf.float32))
    if "discriminator_logits" in outputs:
      result["replaced_probability"] = tf.sigmoid(outputs["discriminator_logits"])
    return result

  def _encode(self, input_ids, input_mask, segment_ids):
    """Encoder outputs; see the module docstring."""
    with tf.control_dependencies(self._check_length(input_ids)):
      outputs = self.pretrainer.encoder(
          {"token_ids": input_ids, "segment_ids": segment_ids, "padding_mask": input_mask},
          training=False)
    pooled = outputs["pooled_output"]
    if getattr(self.pretrainer, "pooled_is_first_token", False):
      pooled = outputs["sequence_output"][:, 0]  # ELECTRA: no pooler
    return {"sequence_output": tf.cast(outputs["sequence_output"], tf.float32),
            "pooled_output": tf.cast(pooled, tf.float32)}

  # -- text in -----------------------------------------------------------------

  def _tokenize(self, texts, tokenizer):
    """Wordpiece ids of each text, as the data writer tokenizes.

    Args:
      texts: string [batch]; invalid UTF-8 is replaced by U+FFFD first (which
        the original tokenizer drops) so one bad example cannot fail the batch.
      tokenizer: a tokenizer_graph.TokenizerModule.

    Returns:
      int64 RaggedTensor [batch, (tokens)].
    """
    texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace")
    return tokenizer.tokenize_eager(texts)

  def _dense_inputs(self, ids):
    """Dense model inputs from ragged ids int64 [batch, (seq)]."""
    input_ids = tf.cast(ids.to_tensor(self._vocab.pad_id), tf.int32)
    input_mask = tf.cast(tf.ones_like(ids).to_tensor(0), tf.int32)
    return input_ids, input_mask

  def _fill_mask(self, text):
    """Top-k fills of each [MASK]; see the module docstring."""
    batch = tf.shape(text, out_type=tf.int64)[0]
    max_tokens = self._max_seq_length - 2
    tokens = self._tokenize(text, self.mask_tokenizer)
    num_tokens = tokens.row_lengths()
    truncated = num_tokens > max_tokens
    had_mask = tf.reduce_any(tf.equal(tokens, self._vocab.mask_id), axis=1)
    tokens = tokens[:, :max_tokens]
    cls = tf.fill([batch, 1], tf.constant(self._vocab.cls_id, tf.int64))
    sep = tf.fill([batch, 1], tf.constant(self._vocab.sep_id, tf.int64))
    ids = tf.concat([cls, tokens, sep], axis=1)  # [batch, (seq)]

    is_mask = tf.equal(ids, self._vocab.mask_id)
    positions = tf.ragged.boolean_mask(
        tf.ragged.range(ids.row_lengths()), is_mask)  # [batch, (masks)]
    num_masks = positions.row_lengths()
    max_masks = tf.reduce_max(tf.concat([num_masks, [0]], axis=0))
    # At least one column so the MLM head always sees a position.
    dense_positions = tf.cast(
        positions.to_tensor(0, shape=[batch, tf.maximum(max_masks, 1)]), tf.int32)

    input_ids, input_mask = self._dense_inputs(ids)
    outputs = self.pretrainer(
        {"input_ids": input_ids, "input_mask": input_mask,
         "segment_ids": tf.zeros_like(input_ids), "masked_lm_positions": dense_positions},
        training=False)
    probs = tf.nn.softmax(tf.cast(outputs["mlm_logits"], tf.float32))[:, :max_masks]
    top_probs, top_ids = tf.math.top_k(probs, k=self._top_k)  # [batch, max_masks, k]
    valid = tf.sequence_mask(num_masks, max_masks)[:, :, None]
    valid_k = tf.broadcast_to(valid, tf.shape(top_ids))

    error = tf.where(
        num_tokens == 0, ERROR_EMPTY_TEXT,
        tf.where(num_masks > 0, "",
                 tf.where(had_mask, ERROR_MASKS_TRUNCATED, ERROR_NO_MASK)))
    return {
        "top_k_tokens": tf.where(valid_k, tf.gather(self._id_to_token, top_ids), ""),
        "top_k_ids": tf.where(valid_k, top_ids, -1),
        "top_k_probs": tf.where(valid_k, top_probs, 0.0),
        "mask_positions": tf.where(valid[:, :, 0], dense_positions[:, :max_masks], -1),
        "num_masks": tf.cast(num_masks, tf.int32),
        "truncated": truncated,
        "error": error,
    }

  def _replaced_token_detection(self, text):
    """The discriminator's probability that each token was replaced; see
    the module docstring."""
    batch = tf.shape(text, out_type=tf.int64)[0]
    tokens = self._tokenize(text, self.tokenizer)
    num_tokens = tokens.row_lengths()
    truncated = num_tokens > self._max_seq_length - 2
    tokens = tokens[:, :self._max_seq_length - 2]
    cls = tf.fill([batch, 1], tf.constant(self._vocab.cls_id, tf.int64))
    sep = tf.fill([batch, 1], tf.constant(self._vocab.sep_id, tf.int64))
    ids = tf.concat([cls, tokens, sep], axis=1)
    input_ids, input_mask = self._dense_inputs(ids)
    outputs = self.pretrainer(
        {"input_ids": input_ids, "input_mask": input_mask,
         "segment_ids": tf.zeros_like(input_ids)}, training=False)
    real = input_mask > 0
    probability = tf.where(real, tf.sigmoid(outputs["discriminator_logits"]), 0.0)
    return {"tokens": tf.where(real, tf.gather(self._id_to_token, input_ids), ""),
            "replaced_probability": probability, "truncated": truncated,
            "error": tf.where(num_tokens == 0, ERROR_EMPTY_TEXT, "")}

  def _next_sentence(self, text_a, text_b):
    """Probability that B follows A; see the module docstring."""
    return self._sentence_pair(text_a, text_b, "is_next_probability")

  def _sentence_order(self, text_a, text_b):
    """Probability that A and B are in their order; see the module docstring."""
    return self._sentence_pair(text_a, text_b, "in_order_probability")

  def _sentence_pair(self, text_a, text_b, output_name):
    """The sentence-pair head's probability of class 0 (NSP: B follows A;
    SOP: in order) for [CLS] A [SEP] B [SEP], under `output_name`."""
    tokens_a = self._tokenize(text_a, self.tokenizer)
    tokens_b = self._tokenize(text_b, self.tokenizer)
    len_a, len_b = tokens_a.row_lengths(), tokens_b.row_lengths()
    keep_a, keep_b = _truncate_pair_lengths(len_a, len_b, self._max_seq_length - 3)
    truncated = (keep_a < len_a) | (keep_b < len_b)
    tokens_a = tf.ragged.boolean_mask(tokens_a, tf.ragged.range(len_a) < keep_a[:, None])
    tokens_b = tf.ragged.boolean_mask(tokens_b, tf.ragged.range(len_b) < keep_b[:, None])
    batch = tf.shape(text_a, out_type=tf.int64)[0]
    cls = tf.fill([batch, 1], tf.constant(self._vocab.cls_id, tf.int64))
    sep = tf.fill([batch, 1], tf.constant(self._vocab.sep_id, tf.int64))
    ids = tf.concat([cls, tokens_a, sep, tokens_b, sep], axis=1)
    segments = tf.concat([tf.zeros_like(cls), tf.zeros_like(tokens_a), tf.zeros_like(sep),
                          tf.ones_like(tokens_b), tf.ones_like(sep)], axis=1)
    input_ids, input_mask = self._dense_inputs(ids)
    outputs = self.pretrainer(
        {"input_ids": input_ids, "input_mask": input_mask,
         "segment_ids": tf.cast(segments.to_tensor(0), tf.int32),
         "masked_lm_positions": tf.zeros([batch, 1], tf.int32)},
        training=False)
    probs = tf.nn.softmax(tf.cast(outputs["nsp_logits"], tf.float32))
    error = tf.where(len_a == 0, ERROR_EMPTY_TEXT_A, tf.where(len_b == 0, ERROR_EMPTY_TEXT_B, ""))
    return {output_name: probs[:, 0], "truncated": truncated, "error": error}


# ------------------------------------------------------------------------------
# Writing
# ------------------------------------------------------------------------------


def export_saved_model(pretrainer, vocab_file, do_lower_case, export_dir,
                       max_seq_length=128, top_k=5, text_signatures=True, overwrite=False):
  """Writes the serving SavedModel of `pretrainer` to `export_dir`.

  The SavedModel is written under a temporary name beside export_dir and
  renamed when complete, so export_dir never holds half an export.

  Args:
    pretrainer: a modeling.BertPretrainer.
    vocab_file: the vocab the model was trained with (copied in as an asset).
    do_lower_case: whether the text signatures lower-case and strip accents.
    export_dir: the SavedModel directory to create.
    max_seq_length: the longest [CLS] ... [SEP] the text signatures build.
    top_k: how many fills fill_mask returns for each [MASK].
    text_signatures: false leaves out fill_mask and next_sentence, for
      servers without tensorflow-text's ops.
    overwrite: replace an existing export_dir.

  Returns:
    The BertServingModule that was saved.

  Raises:
    FileExistsError: export_dir exists and overwrite is false.
    ValueError: vocab, config and arguments disagree.
  """
  files_lib.check_absent(export_dir, overwrite, "export_dir")
  module = BertServingModule(pretrainer, vocab_file, do_lower_case,
                             max_seq_length=max_seq_length, top_k=top_k,
                             text_signatures=text_signatures)

  def write(tmp):
    tf.saved_model.save(module, tmp, signatures=module.signature_functions())
    # The SavedModel's variables must hold every object the module tracks.
    status = tf.train.Checkpoint(root=module).read(
        os.path.join(tmp, "variables", "variables"))
    status.assert_existing_objects_matched()
  with files_lib.atomic_dir(export_dir, overwrite, "export_dir") as tmp:
    write(tmp)
  logging.info("Wrote SavedModel with signatures %s to %s",
               sorted(module.signature_functions()), export_dir)
  return module


# Names of the released layout (e.g. uncased_L-12_H-768_A-12/): the config and
# vocab lie beside bert_model.ckpt.*.
TF1_CONFIG_NAME = "bert_config.json"
TF1_VOCAB_NAME = "vocab.txt"


def default_max_seq_length(bert_config):
  """The export's default max_seq_length: 128, or max_position_embeddings if smaller."""
  return min(128, bert_config.max_position_embeddings)


def tf1_checkpoint_files(prefix):
  """The files `write_tf1_checkpoint(prefix)` writes, index last.

  Returns:
    list of paths: bert_config.json and vocab.txt in the prefix's directory,
    then prefix.data-00000-of-00001 and prefix.index.
  """
  parent = os.path.dirname(prefix)
  return [os.path.join(parent, TF1_CONFIG_NAME), os.path.join(parent, TF1_VOCAB_NAME),
          prefix + ".data-00000-of-00001", prefix + ".index"]


def write_tf1_checkpoint(pretrainer, prefix, vocab_file, overwrite=False):
  """Writes the model as an original release is laid out.

  `prefix.index` and `prefix.data-00000-of-00001` hold the weights under the
  original TF1 names; `bert_config.json` (the model's config, keys it does
  not use included) and `vocab.txt` (a copy of `vocab_file`) are written
  beside them, so the directory is what the original's tools (and
  HuggingFace's converter) take. Everything is written under temporary names
  first and renamed at the end, the index last: an existing `prefix.index`
  means a complete directory.

  Args:
    pretrainer: a modeling.BertPretrainer.
    prefix: checkpoint prefix, e.g. `.../bert_model.ckpt`; local or gs://.
    vocab_file: the vocab the model was trained with.
    overwrite: replace the checkpoint, config and vocab if they exist.

  Raises:
    FileExistsError: one of the four files exists and overwrite is false.
    ValueError: the vocab's size is not the config's vocab_size.
  """
  files = tf1_checkpoint_files(prefix)
  for path in files:
    files_lib.check_absent(path, overwrite, "tf1_checkpoint_out file")
  vocab = wordpiece_vocab.load_vocab(vocab_file)
  if vocab.size != pretrainer.config.vocab_size:
    raise ValueError(
        f"vocab file {vocab_file} has {vocab.size} tokens but the bert_config's "
        f"vocab_size is {pretrainer.config.vocab_size}")
  tmp_prefix = files_lib.temp_path(prefix)
  tmp_config, tmp_vocab = files_lib.temp_path(files[0]), files_lib.temp_path(files[1])
  temps = [tmp_config, tmp_vocab] + [tmp_prefix + p[len(prefix):] for p in files[2:]]
  with files_lib.atomic_paths(files, temps):  # renamed in files' order, the index last
    with tf.io.gfile.GFile(tmp_config, "w") as f:
      f.write(pretrainer.config.to_json_string())
    tf.io.gfile.copy(vocab_file, tmp_vocab, overwrite=True)
    tf1_checkpoint.save_tf1_checkpoint(pretrainer, tmp_prefix)
  logging.info("Wrote TF1 checkpoint %s with %s and %s beside it", prefix,
               TF1_CONFIG_NAME, TF1_VOCAB_NAME)


# What the preset's metadata.json holds under this key: the whole BertConfig
# (BertBackbone's config has one dropout rate, so attention_probs_dropout_prob
# and initializer_range would otherwise be lost) and the export's settings.
PRESET_METADATA_KEY = "bert_tf"


def save_keras_hub_preset(pretrainer, vocab_file, do_lower_case, preset_dir,
                          max_seq_length=None, overwrite=False):
  """Saves the encoder and its preprocessor as a keras-hub preset directory.

  keras_hub.models.BertBackbone.from_preset(preset_dir) then gives our
  encoder, and BertTextClassifier.from_preset(preset_dir, num_classes=...)
  a classifier on top of it whose preprocessor packs [CLS] A [SEP] (B [SEP])
  to `max_seq_length` tokens (keras-hub's default, 512, would not fit a
  model with fewer positions).

  BertBackbone takes one dropout rate, `hidden_dropout_prob`; a backbone
  loaded with keras-hub applies it to the attention probabilities too. The
  whole BertConfig (attention_probs_dropout_prob included) is kept in the
  preset's metadata.json under "bert_tf" (see `read_preset_bert_config`).

  Args:
    pretrainer: a modeling.BertPretrainer.
    vocab_file: the vocab the model was trained with.
    do_lower_case: whether the tokenizer lower-cases (uncased models).
    preset_dir: the directory to create.
    max_seq_length: sequence length of the saved preprocessor; None means
      `default_max_seq_length(config)`.
    overwrite: replace an existing preset_dir.

  Raises:
    FileExistsError: preset_dir exists and overwrite is false.
    ValueError: max_seq_length out of [5, max_position_embeddings].
  """
  import keras_hub  # pylint: disable=g-import-not-at-top
  config = pretrainer.config
  if max_seq_length is None:
    max_seq_length = default_max_seq_length(config)
  if not 5 <= max_seq_length <= config.max_position_embeddings:
    raise ValueError(
        f"max_seq_length={max_seq_length} must lie in [5, max_position_embeddings="
        f"{config.max_position_embeddings}]")

  def write(tmp):
    tf.io.gfile.makedirs(tmp)
    pretrainer.encoder.save_to_preset(tmp)
    if isinstance(pretrainer.encoder, keras_hub.models.ElectraBackbone):
      # ELECTRA: the discriminator as an ElectraBackbone and its tokenizer;
      # keras-hub has no ELECTRA task or preprocessor to save with them.
      keras_hub.models.ElectraTokenizer(
          vocabulary=vocab_file, lowercase=bool(do_lower_case)).save_to_preset(tmp)
    else:
      tokenizer = keras_hub.models.BertTokenizer(
          vocabulary=vocab_file, lowercase=bool(do_lower_case))
      # Saves preprocessor.json and the tokenizer (tokenizer.json + vocab asset).
      keras_hub.models.BertTextClassifierPreprocessor(
          tokenizer=tokenizer, sequence_length=max_seq_length).save_to_preset(tmp)
    metadata_path = os.path.join(tmp, "metadata.json")
    with tf.io.gfile.GFile(metadata_path, "r") as f:
      metadata = json.load(f)
    metadata[PRESET_METADATA_KEY] = {
        "bert_config": config.to_dict(), "max_seq_length": max_seq_length,
        "do_lower_case": bool(do_lower_case)}
    with tf.io.gfile.GFile(metadata_path, "w") as f:
      f.write(json.dumps(metadata, indent=4))
  with files_lib.atomic_dir(preset_dir, overwrite, "keras_hub_preset_out") as tmp:
    write(tmp)
  logging.info("Wrote keras-hub preset %s (sequence length %d)", preset_dir, max_seq_length)


def read_preset_bert_config(preset_dir):
  """The BertConfig that `save_keras_hub_preset` kept in the preset's metadata.

  Raises:
    ValueError: the preset has no bert_tf metadata (not written by bert_tf).
  """
  path = os.path.join(preset_dir, "metadata.json")
  with tf.io.gfile.GFile(path, "r") as f:
    metadata = json.load(f)
  if PRESET_METADATA_KEY not in metadata:
    raise ValueError(f"{path} has no {PRESET_METADATA_KEY!r} entry: not a bert_tf preset")
  return config_lib.BertConfig.from_dict(metadata[PRESET_METADATA_KEY]["bert_config"],
                                         source=path)


@dataclasses.dataclass(frozen=True)
class ExportOptions:
  """What `run_export` reads and writes; each output is optional."""
  bert_config_file: str
  checkpoint: str
  vocab_file: str
  do_lower_case: bool = True
  export_dir: str | None = None
  max_seq_length: int | None = None  # None: default_max_seq_length(config)
  top_k: int = 5
  text_signatures: bool = True
  tf1_checkpoint_out: str | None = None
  keras_hub_preset_out: str | None = None
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
             "keras_hub_preset_out": options.keras_hub_preset_out}
  outputs = {k: v for k, v in outputs.items() if v}
  if not outputs:
    raise ValueError("nothing to write: give export_dir, tf1_checkpoint_out or "
                     "keras_hub_preset_out")
  for name, path in outputs.items():
    paths = tf1_checkpoint_files(path) if name == "tf1_checkpoint_out" else [path]
    for p in paths:
      files_lib.check_absent(p, options.overwrite, name)
  bert_config = config_lib.BertConfig.from_json_file(options.bert_config_file)
  vocab = wordpiece_vocab.load_vocab(options.vocab_file)
  max_seq_length = options.max_seq_length or default_max_seq_length(bert_config)
  _check_export_args(bert_config, vocab, max_seq_length, options.top_k)
  pretrainer, _ = load_pretrainer(bert_config, options.checkpoint)
  if options.export_dir:
    export_saved_model(pretrainer, options.vocab_file, options.do_lower_case,
                       options.export_dir, max_seq_length=max_seq_length,
                       top_k=options.top_k, text_signatures=options.text_signatures,
                       overwrite=options.overwrite)
  if options.tf1_checkpoint_out:
    write_tf1_checkpoint(pretrainer, options.tf1_checkpoint_out, options.vocab_file,
                         overwrite=options.overwrite)
  if options.keras_hub_preset_out:
    save_keras_hub_preset(pretrainer, options.vocab_file, options.do_lower_case,
                          options.keras_hub_preset_out, max_seq_length=max_seq_length,
                          overwrite=options.overwrite)
  return outputs
