"""Tests of bert_tf.models.modeling: config mapping, initializers, heads, save/load."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import modeling
from bert_tf.data.records import schema
from bert_tf.models.config import BertConfig
from helpers import batch_losses

_TINY = BertConfig(vocab_size=80, hidden_size=32, num_hidden_layers=2,
                   num_attention_heads=4, intermediate_size=64,
                   max_position_embeddings=24)


def _batch(config, rng, batch=3, seq=12, preds=4):
  ids = rng.integers(1, config.vocab_size, (batch, seq)).astype(np.int32)
  mask = np.ones((batch, seq), np.int32)
  mask[1, 8:] = 0
  mask[2, 5:] = 0
  ids[mask == 0] = 0
  segments = np.zeros((batch, seq), np.int32)
  segments[:, 3:] = 1
  segments[mask == 0] = 0
  return {"input_ids": ids, "input_mask": mask, "segment_ids": segments,
          "masked_lm_positions": rng.integers(1, 5, (batch, preds)).astype(np.int32)}


@pytest.fixture(scope="module")
def model():
  keras.utils.set_random_seed(1)
  return modeling.BertPretrainer(_TINY)


def test_encoder_maps_config():
  config = _TINY.replace(type_vocab_size=3, max_position_embeddings=40)
  encoder = modeling.build_encoder(config)
  assert isinstance(encoder, __import__("keras_hub").models.BertBackbone)
  assert (encoder.vocabulary_size, encoder.num_layers, encoder.num_heads,
          encoder.hidden_dim, encoder.intermediate_dim, encoder.max_sequence_length,
          encoder.num_segments) == (80, 2, 4, 32, 64, 40, 3)
  assert encoder.position_embedding.position_embeddings.shape == (40, 32)
  # The original's LayerNorm epsilon and tanh GELU, everywhere.
  assert encoder.embeddings_layer_norm.epsilon == 1e-12
  for layer in encoder.transformer_layers:
    assert layer._self_attention_layer_norm.epsilon == 1e-12
    assert layer._feedforward_layer_norm.epsilon == 1e-12
    x = np.linspace(-3, 3, 13).astype(np.float32)
    tanh_gelu = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(layer.activation(x), tanh_gelu, atol=1e-6)
  out = encoder({"token_ids": np.ones((2, 7), np.int32),
                 "segment_ids": np.zeros((2, 7), np.int32),
                 "padding_mask": np.ones((2, 7), np.int32)})
  assert out["sequence_output"].shape == (2, 7, 32)
  assert out["pooled_output"].shape == (2, 32)


def test_gelu_is_the_tanh_form_in_encoder_and_mlm_head(model):
  """bert_config's "gelu" is the original's tanh approximation (HuggingFace's
  "gelu_new"), not the exact erf GELU, in every place it is used."""
  x = np.linspace(-4, 4, 33).astype(np.float32)
  tanh_gelu = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
  erf_gelu = np.asarray(keras.activations.gelu(x, approximate=False))
  assert np.abs(tanh_gelu - erf_gelu).max() > 1e-4  # the check below can tell them apart
  dense_layers = [layer._feedforward_intermediate_dense for layer in model.encoder.transformer_layers]
  dense_layers.append(model.mlm_head._intermediate_dense)
  for dense in dense_layers:
    np.testing.assert_allclose(dense.activation(x), tanh_gelu, atol=1e-6, err_msg=dense.path)


def test_unsupported_activation_is_a_clear_error():
  with pytest.raises(ValueError, match="hidden_act='relu'"):
    modeling.build_encoder(_TINY.replace(hidden_act="relu"))


def test_attention_dropout_rate_from_config():
  encoder = modeling.build_encoder(
      _TINY.replace(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.25))
  for layer in encoder.transformer_layers:
    attention = layer._self_attention_layer
    assert attention._dropout == 0.25 and attention._dropout_layer.rate == 0.25
    assert layer._feedforward_dropout.rate == 0.1
    assert layer._self_attention_dropout.rate == 0.1
  assert encoder.embeddings_dropout.rate == 0.1


def _assert_truncated_normal(values, stddev, name):
  values = np.asarray(values).ravel()
  # Truncated at 2 stddev (as TF1's truncated_normal), which gives an actual
  # stddev of 0.88 * stddev.
  assert np.abs(values).max() <= 2 * stddev + 1e-7, name
  assert 0.75 * stddev < values.std() < 1.0 * stddev, (name, values.std())


@pytest.mark.parametrize("initializer_range", [0.02, 0.05])
def test_original_initializers_everywhere(initializer_range):
  keras.utils.set_random_seed(3)
  model = modeling.BertPretrainer(_TINY.replace(initializer_range=initializer_range))
  paths = []
  for v in model.weights:
    paths.append(v.path)
    value = v.numpy()
    if v.path.endswith(("/kernel", "/embeddings")):
      _assert_truncated_normal(value, initializer_range, v.path)
    elif v.path.endswith("bias") or v.path.endswith("/beta"):
      assert not value.any(), v.path
    elif v.path.endswith("/gamma"):
      assert (value == 1).all(), v.path
    else:
      raise AssertionError(f"unexpected weight {v.path}")
  # The heads the issue is about are covered.
  for path in ("mlm_head/intermediate_dense/kernel", "mlm_head/output_bias",
               "mlm_head/intermediate_layer_norm/gamma", "nsp_head/kernel",
               "pooled_dense/kernel", "token_embedding/embeddings"):
    assert path in paths


def test_mlm_head_is_tied_to_word_embeddings(model):
  assert model.mlm_head.token_embedding is model.encoder.token_embedding
  head_weights = {v.path for v in model.mlm_head.weights}
  # The only vocab-sized weights are the shared embedding and the output bias.
  big = [v.path for v in model.weights if model.config.vocab_size in v.shape]
  assert sorted(big) == ["mlm_head/output_bias", "token_embedding/embeddings"]
  assert "mlm_head/output_bias" in head_weights
  assert model.mlm_head.layer_norm_epsilon == 1e-12


def test_outputs_shapes_and_dtypes(model):
  batch = _batch(_TINY, np.random.default_rng(0))
  out = model(batch)
  assert out["mlm_logits"].shape == (3, 4, 80) and out["mlm_logits"].dtype == tf.float32
  assert out["nsp_logits"].shape == (3, 2) and out["nsp_logits"].dtype == tf.float32
  assert out["sequence_output"].shape == (3, 12, 32)
  assert out["pooled_output"].shape == (3, 32)
  no_positions = {k: v for k, v in batch.items() if k != "masked_lm_positions"}
  out2 = model(no_positions)
  assert "mlm_logits" not in out2
  np.testing.assert_allclose(out2["nsp_logits"], out["nsp_logits"], atol=1e-6)
  # Dropout only in training.
  np.testing.assert_allclose(model(batch)["nsp_logits"], out["nsp_logits"], atol=1e-6)
  assert not np.allclose(model(batch, training=True)["sequence_output"], out["sequence_output"])


def test_padding_does_not_change_real_positions(model):
  rng = np.random.default_rng(1)
  batch = _batch(_TINY, rng)
  changed = {k: v.copy() for k, v in batch.items()}
  changed["input_ids"][2, 5:] = rng.integers(1, 80, 7)  # row 2 pads from 5 on
  a, b = model(batch), model(changed)
  np.testing.assert_allclose(a["sequence_output"][2, :5], b["sequence_output"][2, :5], atol=1e-5)
  np.testing.assert_allclose(a["pooled_output"], b["pooled_output"], atol=1e-5)


def test_nsp_index_zero_means_b_follows_a(model):
  assert schema.IS_NEXT == 0 and schema.IS_RANDOM == 1
  original = [w.copy() for w in model.nsp_head.get_weights()]
  try:
    model.nsp_head.set_weights([np.zeros((32, 2), np.float32),
                                np.array([4.0, -4.0], np.float32)])
    batch = _batch(_TINY, np.random.default_rng(2))
    out = model(batch)
    features = {"masked_lm_ids": np.zeros((3, 4), np.int32),
                "masked_lm_weights": np.ones((3, 4), np.float32)}
    is_next = batch_losses.pretraining_losses(
        out, dict(features, next_sentence_labels=np.full((3, 1), schema.IS_NEXT)))
    is_random = batch_losses.pretraining_losses(
        out, dict(features, next_sentence_labels=np.full((3, 1), schema.IS_RANDOM)))
    assert float(is_next["nsp_accuracy"]) == 1.0 and float(is_random["nsp_accuracy"]) == 0.0
    assert float(is_next["nsp_loss"]) < 0.01 < 7.0 < float(is_random["nsp_loss"])
  finally:
    model.nsp_head.set_weights(original)


def test_config_round_trip_and_weights_file(model, tmp_path):
  batch = _batch(_TINY, np.random.default_rng(3))
  expected = model(batch)
  clone = modeling.BertPretrainer.from_config(model.get_config())
  assert clone.config == model.config
  path = str(tmp_path / "model.weights.h5")
  model.save_weights(path)
  clone.load_weights(path)
  got = clone(batch)
  for key in expected:
    np.testing.assert_array_equal(got[key], expected[key])


def test_tf_train_checkpoint_round_trip_with_optimizer(model, tmp_path):
  from bert_tf.training import optimization  # pylint: disable=g-import-not-at-top
  batch = _batch(_TINY, np.random.default_rng(4))
  optimizer = optimization.create_optimizer(
      learning_rate=1e-3, num_train_steps=10, num_warmup_steps=0)
  work = modeling.BertPretrainer(_TINY)
  work.set_weights(model.get_weights())
  optimizer.apply_gradients(
      [(tf.ones_like(v), v) for v in work.trainable_variables])
  prefix = tf.train.Checkpoint(model=work, optimizer=optimizer).save(str(tmp_path / "ckpt"))

  fresh = modeling.BertPretrainer(_TINY)
  fresh_optimizer = optimization.create_optimizer(
      learning_rate=1e-3, num_train_steps=10, num_warmup_steps=0)
  fresh_optimizer.build(fresh.trainable_variables)
  status = tf.train.Checkpoint(model=fresh, optimizer=fresh_optimizer).restore(prefix)
  status.assert_existing_objects_matched()
  assert int(fresh_optimizer.iterations) == 1
  for a, b in zip(fresh_optimizer.variables, optimizer.variables):
    np.testing.assert_array_equal(a.numpy(), b.numpy())
  for key, value in work(batch).items():
    np.testing.assert_array_equal(fresh(batch)[key], value)


def test_keras_file_round_trip(model, tmp_path):
  batch = _batch(_TINY, np.random.default_rng(5))
  path = str(tmp_path / "model.keras")
  model.save(path)
  loaded = keras.models.load_model(path)
  assert isinstance(loaded, modeling.BertPretrainer) and loaded.config == _TINY
  np.testing.assert_array_equal(loaded(batch)["mlm_logits"], model(batch)["mlm_logits"])


def test_mixed_bfloat16_keeps_float32_logits(model):
  mixed = modeling.BertPretrainer(_TINY, dtype="mixed_bfloat16")
  mixed.set_weights(model.get_weights())
  assert mixed.encoder.compute_dtype == "bfloat16"
  assert all(v.dtype == "float32" for v in mixed.weights)
  batch = _batch(_TINY, np.random.default_rng(6))
  out, ref = mixed(batch), model(batch)
  assert out["sequence_output"].dtype == tf.bfloat16
  assert out["mlm_logits"].dtype == tf.float32 and out["nsp_logits"].dtype == tf.float32
  np.testing.assert_allclose(out["mlm_logits"], ref["mlm_logits"], atol=0.05)
  np.testing.assert_allclose(out["nsp_logits"], ref["nsp_logits"], atol=0.05)
  loss = batch_losses.pretraining_losses(out, {
      "masked_lm_ids": np.ones((3, 4), np.int32),
      "masked_lm_weights": np.ones((3, 4), np.float32),
      "next_sentence_labels": np.zeros((3, 1), np.int32)})
  assert loss["total"].dtype == tf.float32
  # The global policy is untouched.
  assert keras.config.dtype_policy().name == "float32"


def test_vocab_mismatch_between_encoder_and_config():
  encoder = modeling.build_encoder(_TINY)
  with pytest.raises(ValueError, match="vocab_size"):
    modeling.BertPretrainer(_TINY.replace(vocab_size=81), encoder=encoder)
