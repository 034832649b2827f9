"""SavedModel of a fine-tuned token tagger: text in, words and their labels out.

Signatures (`batch` any size; ids up to max_position_embeddings long):

  serving_default, also named tag_ids (stock TensorFlow ops only):
    input_ids, input_mask, segment_ids  int32 [batch, seq]
    -> logits float32 [batch, seq, num_labels], label_ids int32 [batch, seq]
       (the label of each position: a word's is at its first WordPiece)
  tag (needs tensorflow-text's ops):
    text string [batch]
    -> words string [batch, max_words], labels string [batch, max_words],
       probabilities float32 [batch, max_words] (of each label),
       num_words int32 [batch], num_windows int32 [batch], label_names
       string [num_labels]; slots past an example's num_words hold "" and 0.

The words of a text are its whitespace-separated tokens, as written (the
columns of a CoNLL file are such tokens): split punctuation off beforehand
as the training data was. Each word is tokenized as in training (the
original's BasicTokenizer rules, then WordPiece; or, for a model fine-tuned
with an ALBERT SentencePiece model, ALBERT's rules and its pieces) and
labeled at its first piece. A text of more than max_seq_length - 2 pieces is read in overlapping
windows `stride` pieces apart, each word labeled from the window where it
has most context (data.conll's rule), so every word is labeled, none cut.

The export loads with only tensorflow and tensorflow-text (no bert_tf, no
Keras): `tf.saved_model.load(dir).signatures["tag"](text=...)`, and
`bert_tf.predict --saved_model=dir --text=...`.
"""

import tensorflow as tf

from bert_tf.serving import saved_model

# Windows of one text, at most: the tie-break key packs a window index below it.
_MAX_WINDOWS = 1 << 20


class TaggerServingModule(saved_model.TaskServingModule):
  """What `export_tagger` saves: the tagger's variables, the vocab asset,
  the label names and the signature functions.

  Args:
    model: a models.token_head.BertTokenTagger.
    vocab_file: the vocab it was fine-tuned with.
    do_lower_case: the tokenizer setting of fine-tuning.
    labels: label names in output order.
    max_seq_length: the window length `tag` packs to, [CLS] and [SEP] included.
    stride: pieces between the windows of a long text (0: half a window).
    spm_model_file: the SentencePiece model (ALBERT's) it was fine-tuned
      with, in the place of vocab_file: each word tokenized by ALBERT's rules.

  Raises:
    ValueError: the vocab's size is not the model's, max_seq_length or
      stride out of range, labels that do not fit the model's outputs.
  """

  def __init__(self, model, vocab_file, do_lower_case, labels, max_seq_length=128, stride=0,
               spm_model_file=None):
    super().__init__(model, vocab_file, do_lower_case, name="bert_tf_tagger",
                     spm_model_file=spm_model_file)
    config = model.config
    if not 3 <= max_seq_length <= config.max_position_embeddings:
      raise ValueError(f"max_seq_length={max_seq_length} must lie in [3, "
                       f"max_position_embeddings={config.max_position_embeddings}]")
    stride = stride or max(1, (max_seq_length - 2) // 2)
    if not 1 <= stride <= max_seq_length - 2:
      raise ValueError(f"stride={stride} must lie in [1, max_seq_length - 2]")
    if len(labels) != model.num_outputs:
      raise ValueError(f"{len(labels)} labels for a model with {model.num_outputs} outputs")
    self._max_tokens = max_seq_length - 2
    self._stride = stride
    self.label_names = tf.Variable(list(labels), trainable=False, dtype=tf.string,
                                   name="label_names")
    ids = [tf.TensorSpec([None, None], tf.int32, name=n)
           for n in ("input_ids", "input_mask", "segment_ids")]
    self.tag_ids = tf.function(self._tag_ids, input_signature=ids)
    self.tag = tf.function(self._tag, input_signature=[tf.TensorSpec([None], tf.string,
                                                                     name="text")])

  def signature_functions(self):
    return {"serving_default": self.tag_ids, "tag_ids": self.tag_ids, "tag": self.tag}

  def _tag_ids(self, input_ids, input_mask, segment_ids):
    logits = self._logits(input_ids, input_mask, segment_ids)
    return {"logits": logits, "label_ids": tf.argmax(logits, axis=-1, output_type=tf.int32)}

  def _word_pieces(self, words):
    """Piece ids of each word (flat words [n]) -> ragged [n, (pieces)];
    a word of no piece gets one unknown id, as in training."""
    pieces = saved_model.text_ids(self.tokenizer, words)
    unk = tf.constant(self._vocab.unk_id, tf.int64)
    dense = tf.concat([pieces.to_tensor(unk), tf.fill([tf.shape(words)[0], 1], unk)], axis=1)
    return tf.RaggedTensor.from_tensor(dense, lengths=tf.maximum(pieces.row_lengths(), 1))

  def _windows(self, text_pieces):
    """Window starts (flat [windows]), each window's text, and each text's
    first window and window count, as data.conll.window_starts."""
    n = text_pieces.row_lengths()
    extra = tf.maximum(n - self._max_tokens, 0)
    counts = 1 + (extra + self._stride - 1) // self._stride
    first_window = tf.cumsum(counts, exclusive=True)
    window_text = tf.repeat(tf.range(tf.size(n, out_type=tf.int64)), counts)
    k = tf.range(tf.reduce_sum(counts)) - tf.gather(first_window, window_text)
    return k * self._stride, window_text, first_window, counts

  def _best_window(self, first, n_of_word, counts_of_word):
    """Per word: (k, the window of most context for its first piece at
    `first` among its text's windows) as data.conll.best_window, the first
    on a tie."""
    s, length = self._stride, self._max_tokens
    low = tf.maximum((first - length + s) // s, 0)  # ceil((first - length + 1) / s)
    high = tf.minimum(first // s, counts_of_word - 1)
    candidates = tf.ragged.range(low, high + 1)
    start = candidates * s
    end = tf.minimum(start + length, n_of_word[:, None])
    f = first[:, None]
    # 100 x (min context + 0.01 x window length): the same order, in integers.
    score = 100 * tf.minimum(f - start, end - 1 - f) + (end - start)
    key = tf.reduce_max(score * _MAX_WINDOWS - candidates, axis=1)
    return tf.math.floormod(-key, _MAX_WINDOWS)

  def _tag(self, text):
    words = tf.strings.split(text)  # [batch, (words)]
    word_pieces = self._word_pieces(words.flat_values)  # [n_words, (pieces)]
    text_pieces = tf.RaggedTensor.from_row_splits(
        word_pieces.flat_values, tf.gather(word_pieces.row_splits, words.row_splits))
    starts, window_text, first_window, counts = self._windows(text_pieces)
    n = text_pieces.row_lengths()
    ends = tf.minimum(starts + self._max_tokens, tf.gather(n, window_text))
    offsets = tf.gather(text_pieces.row_splits, window_text)
    window_pieces = tf.gather(text_pieces.flat_values,
                              tf.ragged.range(starts, ends) + offsets[:, None])
    ids, _ = saved_model.join_segments(self._vocab, window_pieces)
    input_ids, input_mask = saved_model.dense_inputs(ids, self._vocab.pad_id)
    probabilities = tf.nn.softmax(self._logits(input_ids, input_mask, tf.zeros_like(input_ids)))
    # Each word's first piece, in its text, and its window of most context.
    word_text = words.value_rowids()
    first = word_pieces.row_splits[:-1] - tf.gather(text_pieces.row_splits, word_text)
    k = self._best_window(first, tf.gather(n, word_text), tf.gather(counts, word_text))
    window = tf.gather(first_window, word_text) + k
    position = 1 + first - k * self._stride
    word_probs = tf.gather_nd(probabilities, tf.stack([window, position], axis=1))
    label_ids = tf.argmax(word_probs, axis=-1)
    labels = words.with_flat_values(tf.gather(self.label_names, label_ids))
    chosen = words.with_flat_values(tf.reduce_max(word_probs, axis=-1))
    return {"words": words.to_tensor(""), "labels": labels.to_tensor(""),
            "probabilities": chosen.to_tensor(0.0),
            "num_words": tf.cast(words.row_lengths(), tf.int32),
            "num_windows": tf.cast(counts, tf.int32),
            "label_names": tf.identity(self.label_names)}


def export_tagger(model, vocab_file, do_lower_case, labels, export_dir, max_seq_length=128,
                  stride=0, overwrite=False, spm_model_file=None):
  """Writes the tagger's SavedModel to export_dir (atomically: a temporary
  directory renamed when complete). spm_model_file: an ALBERT model's
  SentencePiece model in the place of vocab_file.

  Returns:
    The TaggerServingModule saved.

  Raises:
    FileExistsError: export_dir exists and overwrite is false.
    ValueError: see TaggerServingModule.
  """
  from bert_tf.downstream import export  # pylint: disable=g-import-not-at-top
  return export.write_module(
      lambda: TaggerServingModule(model, vocab_file, do_lower_case, labels,
                                  max_seq_length=max_seq_length, stride=stride,
                                  spm_model_file=spm_model_file),
      export_dir, overwrite, "tagger")


def export_finetuned(config, bert_config, results, export_dir, overwrite=False):
  """Exports the tagger that `downstream.tagging.tagging.run(config, bert_config)`
  saved (its first seed's: export.finetuned_prefix).

  Args:
    config: the tagging.TaggingConfig of the run (save_model True).
    bert_config: its BertConfig.
    results: what run returned (labels).
    export_dir: the SavedModel directory to create.
  """
  from bert_tf.downstream import export  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.tagging import token_head  # pylint: disable=g-import-not-at-top
  labels = results["labels"]
  model = export.read_finetuned(
      token_head.BertTokenTagger(bert_config, len(labels), frozen_encoder=config.frozen_encoder),
      export.finetuned_prefix(config), init_checkpoint=config.init_checkpoint)
  return export_tagger(model, config.vocab_file, config.do_lower_case, labels, export_dir,
                       max_seq_length=config.max_seq_length, stride=config.stride,
                       overwrite=overwrite, spm_model_file=config.spm_model_file)
