"""Tests of bert_tf.models.electra: sampling from the softmax, replaced-token
labels, ELECTRA's mask rule, shared embeddings, generator sizing and its
errors, the [MASK] id read from records, and seeded (reproducible) noise."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import electra
from bert_tf.models.config import BertConfig

from helpers.pretraining import tiny_bert_config, write_records

B, S, P = 4, 16, 4


def _features(vocab_size, seed=0):
  rng = np.random.default_rng(seed)
  ids = rng.integers(5, vocab_size, (B, S)).astype(np.int32)
  # P - 1 real predictions at 1..P-1, then a padding one (position 0, id 0).
  positions = np.tile(np.array(list(range(1, P)) + [0], np.int32), (B, 1))
  originals = np.concatenate([ids[:, 1:P], np.zeros((B, 1), np.int32)], axis=1)
  ids[:, 1:P] = 4  # the records' [MASK]
  mask = np.ones((B, S), np.int32)
  mask[:, -3:] = 0
  return {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros((B, S), np.int32),
          "masked_lm_positions": positions, "masked_lm_ids": originals,
          "masked_lm_weights": np.array([[1, 1, 1, 0]] * B, np.float32)}


def _chi_square(samples, probs):
  """Pearson's statistic of `samples` against `probs` (entries of
  probability 0 must never occur)."""
  counts = np.bincount(samples, minlength=len(probs))[:len(probs)]
  assert len(np.bincount(samples)) <= len(probs)
  zero = probs == 0
  assert counts[zero].sum() == 0
  expected = probs[~zero] * len(samples)
  return float(((counts[~zero] - expected) ** 2 / expected).sum()), int((~zero).sum() - 1)


@pytest.mark.parametrize("vocab", [5, 300])
def test_sampled_frequencies_are_the_softmax(vocab):
  # 300 entries: three blocks of the two-level CDF, the last one padded,
  # and entries of probability 0 (exp underflow) never drawn.
  rng = np.random.default_rng(vocab)
  logits = rng.normal(0, 2, vocab)
  logits[::7] = -200.0
  probs = np.exp(logits - logits.max())
  probs[::7] = 0.0
  probs /= probs.sum()
  n = 60000
  samples = electra.sample_tokens(
      tf.constant(np.tile(logits, (n, 1)), tf.float32), [7, 11]).numpy()
  stat, dof = _chi_square(samples, probs)
  # Mean dof, sd sqrt(2 dof): 6 standard deviations is far beyond noise.
  assert stat < dof + 6 * np.sqrt(2 * dof), (stat, dof)


def test_samples_with_per_example_seeds_do_not_depend_on_the_batch():
  logits = tf.constant(np.random.default_rng(0).normal(0, 1, (2, 3, 500)), tf.float32)
  seeds = tf.constant([[1, 2], [3, 4]], tf.int64)
  both = electra.sample_tokens(logits, seeds).numpy()
  one = electra.sample_tokens(logits[1:], seeds[1:]).numpy()
  np.testing.assert_array_equal(both[1], one[0])
  assert both.shape == (2, 3) and both.dtype == np.int32
  np.testing.assert_array_equal(both, electra.sample_tokens(logits, seeds).numpy())


def test_a_certain_token_is_always_drawn():
  logits = np.full((64, 1000), -1e4, np.float32)
  logits[:, 999] = 0.0  # the padded last block's last real entry
  assert np.all(electra.sample_tokens(tf.constant(logits), [1, 2]).numpy() == 999)
  logits[:, 999], logits[:, 0] = -1e4, 0.0
  assert np.all(electra.sample_tokens(tf.constant(logits), [1, 2]).numpy() == 0)


def test_samples_beside_the_masked_lm_loss_in_one_graph_are_the_eager_ones():
  # In a tf.function the sampler's exp(logits - max) is the loss's own (the
  # graph optimizer merges them, models/softmax.py): the same numbers.
  from bert_tf.training import losses  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(1)
  logits = tf.constant(rng.normal(0, 2, (3, 4, 400)), tf.float32)
  features = {"masked_lm_ids": tf.constant(rng.integers(0, 400, (3, 4)), tf.int32),
              "masked_lm_weights": tf.ones((3, 4), tf.float32)}
  seeds = tf.constant([[1, 2], [3, 4], [5, 6]], tf.int64)

  @tf.function
  def both(x):
    return electra.sample_tokens(x, seeds), losses.mlm_sums(x, features)["mlm_ce_sum"]

  samples, ce = both(logits)
  np.testing.assert_array_equal(samples.numpy(), electra.sample_tokens(logits, seeds).numpy())
  np.testing.assert_allclose(float(ce), float(losses.mlm_sums(logits, features)["mlm_ce_sum"]),
                             rtol=1e-6)


def test_a_sample_equal_to_the_original_is_labelled_original():
  config = tiny_bert_config(dropout=0.0)
  model = electra.ElectraPretrainer(config, mask_token_id=4, seed=3)
  features = _features(config.vocab_size)
  certain = 42  # the generator samples this token (bias +100)
  bias = np.zeros(config.vocab_size, np.float32)
  bias[certain] = 100.0
  model.mlm_head._bias.assign(bias)  # pylint: disable=protected-access
  features["masked_lm_ids"][:, 0] = certain      # sample == original -> "original"
  features["masked_lm_ids"][:, 1] = certain + 1  # sample != original -> "replaced"
  out = model(features, training=True)
  assert np.all(out["sampled_ids"].numpy()[:, :3] == certain)
  labels = out["replaced_labels"].numpy()
  corrupted = out["corrupted_ids"].numpy()
  assert np.all(labels[:, 1] == 0) and np.all(corrupted[:, 1] == certain)
  assert np.all(labels[:, 2] == 1) and np.all(corrupted[:, 2] == certain)
  # Positions that were not masked (the padding prediction's 0 included)
  # keep the text and are "original".
  np.testing.assert_array_equal(corrupted[:, P:], features["input_ids"][:, P:])
  np.testing.assert_array_equal(corrupted[:, 0], features["input_ids"][:, 0])
  assert labels[:, P:].sum() == 0 and labels[:, 0].sum() == 0


@pytest.mark.parametrize("rule, shares", [("electra", (0.85, 0.0, 0.15)),
                                          ("bert", (0.8, 0.1, 0.1))])
def test_mask_rule_shares(rule, shares):
  b, s, p, mask_id, vocab = 500, 40, 30, 4, 1000
  originals = np.full((b, p), 7, np.int32)
  positions = np.tile(np.arange(1, p + 1, dtype=np.int32), (b, 1))
  real = np.ones((b, p), bool)
  real[:, -5:] = False
  ids = np.full((b, s), 7, np.int32)
  out = electra.remask(tf.constant(ids), positions, originals, real, rule, mask_id, vocab,
                       lambda stream: tf.constant([5, electra._SEED_STREAMS[stream]]))
  at = out.numpy()[:, 1:p + 1]
  chosen = at[:, :-5]
  n = chosen.size
  masked, kept = (chosen == mask_id).sum() / n, (chosen == 7).sum() / n
  random = 1 - masked - kept  # a random draw of 7 counts as kept (1/1000)
  np.testing.assert_allclose([masked, random, kept], shares, atol=0.01)
  assert np.all(at[:, -5:] == 7)  # padding predictions untouched
  assert np.all(out.numpy()[:, p + 1:] == 7) and np.all(out.numpy()[:, 0] == 7)


def test_embeddings_are_one_variable_shared_by_both_networks():
  config = tiny_bert_config(dropout=0.0)
  model = electra.ElectraPretrainer(config, mask_token_id=4)
  unique = {id(w): w for w in model.weights}.values()
  assert [w.path for w in unique if w.shape == (config.vocab_size, config.hidden_size)] == [
      "token_embedding/embeddings"]
  assert sum(w.path.endswith("position_embedding/embeddings") for w in unique) == 1
  assert model.mlm_head.token_embedding is model.encoder.token_embedding
  features = _features(config.vocab_size)
  enc = model.encoder
  shared = [enc.token_embedding.embeddings, enc.position_embedding.position_embeddings,
            enc.segment_embedding.embeddings, enc.embeddings_layer_norm.gamma]
  with tf.GradientTape() as tape:
    logits = model.generator_logits(features["input_ids"], features["segment_ids"],
                                    features["input_mask"], features["masked_lm_positions"])
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        features["masked_lm_ids"], logits))
  # The generator's loss reaches every shared embedding weight.
  for grad, weight in zip(tape.gradient(loss, shared), shared):
    assert grad is not None and float(tf.norm(tf.convert_to_tensor(grad))) > 0, weight.path
  # The generator projects the shared embeddings to its own width.
  assert model.generator_projection.kernel.shape == (32, 8)


def test_a_config_with_embedding_size_factorizes_the_shared_embeddings_as_electra_small():
  # ELECTRA-Small's config: embedding_size 128 under hidden 256; both
  # networks project the narrower shared embeddings to their widths.
  config = tiny_bert_config(dropout=0.0).replace(embedding_size=16)
  model = electra.ElectraPretrainer(config, mask_token_id=4)
  assert model.encoder.token_embedding.embeddings.shape == (config.vocab_size, 16)
  assert model.encoder.embeddings_projection.kernel.shape == (16, 32)
  assert model.generator_projection.kernel.shape == (16, 8)
  out = model(_features(config.vocab_size), training=True)
  assert out["mlm_logits"].shape == (B, P, config.vocab_size)
  assert out["discriminator_logits"].shape == (B, S)
  with pytest.raises(ValueError, match=r"^num_hidden_groups=2: ELECTRA's discriminator does "
                     r"not share layers \(ALBERT\)"):
    electra.ElectraPretrainer(config.replace(num_hidden_groups=2), mask_token_id=4)


def test_generator_size_follows_the_fractions_and_the_originals_rule():
  base = BertConfig(vocab_size=30522, hidden_size=768, num_hidden_layers=12,
                    num_attention_heads=12, intermediate_size=3072)
  gen = electra.generator_config(base)
  # The original: hidden 0.25 x 768, heads hidden // 64, intermediate 4 x hidden.
  assert (gen.hidden_size, gen.num_attention_heads, gen.intermediate_size,
          gen.num_hidden_layers) == (192, 3, 768, 12)
  half = electra.generator_config(base, 0.5, 0.5)
  assert (half.hidden_size, half.num_attention_heads, half.num_hidden_layers) == (384, 6, 6)


def test_a_generator_larger_than_the_discriminator_is_a_one_line_error():
  config = tiny_bert_config()
  with pytest.raises(ValueError, match=r"--generator_hidden_size=1.5 makes the generator "
                     r"larger than the discriminator"):
    electra.generator_config(config, 1.5)
  big = config.replace(hidden_size=64, num_attention_heads=2)
  with pytest.raises(ValueError, match=r"^the generator \(hidden 64, 2 layers\) is larger "
                     r"than the discriminator \(hidden 32, 2 layers\)") as info:
    electra.ElectraPretrainer(config, big)
  assert "\n" not in str(info.value)
  with pytest.raises(ValueError, match="generator's vocab_size=99 differs"):
    electra.check_generator(config, electra.generator_config(config).replace(vocab_size=99))


def test_the_mask_id_is_read_from_the_records(tmp_path):
  write_records(tmp_path / "r.tfrecord", 40, seed=4)  # [MASK] = 4 there
  assert electra.mask_token_id_from_records([str(tmp_path / "r.tfrecord")], 32, 5) == 4


def test_noise_is_seeded_fresh_in_training_and_fixed_per_example_in_eval():
  config = tiny_bert_config(dropout=0.0)
  features = _features(config.vocab_size, seed=1)

  def run(seed, training, batch=slice(None)):
    keras.utils.set_random_seed(0)  # the same weights each time
    model = electra.ElectraPretrainer(config, mask_token_id=4, seed=seed)
    part = {k: v[batch] for k, v in features.items()}
    return model, model(part, training=training)["corrupted_ids"].numpy()

  model, first = run(9, True)
  again = model(features, training=True)["corrupted_ids"].numpy()
  assert int(model.sample_step.numpy()) == 2
  assert not np.array_equal(first, again)  # a new draw each step
  np.testing.assert_array_equal(run(9, True)[1], first)  # same seed, same first step
  _, whole = run(9, False)
  _, part = run(9, False, slice(2, 4))
  np.testing.assert_array_equal(whole[2:4], part)  # eval: per example, any batch


def _original_electra_names(layers, gen_layers, gen_project):
  """google-research/electra's variable names (from its modeling.py and
  run_pretraining.py scopes), written out here independently of our map."""
  names = ["electra/embeddings/word_embeddings", "electra/embeddings/token_type_embeddings",
           "electra/embeddings/position_embeddings", "electra/embeddings/LayerNorm/gamma",
           "electra/embeddings/LayerNorm/beta",
           "generator_predictions/dense/kernel", "generator_predictions/dense/bias",
           "generator_predictions/LayerNorm/gamma", "generator_predictions/LayerNorm/beta",
           "generator_predictions/output_bias",
           "discriminator_predictions/dense/kernel", "discriminator_predictions/dense/bias",
           "discriminator_predictions/dense_1/kernel", "discriminator_predictions/dense_1/bias"]
  if gen_project:
    names += ["generator/embeddings_project/kernel", "generator/embeddings_project/bias"]
  for scope, n in (("electra", layers), ("generator", gen_layers)):
    for i in range(n):
      p = f"{scope}/encoder/layer_{i}/"
      for dense in ("attention/self/query", "attention/self/key", "attention/self/value",
                    "attention/output/dense", "intermediate/dense", "output/dense"):
        names += [p + dense + "/kernel", p + dense + "/bias"]
      for norm in ("attention/output/LayerNorm", "output/LayerNorm"):
        names += [p + norm + "/gamma", p + norm + "/beta"]
  return sorted(names)


def test_tf1_checkpoint_with_electras_names_round_trips(tmp_path):
  from bert_tf.models import tf1_checkpoint
  config = tiny_bert_config(dropout=0.0)
  model = electra.ElectraPretrainer(config, mask_token_id=4)
  weights = tf1_checkpoint.tf1_weights_from_model(model)
  assert sorted(weights) == _original_electra_names(2, 2, gen_project=True)
  assert weights["electra/encoder/layer_0/attention/self/query/kernel"].shape == (32, 32)
  assert weights["generator/encoder/layer_1/attention/output/dense/kernel"].shape == (8, 8)
  assert weights["generator_predictions/dense/kernel"].shape == (8, 32)
  # A checkpoint written by name (as a TF1 Saver would), random values.
  rng = np.random.default_rng(0)
  values = {n: rng.standard_normal(v.shape).astype(np.float32) for n, v in weights.items()}
  names = sorted(values)
  prefix = str(tmp_path / "electra" / "model.ckpt")
  tf.io.gfile.makedirs(str(tmp_path / "electra"))
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names + ["global_step"],
                    shape_and_slices=[""] * (len(names) + 1),
                    tensors=[tf.constant(values[n]) for n in names] + [tf.constant(7, tf.int64)])
  assert tf1_checkpoint.is_tf1_checkpoint(prefix)
  fresh = electra.ElectraPretrainer(config, mask_token_id=4)
  result = tf1_checkpoint.load_tf1_checkpoint(fresh, prefix)
  assert result["unused"] == [] and len(result["loaded"]) == len(names)
  np.testing.assert_array_equal(fresh.encoder.token_embedding.embeddings.numpy(),
                                values["electra/embeddings/word_embeddings"])
  np.testing.assert_array_equal(
      fresh.discriminator_output.kernel.numpy(), values["discriminator_predictions/dense_1/kernel"])
  out = tmp_path / "out" / "model.ckpt"
  tf1_checkpoint.save_tf1_checkpoint(fresh, str(out))
  reader = tf.train.load_checkpoint(str(out))
  for name in names:
    np.testing.assert_array_equal(reader.get_tensor(name), values[name], err_msg=name)
  # A discriminator alone (as ELECTRA's released fine-tuning checkpoints)
  # warm-starts the discriminator and leaves the generator as initialized.
  disc_prefix = str(tmp_path / "disc" / "model.ckpt")
  tf.io.gfile.makedirs(str(tmp_path / "disc"))
  disc = [n for n in names if n.startswith("electra/")]
  tf.raw_ops.SaveV2(prefix=disc_prefix, tensor_names=disc, shape_and_slices=[""] * len(disc),
                    tensors=[tf.constant(values[n]) for n in disc])
  partial = tf1_checkpoint.load_tf1_checkpoint(
      electra.ElectraPretrainer(config, mask_token_id=4), disc_prefix, require_heads=False)
  assert sorted(partial["loaded"]) == disc
  assert "generator/encoder/layer_0/output/dense/kernel" in partial["missing_heads"]
  with pytest.raises(ValueError, match="has no variable generator"):
    tf1_checkpoint.load_tf1_checkpoint(electra.ElectraPretrainer(config, mask_token_id=4),
                                       disc_prefix)
