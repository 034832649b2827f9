"""One pretraining record at a time, in plain Python: the tf.train.Example of
an instance, padded the original writer's way, serialized from the protobuf
wire format as deterministic serialization writes it (features in sorted
key order). No TensorFlow: test_schema.py checks these bytes against
tf.train.Example, and the tests compare bert_tf.data.records.schema.ExampleEncoder
.encode_batch (the writer's batch serializer) with them. Tests and benches
that need a few records by hand write them with RecordEncoder.
"""

import struct

_LEN = 2  # wire type of a length-delimited field


def _varint(value):
  """Base 128, the low 7-bit group first, the high bit set on all but the last."""
  groups = [value >> (7 * k) & 0x7F for k in range(max(1, (value.bit_length() + 6) // 7))]
  return bytes([g | 0x80 for g in groups[:-1]] + groups[-1:])


def _field(number, payload):
  """A length-delimited field: tag, length, payload."""
  return _varint(number << 3 | _LEN) + _varint(len(payload)) + payload


def example_bytes(int_features, float_features=None):
  """Serialized tf.train.Example of {name: list of int} (Int64List) and
  {name: list of float} (FloatList), packed, keys sorted."""
  # An empty packed list is no field at all.
  features = {name: _field(3, _field(1, b"".join(_varint(v) for v in values)) if values else b"")
              for name, values in int_features.items()}
  for name, values in (float_features or {}).items():
    features[name] = _field(2, _field(1, struct.pack(f"<{len(values)}f", *values))
                            if values else b"")
  # Features.feature is map<string, Feature>: one entry (key = 1, value = 2) each.
  entries = b"".join(_field(1, _field(1, name.encode()) + _field(2, features[name]))
                     for name in sorted(features))
  return _field(1, entries)


class RecordEncoder:
  """Pretraining records of given shapes, one instance at a time."""

  def __init__(self, max_seq_length, max_predictions_per_seq):
    self.max_seq_length = max_seq_length
    self.max_predictions_per_seq = max_predictions_per_seq

  def encode_pair(self, input_ids, num_segment_a, masked_lm_positions, masked_lm_ids,
                  next_sentence_label):
    """The record of one instance: segment ids 0 for the first num_segment_a
    tokens, 1 for the rest; masked_lm_positions None leaves the masked_lm_*
    features out (dynamic masking), next_sentence_label None the label."""
    seq, preds = self.max_seq_length, self.max_predictions_per_seq
    n = len(input_ids)
    p = 0 if masked_lm_positions is None else len(masked_lm_positions)
    if n > seq or p > preds:
      raise ValueError(f"instance of {n} tokens / {p} predictions exceeds "
                       f"max_seq_length {seq} / max_predictions_per_seq {preds}")
    pad = [0] * (seq - n)
    ints = {"input_ids": list(input_ids) + pad, "input_mask": [1] * n + pad,
            "segment_ids": [0] * num_segment_a + [1] * (n - num_segment_a) + pad}
    floats = {}
    if masked_lm_positions is not None:
      ints["masked_lm_positions"] = list(masked_lm_positions) + [0] * (preds - p)
      ints["masked_lm_ids"] = list(masked_lm_ids) + [0] * (preds - p)
      floats["masked_lm_weights"] = [1.0] * p + [0.0] * (preds - p)
    if next_sentence_label is not None:
      ints["next_sentence_labels"] = [next_sentence_label]
    return example_bytes(ints, floats)

  def encode(self, input_ids, segment_ids, masked_lm_positions, masked_lm_ids,
             next_sentence_label):
    """encode_pair with the segment ids spelled out (zeros then ones, one
    per input id: the only layout of a BERT pair)."""
    num_segment_a = len(segment_ids) - sum(segment_ids)
    if (len(segment_ids) != len(input_ids)
        or segment_ids != [0] * num_segment_a + [1] * (len(segment_ids) - num_segment_a)):
      raise ValueError("segment_ids must be zeros then ones, one per input id")
    return self.encode_pair(input_ids, num_segment_a, masked_lm_positions, masked_lm_ids,
                            next_sentence_label)
