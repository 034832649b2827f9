"""Mixed precision for every objective: the loss in bfloat16 against float32
on the same batch and weights, a short bfloat16 run that learns as float32
does, and the float32 statistics (attention softmax, layer norm, sums,
optimizer state) under "mixed_bfloat16".

What CPU cannot show (TF32 matmuls for real, TPU's bfloat16 kernels) is
listed in the README's accelerator section and measured by bench/bench_gpu.py.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import distillation
from bert_tf.models import modeling
from bert_tf.training import objectives
from bert_tf.training import optimization

from helpers.pretraining import tiny_bert_config

B, S, P, VOCAB = 8, 32, 5, 100
NAMES = ("mlm_nsp", "mlm_sop", "mlm", "electra", "distill_mlm")
# ELECTRA's Table 5 variants: their losses and statistics are checked too.
VARIANTS = ("electra_15", "replace_mlm", "all_tokens_mlm")
# bfloat16 keeps 8 significant bits (relative step 2^-8 = 0.4%) in the
# encoders; the heads, logits and sums are float32, so the loss of these tiny
# models at initialization is within 4e-5 of float32's (measured, relative);
# the tolerance is 2e-3.
LOSS_RTOL = 2e-3


def _batch(seed=0):
  rng = np.random.default_rng(seed)
  ids = rng.integers(5, VOCAB, (B, S)).astype(np.int32)
  positions = np.stack([np.sort(rng.choice(np.arange(1, S - 4), P, replace=False))
                        for _ in range(B)]).astype(np.int32)
  originals = np.take_along_axis(ids, positions, 1)
  np.put_along_axis(ids, positions, 4, 1)  # [MASK] = 4
  mask = np.ones((B, S), np.int32)
  mask[:, -4:] = 0
  weights = np.ones((B, P), np.float32)
  weights[:, -1] = 0.0
  return {"input_ids": ids, "input_mask": mask,
          "segment_ids": (np.arange(S) >= S // 2).astype(np.int32)[None].repeat(B, 0),
          "masked_lm_positions": positions, "masked_lm_ids": originals,
          "masked_lm_weights": weights,
          "next_sentence_labels": rng.integers(0, 2, (B, 1)).astype(np.int32)}


def _objective_and_model(name, dtype, config):
  if name.startswith("distill_"):
    objective = objectives.DistillationObjective(objectives.OBJECTIVES["mlm"])
    keras.utils.set_random_seed(1)
    teacher = modeling.BertPretrainer(config, dtype=dtype, sentence_head=False)
    keras.utils.set_random_seed(2)
    student = modeling.BertPretrainer(config.replace(num_hidden_layers=1), dtype=dtype,
                                      sentence_head=False)
    return objective, distillation.Distiller(student, teacher)
  objective = objectives.OBJECTIVES[name]
  if objective.family == "electra":
    objective = type(objective)(objectives.ElectraSettings(mask_token_id=4, seed=3))
  keras.utils.set_random_seed(1)
  return objective, objective.build_model(config, dtype=dtype)


def _pair(name, config):
  """(objective, float32 model, mixed_bfloat16 model with the same weights)."""
  objective, f32 = _objective_and_model(name, "float32", config)
  _, bf16 = _objective_and_model(name, "mixed_bfloat16", config)
  bf16.set_weights(f32.get_weights())
  return objective, f32, bf16


def _loss(objective, model, features, training=False):
  outputs = model(features, training=training)
  sums = objective.loss_sums(outputs, features)
  return objective.replica_loss(sums, objective.global_counts(features)), sums


@pytest.mark.parametrize("name", NAMES + VARIANTS)
def test_the_bfloat16_loss_is_the_float32_loss_within_bfloat16s_precision(name):
  objective, f32, bf16 = _pair(name, tiny_bert_config(dropout=0.0))
  features = {k: tf.constant(v) for k, v in _batch().items()}
  loss32, sums32 = _loss(objective, f32, features)
  loss16, sums16 = _loss(objective, bf16, features)
  assert loss16.dtype == tf.float32
  for key in objective.sum_keys:  # every sum is float32 under mixed precision
    assert sums16[key].dtype == tf.float32, key
  np.testing.assert_allclose(loss16.numpy(), loss32.numpy(), rtol=LOSS_RTOL)
  # Counts are exact (never in the compute dtype).
  for key in ("mlm_weight_sum", "num_examples", "disc_token_count", "token_count"):
    if key in sums16:
      assert sums16[key].numpy() == sums32[key].numpy(), key


def _train(objective, model, features, steps=25):
  variables = objective.trainable_variables(model)
  optimizer = optimization.AdamWeightDecay(learning_rate=3e-3, weight_decay_rate=0.0)
  optimizer.build(variables)

  @tf.function
  def step():
    with tf.GradientTape() as tape:
      loss, _ = _loss(objective, model, features, training=True)
    grads = tape.gradient(loss, variables)
    optimizer.apply(grads, variables)
    return loss

  losses = [float(step()) for _ in range(steps)]
  return losses, optimizer


@pytest.mark.parametrize("name", NAMES)
def test_a_short_bfloat16_run_learns_as_float32_does(name):
  objective, f32, bf16 = _pair(name, tiny_bert_config(dropout=0.0))
  features = {k: tf.constant(v) for k, v in _batch(seed=4).items()}
  losses32, _ = _train(objective, f32, features)
  losses16, optimizer = _train(objective, bf16, features)
  fall32 = losses32[0] - min(losses32[-5:])
  fall16 = losses16[0] - min(losses16[-5:])
  assert fall32 > 0.1 * losses32[0], losses32  # the run learns (one batch, 25 steps)
  assert fall16 > 0.7 * fall32, (losses16, losses32)
  # Master weights and optimizer state stay float32 under mixed precision.
  assert all(v.dtype == "float32" for v in objective.trainable_variables(bf16))
  slots = [v for v in optimizer.variables if "int" not in str(v.dtype)]
  assert slots and all(v.dtype == "float32" for v in slots)


@pytest.mark.parametrize("name", ("mlm_nsp", "electra", "distill_mlm", "all_tokens_mlm"))
def test_softmax_and_layer_norm_statistics_are_float32_under_mixed_bfloat16(name):
  _, model = _objective_and_model(name, "mixed_bfloat16", tiny_bert_config())
  features = {k: tf.constant(v) for k, v in _batch().items()}
  graph = tf.function(lambda: model(features, training=True)).get_concrete_function().graph
  softmax = [op.outputs[0].dtype for op in graph.get_operations() if op.type == "Softmax"]
  moments = [op.outputs[0].dtype for op in graph.get_operations()
             if op.type in ("Mean", "Rsqrt", "SquaredDifference") and "layer_norm" in op.name]
  assert softmax and moments
  assert set(softmax) == {tf.float32}, softmax
  assert set(moments) == {tf.float32}, moments
  # The matmuls still run in bfloat16: the policy is in effect.
  assert any(op.type in ("MatMul", "BatchMatMulV2") and op.outputs[0].dtype == tf.bfloat16
             for op in graph.get_operations())
