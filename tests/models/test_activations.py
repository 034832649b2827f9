"""models/activations.py: the two GELUs a config names, on keras-hub's layers."""

import math

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import activations
from bert_tf.models import modeling
from bert_tf.models.config import BertConfig

_TINY = BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=32, max_position_embeddings=16)


def test_the_two_gelus_are_the_tanh_approximation_and_the_erf():
  x = np.linspace(-5, 5, 201).astype(np.float32)
  erf = np.vectorize(math.erf)
  tanh = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
  np.testing.assert_allclose(activations.gelu_tanh(tf.constant(x)).numpy(), tanh, atol=1e-6)
  np.testing.assert_allclose(activations.gelu_exact(tf.constant(x)).numpy(),
                             0.5 * x * (1 + erf(x / math.sqrt(2))), atol=1e-6)
  # They differ by a few 1e-4 at most: enough to move logits past 1e-4.
  gap = np.abs(tanh - 0.5 * x * (1 + erf(x / math.sqrt(2)))).max()
  assert 1e-4 < gap < 1e-3


@pytest.mark.parametrize("hidden_act, fn", [("gelu", activations.gelu_tanh),
                                             ("gelu_exact", activations.gelu_exact)])
def test_an_encoder_runs_the_configs_gelu_everywhere(hidden_act, fn):
  model = modeling.BertPretrainer(_TINY.replace(hidden_act=hidden_act))
  x = tf.constant(np.linspace(-4, 4, 81, dtype=np.float32))
  for layer in model.encoder.transformer_layers:
    dense = layer._feedforward_intermediate_dense  # pylint: disable=protected-access
    np.testing.assert_allclose(dense.activation(x).numpy(), fn(x).numpy(), atol=1e-7)
  assert model.mlm_head.intermediate_activation is fn


def test_the_gelu_changes_the_encoders_output():
  tf.keras.utils.set_random_seed(0)
  tanh = modeling.BertPretrainer(_TINY)
  exact = modeling.BertPretrainer(_TINY.replace(hidden_act="gelu_exact"))
  for a, b in zip(tanh.weights, exact.weights):
    b.assign(a)
  feed = {"input_ids": tf.constant([[2, 7, 9, 3]]), "segment_ids": tf.zeros((1, 4), tf.int32),
          "input_mask": tf.ones((1, 4), tf.int32)}
  a, b = tanh(feed)["sequence_output"].numpy(), exact(feed)["sequence_output"].numpy()
  assert 0 < np.abs(a - b).max() < 1e-2


def test_other_activations_are_one_line_errors():
  with pytest.raises(ValueError, match=r"hidden_act='relu' is not supported"):
    activations.check("relu")
  with pytest.raises(ValueError, match=r"hidden_act='relu'"):
    modeling.build_encoder(_TINY.replace(hidden_act="relu"))
