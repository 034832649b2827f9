"""Tests of bert_tf.training.objectives.electra_variants (ELECTRA 15%,
Replace MLM, All-Tokens MLM of ELECTRA's Table 5): each loss against a
numpy restatement, the copy mixture, the FLOPs, the options, and training,
checkpoint tag and export through the tools' code."""

import json

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import flops
from bert_tf.models import tf1_checkpoint
from bert_tf.serving import export
from bert_tf.serving import saved_model
from bert_tf.training import loop
from bert_tf.training import objectives
from bert_tf.training import train_config
from bert_tf.training.objectives import electra_variants

from helpers.objective_batches import BATCH, SEQ, random_batch
from helpers.pretraining import tiny_bert_config, tiny_train_config, write_records
from helpers.serving_model import CONFIG, MAX_SEQ_LENGTH, TOP_K, write_vocab

VARIANTS = ("electra_15", "replace_mlm", "all_tokens_mlm")


def _objective(name):
  return type(objectives.get(name))(objectives.ElectraSettings(mask_token_id=4, seed=2))


def _batch(vocab_size):
  features = random_batch(vocab_size, with_labels=False)
  features["input_mask"][:, SEQ - 4:] = 0  # padding: no loss there
  return features


def _log_softmax(logits):
  logits = logits.astype(np.float64)
  top = logits.max(-1, keepdims=True)
  return logits - top - np.log(np.exp(logits - top).sum(-1, keepdims=True))


def _generator_mlm(outputs, features):
  log_probs = _log_softmax(outputs["mlm_logits"].numpy())
  ce = -np.take_along_axis(log_probs, features["masked_lm_ids"][..., None], -1)[..., 0]
  w = features["masked_lm_weights"]
  return (w * ce).sum() / (w.sum() + 1e-6)


def _masked_positions(features):
  out = np.zeros(features["input_ids"].shape, np.float64)
  for b, (positions, weights) in enumerate(zip(features["masked_lm_positions"],
                                               features["masked_lm_weights"])):
    out[b, positions[weights > 0]] = 1
  return out


def _run(name):
  objective = _objective(name)
  config = tiny_bert_config(dropout=0.0)
  model = objective.build_model(config)
  features = _batch(config.vocab_size)
  outputs = model(features)
  sums = objective.loss_sums(outputs, features)
  assert tuple(sums) == objective.sum_keys
  metrics = objective.metrics(sums)
  assert tuple(metrics) == objective.metric_keys
  loss = float(objective.replica_loss(sums, objective.global_counts(features)))
  return objective, features, outputs, metrics, loss


def test_electra_15_is_the_discriminator_loss_over_the_masked_positions_only():
  objective, features, outputs, metrics, loss = _run("electra_15")
  logits = outputs["discriminator_logits"].numpy().astype(np.float64)
  labels = outputs["replaced_labels"].numpy()
  bce = np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))
  m = _masked_positions(features)
  assert m.sum() == 2 * BATCH  # two real predictions per example
  disc = (m * bce).sum() / (m.sum() + 1e-6)
  expected = _generator_mlm(outputs, features) + 50 * disc
  np.testing.assert_allclose(loss, expected, rtol=1e-5)
  np.testing.assert_allclose(float(metrics["discriminator_loss"]), disc, rtol=1e-5)
  # The discriminator still reads every token; only the loss is restricted.
  assert outputs["discriminator_logits"].shape == (BATCH, SEQ)
  np.testing.assert_allclose(float(metrics["replaced_share"]), (m * labels).sum() / m.sum())


def test_replace_mlm_is_generator_mlm_plus_the_main_networks_mlm_on_the_samples():
  objective, features, outputs, metrics, loss = _run("replace_mlm")
  # The main network reads the generator's samples at the masked positions.
  corrupted = outputs["corrupted_ids"].numpy()
  sampled = outputs["sampled_ids"].numpy()
  for b in range(BATCH):
    for j in range(2):
      assert corrupted[b, features["masked_lm_positions"][b, j]] == sampled[b, j]
  log_probs = _log_softmax(outputs["main_mlm_logits"].numpy())
  ce = -np.take_along_axis(log_probs, features["masked_lm_ids"][..., None], -1)[..., 0]
  w = features["masked_lm_weights"]
  main = (w * ce).sum() / (w.sum() + 1e-6)
  np.testing.assert_allclose(loss, _generator_mlm(outputs, features) + main, rtol=1e-5)
  np.testing.assert_allclose(float(metrics["main_mlm_loss"]), main, rtol=1e-5)
  assert not hasattr(outputs, "discriminator_logits")


def _numpy_mixture(mlm_logits, copy_logits, input_ids, target_ids):
  """The paper's distribution written out: D one-hot(input) + (1 - D) softmax."""
  probs = np.exp(_log_softmax(mlm_logits))
  d = 1 / (1 + np.exp(-copy_logits.astype(np.float64)))
  mixture = (1 - d)[..., None] * probs
  b, s = np.indices(input_ids.shape)
  mixture[b, s, input_ids] += d
  np.testing.assert_allclose(mixture.sum(-1), 1.0, rtol=1e-9)
  return np.log(mixture[b, s, target_ids]), mixture.argmax(-1), d


def test_copy_mixture_puts_d_on_the_input_token_and_1_minus_d_on_the_softmax():
  rng = np.random.default_rng(0)
  vocab = 7
  mlm_logits = rng.normal(0, 3, (2, 6, vocab)).astype(np.float32)
  copy_logits = rng.normal(0, 3, (2, 6)).astype(np.float32)
  input_ids = rng.integers(0, vocab, (2, 6)).astype(np.int32)
  target_ids = np.where(rng.random((2, 6)) < 0.5, input_ids,
                        rng.integers(0, vocab, (2, 6))).astype(np.int32)
  log_p, argmax, d = electra_variants.copy_mixture(mlm_logits, copy_logits, input_ids,
                                                   target_ids)
  want_log_p, want_argmax, want_d = _numpy_mixture(mlm_logits, copy_logits, input_ids,
                                                   target_ids)
  np.testing.assert_allclose(log_p.numpy(), want_log_p, rtol=1e-5, atol=1e-6)
  np.testing.assert_array_equal(argmax.numpy(), want_argmax)
  np.testing.assert_allclose(d.numpy(), want_d, rtol=1e-6)


def test_all_tokens_mlm_predicts_every_real_token_through_the_copy_mixture():
  objective, features, outputs, metrics, loss = _run("all_tokens_mlm")
  assert outputs["main_mlm_logits"].shape[:2] == (BATCH, SEQ)
  log_p, argmax, d = _numpy_mixture(outputs["main_mlm_logits"].numpy(),
                                    outputs["copy_logits"].numpy(),
                                    outputs["corrupted_ids"].numpy(),
                                    outputs["original_ids"].numpy())
  m = features["input_mask"].astype(np.float64)
  main = -(m * log_p).sum() / (m.sum() + 1e-6)
  np.testing.assert_allclose(loss, _generator_mlm(outputs, features) + main, rtol=1e-5)
  correct = argmax == outputs["original_ids"].numpy()
  np.testing.assert_allclose(float(metrics["main_mlm_accuracy"]), (m * correct).sum() / m.sum(),
                             rtol=1e-6)
  masked = _masked_positions(features)
  np.testing.assert_allclose(float(metrics["main_masked_accuracy"]),
                             (masked * correct).sum() / masked.sum(), rtol=1e-6)
  np.testing.assert_allclose(float(metrics["copy_probability"]), (m * d).sum() / m.sum(),
                             rtol=1e-5)


def test_the_variants_resolve_by_name_with_electras_options():
  config = train_config.TrainConfig(objective_options=objectives.ElectraOptions(
      generator_hidden_size=0.5))
  for name in VARIANTS:
    resolved = objectives.resolve(name, "nsp", options=config)
    assert resolved.name == name and resolved.family == "electra"
    assert resolved.options.generator_hidden_size == 0.5
    assert objectives.get(name).with_options(resolved.options).name == name
  assert objectives.resolve("electra", "nsp", options=config).name == "electra"


@pytest.mark.parametrize("name", ("replace_mlm", "all_tokens_mlm"))
def test_a_discriminator_weight_is_refused_where_there_is_no_discriminator(name):
  config = train_config.TrainConfig(objective_options=objectives.ElectraOptions(
      discriminator_weight=20.0))
  with pytest.raises(ValueError, match=f"discriminator_weight=20: {name} has no discriminator"):
    objectives.resolve(name, "nsp", options=config)


def test_train_flops_count_each_variants_heads():
  config = tiny_bert_config()
  args = (config, 8, 128, 20)
  electra = objectives.get("electra").train_flops(*args)
  assert objectives.get("electra_15").train_flops(*args) == electra
  gen = objectives.get("electra").generator_config(config)
  h, v = config.hidden_size, config.vocab_size
  head = flops.mlm_head_flops(h, h, v)
  # Replace MLM: ELECTRA without the per-token head, with a masked-LM head
  # at the 20 slots; All-Tokens MLM: that head at all 128 tokens + copy.
  replace = electra - 8 * 128 * flops.replaced_token_head_flops(h) + 8 * 20 * head
  assert objectives.get("replace_mlm").train_flops(*args) == replace
  assert objectives.get("all_tokens_mlm").train_flops(*args) == (
      replace + 8 * 108 * head + 8 * 128 * 6 * (h + 1))
  assert gen.hidden_size == h // 4


@pytest.mark.slow  # 25-50 s each on 2 cores: two training steps, then an export
@pytest.mark.parametrize("name", VARIANTS)
def test_each_variant_trains_saves_its_tag_and_exports_its_main_network(tmp_path, name):
  write_records(tmp_path / "train.tfrecord", 16, seed=1, vocab_size=CONFIG.vocab_size)
  result = loop.run(tiny_train_config(tmp_path, objective=name, num_train_steps=2,
                                      num_warmup_steps=1, iterations_per_loop=2,
                                      save_checkpoints_steps=2), CONFIG)
  assert result["global_step"] == 2 and np.isfinite(result["train"]["loss"])
  saved = objectives.from_checkpoint(str(tmp_path / "out"))
  assert type(saved) is type(objectives.get(name)) and saved.options.mask_token_id == 4
  (tmp_path / "bert_config.json").write_text(json.dumps(CONFIG.to_dict()))
  options = export.ExportOptions(
      bert_config_file=str(tmp_path / "bert_config.json"), checkpoint=str(tmp_path / "out"),
      vocab_file=write_vocab(tmp_path / "vocab.txt"), export_dir=str(tmp_path / "export"),
      max_seq_length=MAX_SEQ_LENGTH, top_k=TOP_K)
  export.run_export(options)
  loaded = tf.saved_model.load(options.export_dir)
  expected = saved.text_signatures
  assert ("replaced_token_detection" in expected) == (name == "electra_15")
  assert set(expected) <= set(loaded.signatures)
  ids = tf.constant([[2, 7, 8, 3]], tf.int32)
  encoded = loaded.signatures["encode"](input_ids=ids, input_mask=tf.ones_like(ids),
                                        segment_ids=tf.zeros_like(ids))
  want = result["model"].encoder({"token_ids": ids, "segment_ids": tf.zeros_like(ids),
                                  "padding_mask": tf.ones_like(ids)})["sequence_output"]
  np.testing.assert_allclose(encoded["sequence_output"].numpy(), want.numpy(), atol=1e-5)


def test_the_originals_checkpoint_names_refuse_a_main_masked_lm_network():
  model = _objective("replace_mlm").build_model(CONFIG)
  with pytest.raises(ValueError, match="no place for a main masked-LM network"):
    tf1_checkpoint.tf1_shapes(model)
  # electra_15's network is ELECTRA's: the original's names fit it.
  assert tf1_checkpoint.tf1_shapes(_objective("electra_15").build_model(CONFIG))
