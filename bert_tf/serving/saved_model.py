"""The serving SavedModel of a pretrained BERT: the module it saves
(`BertServingModule`) and its writer (`export_saved_model`); with the
pieces the fine-tuned task exports (classifier_export, tagger_export,
answer_export) build on: text to model inputs (`text_ids`, `pack_texts`,
`join_segments`, `dense_inputs`) and `TaskServingModule`.

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
    (a left-to-right LM, objective ltr: causal, pooled from the last real token)
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

The export objective declares which sentence outputs and text
signatures exist (`Objective.text_signatures`: its sentence-pair head,
ELECTRA's discriminator); a checkpoint records its objective, an original
TF1 checkpoint is taken as MLM + NSP.

Because TensorFlow checks every op of every function when it loads a
SavedModel, a server without tensorflow-text's ops (stock TF Serving) cannot
load an export that has the text signatures at all; `text_signatures=False`
writes the ids-in signatures only, which stock TF Serving loads.
"""

import os

from absl import logging
import tensorflow as tf

from bert_tf.io import file_io as files_lib
from bert_tf.data.tokenizers import sentencepiece_graph
from bert_tf.data.tokenizers import sentencepiece_vocab
from bert_tf.data.tokenizers import tokenizer_graph
from bert_tf.data.tokenizers import wordpiece_vocab
from bert_tf.models import modeling
from bert_tf.training import objectives

# Errors reported per example by the text signatures (the batch still runs).
ERROR_EMPTY_TEXT = "empty text"
ERROR_NO_MASK = "no [MASK] in text"
ERROR_MASKS_TRUNCATED = "every [MASK] lies beyond max_seq_length"
ERROR_EMPTY_TEXT_A = "empty text_a"
ERROR_EMPTY_TEXT_B = "empty text_b"


# ------------------------------------------------------------------------------
# The serving module
# ------------------------------------------------------------------------------


def _ids_spec(name, width=None):
  return tf.TensorSpec([None, width], tf.int32, name=name)


def truncate_pair_lengths(len_a, len_b, max_total):
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


def check_export_args(bert_config, vocab, max_seq_length, top_k):
  """ValueError naming the problem when the vocab is not the config's size,
  or max_seq_length or top_k are out of range."""
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


class Untracked:
  """Holds a model without making it a dependency of a tf.Module."""

  def __init__(self, model):
    self.model = model


def tf_variables(model):
  """The distinct tf.Variables under a Keras 3 model's weights, in order: what
  an export module tracks in place of the model (see BertServingModule)."""
  seen, variables = set(), []
  for weight in model.weights:
    variable = getattr(weight, "value", weight)
    if id(variable) not in seen:
      seen.add(id(variable))
      variables.append(variable)
  return variables


# ------------------------------------------------------------------------------
# Text to model inputs (this module's text signatures and the task exports')
# ------------------------------------------------------------------------------


def text_ids(tokenizer, texts):
  """Wordpiece ids of each text, as the data writer tokenizes.

  Args:
    tokenizer: a tokenizer_graph.TokenizerModule (or a module with its
      tokenize_eager).
    texts: string [batch]; invalid UTF-8 is replaced by U+FFFD first (which
      the original tokenizer drops) so one bad example cannot fail the batch.

  Returns:
    int64 RaggedTensor [batch, (tokens)].
  """
  texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace")
  return tokenizer.tokenize_eager(texts)


def join_segments(vocab, tokens_a, tokens_b=None):
  """[CLS] A [SEP] (B [SEP]) of ragged int64 ids [batch, (n)] as they are
  (cut beforehand): the ids and their segment ids (0 up to the first [SEP],
  1 after), both ragged int64 [batch, (seq)]."""
  rows = tokens_a.nrows()
  cls = tf.fill([rows, 1], tf.constant(vocab.cls_id, tf.int64))
  sep = tf.fill([rows, 1], tf.constant(vocab.sep_id, tf.int64))
  if tokens_b is None:
    ids = tf.concat([cls, tokens_a, sep], axis=1)
    return ids, tf.zeros_like(ids)
  ids = tf.concat([cls, tokens_a, sep, tokens_b, sep], axis=1)
  segments = tf.concat([tf.zeros_like(cls), tf.zeros_like(tokens_a), tf.zeros_like(sep),
                        tf.ones_like(tokens_b), tf.ones_like(sep)], axis=1)
  return ids, segments


def pack_texts(vocab, max_seq_length, tokens_a, tokens_b=None):
  """`join_segments` of A (and B) cut to max_seq_length ids as the original
  classifier cuts: A's end alone, a pair by `truncate_pair_lengths`.

  Returns:
    ids, segment ids (ragged int64 [batch, (seq)]) and truncated bool
    [batch] (some token was cut off).
  """
  len_a = tokens_a.row_lengths()
  if tokens_b is None:
    truncated = len_a > max_seq_length - 2
    return join_segments(vocab, tokens_a[:, :max_seq_length - 2]) + (truncated,)
  len_b = tokens_b.row_lengths()
  keep_a, keep_b = truncate_pair_lengths(len_a, len_b, max_seq_length - 3)
  truncated = (keep_a < len_a) | (keep_b < len_b)
  tokens_a = tf.ragged.boolean_mask(tokens_a, tf.ragged.range(len_a) < keep_a[:, None])
  tokens_b = tf.ragged.boolean_mask(tokens_b, tf.ragged.range(len_b) < keep_b[:, None])
  return join_segments(vocab, tokens_a, tokens_b) + (truncated,)


def dense_inputs(ids, pad_id, shape=None):
  """input_ids and input_mask, int32 [batch, seq], of ragged ids int64
  [batch, (seq)], padded to the longest row (or to `shape`)."""
  input_ids = tf.cast(ids.to_tensor(pad_id, shape=shape), tf.int32)
  input_mask = tf.cast(tf.ones_like(ids).to_tensor(0, shape=shape), tf.int32)
  return input_ids, input_mask


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
               top_k=5, text_signatures=True, spm_model_file=None):
    """Checks the arguments against each other and traces nothing yet.

    spm_model_file: a SentencePiece model (ALBERT's) in place of the
    WordPiece vocab_file: the text signatures tokenize with it by ALBERT's
    rules (data/tokenizers/sentencepiece_graph.py), and it is the asset.

    Raises:
      ValueError: the vocab's size is not bert_config.vocab_size, or
        max_seq_length / top_k are out of range.
    """
    super().__init__(name="bert_tf_serving")
    bert_config = pretrainer.config
    spm_model = None
    if spm_model_file:
      spm_model = sentencepiece_vocab.load_sentencepiece(spm_model_file)
      vocab, vocab_file = spm_model.vocab, spm_model.path
      if text_signatures and spm_model.model_proto is None:
        raise ValueError(f"{spm_model.path}: a tokenizer.json's Unigram model has no graph "
                         "tokenizer for the text signatures: export with "
                         "text_signatures off (--notext_signatures), or give its spiece.model")
    else:
      vocab = wordpiece_vocab.load_vocab(vocab_file)
    check_export_args(bert_config, vocab, max_seq_length, top_k)
    # A Keras 3 variable wraps a tf.Variable. Saving the Keras objects
    # themselves gives each weight a second variable in the SavedModel's
    # graph, which is what TF1-style loaders (TF Serving's C++ loader)
    # restore, while the functions read the first, never-restored one. So,
    # as keras.export.ExportArchive does, the module tracks the underlying
    # tf.Variables only and holds the model out of tracking.
    # The objective's exported network (a distillation model: its student).
    objective = objectives.of_model(pretrainer)
    pretrainer = objective.export_model(pretrainer)
    self._holder = Untracked(pretrainer)
    self.objective = objective.export_objective
    if self.objective.causal_encoder:  # `encode` reads it as trained: causally
      modeling.read_causally(pretrainer.encoder, self.objective.pooled_position)
    self.model_variables = tf_variables(pretrainer)
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
      if spm_model is not None:
        self.tokenizer = sentencepiece_graph.SentencePieceModule(spm_model, do_lower_case)
        self.mask_tokenizer = sentencepiece_graph.SentencePieceModule(
            spm_model, do_lower_case, keep_mask=True)
      else:
        self.tokenizer = tokenizer_graph.TokenizerModule(
            vocab, do_lower_case, vocab_asset_path=vocab_file)
        self.mask_tokenizer = tokenizer_graph.TokenizerModule(
            vocab, do_lower_case, keep_special_tokens=True, vocab_asset_path=vocab_file)
      self._id_to_token = tf.constant(vocab.tokens, tf.string)
      text_spec = [tf.TensorSpec([None], tf.string, name="text")]
      pair_spec = [tf.TensorSpec([None], tf.string, name="text_a"),
                   tf.TensorSpec([None], tf.string, name="text_b")]
      # Each text signature an objective may name: its function and inputs.
      text_functions = {"fill_mask": (self._fill_mask, text_spec),
                        "next_sentence": (self._next_sentence, pair_spec),
                        "sentence_order": (self._sentence_order, pair_spec),
                        "replaced_token_detection": (self._replaced_token_detection,
                                                     text_spec)}
      for name in self.objective.text_signatures:
        function, spec = text_functions[name]
        setattr(self, name, tf.function(function, input_signature=spec))
        self._signature_names.append(name)

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
    if self.objective.has_discriminator:
      result["replaced_probability"] = tf.sigmoid(outputs["discriminator_logits"])
    return result

  def _encode(self, input_ids, input_mask, segment_ids):
    """Encoder outputs; see the module docstring."""
    with tf.control_dependencies(self._check_length(input_ids)):
      outputs = modeling.encoder_outputs(self.pretrainer.encoder, input_ids, segment_ids,
                                         input_mask, training=False)
    pooled = outputs["pooled_output"]
    if not self.objective.has_pooler:
      pooled = outputs["sequence_output"][:, 0]  # ELECTRA: no pooler
    return {"sequence_output": tf.cast(outputs["sequence_output"], tf.float32),
            "pooled_output": tf.cast(pooled, tf.float32)}

  # -- text in -----------------------------------------------------------------

  def _fill_mask(self, text):
    """Top-k fills of each [MASK]; see the module docstring."""
    batch = tf.shape(text, out_type=tf.int64)[0]
    tokens = text_ids(self.mask_tokenizer, text)
    num_tokens = tokens.row_lengths()
    had_mask = tf.reduce_any(tf.equal(tokens, self._vocab.mask_id), axis=1)
    ids, _, truncated = pack_texts(self._vocab, self._max_seq_length, tokens)

    is_mask = tf.equal(ids, self._vocab.mask_id)
    positions = tf.ragged.boolean_mask(
        tf.ragged.range(ids.row_lengths()), is_mask)  # [batch, (masks)]
    num_masks = positions.row_lengths()
    max_masks = tf.reduce_max(tf.concat([num_masks, [0]], axis=0))
    # At least one column so the MLM head always sees a position.
    dense_positions = tf.cast(
        positions.to_tensor(0, shape=[batch, tf.maximum(max_masks, 1)]), tf.int32)

    input_ids, input_mask = dense_inputs(ids, self._vocab.pad_id)
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
    tokens = text_ids(self.tokenizer, text)
    num_tokens = tokens.row_lengths()
    ids, _, truncated = pack_texts(self._vocab, self._max_seq_length, tokens)
    input_ids, input_mask = dense_inputs(ids, self._vocab.pad_id)
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
    tokens_a = text_ids(self.tokenizer, text_a)
    tokens_b = text_ids(self.tokenizer, text_b)
    len_a, len_b = tokens_a.row_lengths(), tokens_b.row_lengths()
    ids, segments, truncated = pack_texts(self._vocab, self._max_seq_length, tokens_a, tokens_b)
    batch = tf.shape(text_a, out_type=tf.int64)[0]
    input_ids, input_mask = dense_inputs(ids, self._vocab.pad_id)
    outputs = self.pretrainer(
        {"input_ids": input_ids, "input_mask": input_mask,
         "segment_ids": tf.cast(segments.to_tensor(0), tf.int32),
         "masked_lm_positions": tf.zeros([batch, 1], tf.int32)},
        training=False)
    probs = tf.nn.softmax(tf.cast(outputs["nsp_logits"], tf.float32))
    error = tf.where(len_a == 0, ERROR_EMPTY_TEXT_A, tf.where(len_b == 0, ERROR_EMPTY_TEXT_B, ""))
    return {output_name: probs[:, 0], "truncated": truncated, "error": error}


def graph_sentencepiece(spm_model_file):
  """The sentencepiece_vocab model of `spm_model_file` for a text signature.

  Raises:
    ValueError: a tokenizer.json's Unigram model, which has no graph tokenizer.
  """
  spm_model = sentencepiece_vocab.load_sentencepiece(spm_model_file)
  if spm_model.model_proto is None:
    raise ValueError(f"{spm_model.path}: a tokenizer.json's Unigram model has no graph "
                     "tokenizer for the text signatures: give its spiece.model")
  return spm_model


class TaskServingModule(tf.Module):
  """What the SavedModels of fine-tuned task models (classifier_export,
  tagger_export, answer_export) hold besides their own signatures and
  settings: the model's tf.Variables (the model held out, as
  BertServingModule), the vocab asset and the graph tokenizer.

  Args:
    model: a Keras model with a `config` (models.config.BertConfig).
    vocab_file: the vocab it was fine-tuned with.
    do_lower_case: the tokenizer setting of fine-tuning.
    name: the module's name.
    spm_model_file: a SentencePiece model (ALBERT's) in the place of
      vocab_file: the text signatures tokenize with it by ALBERT's rules
      (data/tokenizers/sentencepiece_graph.py), and it is the asset.

  Raises:
    ValueError: the vocab's size is not the model's; a tokenizer.json's
      Unigram model as spm_model_file (it has no graph tokenizer).
  """

  def __init__(self, model, vocab_file, do_lower_case, name, spm_model_file=None):
    super().__init__(name=name)
    config = model.config
    if spm_model_file:
      spm_model = graph_sentencepiece(spm_model_file)
      vocab, vocab_file = spm_model.vocab, spm_model.path
    else:
      vocab = wordpiece_vocab.load_vocab(vocab_file)
    if vocab.size != config.vocab_size:
      what = (f"SentencePiece model {vocab_file} has {vocab.size} pieces" if spm_model_file
              else f"vocab file {vocab_file} has {vocab.size} tokens")
      raise ValueError(f"{what} but the bert_config's vocab_size is {config.vocab_size}")
    self._holder = Untracked(model)
    self.model_variables = tf_variables(model)
    self.vocab_file = tf.saved_model.Asset(vocab_file)
    if spm_model_file:
      self.tokenizer = sentencepiece_graph.SentencePieceModule(spm_model, do_lower_case)
    else:
      self.tokenizer = tokenizer_graph.TokenizerModule(vocab, do_lower_case,
                                                       vocab_asset_path=vocab_file)
    self._vocab = vocab
    self._max_positions = config.max_position_embeddings

  @property
  def model(self):
    return self._holder.model

  def _logits(self, input_ids, input_mask, segment_ids):
    """The model's outputs as float32, once the ids are checked to be at most
    max_position_embeddings long."""
    check = tf.debugging.assert_less_equal(
        tf.shape(input_ids)[1], self._max_positions,
        message=f"sequence longer than max_position_embeddings={self._max_positions}")
    with tf.control_dependencies([check]):
      logits = self.model({"input_ids": input_ids, "input_mask": input_mask,
                           "segment_ids": segment_ids}, training=False)
    return tf.cast(logits, tf.float32)

  def write(self, export_dir, overwrite):
    """Saves the module with its `signature_functions` to export_dir
    (atomically: a temporary directory renamed when complete)."""
    with files_lib.atomic_dir(export_dir, overwrite, "export_dir") as tmp:
      tf.saved_model.save(self, tmp, signatures=self.signature_functions())


# ------------------------------------------------------------------------------
# Writing
# ------------------------------------------------------------------------------


def export_saved_model(pretrainer, vocab_file, do_lower_case, export_dir,
                       max_seq_length=128, top_k=5, text_signatures=True, overwrite=False,
                       spm_model_file=None):
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
    spm_model_file: a SentencePiece model in place of vocab_file (see
      BertServingModule).

  Returns:
    The BertServingModule that was saved.

  Raises:
    FileExistsError: export_dir exists and overwrite is false.
    ValueError: vocab, config and arguments disagree.
  """
  files_lib.check_absent(export_dir, overwrite, "export_dir")
  module = BertServingModule(pretrainer, vocab_file, do_lower_case,
                             max_seq_length=max_seq_length, top_k=top_k,
                             text_signatures=text_signatures, spm_model_file=spm_model_file)

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



def default_max_seq_length(bert_config):
  """The export's default max_seq_length: 128, or max_position_embeddings if smaller."""
  return min(128, bert_config.max_position_embeddings)

