"""SQuAD 1.1 / 2.0 question answering data: examples and windowed features.

The rules of google-research/bert's run_squad.py, restated:

- Reading: a context is split into words at whitespace (space, tab, CR, LF
  and U+202F); every character maps to the word it is in or follows
  (`char_to_word_offset`), so an answer's `answer_start` and length give its
  first and last word. For training, an answer whose words do not contain
  its text (whitespace-normalized) is skipped: the count and the question
  ids come back with the examples (`ReadResult.skipped`), never dropped
  silently. A 1.1 training question must have exactly one answer; a 2.0 one
  (`version_2_with_negative`) may be `is_impossible` instead. A malformed
  training question (not exactly one answer; an answer without text, or
  whose `answer_start` is not an integer inside its context) is an error
  naming the file and the question, or with `skip_malformed` skipped and
  returned in `ReadResult.malformed`.
- Features: each word is WordPiece-tokenized on its own; the answer's
  piece span is then narrowed to the shortest one whose pieces spell the
  tokenized answer text (a "better match": "1895" inside "(1895-1943).").
  The question is cut to `max_query_length` pieces; the document is cut
  into windows of `max_seq_length - len(question) - 3` pieces that start
  `doc_stride` pieces apart, each `[CLS] question [SEP] window [SEP]`.
  A piece seen by several windows belongs, for decoding, to the window
  where min(left, right context) + 0.01 * window length is largest (the
  first such). A training window that does not hold the whole answer (and
  an impossible question's windows) has the answer at [CLS] (position 0).
- SentencePiece (ALBERT's models): the same windows, each word tokenized on
  its own by ALBERT's rules (its pieces: the first starts with "▁"); the
  answer's better match compares SentencePiece pieces of the answer text
  (also without its first "▁", for an answer that starts inside a word).
  google-research/albert's squad_utils tokenizes the whole paragraph and
  maps pieces to characters instead: the same pieces, as SentencePiece
  (trained as ALBERT's) never joins characters across white space
  (docs/squad.md).

`basic_tokenize` is the original BasicTokenizer (no WordPiece), which
answer decoding uses to align a predicted span to the original text.
"""

import collections
import dataclasses
import functools
import unicodedata

import numpy as np

from bert_tf.io import file_io as files
from bert_tf.data.tokenizers import sentencepiece_vocab
from bert_tf.data.tokenizers import unicode_tables

# The original's first feature id.
FIRST_UNIQUE_ID = 1000000000


def is_squad_whitespace(ch):
  """The characters run_squad splits a context at (not the tokenizer's set)."""
  return ch in " \t\r\n" or ord(ch) == 0x202F


def split_words(context):
  """context -> (words, char_to_word_offset): whitespace-separated words and,
  for each character, the index of the word it is in (a space: the word
  before it; -1 before the first word)."""
  words, offsets, after_space = [], [], True
  for ch in context:
    if is_squad_whitespace(ch):
      after_space = True
    else:
      if after_space:
        words.append(ch)
      else:
        words[-1] += ch
      after_space = False
    offsets.append(len(words) - 1)
  return words, offsets


@dataclasses.dataclass
class SquadExample:
  """One question on a context.

  doc_tokens: the context's words (shared by the questions of a paragraph).
  start_position, end_position: word indices of the training answer (-1
  for an impossible one; None when not training).
  is_impossible: a 2.0 training question without answer (False when not
  training, as the original).
  answers: the gold answer texts (all of them; for evaluation).
  """
  qas_id: str
  question_text: str
  doc_tokens: list
  orig_answer_text: str = None
  start_position: int = None
  end_position: int = None
  is_impossible: bool = False
  answers: tuple = ()


@dataclasses.dataclass
class ReadResult:
  """examples; the skipped training answers (text not at answer_start, as
  the original skips them) and, with skip_malformed, the malformed training
  questions, each as (question id, reason)."""
  examples: list
  skipped: list
  malformed: list = dataclasses.field(default_factory=list)


class MalformedQuestion(ValueError):
  """A training question whose answer cannot be read (read_examples: the
  file, the question id and what is wrong)."""


def _field(obj, key, path, where):
  if not isinstance(obj, dict) or key not in obj:
    raise ValueError(f"SQuAD file {path}: {where} has no {key!r}")
  return obj[key]


def _training_answer(qa, words, offsets, version_2):
  """(start word, end word, text, impossible) of a training question, or a
  str reason to skip it as the original does (text not at answer_start).

  Raises:
    MalformedQuestion: the reason (without file or question) a question
      cannot train.
  """
  impossible = bool(qa.get("is_impossible", False)) if version_2 else False
  if impossible:
    return -1, -1, "", True
  answers = qa.get("answers") or []
  if len(answers) != 1:
    kind = "SQuAD 2.0 (--version_2_with_negative)" if version_2 else "SQuAD 1.1"
    raise MalformedQuestion(
        f"has {len(answers)} answers; a {kind} training question needs exactly one" +
        ("" if version_2 else " (for SQuAD 2.0 data give --version_2_with_negative)"))
  answer = answers[0]
  for key in ("text", "answer_start"):
    if not isinstance(answer, dict) or key not in answer:
      raise MalformedQuestion(f"has an answer without {key!r}")
  text, start = answer["text"], answer["answer_start"]
  if not isinstance(text, str) or not text:
    raise MalformedQuestion(f"has an answer whose text {text!r} is not a non-empty string")
  if not isinstance(start, int) or isinstance(start, bool):
    raise MalformedQuestion(f"has answer_start={start!r}, not an integer")
  if start < 0 or start + len(text) > len(offsets):
    raise MalformedQuestion(f"has answer_start={start} with {len(text)} characters, outside "
                            f"its context of {len(offsets)}")
  first, last = offsets[start], offsets[start + len(text) - 1]
  found = " ".join(words[first:last + 1])
  wanted = " ".join(text.split())
  if wanted not in found:
    return f"answer {wanted!r} is not at answer_start={start} (found {found!r})"
  return first, last, text, False


def read_examples(path, is_training, version_2_with_negative=False, skip_malformed=False):
  """Reads a SQuAD JSON file into SquadExamples, in file order.

  Returns:
    ReadResult: the examples; for training, the skipped answers (text not
    at its answer_start, as the original skips them) and, with
    skip_malformed, the malformed questions, each as (id, reason).

  Raises:
    FileNotFoundError, ValueError: no file, bad JSON or a missing field.
    MalformedQuestion (a ValueError): without skip_malformed, a malformed
      training question: no answer or several, an answer without text, a
      non-integer answer_start or one outside its context (naming the file
      and the question id).
  """
  data = files.read_json(path, "SQuAD file")
  examples, skipped, malformed = [], [], []
  for entry in _field(data, "data", path, "the top level"):
    for paragraph in _field(entry, "paragraphs", path, "an article"):
      words, offsets = split_words(_field(paragraph, "context", path, "a paragraph"))
      for qa in _field(paragraph, "qas", path, "a paragraph"):
        qid = _field(qa, "id", path, "a question")
        question = _field(qa, "question", path, f"question {qid}")
        golds = tuple(a.get("text", "") for a in qa.get("answers") or [] if isinstance(a, dict))
        example = SquadExample(qid, question, words, answers=golds)
        if is_training:
          try:
            answer = _training_answer(qa, words, offsets, version_2_with_negative)
          except MalformedQuestion as e:
            if not skip_malformed:
              raise MalformedQuestion(f"SQuAD file {path}: question {qid} {e}") from None
            malformed.append((qid, str(e)))
            continue
          if isinstance(answer, str):
            skipped.append((qid, answer))
            continue
          (example.start_position, example.end_position, example.orig_answer_text,
           example.is_impossible) = answer
        examples.append(example)
  return ReadResult(examples, skipped, malformed)


# ------------------------------------------------------------------------------
# Basic tokenization (the original BasicTokenizer, for answer alignment)
# ------------------------------------------------------------------------------


_DROP, _SPACE, _CJK, _PUNCT, _OTHER = range(5)


@functools.lru_cache(maxsize=65536)
def _kind(ch):
  """The class of a character for basic_tokenize (cached: decoding calls it
  for every character of every candidate answer)."""
  if unicode_tables.is_dropped(ch):
    return _DROP
  if unicode_tables.is_whitespace(ch):
    return _SPACE
  if unicode_tables.is_cjk(ord(ch)):
    return _CJK
  return _PUNCT if unicode_tables.is_punctuation(ch) else _OTHER


def basic_tokenize(text, do_lower_case):
  """The original BasicTokenizer: text -> words (punctuation split off, CJK
  characters alone; with do_lower_case lower-cased and accents stripped)."""
  spaced = []
  for ch in text:
    kind = _kind(ch)
    if kind == _DROP:
      continue
    spaced.append(" " if kind == _SPACE else f" {ch} " if kind == _CJK else ch)
  out = []
  for word in "".join(spaced).split():
    if do_lower_case:
      word = "".join(c for c in unicodedata.normalize("NFD", word.lower())
                     if unicodedata.category(c) != "Mn")
    current = ""
    for ch in word:
      if _kind(ch) == _PUNCT:
        if current:
          out.append(current)
        out.append(ch)
        current = ""
      else:
        current += ch
    if current:
      out.append(current)
  return out


# ------------------------------------------------------------------------------
# Features
# ------------------------------------------------------------------------------


@dataclasses.dataclass
class SpanFeature:
  """One window of one example, as the model sees it.

  token_to_orig_map, token_is_max_context: keyed by position in `tokens`
  (document pieces only). start_position, end_position: the training
  answer's positions (0: not in this window, or impossible); None when
  not training.
  """
  unique_id: int
  example_index: int
  doc_span_index: int
  tokens: list
  token_to_orig_map: dict
  token_is_max_context: dict
  input_ids: list
  input_mask: list
  segment_ids: list
  start_position: int = None
  end_position: int = None
  is_impossible: bool = False


def check_window(max_seq_length, doc_stride, max_query_length, prefix=""):
  """Raises ValueError naming the setting when no window can hold a
  document piece after the question (`prefix` before each name: "--" for
  flags)."""
  if max_query_length < 1:
    raise ValueError(f"{prefix}max_query_length={max_query_length} must be at least 1")
  if doc_stride < 1:
    raise ValueError(f"{prefix}doc_stride={doc_stride} must be at least 1")
  if max_seq_length <= max_query_length + 3:
    raise ValueError(
        f"{prefix}max_seq_length={max_seq_length} must be greater than {prefix}"
        f"max_query_length={max_query_length} + 3 ([CLS], two [SEP]) to leave room for "
        f"the document")


def is_sentencepiece(tokenizer):
  """Whether `tokenizer` is a SentencePiece model's (ALBERT's) rather than WordPiece."""
  return isinstance(tokenizer, sentencepiece_vocab.SentencePieceTokenizer)


def _pieces(tokenizer, texts):
  """Tokens (str: WordPiece's, or SentencePiece's with "<unk>" for an unknown
  piece) of each text, tokenized as one batch."""
  values, splits = tokenizer.tokenize_to_ids(list(texts))
  tokens = tokenizer.vocab.tokens
  return [[tokens[i] for i in values[splits[k]:splits[k + 1]]] for k in range(len(texts))]


def window_starts(num_pieces, max_tokens, doc_stride):
  """[(start, length)] of the document windows."""
  spans, start = [], 0
  while start < num_pieces:
    length = min(num_pieces - start, max_tokens)
    spans.append((start, length))
    if start + length == num_pieces:
      break
    start += min(length, doc_stride)
  return spans


def is_max_context(spans, span_index, position):
  """True when window `span_index` gives piece `position` its most context."""
  best, best_index = None, None
  for index, (start, length) in enumerate(spans):
    end = start + length - 1
    if start <= position <= end:
      score = min(position - start, end - position) + 0.01 * length
      if best is None or score > best:
        best, best_index = score, index
  return best_index == span_index


def _find_span(doc_pieces, start, end, answer_pieces):
  wanted = " ".join(answer_pieces)
  for new_start in range(start, end + 1):
    for new_end in range(end, new_start - 1, -1):
      if " ".join(doc_pieces[new_start:new_end + 1]) == wanted:
        return new_start, new_end
  return None


def improve_span(doc_pieces, start, end, answer_pieces, sentencepiece=False):
  """The narrowest [start, end] inside the given one whose pieces are the
  answer's pieces (first by start, then longest); the given span if none.

  sentencepiece: the answer, tokenized alone, starts with a word-start
  piece ("▁1" of "1895"); when its pieces are not found, they are searched
  again without that marker, for an answer that starts inside a word
  ("1895" of "(1895-1943)." is "▁ ( 1 8 9 5 ..." there)."""
  found = _find_span(doc_pieces, start, end, answer_pieces)
  if found is None and sentencepiece and answer_pieces and answer_pieces[0].startswith(
      sentencepiece_vocab.WORD_START):
    first = answer_pieces[0][len(sentencepiece_vocab.WORD_START):]
    inner = ([first] if first else []) + list(answer_pieces[1:])
    found = _find_span(doc_pieces, start, end, inner) if inner else None
  return found or (start, end)


@dataclasses.dataclass
class _Document:
  pieces: list
  piece_to_word: list
  word_to_piece: list


def _documents(examples, tokenizer):
  """Pieces of each distinct context (by identity of its word list)."""
  unique = collections.OrderedDict()
  for example in examples:
    unique.setdefault(id(example.doc_tokens), example.doc_tokens)
  words = [w for doc in unique.values() for w in doc]
  word_pieces = _pieces(tokenizer, words) if words else []
  out, at = {}, 0
  for key, doc in unique.items():
    pieces, piece_to_word, word_to_piece = [], [], []
    for i, word_piece_list in enumerate(word_pieces[at:at + len(doc)]):
      word_to_piece.append(len(pieces))
      pieces.extend(word_piece_list)
      piece_to_word.extend([i] * len(word_piece_list))
    out[key] = _Document(pieces, piece_to_word, word_to_piece)
    at += len(doc)
  return out


def _answer_pieces(example, doc, answer_pieces, sentencepiece):
  if example.is_impossible:
    return -1, -1
  start = doc.word_to_piece[example.start_position]
  if example.end_position < len(example.doc_tokens) - 1:
    end = doc.word_to_piece[example.end_position + 1] - 1
  else:
    end = len(doc.pieces) - 1
  return improve_span(doc.pieces, start, end, answer_pieces, sentencepiece)


def _window_feature(example, doc, query, spans, index, vocab, max_seq_length):
  start, length = spans[index]
  tokens = ["[CLS]"] + query + ["[SEP]"]
  segment_ids = [0] * len(tokens)
  to_orig, max_context = {}, {}
  for piece in range(start, start + length):
    to_orig[len(tokens)] = doc.piece_to_word[piece]
    max_context[len(tokens)] = is_max_context(spans, index, piece)
    tokens.append(doc.pieces[piece])
  tokens.append("[SEP]")
  segment_ids += [1] * (length + 1)
  ids = [vocab.token_to_id.get(t, vocab.unk_id) for t in tokens]
  pad = max_seq_length - len(ids)
  return dict(tokens=tokens, token_to_orig_map=to_orig, token_is_max_context=max_context,
              input_ids=ids + [0] * pad, input_mask=[1] * len(ids) + [0] * pad,
              segment_ids=segment_ids + [0] * pad)


def convert_examples(examples, tokenizer, max_seq_length, doc_stride, max_query_length,
                     is_training):
  """SquadExamples -> SpanFeatures (one per window), unique ids from
  FIRST_UNIQUE_ID in order.

  Args:
    tokenizer: a data.tokenization.BatchTokenizer (WordPiece), or a
      data.sentencepiece_vocab.SentencePieceTokenizer (ALBERT's): each word
      is then tokenized on its own by ALBERT's rules (preprocess_text, then
      its pieces: the first starts with "▁").
  Raises:
    ValueError: a window setting that cannot hold the question (check_window).
  """
  check_window(max_seq_length, doc_stride, max_query_length)
  vocab = tokenizer.vocab
  sentencepiece = is_sentencepiece(tokenizer)
  documents = _documents(examples, tokenizer)
  queries = _pieces(tokenizer, [e.question_text for e in examples]) if examples else []
  answers = (_pieces(tokenizer, [e.orig_answer_text or "" for e in examples])
             if is_training and examples else [None] * len(examples))
  features, unique_id = [], FIRST_UNIQUE_ID
  for example_index, example in enumerate(examples):
    doc = documents[id(example.doc_tokens)]
    query = queries[example_index][:max_query_length]
    if is_training:
      answer_start, answer_end = _answer_pieces(example, doc, answers[example_index],
                                                sentencepiece)
    spans = window_starts(len(doc.pieces), max_seq_length - len(query) - 3, doc_stride)
    for index, (start, length) in enumerate(spans):
      feature = SpanFeature(unique_id, example_index, index,
                            **_window_feature(example, doc, query, spans, index, vocab,
                                              max_seq_length),
                            is_impossible=example.is_impossible)
      if is_training:
        inside = start <= answer_start and answer_end <= start + length - 1
        if example.is_impossible or not inside:
          feature.start_position = feature.end_position = 0
        else:
          offset = len(query) + 2 - start
          feature.start_position = answer_start + offset
          feature.end_position = answer_end + offset
      features.append(feature)
      unique_id += 1
  return features


def feature_arrays(features, with_positions):
  """int32 arrays of the features: input_ids, input_mask, segment_ids
  [n, seq]; with_positions also start_positions, end_positions [n]."""
  out = {name: np.asarray([getattr(f, name) for f in features], np.int32).reshape(
      len(features), -1) for name in ("input_ids", "input_mask", "segment_ids")}
  if with_positions:
    out["start_positions"] = np.asarray([f.start_position for f in features], np.int32)
    out["end_positions"] = np.asarray([f.end_position for f in features], np.int32)
  return out
