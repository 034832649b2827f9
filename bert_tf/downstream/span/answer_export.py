"""SavedModel of a SQuAD span model: question and context text in, answer out.

Signature `answer` (needs tensorflow-text's ops), also serving_default:
  question string [batch], context string [batch]
  -> answer string [batch]: the answer text, a substring of the context
     ("" when there is none);
     start, end int32 [batch]: its character offsets in the context
     (Unicode code points, end exclusive: context[start:end] in Python;
     -1 when there is no answer);
     score float32 [batch]: start logit + end logit of the span (the
     original's n-best score before its softmax);
     has_answer bool [batch] (false: no span passed, where run_squad
     writes the text "empty"; or SQuAD 2.0's null answer);
     truncated bool [batch] (the context did not fit the one window).

How it answers, against run_squad's prediction (span_answers.py):
  * as run_squad: the context is split into words at SQuAD's white space
    (space, tab, CR, LF, U+202F) and each word WordPiece-tokenized (an
    ALBERT's SentencePiece model, spm_model_file: by ALBERT's rules in the
    graph, data/tokenizers/sentencepiece_graph.py; a tokenizer.json is refused), the
    question cut to max_query_length pieces, the window [CLS] question [SEP]
    context [SEP] with segment ids 0 then 1; a span is the start and end
    positions among the n_best_size highest start and end logits (of the
    window padded to max_seq_length, as run_squad's) that lie in the
    context, end >= start, at most max_answer_length pieces; the
    best span has the highest start + end logit; SQuAD 2.0 models
    (version_2_with_negative) answer "" when the [CLS] score minus the best
    span's exceeds null_score_diff_threshold.
  * One window, the limit of this signature: only the first
    max_seq_length - question pieces - 3 pieces of the context are read
    (`truncated` says when more were there); run_squad slides windows of
    doc_stride over a long context.
  * The answer is the context's whole words that the span's pieces lie in:
    run_squad's final_text further trims those words to the predicted
    pieces' text (dropping, say, the parentheses of "(1895)" when the span
    covers "1895" only); this signature keeps the words, and as a slice
    of the context keeps the white space between them as it is (run_squad
    joins the words with one space).

The export loads with only tensorflow and tensorflow-text:
`tf.saved_model.load(dir).signatures["answer"](question=..., context=...)`,
or `bert_tf.predict --saved_model=dir --text_a=QUESTION --text_b=CONTEXT`.
"""

import os

import tensorflow as tf

from bert_tf.io import file_io as files_lib
from bert_tf.serving import saved_model

# SQuAD's white space (data/squad.is_squad_whitespace), as code points.
_WHITESPACE = (32, 9, 13, 10, 0x202F)


def _context_words(context):
  """Words of each context at SQuAD's white space: (strings [n_words], row of
  each word [n_words], begin and end (exclusive) character offsets, ragged
  [batch, (words)])."""
  chars = tf.strings.unicode_decode(context, "UTF-8")
  flat = chars.flat_values
  space = tf.reduce_any(tf.equal(flat[:, None], tf.constant(_WHITESPACE, flat.dtype)), axis=1)
  position = tf.ragged.range(chars.row_lengths()).flat_values
  first = tf.equal(position, 0)
  last = tf.equal(position, tf.gather(chars.row_lengths(), chars.value_rowids()) - 1)
  before = tf.concat([[True], space[:-1]], axis=0) | first
  after = tf.concat([space[1:], [True]], axis=0) | last
  begins = tf.where(~space & before)[:, 0]
  ends = tf.where(~space & after)[:, 0]
  rows = tf.gather(chars.value_rowids(), begins)
  begin = tf.gather(position, begins)
  end = tf.gather(position, ends) + 1
  nrows = tf.shape(context, out_type=tf.int64)[0]
  strings = tf.strings.substr(tf.gather(context, rows), begin, end - begin, unit="UTF8_CHAR")
  return (strings, rows, tf.RaggedTensor.from_value_rowids(begin, rows, nrows),
          tf.RaggedTensor.from_value_rowids(end, rows, nrows))


def best_spans(start_logits, end_logits, in_context, n_best_size, max_answer_length):
  """(start, end, score, found) of the best span of each row (see the module
  doc): start/end int64 [batch] positions, score float32, found bool."""
  seq = tf.shape(start_logits)[1]
  k = tf.minimum(n_best_size, seq)

  def top(logits):  # the k highest, of all max_seq_length positions as the original
    kth = tf.math.top_k(logits, k=k).values[:, -1:]
    return logits >= kth

  starts = top(start_logits) & in_context
  ends = top(end_logits) & in_context
  i = tf.range(seq)[:, None]
  j = tf.range(seq)[None, :]
  shape_ok = (j >= i) & (j - i < max_answer_length)
  valid = starts[:, :, None] & ends[:, None, :] & shape_ok[None]
  scores = start_logits[:, :, None] + end_logits[:, None, :]
  scores = tf.where(valid, scores, tf.fill(tf.shape(scores), float("-inf")))
  flat = tf.reshape(scores, [tf.shape(scores)[0], -1])
  best = tf.argmax(flat, axis=1)
  seq64 = tf.cast(seq, tf.int64)
  return (best // seq64, best % seq64, tf.reduce_max(flat, axis=1),
          tf.reduce_any(valid, axis=[1, 2]))


class AnswerServingModule(saved_model.TaskServingModule):
  """What `export_answerer` saves: the span model's variables, the vocab
  asset and the `answer` signature (see the module doc for the settings)."""

  def __init__(self, model, vocab_file, do_lower_case, max_seq_length=384,
               max_query_length=64, n_best_size=20, max_answer_length=30,
               version_2_with_negative=False, null_score_diff_threshold=0.0,
               spm_model_file=None):
    super().__init__(model, vocab_file, do_lower_case, name="bert_tf_answerer",
                     spm_model_file=spm_model_file)
    config = model.config
    if not max_query_length + 4 <= max_seq_length <= config.max_position_embeddings:
      raise ValueError(f"max_seq_length={max_seq_length} must lie in [max_query_length + 4 = "
                       f"{max_query_length + 4}, max_position_embeddings="
                       f"{config.max_position_embeddings}]")
    self._settings = dict(max_seq_length=max_seq_length, max_query_length=max_query_length,
                          n_best_size=n_best_size, max_answer_length=max_answer_length)
    self._version_2 = bool(version_2_with_negative)
    self._null_threshold = float(null_score_diff_threshold)
    self.answer = tf.function(self._answer, input_signature=[
        tf.TensorSpec([None], tf.string, name="question"),
        tf.TensorSpec([None], tf.string, name="context")])

  def signature_functions(self):
    return {"serving_default": self.answer, "answer": self.answer}

  def _window(self, question, words):
    """[CLS] question [SEP] context [SEP] ids and segments (ragged), the
    context's first position and kept length, each kept piece's word (local
    index, [batch, max pieces], -1 past the end), and truncated."""
    s = self._settings
    query = saved_model.text_ids(self.tokenizer, question)[:, :s["max_query_length"]]
    strings, rows, begin, _ = words
    pieces = self.tokenizer.tokenize_eager(strings)  # [n_words, (pieces)]
    piece_word = pieces.value_rowids()
    piece_row = tf.gather(rows, piece_word)
    nrows = begin.nrows()
    context = tf.RaggedTensor.from_value_rowids(pieces.flat_values, piece_row, nrows)
    local = tf.RaggedTensor.from_value_rowids(
        piece_word - tf.gather(begin.row_starts(), piece_row), piece_row, nrows)
    room = s["max_seq_length"] - 3 - query.row_lengths()
    full = context.row_lengths()
    keep = tf.minimum(full, room)
    kept = tf.ragged.range(full) < keep[:, None]
    context = tf.ragged.boolean_mask(context, kept)
    local = tf.ragged.boolean_mask(local, kept)
    ids, segments = saved_model.join_segments(self._vocab, query, context)
    # A column of -1 past the end: rows without a piece still gather.
    piece_word = tf.concat([local.to_tensor(-1), tf.fill([nrows, 1], tf.constant(-1, tf.int64))],
                           axis=1)
    return ids, segments, query.row_lengths() + 2, keep, piece_word, keep < full

  def _answer(self, question, context):
    context = tf.strings.unicode_transcode(context, "UTF-8", "UTF-8", errors="replace")
    words = _context_words(context)
    ids, segments, offset, keep, piece_word, truncated = self._window(question, words)
    # Padded to max_seq_length as run_squad's features: the n-best search
    # ranks the padding's logits too, as the original's does.
    shape = [None, self._settings["max_seq_length"]]
    input_ids, input_mask = saved_model.dense_inputs(ids, self._vocab.pad_id, shape=shape)
    start_logits, end_logits = self.model(
        {"input_ids": input_ids, "input_mask": input_mask,
         "segment_ids": tf.cast(segments.to_tensor(0, shape=shape), tf.int32)}, training=False)
    position = tf.range(tf.shape(input_ids, out_type=tf.int64)[1])[None, :]
    in_context = (position >= offset[:, None]) & (position < (offset + keep)[:, None])
    s = self._settings
    start, end, score, found = best_spans(start_logits, end_logits, in_context,
                                          s["n_best_size"], s["max_answer_length"])
    if self._version_2:
      null = start_logits[:, 0] + end_logits[:, 0]
      found &= ~(null - score > self._null_threshold)
    first = tf.gather(piece_word, tf.maximum(start - offset, 0), batch_dims=1)
    last = tf.gather(piece_word, tf.maximum(end - offset, 0), batch_dims=1)
    _, _, begin, finish = words
    pad = tf.zeros([begin.nrows(), 1], tf.int64)  # rows without a word still gather
    begin = tf.gather(tf.concat([begin.to_tensor(0), pad], 1), tf.maximum(first, 0),
                      batch_dims=1)
    finish = tf.gather(tf.concat([finish.to_tensor(0), pad], 1), tf.maximum(last, 0),
                       batch_dims=1)
    text = tf.strings.substr(context, begin, finish - begin, unit="UTF8_CHAR")
    none = tf.fill(tf.shape(begin), tf.constant(-1, tf.int64))
    return {"answer": tf.where(found, text, ""),
            "start": tf.cast(tf.where(found, begin, none), tf.int32),
            "end": tf.cast(tf.where(found, finish, none), tf.int32),
            "score": tf.where(found, score, 0.0), "has_answer": found,
            "truncated": truncated}


def export_answerer(model, vocab_file, do_lower_case, export_dir, overwrite=False, **settings):
  """Writes the span model's SavedModel to export_dir (atomically).
  settings: AnswerServingModule's (max_seq_length, ..., spm_model_file).
  Returns the module."""
  from bert_tf.downstream import export  # pylint: disable=g-import-not-at-top
  return export.write_module(
      lambda: AnswerServingModule(model, vocab_file, do_lower_case, **settings),
      export_dir, overwrite, "span-model")


def export_finetuned(config, bert_config, export_dir, overwrite=False):
  """Exports the span model `downstream.span.squad_finetune.run(config, ...)`
  trained (output_dir/model), with config's window and answer settings.
  Returns the AnswerServingModule saved."""
  from bert_tf.downstream import export  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.span import span_head  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.span import squad_finetune  # pylint: disable=g-import-not-at-top
  prefix = os.path.join(config.output_dir, squad_finetune.CHECKPOINT_NAME)
  model = export.read_finetuned(
      span_head.BertSpanModel(bert_config), prefix,
      missing=f"{prefix}: no fine-tuned span model to export (train with --do_train into "
              f"this --output_dir first)", init_checkpoint=config.init_checkpoint)
  return export_answerer(
      model, config.vocab_file, config.do_lower_case, export_dir, overwrite=overwrite,
      max_seq_length=config.max_seq_length, max_query_length=config.max_query_length,
      n_best_size=config.n_best_size, max_answer_length=config.max_answer_length,
      version_2_with_negative=config.version_2_with_negative,
      null_score_diff_threshold=config.null_score_diff_threshold,
      spm_model_file=config.spm_model_file or None)


def check_outputs(config, bert_config, export_dir, hf_out, overwrite=False):
  """Refuses, before hours of training, the --export_dir and --hf_out of a
  span run that would be refused after it: an existing folder (without
  overwrite), a tokenizer.json's Unigram model for the `answer` signature
  (no graph tokenizer: give its spiece.model), a SentencePiece model with a
  non-ALBERT transformers folder.

  Raises:
    FileExistsError, ValueError: one line naming the flag.
  """
  from bert_tf.data.tokenizers import tokenizer_json  # pylint: disable=g-import-not-at-top
  from bert_tf.serving import hf_export  # pylint: disable=g-import-not-at-top
  if export_dir:
    if tokenizer_json.is_tokenizer_json(config.spm_model_file):
      raise ValueError(f"--export_dir with --spm_model_file={config.spm_model_file}: a "
                       "tokenizer.json's Unigram model has no graph tokenizer for the "
                       "`answer` signature; give its spiece.model")
    files_lib.check_absent(export_dir, overwrite, "--export_dir")
  if hf_out and config.spm_model_file and not bert_config.is_albert:
    raise ValueError(f"--hf_out={hf_out}: {hf_export.SENTENCEPIECE_NOT_ALBERT}")
  if hf_out:
    files_lib.check_absent(hf_out, overwrite, "--hf_out")
