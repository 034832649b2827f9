"""Tests of the ALBERT encoder (bert_tf.models.albert) inside BertPretrainer,
against a numpy statement of google-research/albert's forward pass."""

import json
import logging
import os

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import albert
from bert_tf.models import modeling
from bert_tf.models import tf1_checkpoint
from bert_tf.models.config import BertConfig
from bert_tf.training import optimization

from helpers import reference_albert

_CONFIGS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "configs")

# Two groups of two inner blocks over four layers: layers 0-1 use group 0,
# 2-3 group 1, and each layer runs both of its group's blocks.
_TINY = BertConfig(vocab_size=50, hidden_size=24, num_hidden_layers=4,
                   num_attention_heads=3, intermediate_size=40,
                   max_position_embeddings=16, type_vocab_size=2,
                   embedding_size=8, num_hidden_groups=2, inner_group_num=2)
# The released shape: one group, one block.
_TINY_RELEASED = _TINY.replace(num_hidden_groups=1, inner_group_num=1)


def _batch(rng, vocab_size=50):
  ids = rng.integers(1, vocab_size, (3, 10))
  mask = np.ones((3, 10), np.int32)
  mask[1, 6:] = 0
  mask[2, 3:] = 0
  ids[mask == 0] = 0
  segments = np.zeros((3, 10), np.int32)
  segments[0, 5:] = 1
  positions = np.array([[1, 2, 6, 9], [3, 5, 0, 0], [1, 2, 0, 0]])
  return {"input_ids": ids, "input_mask": mask, "segment_ids": segments,
          "masked_lm_positions": positions}


@pytest.mark.parametrize("config", [_TINY, _TINY_RELEASED], ids=["2x2", "released"])
def test_forward_matches_numpy_albert(config):
  weights = reference_albert.random_tf1_weights(config, np.random.default_rng(0),
                                                position_rows=20)
  model = modeling.BertPretrainer(config)
  assert isinstance(model.encoder, keras_hub.models.AlbertBackbone)
  report = tf1_checkpoint.load_tf1_weights(model, weights)
  assert sorted(report["loaded"]) == sorted(weights) and report["unused"] == []
  batch = _batch(np.random.default_rng(1))
  out = model(batch)
  expected = reference_albert.reference_forward(weights, config, **batch)
  np.testing.assert_allclose(out["sequence_output"], expected["sequence_output"], atol=1e-4)
  np.testing.assert_allclose(out["pooled_output"], expected["pooled_output"], atol=1e-4)
  np.testing.assert_allclose(tf.nn.log_softmax(out["mlm_logits"]),
                             expected["mlm_log_probs"], atol=1e-4)
  np.testing.assert_allclose(tf.nn.log_softmax(out["nsp_logits"]),
                             expected["sop_log_probs"], atol=1e-4)
  # The sharing is exercised: running each group once (a 2-layer model on
  # the same weights) gives another output.
  fewer = config.replace(num_hidden_layers=config.albert_value("num_hidden_groups"))
  other = reference_albert.reference_forward(weights, fewer, **batch)
  assert np.abs(other["sequence_output"] - expected["sequence_output"]).max() > 1e-2


def test_one_set_of_layer_weights_whatever_the_depth():
  shallow = modeling.build_encoder(_TINY_RELEASED.replace(num_hidden_layers=2))
  deep = modeling.build_encoder(_TINY_RELEASED.replace(num_hidden_layers=12))
  assert shallow.count_params() == deep.count_params()
  assert len(albert.shared_layers(deep)) == 1
  assert len(albert.shared_layers(modeling.build_encoder(_TINY))) == 4


def test_albert_base_parameter_count():
  """The released ALBERT-base: 12M parameters (paper, Table 1)."""
  config = BertConfig.from_json_file(os.path.join(_CONFIGS, "albert_base.json"))
  encoder = modeling.build_encoder(config)
  v, e, h, i, p, t = 30000, 128, 768, 3072, 512, 2
  embeddings = (v + p + t) * e + 2 * e
  projection = e * h + h
  layer = 4 * (h * h + h) + (h * i + i) + (i * h + h) + 2 * 2 * h
  pooler = h * h + h
  assert encoder.count_params() == embeddings + projection + layer + pooler
  assert 11.6e6 < encoder.count_params() < 11.8e6


def test_mlm_head_projects_back_through_the_embedding():
  model = modeling.BertPretrainer(_TINY)
  head = model.mlm_head
  assert tuple(head._intermediate_dense.kernel.shape) == (24, 8)  # pylint: disable=protected-access
  assert head.token_embedding is model.encoder.token_embedding
  assert tuple(model.encoder.token_embedding.embeddings.shape) == (50, 8)
  assert tuple(model.nsp_head.kernel.shape) == (24, 2)


def test_original_initializers():
  config = _TINY_RELEASED.replace(initializer_range=0.05, vocab_size=400,
                                  hidden_size=48, embedding_size=32,
                                  num_attention_heads=4, intermediate_size=96)
  model = modeling.BertPretrainer(config)
  for v in model.trainable_variables:
    values = v.numpy().ravel()
    if v.path.endswith(("/kernel", "/embeddings")):
      # Truncated normal, stddev 0.05 before truncation at 2 stddev.
      assert np.abs(values).max() <= 0.1 + 1e-6, v.path
      assert 0.03 < values.std() < 0.06, v.path
    elif v.path.endswith("/gamma"):
      assert np.all(values == 1.0), v.path
    else:
      assert np.all(values == 0.0), v.path


def test_attention_dropout_rate_from_config():
  encoder = modeling.build_encoder(_TINY.replace(attention_probs_dropout_prob=0.3,
                                                 hidden_dropout_prob=0.0))
  for layer in albert.shared_layers(encoder):
    attention = layer._self_attention_layer  # pylint: disable=protected-access
    assert attention._dropout == 0.3 and attention._dropout_layer.rate == 0.3  # pylint: disable=protected-access


def test_weight_decay_and_lamb_exclusions_on_albert_paths():
  model = modeling.BertPretrainer(_TINY_RELEASED)
  decays = {v.path: optimization.uses_weight_decay(v) for v in model.trainable_variables}
  assert decays == {p: p.endswith(("/kernel", "/embeddings")) for p in decays}
  assert decays["embedding_projection/kernel"] and not decays["embedding_projection/bias"]
  assert not decays["group_0_inner_layer_0/self_attention_layer_norm/gamma"]


@pytest.mark.parametrize("change,message", [
    ({"num_hidden_groups": 3}, "not a multiple of num_hidden_groups=3"),
    ({"embedding_size": 24}, "equals hidden_size"),
    ({"hidden_act": "relu"}, "hidden_act='relu' is not supported"),
])
def test_what_albert_backbone_cannot_build_is_one_line(change, message):
  with pytest.raises(ValueError, match=message) as e:
    modeling.BertPretrainer(_TINY_RELEASED.replace(**change))
  assert "\n" not in str(e.value)


def test_keys_no_released_code_reads_are_a_warning(caplog):
  caplog.set_level(logging.WARNING)
  modeling.build_encoder(_TINY_RELEASED.replace(net_structure_type=1))
  assert any("net_structure_type=1 has no effect" in r.getMessage() for r in caplog.records)


def test_config_round_trip_through_keras_and_tf_checkpoint(tmp_path):
  model = modeling.BertPretrainer(_TINY)
  batch = _batch(np.random.default_rng(3))
  again = modeling.BertPretrainer.from_config(json.loads(json.dumps(model.get_config())))
  assert again.config == _TINY and again.config.is_albert
  ckpt = tf.train.Checkpoint(model=model)
  path = ckpt.write(str(tmp_path / "ckpt"))
  tf.train.Checkpoint(model=again).read(path).assert_existing_objects_matched()
  np.testing.assert_array_equal(again(batch)["mlm_logits"], model(batch)["mlm_logits"])


def test_mixed_bfloat16_keeps_float32_logits():
  model = modeling.BertPretrainer(_TINY_RELEASED, dtype="mixed_bfloat16")
  out = model(_batch(np.random.default_rng(4)))
  assert out["mlm_logits"].dtype == tf.float32 and out["nsp_logits"].dtype == tf.float32
  assert keras.backend.standardize_dtype(out["sequence_output"].dtype) == "bfloat16"


def test_init_checkpoint_reads_albert_tf1_and_refuses_a_bert_one(tmp_path):
  from bert_tf.training import checkpoints  # pylint: disable=g-import-not-at-top
  from helpers import reference_bert  # pylint: disable=g-import-not-at-top
  from helpers.checkpoints import write_tf1_checkpoint  # pylint: disable=g-import-not-at-top
  weights = reference_albert.random_tf1_weights(_TINY, np.random.default_rng(7))
  encoder_only = {k: v for k, v in weights.items() if k.startswith("bert/")}
  prefix = write_tf1_checkpoint(str(tmp_path / "albert" / "model.ckpt"), encoder_only)
  model = modeling.BertPretrainer(_TINY)
  report = checkpoints.warm_start(model, prefix)
  assert report.format == "tf1" and set(report.initialized) == set(encoder_only)
  assert all(name.startswith("cls/") for name in report.missing)
  bert = BertConfig(vocab_size=50, hidden_size=24, num_hidden_layers=2,
                    num_attention_heads=3, intermediate_size=40, max_position_embeddings=16)
  bert_prefix = write_tf1_checkpoint(
      str(tmp_path / "bert" / "bert_model.ckpt"),
      reference_bert.random_tf1_weights(bert, np.random.default_rng(8)))
  with pytest.raises(ValueError, match="original BERT checkpoint but the config is an ALBERT"):
    checkpoints.warm_start(modeling.BertPretrainer(_TINY), bert_prefix)
