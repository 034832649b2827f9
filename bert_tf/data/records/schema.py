"""The pretraining TFRecord schema: one module that the data writer and the
training input pipeline share, so the two can never disagree.

The features are exactly those of google-research/bert's
`create_pretraining_data.py`, so records written by either tool are read by
either tool:

  input_ids             Int64List [max_seq_length], zero-padded
  input_mask            Int64List [max_seq_length], 1 for real tokens
  segment_ids           Int64List [max_seq_length], 0 for [CLS] A [SEP], 1 for B [SEP]
  masked_lm_positions   Int64List [max_predictions_per_seq], zero-padded
  masked_lm_ids         Int64List [max_predictions_per_seq], zero-padded
  masked_lm_weights     FloatList [max_predictions_per_seq], 1.0 real, 0.0 padding
  next_sentence_labels  Int64List [1]: 0 = B really follows A, 1 = B is random

Variants (the writer's --sentence_task, --dynamic_masking; see
bert_tf.data.pretraining.writer.DataOptions) leave features out rather than write
dummies: with --sentence_task=sop next_sentence_labels holds the sentence
order label (1 = A and B swapped, ALBERT's convention, under the same name);
with --sentence_task=none it is absent; with --dynamic_masking the three
masked_lm_* features are absent and input_ids holds the real tokens (the
input pipeline masks them). `parse_examples` gives the parsed features of
either kind.

Serialization is hand-encoded protobuf wire format (the writer's hot path):
`ExampleEncoder.encode_batch` serializes a whole batch at once with numpy.
The bytes are identical to `tf.train.Example.SerializeToString(
deterministic=True)` of the same values, which the tests check (and
tests/helpers/reference_records.py writes records one at a time).
"""

import struct

SCHEMA_VERSION = 1

INT_FEATURES = ("input_ids", "input_mask", "segment_ids",
                "masked_lm_positions", "masked_lm_ids", "next_sentence_labels")
FLOAT_FEATURES = ("masked_lm_weights",)
FEATURE_NAMES = tuple(sorted(INT_FEATURES + FLOAT_FEATURES))

# Labels of next_sentence_labels, the original's convention, which the NSP
# weights of released checkpoints assume.
IS_NEXT = 0
IS_RANDOM = 1


def _varint(value):
  """Protobuf base-128 varint of a non-negative int."""
  out = bytearray()
  while value >= 0x80:
    out.append((value & 0x7F) | 0x80)
    value >>= 7
  out.append(value)
  return bytes(out)


def _len_delimited(field_tag, payload):
  return field_tag + _varint(len(payload)) + payload


def _varint_slots(values):
  """Protobuf varints of non-negative int64 values [n, k], in byte slots.

  Returns:
    (bytes, written): uint8 and bool [n, k * b], b the most bytes a value
    of the array takes; value j's varint is in slots j*b .. j*b + b - 1,
    written[i, s] says whether slot s of row i holds one of its bytes.
  """
  import numpy as np
  values = np.asarray(values, np.int64)
  top = int(values.max()) if values.size else 0
  width = max(1, (top.bit_length() + 6) // 7)
  shifts = 7 * np.arange(width)
  groups = values[..., None] >> shifts  # [n, k, b]
  more = groups >= 0x80
  data = ((groups & 0x7F) | (more.astype(np.int64) << 7)).astype(np.uint8)
  written = np.concatenate([np.ones(values.shape + (1,), bool), more[..., :-1]], axis=-1)
  n = values.shape[0]
  return data.reshape(n, -1), written.reshape(n, -1)


def _value_slots(size):
  """Varints of the values 0 .. size - 1 in slots of one machine word each.

  Returns:
    (bytes, written, lengths): bytes uint32 (uint64 from 2^28 on) [size]
    whose little-endian bytes are the value's varint slots (see
    _varint_slots); written the same type, each byte 1 where its slot is
    written, 0 where not; lengths int64 [size], the varint's bytes.
  """
  import numpy as np
  data, written = _varint_slots(np.arange(size)[:, None])
  word = np.uint32 if data.shape[1] <= 4 else np.uint64
  slots = np.dtype(word).itemsize
  data = np.pad(data, ((0, 0), (0, slots - data.shape[1])))
  written = np.pad(written, ((0, 0), (0, slots - written.shape[1])))
  lengths = written.sum(axis=1)
  return (np.ascontiguousarray(data).view("<" + np.dtype(word).str[1:])[:, 0],
          np.ascontiguousarray(written.astype(np.uint8)).view("<" + np.dtype(word).str[1:])[:, 0],
          lengths)


class ExampleEncoder:
  """Serializes pretraining instances to tf.train.Example bytes, fast.

  Values are non-negative ints below `max_value` (the vocab size or
  max_seq_length, whichever is larger); their varints come from a table.
  """

  def __init__(self, max_seq_length, max_predictions_per_seq, max_value):
    self.max_seq_length = max_seq_length
    self.max_predictions_per_seq = max_predictions_per_seq
    # Lengths of nested messages are looked up too: 16 bytes per value at
    # most, plus the seven feature names and their framing (under 512 bytes),
    # which dominate the record length of tiny configs.
    self._table = [_varint(v) for v in range(
        max(max_value, 16 * (max_seq_length + max_predictions_per_seq) + 512) + 2)]
    # Keys are written sorted, as deterministic protobuf serialization does.
    self._keys = {name: _len_delimited(b"\x0a", name.encode()) for name in FEATURE_NAMES}
    self._weights = [self._float_payload(p) for p in range(max_predictions_per_seq + 1)]
    # Everything around a feature's packed payload depends only on the
    # payload's length: one closure per feature builds it.
    self._head = {name: self._wrapper(name, float_list=name in FLOAT_FEATURES)
                  for name in FEATURE_NAMES}
    self._headers = {name: {} for name in FEATURE_NAMES}
    # Payloads of fixed length: 0/1 ints are one byte each, floats four.
    fixed_length = {"input_mask": max_seq_length, "segment_ids": max_seq_length,
                    "masked_lm_weights": 4 * max_predictions_per_seq, "next_sentence_labels": 1}
    self._fixed = {name: self._header(name, length) for name, length in fixed_length.items()}
    # encode_batch's tables, built on first use: header slots by payload
    # length (name -> (bytes, written)), varint slots by value, weight bytes
    # by number of predictions.
    self._header_tables = {}
    self._value_slots = None
    self._weight_bytes = None

  def _float_payload(self, p):
    preds = self.max_predictions_per_seq
    return struct.pack("<%df" % preds, *([1.0] * p + [0.0] * (preds - p)))

  def _wrapper(self, name, float_list):
    key = self._keys[name]
    table = self._table
    kind = b"\x12" if float_list else b"\x1a"  # Feature.float_list = 2, int64_list = 3

    def wrap(payload):
      value_list = b"\x0a" + table[len(payload)] + payload
      feature = kind + table[len(value_list)] + value_list
      entry = key + b"\x12" + table[len(feature)] + feature
      return b"\x0a" + table[len(entry)] + entry
    return wrap

  def _header(self, name, length):
    """Everything before a feature's packed payload of `length` bytes."""
    cache = self._headers[name]
    head = cache.get(length)
    if head is None:
      head = cache[length] = self._head[name](b"\x00" * length)[:-length or None]
    return head

  def encode_batch(self, input_ids, lengths, num_segment_a, masked_lm_positions=None,
                   masked_lm_ids=None, num_predictions=None, next_sentence_labels=None,
                   rows_per_chunk=1024):
    """Serialized tf.train.Examples of many instances at once, built with numpy.

    Each record is laid out as a row of byte slots, every slot a byte that
    may or may not be written (a varint of k bytes fills k of its slots):
    numpy writes every slot of the batch, and keeping the written ones, row
    by row, gives the records back to back.

    Args:
      input_ids: int array [N, W], W <= max_seq_length: row i holds the
        instance's real tokens in its first lengths[i] entries (the rest is
        ignored).
      lengths: int array [N], tokens of each instance.
      num_segment_a: int array [N], segment ids are 0 for the first
        num_segment_a[i] tokens of row i ([CLS] A [SEP]) and 1 for the rest
        (all of them: one segment).
      masked_lm_positions: int array [N, K], K <= max_predictions_per_seq,
        sorted positions first in each row; None leaves the masked_lm_*
        features out (dynamic masking).
      masked_lm_ids: int array [N, K], the original ids at those positions.
      num_predictions: int array [N], how many of each row's K are real.
      next_sentence_labels: int array [N] of IS_NEXT / IS_RANDOM (or the
        sentence order label); None leaves next_sentence_labels out.
      rows_per_chunk: instances serialized per numpy step (bounds memory).
    Returns:
      list of N bytes, the records: features in sorted-key order, as
      deterministic serialization writes them; input_ids, input_mask and
      segment_ids zero-padded to max_seq_length, the masked_lm_* to
      max_predictions_per_seq.
    """
    import numpy as np
    input_ids = np.asarray(input_ids)
    n = len(input_ids)
    records = []
    for lo in range(0, n, rows_per_chunk):
      hi = min(n, lo + rows_per_chunk)
      rows = slice(lo, hi)
      records += self._encode_rows(
          input_ids[rows], np.asarray(lengths)[rows], np.asarray(num_segment_a)[rows],
          None if masked_lm_positions is None else np.asarray(masked_lm_positions)[rows],
          None if masked_lm_positions is None else np.asarray(masked_lm_ids)[rows],
          None if masked_lm_positions is None else np.asarray(num_predictions)[rows],
          None if next_sentence_labels is None else np.asarray(next_sentence_labels)[rows])
    return records

  def _encode_rows(self, input_ids, lengths, num_a, positions, lm_ids, counts, labels):
    """encode_batch of one chunk of rows; see there."""
    import numpy as np
    seq, preds = self.max_seq_length, self.max_predictions_per_seq
    n = len(lengths)
    if n == 0:
      return []
    p_max = 0 if positions is None else int(counts.max())
    if int(lengths.max()) > seq or p_max > preds:
      raise ValueError(f"instance of {int(lengths.max())} tokens / {p_max} predictions exceeds "
                       f"max_seq_length {seq} / max_predictions_per_seq {preds}")
    if self._value_slots is None:
      self._value_slots = _value_slots(len(self._table))
    value_bytes, value_written, value_length = self._value_slots
    pieces = []  # (bytes [n or 1, w] uint8, written [n, w] bool or None: all), in order

    def fixed(data):
      pieces.append((np.frombuffer(data, np.uint8)[None], None))

    def packed_varints(name, values):
      lengths = value_length.take(values).sum(axis=1)
      pieces.append(self._header_slots(name, lengths))
      pieces.append((value_bytes.take(values).view(np.uint8),
                     value_written.take(values).view(bool)))

    def padded(values, real, width):
      out = np.zeros((n, width), np.intp)
      k = min(width, values.shape[1])
      out[:, :k] = values[:, :k]
      return np.multiply(out, real, out=out)

    column = np.arange(seq)
    real = column < lengths[:, None]  # [n, seq]
    # Features in sorted-key order, as deterministic serialization writes them.
    packed_varints("input_ids", padded(input_ids, real, seq))
    fixed(self._fixed["input_mask"])
    pieces.append((real.view(np.uint8), None))
    if positions is not None:
      predicted = np.arange(preds) < counts[:, None]
      packed_varints("masked_lm_ids", padded(lm_ids, predicted, preds))
      packed_varints("masked_lm_positions", padded(positions, predicted, preds))
      fixed(self._fixed["masked_lm_weights"])
      if self._weight_bytes is None:
        self._weight_bytes = np.frombuffer(b"".join(self._weights), np.uint8).reshape(
            preds + 1, 4 * preds)
      pieces.append((self._weight_bytes[counts], None))
    if labels is not None:
      fixed(self._fixed["next_sentence_labels"])
      pieces.append((value_bytes.take(labels[:, None]).view(np.uint8),
                     value_written.take(labels[:, None]).view(bool)))
    fixed(self._fixed["segment_ids"])
    pieces.append(((real & (column >= num_a[:, None])).view(np.uint8), None))

    # The Example: field 1 (features), length-delimited, before them.
    sizes = sum(d.shape[1] if w is None else w.sum(axis=1) for d, w in pieces)
    pieces.insert(0, (np.full((1, 1), 0x0a, np.uint8), None))
    pieces.insert(1, (value_bytes.take(sizes[:, None]).view(np.uint8),
                      value_written.take(sizes[:, None]).view(bool)))
    data = np.empty((n, sum(d.shape[1] for d, _ in pieces)), np.uint8)
    written = np.ones(data.shape, bool)
    start = 0
    for piece, piece_written in pieces:
      end = start + piece.shape[1]
      data[:, start:end] = piece
      if piece_written is not None:
        written[:, start:end] = piece_written
      start = end
    blob = np.compress(written.ravel(), data.ravel()).tobytes()
    ends = np.cumsum(sizes + 1 + value_length.take(sizes)).tolist()
    return [blob[a:b] for a, b in zip([0] + ends[:-1], ends)]

  def _header_slots(self, name, payload_lengths):
    """Slots of the header of a packed feature, by payload length: (bytes
    [n, w] uint8, written [n, w] bool), from a table built on first use."""
    import numpy as np
    table = self._header_tables.get(name)
    if table is None:
      # A packed payload holds at most max(seq, preds) varints of values
      # below the table's end.
      longest = len(self._table[-1]) * max(self.max_seq_length, self.max_predictions_per_seq)
      heads = [self._header(name, length) for length in range(longest + 1)]
      width = max(map(len, heads))
      data = np.zeros((len(heads), width), np.uint8)
      written = np.zeros((len(heads), width), bool)
      for i, head in enumerate(heads):
        data[i, :len(head)] = np.frombuffer(head, np.uint8)
        written[i, :len(head)] = True
      table = self._header_tables[name] = (data, written)
    return table[0][payload_lengths], table[1][payload_lengths]


MASKED_LM_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")
SENTENCE_FEATURE = "next_sentence_labels"
REQUIRED_FEATURES = ("input_ids", "input_mask", "segment_ids")


def feature_spec(max_seq_length, max_predictions_per_seq, masked=True, sentence_label=True):
  """tf.io parsing spec of one record: dict name -> FixedLenFeature.

  masked: False for records without masked_lm_* (dynamic masking);
  sentence_label: False for records without next_sentence_labels.
  """
  import tensorflow as tf
  spec = {}
  for name in INT_FEATURES:
    if (name in MASKED_LM_FEATURES and not masked) or (
        name == SENTENCE_FEATURE and not sentence_label):
      continue
    length = 1 if name == SENTENCE_FEATURE else (
        max_predictions_per_seq if name.startswith("masked_lm") else max_seq_length)
    spec[name] = tf.io.FixedLenFeature([length], tf.int64)
  if masked:
    spec["masked_lm_weights"] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32)
  return spec


def parse_examples(serialized, max_seq_length, max_predictions_per_seq, masked=True,
                   sentence_label=True):
  """Parses a batch of serialized records for the model.

  Args:
    serialized: tf.string [batch].
    masked, sentence_label: which optional features the records hold (see
      feature_spec).
  Returns:
    dict of int32 tensors (tf.Example only has int64, but TPUs want int32)
    input_ids, input_mask, segment_ids [batch, max_seq_length];
    masked_lm_positions, masked_lm_ids [batch, max_predictions_per_seq];
    next_sentence_labels [batch, 1]; and float32 masked_lm_weights
    [batch, max_predictions_per_seq]; the optional ones only when asked for.
  """
  import tensorflow as tf
  parsed = tf.io.parse_example(serialized, feature_spec(
      max_seq_length, max_predictions_per_seq, masked, sentence_label))
  return {name: (tf.cast(t, tf.int32) if t.dtype == tf.int64 else t)
          for name, t in parsed.items()}


def shapes_of_record(serialized):
  """Reads (max_seq_length, max_predictions_per_seq) from one serialized
  record, for records written without a manifest (e.g. by the original).
  max_predictions_per_seq is None for a record without masked_lm_*
  features (written with --dynamic_masking)."""
  import tensorflow as tf
  try:
    example = tf.train.Example.FromString(serialized)
  except Exception as e:  # noqa: BLE001 - protobuf's DecodeError
    raise ValueError(f"record is not a tf.train.Example ({type(e).__name__})") from None
  feature = example.features.feature
  masked = [name for name in MASKED_LM_FEATURES if name in feature]
  missing = [name for name in REQUIRED_FEATURES if name not in feature]
  if masked and len(masked) < len(MASKED_LM_FEATURES):
    missing += [name for name in MASKED_LM_FEATURES if name not in feature]
  if missing:
    raise ValueError(f"record is not a BERT pretraining example: missing features {missing}")
  return (len(feature["input_ids"].int64_list.value),
          len(feature["masked_lm_positions"].int64_list.value) if masked else None)


def features_of_record(serialized):
  """(has masked_lm_* features, has next_sentence_labels) of one serialized record."""
  import tensorflow as tf
  feature = tf.train.Example.FromString(serialized).features.feature
  return "masked_lm_positions" in feature, SENTENCE_FEATURE in feature
