"""SavedModel of a fine-tuned classifier: text in, labels and probabilities out.

Signatures (`batch` any size; ids up to max_position_embeddings long):

  serving_default, also named classify_ids (stock TensorFlow ops only):
    input_ids, input_mask, segment_ids  int32 [batch, seq]
    -> logits float32 [batch, num_outputs], and for classification
       probabilities float32 [batch, num_labels], label_ids int32 [batch]
  classify (needs tensorflow-text's ops):
    text string [batch] for a single-text task (as fill_mask's input), text_a
    and text_b string [batch] for a sentence-pair task (as next_sentence's)
    -> classification: labels string [batch], probabilities float32
       [batch, num_labels] (columns in the order of the `label_names`
       output: string [num_labels]); regression: scores float32 [batch];
       both: truncated bool [batch].
    The text is tokenized as in training (the original rules; ALBERT's
    SentencePiece rules for a model fine-tuned with an spm model) and packed
    [CLS] A [SEP] (B [SEP]) to max_seq_length, a pair cut as the original
    (longer side first).

The export loads with only tensorflow and tensorflow-text (no bert_tf, no
Keras): `tf.saved_model.load(dir).signatures["classify"](text=...)`, and
`bert_tf.predict --saved_model=dir --text=...` (or --text_a, --text_b).
"""

import tensorflow as tf

# The pretraining SavedModel's: one way of packing text into ids (the
# original's pair truncation), one way of tracking a Keras model's variables.
from bert_tf.serving import saved_model


class ClassifierServingModule(saved_model.TaskServingModule):
  """What `export_classifier` saves: the classifier's variables, the vocab
  asset, the label names and the signature functions."""

  def __init__(self, model, vocab_file, do_lower_case, labels, pair, max_seq_length=128,
               spm_model_file=None):
    """
    Args:
      model: a models.classifier.BertClassifier.
      vocab_file: the vocab it was fine-tuned with.
      do_lower_case: the tokenizer setting of fine-tuning.
      labels: class names in output order (empty for regression).
      pair: whether `classify` takes text_a and text_b (else text).
      max_seq_length: the [CLS] ... [SEP] length `classify` packs to.
      spm_model_file: the SentencePiece model (ALBERT's) it was fine-tuned
        with, in the place of vocab_file: `classify` tokenizes by ALBERT's rules.

    Raises:
      ValueError: the vocab's size is not the model's, max_seq_length out of
        range, or labels that do not fit the model's outputs.
    """
    super().__init__(model, vocab_file, do_lower_case, name="bert_tf_classifier",
                     spm_model_file=spm_model_file)
    config = model.config
    if not (4 if pair else 3) <= max_seq_length <= config.max_position_embeddings:
      raise ValueError(f"max_seq_length={max_seq_length} must lie in [4, "
                       f"max_position_embeddings={config.max_position_embeddings}]")
    regression = not labels
    if (1 if regression else len(labels)) != model.num_outputs:
      raise ValueError(f"{len(labels)} labels for a model with {model.num_outputs} outputs")
    self._regression = regression
    self._pair = bool(pair)
    self._max_seq_length = max_seq_length
    self.label_names = tf.Variable(list(labels) or [""], trainable=False, dtype=tf.string,
                                   name="label_names")
    ids = [tf.TensorSpec([None, None], tf.int32, name=n)
           for n in ("input_ids", "input_mask", "segment_ids")]
    self.classify_ids = tf.function(self._classify_ids, input_signature=ids)
    texts = ([tf.TensorSpec([None], tf.string, name="text_a"),
              tf.TensorSpec([None], tf.string, name="text_b")] if pair
             else [tf.TensorSpec([None], tf.string, name="text")])
    self.classify = tf.function(self._classify, input_signature=texts)

  def signature_functions(self):
    return {"serving_default": self.classify_ids, "classify_ids": self.classify_ids,
            "classify": self.classify}

  def _classify_ids(self, input_ids, input_mask, segment_ids):
    logits = self._logits(input_ids, input_mask, segment_ids)
    if self._regression:
      return {"logits": logits}
    return {"logits": logits, "probabilities": tf.nn.softmax(logits),
            "label_ids": tf.argmax(logits, axis=-1, output_type=tf.int32)}

  def _classify(self, text_a, text_b=None):
    tokens_a = saved_model.text_ids(self.tokenizer, text_a)
    tokens_b = None if text_b is None else saved_model.text_ids(self.tokenizer, text_b)
    ids, segments, truncated = saved_model.pack_texts(self._vocab, self._max_seq_length,
                                                      tokens_a, tokens_b)
    input_ids, input_mask = saved_model.dense_inputs(ids, self._vocab.pad_id)
    logits = self._logits(input_ids, input_mask, tf.cast(segments.to_tensor(0), tf.int32))
    if self._regression:
      return {"scores": logits[:, 0], "truncated": truncated}
    probabilities = tf.nn.softmax(logits)
    return {"labels": tf.gather(self.label_names, tf.argmax(logits, axis=-1)),
            "probabilities": probabilities, "label_names": tf.identity(self.label_names),
            "truncated": truncated}


def export_classifier(model, vocab_file, do_lower_case, labels, pair, export_dir,
                      max_seq_length=128, overwrite=False, spm_model_file=None):
  """Writes the classifier's SavedModel to export_dir (atomically: a
  temporary directory renamed when complete). spm_model_file: an ALBERT
  model's SentencePiece model in the place of vocab_file.

  Returns:
    The ClassifierServingModule saved.

  Raises:
    FileExistsError: export_dir exists and overwrite is false.
    ValueError: see ClassifierServingModule.
  """
  from bert_tf.downstream import export  # pylint: disable=g-import-not-at-top
  return export.write_module(
      lambda: ClassifierServingModule(model, vocab_file, do_lower_case, labels, pair,
                                      max_seq_length=max_seq_length,
                                      spm_model_file=spm_model_file),
      export_dir, overwrite, "classifier")


def export_finetuned(config, bert_config, results, export_dir, overwrite=False):
  """Exports the classifier that `classification.finetune_tsv.run(config, bert_config)`
  saved (its first seed's: export.finetuned_prefix).

  Args:
    config: the finetune.FinetuneConfig of the run (save_model True).
    bert_config: its BertConfig.
    results: what run returned (labels, task_type).
    export_dir: the SavedModel directory to create.
  """
  from bert_tf.downstream import export  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.classification import classifier as classifier_lib  # pylint: disable=g-import-not-at-top
  labels = results["labels"]
  model = export.read_finetuned(classifier_lib.BertClassifier(bert_config, len(labels) or 1),
                                export.finetuned_prefix(config),
                                init_checkpoint=config.init_checkpoint)
  return export_classifier(model, config.vocab_file, config.do_lower_case, labels,
                           bool(config.text_b_column), export_dir,
                           max_seq_length=config.max_seq_length, overwrite=overwrite,
                           spm_model_file=config.spm_model_file)
