"""CoNLL-style token tagging files -> BERT features in overlapping windows.

A file holds one token a line, its columns separated by whitespace, the
token first and its label in the LAST column (CoNLL-2003's `EU NNP B-NP
B-ORG`, or just `EU B-ORG`); a blank line ends a sentence; `-DOCSTART-`
lines are skipped (they end a sentence too). Labels are `O` or
`<B|I|E|S>-<type>` (BIO, IOB1 or IOBES; a bare `B`, `I`, `E` or `S` has no
type). A line with a single column, or another label, is an error naming
the file and line: nothing is dropped.

Features: each token (word) is tokenized on its own by the model's
tokenizer (the original's BasicTokenizer then WordPiece, or an ALBERT
SentencePiece model: there every word's first piece starts with "▁", which
may be a piece alone, "▁" then "j" "o" "h" "n"); the word's label goes on
its first piece, its other pieces are out of the loss (weight 0). A word
the tokenizer gives no piece (only characters the cleanup drops) becomes
one unknown token ([UNK], SentencePiece's <unk>) so that it is still
predicted. A sentence of more than
max_seq_length - 2 pieces is packed in overlapping windows of that many
pieces, `stride` pieces apart (run_squad's doc_stride), each window
[CLS] pieces [SEP]; each word is scored, in training and in prediction,
only in the window where its first piece has the most context: the largest
min(pieces left of it, pieces right of it) + 0.01 x window length, the
first such window on a tie (run_squad's max-context rule). So every word
is predicted exactly once, and none is cut off.
"""

import dataclasses
import re

import numpy as np

from bert_tf.io import file_io as files

DOCSTART = "-DOCSTART-"
OUTSIDE = "O"
_LABEL = re.compile(r"^(O|[BIES](-\S+)?)$")


@dataclasses.dataclass(frozen=True)
class Sentence:
  """words and labels (tuples of str); lines: each word's 1-based line."""
  words: tuple
  labels: tuple
  lines: tuple


def read_conll(path):
  """Reads a CoNLL file.

  Returns:
    list of Sentence in file order.

  Raises:
    FileNotFoundError, ValueError: naming the file (and line): a line with
      fewer than two columns, a label that is not O or B-/I-/E-/S-<type>, a
      file without any token.
  """
  text = files.read_text(path, "CoNLL")
  sentences, words, labels, lines = [], [], [], []

  def flush():
    if words:
      sentences.append(Sentence(tuple(words), tuple(labels), tuple(lines)))
      del words[:], labels[:], lines[:]

  for number, line in enumerate(text.splitlines(), start=1):
    columns = line.split()
    if not columns or columns[0] == DOCSTART:
      flush()
      continue
    if len(columns) < 2:
      raise ValueError(f"{path}:{number}: one column ({line.strip()!r}): a CoNLL line needs "
                       f"the token and, in its last column, the label")
    label = columns[-1]
    if not _LABEL.match(label):
      raise ValueError(f"{path}:{number}: label {label!r} is not O or B-/I-/E-/S-<type> "
                       f"(BIO or IOBES)")
    words.append(columns[0])
    labels.append(label)
    lines.append(number)
  flush()
  if not sentences:
    raise ValueError(f"{path}: no tokens (one token and its label a line, a blank line "
                     f"between sentences)")
  return sentences


def label_list(train_sentences):
  """The labels of the training sentences in id order: O first, then sorted."""
  labels = {label for s in train_sentences for label in s.labels}
  return tuple(sorted(labels, key=lambda label: (label != OUTSIDE, label)))


def check_labels(sentences, labels, path):
  """Raises ValueError naming file and line for a label not in `labels`."""
  known = set(labels)
  for s in sentences:
    for label, line in zip(s.labels, s.lines):
      if label not in known:
        raise ValueError(f"{path}:{line}: label {label!r} is not among the train file's "
                         f"labels ({', '.join(labels)})")


def window_starts(num_pieces, max_tokens, stride):
  """Start of each window of up to max_tokens pieces over num_pieces pieces:
  0, stride, 2 stride, ... until a window reaches the last piece."""
  starts = [0]
  while starts[-1] + max_tokens < num_pieces:
    starts.append(starts[-1] + stride)
  return starts


def best_window(position, num_pieces, starts, max_tokens):
  """The window (index into starts) where piece `position` has the most
  context (see the module docstring)."""
  best, best_score = None, None
  for index, start in enumerate(starts):
    end = min(start + max_tokens, num_pieces)
    if not start <= position < end:
      continue
    score = min(position - start, end - 1 - position) + 0.01 * (end - start)
    if best_score is None or score > best_score:
      best, best_score = index, score
  return best


@dataclasses.dataclass(frozen=True)
class Features:
  """Windows of a list of sentences.

  arrays: int32 [windows, seq] input_ids, input_mask, segment_ids,
    label_ids (0 where not scored); float32 [windows, seq] label_weights (1
    at each word's first piece in its best window).
  sentence: int32 [windows], the sentence of each window.
  word: int32 [windows, seq], the word (index in its sentence) scored at
    each position, -1 elsewhere.
  num_split: sentences packed in more than one window.
  num_empty_words: words the tokenizer gave no piece (the unknown id for them).
  """
  arrays: dict
  sentence: np.ndarray
  word: np.ndarray
  num_split: int
  num_empty_words: int

  def inputs(self):
    """The model's inputs: input_ids, input_mask, segment_ids."""
    return {k: self.arrays[k] for k in ("input_ids", "input_mask", "segment_ids")}


def _word_pieces(tokenizer, sentences):
  """Each sentence's list of its words' piece-id lists; and the count of
  words that got no piece ([UNK] then)."""
  flat = [w for s in sentences for w in s.words]
  values, splits = tokenizer.tokenize_to_ids(flat)
  unk = tokenizer.vocab.unk_id
  pieces = [values[splits[i]:splits[i + 1]].tolist() or [unk] for i in range(len(flat))]
  empty = int(np.sum(np.diff(splits) == 0))
  out, at = [], 0
  for s in sentences:
    out.append(pieces[at:at + len(s.words)])
    at += len(s.words)
  return out, empty


def convert_sentences(sentences, tokenizer, labels, max_seq_length, stride):
  """Packs sentences into windows (see the module docstring).

  Args:
    sentences: list of Sentence (labels among `labels`).
    tokenizer: a tokenization.BatchTokenizer (or
      sentencepiece_vocab.SentencePieceTokenizer).
    labels: the label list (ids are indices).
    max_seq_length: window length with [CLS] and [SEP].
    stride: pieces between window starts, in [1, max_seq_length - 2].

  Returns:
    Features.
  """
  max_tokens = max_seq_length - 2
  if not 1 <= stride <= max_tokens:
    raise ValueError(f"stride={stride} must lie in [1, max_seq_length - 2 = {max_tokens}]")
  vocab = tokenizer.vocab
  label_id = {label: i for i, label in enumerate(labels)}
  per_sentence, empty = _word_pieces(tokenizer, sentences)
  rows, num_split = [], 0
  for index, (sentence, word_pieces) in enumerate(zip(sentences, per_sentence)):
    pieces = [p for w in word_pieces for p in w]
    firsts = np.cumsum([0] + [len(w) for w in word_pieces])[:-1]
    starts = window_starts(len(pieces), max_tokens, stride)
    num_split += len(starts) > 1
    scored = [[] for _ in starts]
    for word, first in enumerate(firsts):
      scored[best_window(int(first), len(pieces), starts, max_tokens)].append((word, first))
    for start, words in zip(starts, scored):
      rows.append((index, pieces[start:start + max_tokens],
                   [(w, 1 + first - start, label_id[sentence.labels[w]]) for w, first in words]))
  n = len(rows)
  arrays = {k: np.zeros([n, max_seq_length], np.int32)
            for k in ("input_ids", "input_mask", "segment_ids", "label_ids")}
  arrays["label_weights"] = np.zeros([n, max_seq_length], np.float32)
  word = np.full([n, max_seq_length], -1, np.int32)
  sentence_of = np.zeros([n], np.int32)
  for r, (index, window, scored) in enumerate(rows):
    ids = [vocab.cls_id] + window + [vocab.sep_id]
    arrays["input_ids"][r, :len(ids)] = ids
    arrays["input_mask"][r, :len(ids)] = 1
    sentence_of[r] = index
    for w, position, label in scored:
      arrays["label_ids"][r, position] = label
      arrays["label_weights"][r, position] = 1.0
      word[r, position] = w
  return Features(arrays, sentence_of, word, num_split, empty)


def sentence_predictions(features, predicted_ids, sentences, labels):
  """Each sentence's predicted labels from per-window predictions.

  Args:
    features: the Features of `sentences`.
    predicted_ids: int [windows, seq] label ids.
    sentences, labels: as given to convert_sentences.

  Returns:
    list (one per sentence) of label tuples, one label per word.

  Raises:
    ValueError: a word predicted other than exactly once (a broken packing).
  """
  out = [[None] * len(s.words) for s in sentences]
  rows, positions = np.nonzero(features.word >= 0)
  for r, p in zip(rows, positions):
    words = out[features.sentence[r]]
    w = features.word[r, p]
    if words[w] is not None:
      raise ValueError(f"word {w} of sentence {features.sentence[r]} predicted twice")
    words[w] = labels[int(predicted_ids[r, p])]
  for index, words in enumerate(out):
    if any(label is None for label in words):
      raise ValueError(f"sentence {index} has words without a prediction")
  return [tuple(words) for words in out]


def format_conll(sentences, predictions):
  """conlleval's input: `token gold predicted` a line, a blank line after
  each sentence."""
  lines = []
  for s, guessed in zip(sentences, predictions):
    lines.extend(f"{w} {g} {p}" for w, g, p in zip(s.words, s.labels, guessed))
    lines.append("")
  return "\n".join(lines) + "\n"
