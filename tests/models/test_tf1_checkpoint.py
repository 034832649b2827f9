"""Tests of bert_tf.models.tf1_checkpoint against a numpy statement of the original."""

import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import modeling
from bert_tf.models import tf1_checkpoint
from bert_tf.models.config import BertConfig

from helpers import reference_albert
from helpers import reference_bert
from helpers import batch_losses
from helpers.checkpoints import write_tf1_checkpoint

_TINY = BertConfig(vocab_size=60, hidden_size=24, num_hidden_layers=2,
                   num_attention_heads=3, intermediate_size=48,
                   max_position_embeddings=16)


def _read_with_tf1_init_from_checkpoint(prefix, shapes):
  """Reads variables by name the way the original's fine-tuning code does."""
  graph = tf.Graph()
  with graph.as_default():
    variables = {name: tf.compat.v1.get_variable(
        name, shape=shape, initializer=tf.compat.v1.zeros_initializer())
                 for name, shape in shapes.items()}
    tf.compat.v1.train.init_from_checkpoint(prefix, {n: n for n in shapes})
    with tf.compat.v1.Session(graph=graph) as session:
      session.run(tf.compat.v1.global_variables_initializer())
      return session.run(variables)


def _batch(rng):
  ids = rng.integers(1, _TINY.vocab_size, (3, 10))
  mask = np.ones((3, 10), np.int32)
  mask[1, 7:] = 0
  mask[2, 4:] = 0
  ids[mask == 0] = 0
  segments = np.zeros((3, 10), np.int32)
  segments[0, 5:] = 1
  segments[1, 4:7] = 1
  positions = np.array([[1, 2, 6, 9], [3, 5, 0, 0], [1, 2, 3, 0]])
  return {"input_ids": ids, "input_mask": mask, "segment_ids": segments,
          "masked_lm_positions": positions}


@pytest.fixture(scope="module")
def original(tmp_path_factory):
  """Random weights under the original names, with 20 position rows (> 16)."""
  weights = reference_bert.random_tf1_weights(
      _TINY, np.random.default_rng(0), position_rows=20)
  prefix = str(tmp_path_factory.mktemp("orig") / "bert_model.ckpt")
  return weights, write_tf1_checkpoint(prefix, weights)


def test_forward_matches_numpy_original(original):
  weights, prefix = original
  model = modeling.BertPretrainer(_TINY)
  report = tf1_checkpoint.load_tf1_checkpoint(model, prefix)
  assert len(report["loaded"]) == len(reference_bert.tf1_weight_shapes(_TINY))
  assert report["unused"] == [] and report["missing_heads"] == []
  batch = _batch(np.random.default_rng(1))
  out = model(batch)
  expected = reference_bert.reference_forward(weights, _TINY, **batch)
  np.testing.assert_allclose(out["sequence_output"], expected["sequence_output"], atol=1e-4)
  np.testing.assert_allclose(out["pooled_output"], expected["pooled_output"], atol=1e-4)
  np.testing.assert_allclose(tf.nn.log_softmax(out["mlm_logits"]),
                             expected["mlm_log_probs"], atol=1e-4)
  np.testing.assert_allclose(tf.nn.log_softmax(out["nsp_logits"]),
                             expected["nsp_log_probs"], atol=1e-4)
  # The padded rows really differ from the unpadded computation, so the
  # mask is exercised (not vacuously equal).
  unmasked = reference_bert.reference_forward(
      weights, _TINY, batch["input_ids"], np.ones_like(batch["input_mask"]),
      batch["segment_ids"], batch["masked_lm_positions"])
  assert np.abs(unmasked["pooled_output"][2] - expected["pooled_output"][2]).max() > 1e-2


def test_round_trip_is_bit_identical(original, tmp_path):
  weights, prefix = original
  model = modeling.BertPretrainer(_TINY)
  tf1_checkpoint.load_tf1_checkpoint(model, prefix)
  out_prefix = tf1_checkpoint.save_tf1_checkpoint(model, str(tmp_path / "sub" / "out.ckpt"),
                                                  global_step=5)
  assert sorted(tf.io.gfile.listdir(str(tmp_path / "sub"))) == [
      "out.ckpt.data-00000-of-00001", "out.ckpt.index"]
  reader = tf.train.load_checkpoint(out_prefix)
  shapes = reader.get_variable_to_shape_map()
  assert set(shapes) == set(weights) | {"global_step"}
  assert reader.get_tensor("global_step") == 5
  for name, value in weights.items():
    if name == "bert/embeddings/position_embeddings":
      value = value[:_TINY.max_position_embeddings]  # the rows the model holds
    got = reader.get_tensor(name)
    assert got.dtype == value.dtype and got.shape == value.shape, name
    assert np.array_equal(got, value), name
  assert tf1_checkpoint.is_tf1_checkpoint(out_prefix)
  # The original's init_from_checkpoint reads it by name.
  by_tf1 = _read_with_tf1_init_from_checkpoint(out_prefix, reference_bert.tf1_weight_shapes(_TINY))
  for name, value in by_tf1.items():
    assert np.array_equal(value, reader.get_tensor(name)), name
  # And back again: the same model outputs.
  again = modeling.BertPretrainer(_TINY)
  tf1_checkpoint.load_tf1_checkpoint(again, out_prefix)
  batch = _batch(np.random.default_rng(2))
  np.testing.assert_array_equal(again(batch)["mlm_logits"], model(batch)["mlm_logits"])


def test_tf1_weights_from_model_shapes(original):
  model = modeling.BertPretrainer(_TINY)
  weights = tf1_checkpoint.tf1_weights_from_model(model)
  expected = reference_bert.tf1_weight_shapes(_TINY)
  assert {k: v.shape for k, v in weights.items()} == expected
  encoder_only = tf1_checkpoint.tf1_weights_from_model(model.encoder)
  assert set(encoder_only) == {k for k in expected if k.startswith("bert/")}


def test_shape_mismatch_names_variable_and_shapes(original):
  _, prefix = original
  wider = modeling.BertPretrainer(_TINY.replace(intermediate_size=96))
  with pytest.raises(ValueError) as e:
    tf1_checkpoint.load_tf1_checkpoint(wider, prefix)
  message = str(e.value)
  assert "bert/encoder/layer_0/intermediate/dense/kernel" in message
  assert "[24, 48]" in message and "[24, 96]" in message
  longer = modeling.BertPretrainer(_TINY.replace(max_position_embeddings=32))
  with pytest.raises(ValueError, match=r"position_embeddings.*\[20, 24\].*\[32, 24\]"):
    tf1_checkpoint.load_tf1_checkpoint(longer, prefix)


def test_missing_variables_and_heads(tmp_path):
  weights = reference_bert.random_tf1_weights(_TINY, np.random.default_rng(3))
  encoder_only = {k: v for k, v in weights.items() if k.startswith("bert/")}
  encoder_only["output_weights"] = np.zeros((2, 24), np.float32)  # a classifier's
  prefix = write_tf1_checkpoint(str(tmp_path / "finetuned.ckpt"), encoder_only,
                                 with_optimizer_state=False)
  model = modeling.BertPretrainer(_TINY)
  before = model.nsp_head.kernel.numpy()
  with pytest.raises(ValueError, match="cls/predictions/transform/dense/kernel"):
    tf1_checkpoint.load_tf1_checkpoint(model, prefix)
  # A failed load assigns nothing.
  assert not np.array_equal(model.encoder.token_embedding.embeddings.numpy(),
                            weights["bert/embeddings/word_embeddings"])
  report = tf1_checkpoint.load_tf1_checkpoint(model, prefix, require_heads=False)
  assert "cls/seq_relationship/output_weights" in report["missing_heads"]
  assert report["unused"] == ["output_weights"]
  np.testing.assert_array_equal(model.encoder.token_embedding.embeddings.numpy(),
                                weights["bert/embeddings/word_embeddings"])
  np.testing.assert_array_equal(model.nsp_head.kernel.numpy(), before)


def test_is_tf1_checkpoint(original, tmp_path):
  _, prefix = original
  assert tf1_checkpoint.is_tf1_checkpoint(prefix)
  directory = prefix.rsplit("/", 1)[0]  # has the Saver's "checkpoint" file
  assert tf1_checkpoint.is_tf1_checkpoint(directory)
  model = modeling.BertPretrainer(_TINY)
  report = tf1_checkpoint.load_tf1_checkpoint(model, directory)
  assert report["unused"] == []
  assert not tf1_checkpoint.is_tf1_checkpoint(str(tmp_path / "nothing"))
  object_based = tf.train.Checkpoint(model=model).save(str(tmp_path / "obj" / "ckpt"))
  assert not tf1_checkpoint.is_tf1_checkpoint(object_based)
  with pytest.raises(FileNotFoundError):
    tf1_checkpoint.load_tf1_checkpoint(model, str(tmp_path / "nothing"))


def test_load_tf1_weights_from_a_dict(original):
  weights, prefix = original
  from_file = modeling.BertPretrainer(_TINY)
  tf1_checkpoint.load_tf1_checkpoint(from_file, prefix)
  from_dict = modeling.BertPretrainer(_TINY)
  report = tf1_checkpoint.load_tf1_weights(from_dict, weights)
  assert report["unused"] == []
  for a, b in zip(from_file.weights, from_dict.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy())
  bad = dict(weights, **{"cls/predictions/output_bias": np.zeros(61, np.float32)})
  with pytest.raises(ValueError, match=r"cls/predictions/output_bias.*\[61\].*\[60\]"):
    tf1_checkpoint.load_tf1_weights(from_dict, bad)


# Golden outputs: the ORIGINAL google-research/bert modeling.py and
# run_pretraining.py heads, run on their own tiny checkpoint (see
# ../shared/reference/golden/README.md). Tolerance, elementwise:
# |ours - original| <= 1e-5 + 1e-5 * |original| (values are O(1); float32
# runs of the two codes agree to ~1e-6, while e.g. erf-GELU instead of the
# original's tanh form moves sequence_output by 5.7e-4).
_GOLDEN_RTOL = _GOLDEN_ATOL = 1e-5


def test_forward_and_losses_match_the_original_code(shared_dir):
  golden = os.path.join(shared_dir, "reference", "golden", "model")
  config = BertConfig.from_json_file(os.path.join(golden, "bert_config.json"))
  assert (config.num_hidden_layers, config.type_vocab_size, config.vocab_size) == (3, 3, 53)
  case = dict(np.load(os.path.join(golden, "case.npz")))
  # The batch exercises padding, segment id 2 and zero-weight predictions.
  assert case["input_mask"].min() == 0 and case["segment_ids"].max() == 2
  assert case["masked_lm_weights"].min() == 0

  model = modeling.BertPretrainer(config)
  report = tf1_checkpoint.load_tf1_checkpoint(model, os.path.join(golden, "bert_model.ckpt"))
  assert report["unused"] == [] and report["missing_heads"] == []
  out = model({k: case[k] for k in ("input_ids", "input_mask", "segment_ids",
                                    "masked_lm_positions")}, training=False)

  def check(name, ours):
    np.testing.assert_allclose(np.asarray(ours), case[name], rtol=_GOLDEN_RTOL,
                               atol=_GOLDEN_ATOL, err_msg=name)
  check("sequence_output", out["sequence_output"])
  check("pooled_output", out["pooled_output"])
  check("mlm_log_probs", tf.reshape(tf.nn.log_softmax(out["mlm_logits"]), [-1, config.vocab_size]))
  check("nsp_log_probs", tf.nn.log_softmax(out["nsp_logits"]))
  ours = batch_losses.pretraining_losses(out, case)
  check("mlm_loss", ours["mlm_loss"])
  check("nsp_loss", ours["nsp_loss"])
  np.testing.assert_allclose(float(ours["total"]), float(case["mlm_loss"] + case["nsp_loss"]),
                             rtol=_GOLDEN_RTOL)


# ------------------------------------------------------------------------------
# ALBERT (google-research/albert's names)
# ------------------------------------------------------------------------------

_ALBERT = BertConfig(vocab_size=60, hidden_size=24, num_hidden_layers=4,
                     num_attention_heads=3, intermediate_size=48,
                     max_position_embeddings=16, type_vocab_size=2,
                     embedding_size=8, num_hidden_groups=2, inner_group_num=2)


@pytest.fixture(scope="module")
def original_albert(tmp_path_factory):
  """Random weights under the original ALBERT names, written by a TF1 Saver."""
  weights = reference_albert.random_tf1_weights(
      _ALBERT, np.random.default_rng(5), position_rows=20)
  prefix = str(tmp_path_factory.mktemp("albert") / "model.ckpt")
  return weights, write_tf1_checkpoint(prefix, weights)


def test_albert_names_and_shapes():
  model = modeling.BertPretrainer(_ALBERT)
  weights = tf1_checkpoint.tf1_weights_from_model(model)
  expected = reference_albert.tf1_weight_shapes(_ALBERT)
  assert {k: v.shape for k, v in weights.items()} == expected
  # Released ALBERT names, spelled out once.
  for name in ("bert/encoder/embedding_hidden_mapping_in/kernel",
               "bert/encoder/transformer/group_1/inner_group_1/attention_1/self/query/kernel",
               "bert/encoder/transformer/group_0/inner_group_0/attention_1/output/dense/bias",
               "bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/output/dense/kernel",
               "bert/encoder/transformer/group_0/inner_group_1/LayerNorm_1/gamma"):
    assert name in weights, name


def test_albert_round_trip_is_bit_identical_and_forward_matches(original_albert, tmp_path):
  weights, prefix = original_albert
  model = modeling.BertPretrainer(_ALBERT)
  report = tf1_checkpoint.load_tf1_checkpoint(model, prefix)
  assert sorted(report["loaded"]) == sorted(weights) and report["unused"] == []
  batch = _batch(np.random.default_rng(6))
  expected = reference_albert.reference_forward(weights, _ALBERT, **batch)
  np.testing.assert_allclose(tf.nn.log_softmax(model(batch)["mlm_logits"]),
                             expected["mlm_log_probs"], atol=1e-4)
  out_prefix = tf1_checkpoint.save_tf1_checkpoint(model, str(tmp_path / "out.ckpt"))
  reader = tf.train.load_checkpoint(out_prefix)
  assert set(reader.get_variable_to_shape_map()) == set(weights)
  for name, value in weights.items():
    if name == "bert/embeddings/position_embeddings":
      value = value[:_ALBERT.max_position_embeddings]
    assert np.array_equal(reader.get_tensor(name), value), name
  # The original's init_from_checkpoint reads it by name.
  by_tf1 = _read_with_tf1_init_from_checkpoint(
      out_prefix, reference_albert.tf1_weight_shapes(_ALBERT))
  for name, value in by_tf1.items():
    assert np.array_equal(value, reader.get_tensor(name)), name


def test_albert_config_with_bert_checkpoint_and_the_reverse(original, original_albert):
  _, bert_prefix = original
  _, albert_prefix = original_albert
  albert_model = modeling.BertPretrainer(_ALBERT)
  before = albert_model.encoder.token_embedding.embeddings.numpy()
  with pytest.raises(ValueError) as e:
    tf1_checkpoint.load_tf1_checkpoint(albert_model, bert_prefix, require_heads=False)
  message = str(e.value)
  assert "\n" not in message and bert_prefix in message
  assert "original BERT checkpoint" in message and "ALBERT config" in message
  np.testing.assert_array_equal(albert_model.encoder.token_embedding.embeddings.numpy(), before)
  with pytest.raises(ValueError, match="original ALBERT checkpoint .* BERT config"):
    tf1_checkpoint.load_tf1_checkpoint(modeling.BertPretrainer(_TINY), albert_prefix)
  assert tf1_checkpoint.checkpoint_model_kind(["bert/embeddings/word_embeddings"]) is None
