"""ELECTRA's token ids stay exact on any accelerator: `scatter_at_positions`
uses integer ops only, so TF32 (GPUs' float32 matmuls keep 10 mantissa
bits) and mixed precision cannot round an id.

CPU runs float32 matmuls exactly, so TF32 is emulated here: every float
einsum/matmul rounds its inputs to 10 mantissa bits, as the tensor cores do.
A control checks that the emulation catches the float einsum the function
used to have.
"""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import electra

from helpers.pretraining import tiny_bert_config

VOCAB = 30522  # BERT's uncased vocab
B, S, P = 4, 128, 20


def tf32_round(x):
  """float32 rounded to TF32's 10 explicit mantissa bits (nearest, ties to
  even), as a tensor core reads its inputs."""
  bits = tf.bitcast(tf.cast(x, tf.float32), tf.int32)
  drop = 13  # 23 - 10 mantissa bits
  lsb = tf.bitwise.bitwise_and(tf.bitwise.right_shift(bits, drop), 1)
  bits = bits + (1 << (drop - 1)) - 1 + lsb
  bits = tf.bitwise.bitwise_and(bits, ~((1 << drop) - 1))
  return tf.bitcast(bits, tf.float32)


def _tf32_einsum(real_einsum):
  def einsum(equation, *operands, **kw):
    rounded = [tf32_round(o) if o.dtype == tf.float32 else o
               for o in map(tf.convert_to_tensor, operands)]
    return tf32_round(real_einsum(equation, *rounded, **kw))
  return einsum


def _tf32_matmul(real_matmul):
  def matmul(a, b, *args, **kw):
    a, b = tf.convert_to_tensor(a), tf.convert_to_tensor(b)
    if a.dtype == tf.float32:
      a, b = tf32_round(a), tf32_round(b)
    return real_matmul(a, b, *args, **kw)
  return matmul


@pytest.fixture
def tf32(monkeypatch):
  """Every float32 einsum and matmul rounds as TF32 does while the test runs."""
  monkeypatch.setattr(tf, "einsum", _tf32_einsum(tf.einsum))
  monkeypatch.setattr(tf, "matmul", _tf32_matmul(tf.matmul))
  monkeypatch.setattr(tf.linalg, "matmul", _tf32_matmul(tf.linalg.matmul))


def _float_einsum_scatter(ids, positions, values, real):
  """The defect: the old `scatter_at_positions`, ids through a float32 einsum."""
  seq = tf.shape(ids)[1]
  hits = tf.one_hot(positions, seq, dtype=tf.float32) * tf.cast(real, tf.float32)[..., None]
  written = tf.reduce_max(hits, axis=1) > 0
  new = tf.einsum("bps,bp->bs", hits, tf.cast(values, tf.float32))
  return tf.where(written, tf.cast(new, ids.dtype), ids), written


def _top_of_vocab_batch(seed=0):
  """ids at the top of a 30,522 vocab, odd values above 2048 (which TF32
  cannot hold), P distinct positions per example, the last 3 padding."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(VOCAB - 4000, VOCAB, (B, S)).astype(np.int32)
  positions = np.stack([np.sort(rng.choice(S, P, replace=False)) for _ in range(B)]).astype(np.int32)
  values = (rng.integers((VOCAB - 4000) // 2, VOCAB // 2, (B, P)) * 2 + 1).astype(np.int32)
  real = np.ones((B, P), bool)
  real[:, -3:] = False
  positions[:, -3:] = 0
  return ids, positions, values, real


def _reference(ids, positions, values, real):
  """The integer reference: a copy of ids with each real value written."""
  out, written = ids.copy(), np.zeros(ids.shape, bool)
  for b in range(ids.shape[0]):
    for p in range(positions.shape[1]):
      if real[b, p]:
        out[b, positions[b, p]] = values[b, p]
        written[b, positions[b, p]] = True
  return out, written


def test_the_emulated_tf32_rounds_ids_as_a_tensor_core_does():
  x = tf.constant([2048, 2049, 2050, 2051, 5001, 30521, 30522], tf.float32)
  np.testing.assert_array_equal(tf32_round(x).numpy(),
                                [2048, 2048, 2050, 2052, 5000, 30528, 30528])


def test_ids_near_the_top_of_a_30522_vocab_are_written_exactly_under_tf32(tf32):
  ids, positions, values, real = _top_of_vocab_batch()
  want, want_written = _reference(ids, positions, values, real)
  # Control: the float einsum loses most of these ids under TF32.
  old, _ = _float_einsum_scatter(ids, positions, values, real)
  assert np.mean(old.numpy()[want_written] != want[want_written]) > 0.5
  for fn in (electra.scatter_at_positions,
             tf.function(electra.scatter_at_positions, jit_compile=True)):
    got, written = fn(tf.constant(ids), tf.constant(positions), tf.constant(values),
                      tf.constant(real))
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(written.numpy(), want_written)


def test_the_id_path_has_no_float_op():
  ids, positions, values, real = _top_of_vocab_batch()
  graph = tf.function(electra.scatter_at_positions).get_concrete_function(
      tf.constant(ids), tf.constant(positions), tf.constant(values), tf.constant(real)).graph
  floats = [(op.type, op.name) for op in graph.get_operations()
            for t in op.outputs if t.dtype.is_floating]
  assert not floats, f"float ops on the id path: {floats}"


def test_the_corrupted_input_keeps_every_id_of_a_30522_vocab_under_tf32(tf32):
  config = tiny_bert_config(dropout=0.0).replace(vocab_size=VOCAB, max_position_embeddings=S)
  model = electra.ElectraPretrainer(config, mask_token_id=103, seed=5)
  ids, positions, _, real = _top_of_vocab_batch(seed=1)
  originals = np.where(real, np.take_along_axis(ids, positions, 1), 0).astype(np.int32)
  # Odd ids above 2048 at every masked position, the records' [MASK] in the text.
  originals = np.where(real, originals | 1, 0).astype(np.int32)
  text = ids.copy()
  text[np.arange(B)[:, None], positions] = np.where(real, 103, text[np.arange(B)[:, None],
                                                                    positions])
  text[:, 0] = 101  # [CLS] at the padding predictions' position 0
  features = {"input_ids": text, "input_mask": np.ones((B, S), np.int32),
              "segment_ids": np.zeros((B, S), np.int32), "masked_lm_positions": positions,
              "masked_lm_ids": originals, "masked_lm_weights": real.astype(np.float32)}
  out = model(features, training=True)
  sampled = out["sampled_ids"].numpy()
  original_text, _ = _reference(text, positions, originals, real)
  want, _ = _reference(original_text, positions, sampled, real)
  np.testing.assert_array_equal(out["corrupted_ids"].numpy(), want)
  np.testing.assert_array_equal(out["replaced_labels"].numpy(),
                                (want != original_text).astype(np.int32))
  # The generator samples from the whole vocab: ids above 2048 go through.
  assert sampled[real].max() > 2048
