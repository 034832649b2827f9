"""GLUE-style TSV tasks -> BERT classifier features -> tf.data.

A task file is tab-separated with a header row (as GLUE's train.tsv and
dev.tsv, and the TSVs `bert_tf.tasks` writes). Columns are named by their
header name or by 0-based index ("3"); one text column (single-sentence
tasks) or two (sentence pairs), and a label column. Fields are split on tabs
only, without quote handling, as the original run_classifier's
`csv.reader(delimiter="\\t", quotechar=None)`.

Labels: the label list is the train file's distinct labels, sorted (numbers
numerically). A task is regression when every train label is a number and
at least one is not a whole number (STS-B's "3.800"), or when asked
(`task_type="regression"`); labels "0"/"1" are classes.

Features follow the original run_classifier's `convert_single_example`:
[CLS] A [SEP] (B [SEP]) with segment ids 0 for [CLS] A [SEP] and 1 for
B [SEP]; a pair longer than max_seq_length - 3 tokens is cut one token at a
time from the end of the longer side (B on a tie), a single text to
max_seq_length - 2; padding with id 0 and mask 0.
"""

import csv
import dataclasses
import io
import math

import numpy as np

from bert_tf.io import file_io as files
from bert_tf.data.tokenizers import tokenization
from bert_tf.data.tokenizers import wordpiece_vocab

TASK_TYPES = ("auto", "classification", "regression")


@dataclasses.dataclass(frozen=True)
class Example:
  """One row: text_a, text_b (None for single-sentence tasks), label (str, or
  None for an unlabeled test row); line is its 1-based line in the file."""
  line: int
  text_a: str
  text_b: str | None
  label: str | None


@dataclasses.dataclass(frozen=True)
class LabelSpace:
  """What the classifier predicts.

  labels: the class names in id order (empty for regression);
  regression: True for one real-valued output.
  """
  labels: tuple
  regression: bool

  @property
  def num_outputs(self):
    return 1 if self.regression else len(self.labels)


def _column_index(header, column, path, flag):
  """Index of `column` (a header name, or a 0-based index as str/int);
  header None (a file without one): indices only."""
  if isinstance(column, int) or (isinstance(column, str) and column.isdigit()):
    index = int(column)
    if header is not None and index >= len(header):
      raise ValueError(f"{path}: {flag}={column} is out of range: the header has "
                       f"{len(header)} columns ({', '.join(header)})")
    return index
  if header is None:
    raise ValueError(f"{path}: {flag}={column!r} must be a 0-based index: the file has "
                     f"no header row")
  if column not in header:
    raise ValueError(f"{path}: {flag}={column!r} is not a column of the header "
                     f"({', '.join(header)})")
  return header.index(column)


def read_tsv(path, text_a_column, text_b_column=None, label_column=None,
             require_labels=True, has_header=True):
  """Reads a task TSV.

  Args:
    path: the file (read through file_io).
    text_a_column, text_b_column, label_column: names or 0-based indices;
      text_b_column None for single-sentence tasks.
    require_labels: False (a test file) accepts a file without the label
      column; its examples have label None.
    has_header: False for a file whose first line is a row (GLUE's CoLA
      train.tsv and dev.tsv); columns are then indices.

  Returns:
    list of Example, in file order.

  Raises:
    FileNotFoundError, ValueError: naming the file (and line): no header, a
      column not in the header, a row with too few fields, an empty label.
  """
  text = files.read_text(path, "task")
  rows = list(csv.reader(io.StringIO(text), delimiter="\t", quotechar=None))
  if not rows or not any(rows[0]):
    raise ValueError(f"{path}: empty file" + (" (a header row is required)" if has_header
                                              else ""))
  header = [h.strip() for h in rows[0]] if has_header else None
  ia = _column_index(header, text_a_column, path, "text_a_column")
  ib = None if text_b_column in (None, "") else _column_index(
      header, text_b_column, path, "text_b_column")
  il = None
  if label_column not in (None, ""):
    try:
      il = _column_index(header, label_column, path, "label_column")
    except ValueError:
      if require_labels:
        raise
  elif require_labels:
    raise ValueError(f"{path}: no label_column given")
  needed = max(i for i in (ia, ib, il) if i is not None) + 1
  examples = []
  first = 1 if has_header else 0
  for number, row in enumerate(rows[first:], start=first + 1):
    if not row or (len(row) == 1 and not row[0].strip()):
      continue  # blank line
    if len(row) < needed:
      raise ValueError(f"{path}:{number}: {len(row)} tab-separated fields, the columns "
                       f"asked for need {needed}")
    label = None if il is None else row[il].strip()
    if il is not None and not label:
      raise ValueError(f"{path}:{number}: empty label (column "
                       f"{repr(header[il]) if header else il})")
    examples.append(Example(number, row[ia], None if ib is None else row[ib], label))
  if not examples:
    raise ValueError(f"{path}: no examples" + (" after the header" if has_header else ""))
  return examples


def _as_number(label):
  try:
    value = float(label)
  except ValueError:
    return None
  return value if math.isfinite(value) else None


def label_space(train_examples, task_type="auto"):
  """The LabelSpace of a task from its training examples (see module docstring).

  Raises:
    ValueError: unknown task_type, regression asked with a non-numeric label,
      or fewer than two classes.
  """
  if task_type not in TASK_TYPES:
    raise ValueError(f"task_type={task_type!r}: choose one of {', '.join(TASK_TYPES)}")
  labels = sorted({e.label for e in train_examples})
  numbers = {label: _as_number(label) for label in labels}
  all_numbers = all(v is not None for v in numbers.values())
  if task_type == "regression" or (
      task_type == "auto" and all_numbers and any(v != int(v) for v in numbers.values())):
    bad = [e for e in train_examples if numbers[e.label] is None]
    if bad:
      raise ValueError(f"regression task: label {bad[0].label!r} on line {bad[0].line} "
                       f"of the train file is not a number")
    return LabelSpace((), True)
  if all_numbers:
    labels.sort(key=lambda label: numbers[label])
  if len(labels) < 2:
    raise ValueError(f"the train file has {len(labels)} distinct label(s) "
                     f"({', '.join(labels)}): a classifier needs two or more")
  return LabelSpace(tuple(labels), False)


def label_values(examples, space, path):
  """Labels as model targets: int32 class ids [n] or float32 values [n].

  Raises:
    ValueError: a label the train file does not have (naming file and line).
  """
  if space.regression:
    out = []
    for e in examples:
      value = _as_number(e.label)
      if value is None:
        raise ValueError(f"{path}:{e.line}: label {e.label!r} is not a number")
      out.append(value)
    return np.asarray(out, np.float32)
  index = {label: i for i, label in enumerate(space.labels)}
  for e in examples:
    if e.label not in index:
      raise ValueError(f"{path}:{e.line}: label {e.label!r} is not among the train "
                       f"file's labels ({', '.join(space.labels)})")
  return np.asarray([index[e.label] for e in examples], np.int32)


def truncate_pair_at_the_back(tokens_a, tokens_b, max_length):
  """The original's `_truncate_seq_pair` of fine-tuning: pops from the back
  of the longer list (B on a tie) until both fit in max_length. Modifies
  the lists in place. (Pretraining trims from random ends:
  instances.truncate_pair_at_random_ends.)"""
  while len(tokens_a) + len(tokens_b) > max_length:
    if len(tokens_a) > len(tokens_b):
      tokens_a.pop()
    else:
      tokens_b.pop()


def _ids_of(tokenizer, texts):
  values, splits = tokenizer.tokenize_to_ids(list(texts))
  return [values[splits[i]:splits[i + 1]].tolist() for i in range(len(texts))]


def convert_examples(examples, tokenizer, max_seq_length):
  """Tokenizes and packs examples into fixed-length features.

  Args:
    examples: list of Example.
    tokenizer: a tokenization.BatchTokenizer (its vocab gives [CLS], [SEP]).
    max_seq_length: length of every feature row (>= 3 for a pair).

  Returns:
    (features, num_truncated): features is a dict of int32 np arrays
    [n, max_seq_length]: input_ids, input_mask, segment_ids;
    num_truncated counts examples that lost tokens.
  """
  pair = examples[0].text_b is not None
  if max_seq_length < (3 if pair else 2) + 1:
    raise ValueError(f"max_seq_length={max_seq_length} leaves no room for text")
  vocab = tokenizer.vocab
  ids_a = _ids_of(tokenizer, [e.text_a for e in examples])
  ids_b = _ids_of(tokenizer, [e.text_b for e in examples]) if pair else None
  n = len(examples)
  input_ids = np.zeros([n, max_seq_length], np.int32)
  input_mask = np.zeros([n, max_seq_length], np.int32)
  segment_ids = np.zeros([n, max_seq_length], np.int32)
  truncated = 0
  for i in range(n):
    a = ids_a[i]
    b = ids_b[i] if pair else []
    before = len(a) + len(b)
    if pair:
      truncate_pair_at_the_back(a, b, max_seq_length - 3)
    else:
      del a[max_seq_length - 2:]
    truncated += len(a) + len(b) < before
    ids = [vocab.cls_id] + a + [vocab.sep_id]
    segments = [0] * len(ids)
    if pair:
      ids += b + [vocab.sep_id]
      segments += [1] * (len(b) + 1)
    input_ids[i, :len(ids)] = ids
    input_mask[i, :len(ids)] = 1
    segment_ids[i, :len(ids)] = segments
  return {"input_ids": input_ids, "input_mask": input_mask,
          "segment_ids": segment_ids}, truncated


def make_tokenizer(vocab_file, do_lower_case):
  """The data writer's tokenizer (the original's rules) for `vocab_file`."""
  return tokenization.BatchTokenizer(wordpiece_vocab.load_vocab(vocab_file), do_lower_case)


def make_dataset(features, labels=None, batch_size=32, shuffle=False, seed=0,
                 repeat=False, drop_remainder=False, lengths=None):
  """tf.data of (features dict, labels) batches (features only without labels).

  Training as the original: shuffled (a buffer holding the whole task),
  repeated, drop_remainder; evaluation in file order, the last batch short.
  lengths: bucket lengths (data.length_buckets.boundaries): each batch cut
  to the shortest that holds its longest example; None: max_seq_length.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  data = dict(features) if labels is None else (dict(features), labels)
  dataset = tf.data.Dataset.from_tensor_slices(data)
  if shuffle:
    dataset = dataset.shuffle(len(features["input_ids"]), seed=seed,
                              reshuffle_each_iteration=True)
  if repeat:
    dataset = dataset.repeat()
  dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
  if lengths and len(lengths) > 1:
    from bert_tf.data.input import length_buckets  # pylint: disable=g-import-not-at-top
    dataset = dataset.map(lambda *batch: length_buckets.trim_batch(
        batch if len(batch) > 1 else batch[0], lengths))
  return dataset.prefetch(2)
