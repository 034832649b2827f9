"""Tests of bert_tf.downstream.classification.classifier: the original head (pooled output,
dropout 0.1, truncated-normal kernel, zero bias) and the keras-hub preset copy."""

import numpy as np
import pytest

from bert_tf.downstream.classification import classifier
from bert_tf.models.config import BertConfig


def _config(**kw):
  values = dict(vocab_size=30, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                intermediate_size=32, max_position_embeddings=16, initializer_range=0.5)
  values.update(kw)
  return BertConfig(**values)


def _inputs(batch=4, seq=6):
  rng = np.random.default_rng(0)
  return {"input_ids": rng.integers(5, 30, (batch, seq)).astype(np.int32),
          "input_mask": np.ones((batch, seq), np.int32),
          "segment_ids": np.zeros((batch, seq), np.int32)}


def test_head_is_the_originals():
  model = classifier.BertClassifier(_config(), 3)
  kernel = model.head.kernel.numpy()
  assert kernel.shape == (32, 3)
  assert np.all(np.abs(kernel) <= 2 * 0.5 + 1e-6)  # truncated at 2 stddev
  assert 0.3 < kernel.std() < 0.6
  np.testing.assert_array_equal(model.head.bias.numpy(), 0.0)
  assert model.dropout.rate == 0.1
  x = _inputs()
  logits = model(x).numpy()
  assert logits.shape == (4, 3) and logits.dtype == np.float32
  # Logits are the head applied to the encoder's pooled output.
  pooled = model.encoder({"token_ids": x["input_ids"], "segment_ids": x["segment_ids"],
                          "padding_mask": x["input_mask"]})["pooled_output"].numpy()
  np.testing.assert_allclose(logits, pooled @ kernel, rtol=1e-5, atol=1e-5)
  # Dropout only in training.
  np.testing.assert_array_equal(model(x).numpy(), logits)
  assert not np.allclose(model(x, training=True).numpy(), logits)
  with pytest.raises(ValueError, match="num_outputs"):
    classifier.BertClassifier(_config(), 0)


def test_preset_copy_checks_shapes(tmp_path):
  import keras_hub  # pylint: disable=g-import-not-at-top
  from bert_tf.models import modeling  # pylint: disable=g-import-not-at-top
  source = modeling.build_encoder(_config())
  source.save_to_preset(str(tmp_path / "preset"))
  assert classifier.is_keras_hub_preset(str(tmp_path / "preset"))
  assert not classifier.is_keras_hub_preset(str(tmp_path))
  model = classifier.BertClassifier(_config(), 2)
  assert classifier.copy_from_preset(model.encoder, str(tmp_path / "preset")) == len(
      source.weights)
  for a, b in zip(model.encoder.weights, source.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy())
  wider = classifier.BertClassifier(_config(intermediate_size=48), 2)
  with pytest.raises(ValueError, match=r"has shape \(32, 32\) in the preset but the model "
                                       r"needs \(32, 48\)"):
    classifier.copy_from_preset(wider.encoder, str(tmp_path / "preset"))
  del keras_hub
