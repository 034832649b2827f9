"""Tests of bert_tf.training.optimization: numpy statements of the original, and the
original optimization.py's real outputs (../shared/reference/golden/optimizer.npz)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import modeling
from bert_tf.training import loop
from bert_tf.training import optimization
from bert_tf.training import train_config
from bert_tf.models.config import BertConfig

from helpers.golden_optimizer import GOLDEN_STEPS, golden_optimizer_case, variables_named_as_in_bert


def _np_learning_rate(step, lr, num_train_steps, num_warmup_steps):
  """The original: polynomial (power 1) decay to 0, overridden by warmup."""
  decayed = lr * (1.0 - min(step, num_train_steps) / num_train_steps)
  if num_warmup_steps and step < num_warmup_steps:
    return lr * step / num_warmup_steps
  return decayed


@pytest.mark.parametrize("warmup", [0, 10])
def test_schedule_matches_original_formula(warmup):
  schedule = optimization.LinearWarmupLinearDecay(2e-4, 100, warmup)
  for step in (0, 1, 5, 9, 10, 11, 50, 99, 100, 150):
    assert float(schedule(step)) == pytest.approx(
        _np_learning_rate(step, 2e-4, 100, warmup), rel=1e-5, abs=1e-11), step
  # The peak is reached right after warmup; the first update uses rate 0
  # under warmup (global_step 0), as in the original.
  if warmup:
    assert float(schedule(0)) == 0.0
    assert float(schedule(warmup)) == pytest.approx(2e-4 * (1 - warmup / 100))
  restored = optimization.LinearWarmupLinearDecay.from_config(schedule.get_config())
  assert float(restored(7)) == float(schedule(7))


def test_schedule_rejects_bad_steps():
  with pytest.raises(ValueError, match="num_train_steps"):
    optimization.LinearWarmupLinearDecay(1e-4, 0, 0)
  with pytest.raises(ValueError, match="num_warmup_steps"):
    optimization.LinearWarmupLinearDecay(1e-4, 10, -1)
  with pytest.raises(ValueError, match="warmup must be 'bert' or 'electra', got 'linear'"):
    optimization.LinearWarmupLinearDecay(1e-4, 10, 1, warmup="linear")


def test_the_lr_schedule_flag_offers_the_schedule_shapes():
  # --lr_schedule's choices (train_config, no TensorFlow) are the shapes
  # the schedule computes, the original BERT's first (the default).
  assert train_config.LR_SCHEDULES == optimization.SCHEDULE_SHAPES
  assert train_config.TrainConfig().lr_schedule == optimization.WARMUP_THEN_DECAY


def _tiny_layers():
  dense = keras.layers.Dense(3, name="dense")
  dense.build((None, 4))
  norm = keras.layers.LayerNormalization(name="some_layer_norm")
  norm.build((None, 3))
  return [dense.kernel, dense.bias, norm.gamma, norm.beta]


def test_adam_weight_decay_matches_numpy_for_several_steps():
  keras.utils.set_random_seed(0)
  variables = _tiny_layers()
  rng = np.random.default_rng(0)
  for v in variables:
    v.assign(rng.standard_normal(v.shape).astype(np.float32))
  lr, total, warmup, decay = 1e-2, 8, 3, 0.01
  optimizer = optimization.create_optimizer(
      "adamw_original", learning_rate=lr, num_train_steps=total,
      num_warmup_steps=warmup, weight_decay=decay)
  assert isinstance(optimizer, optimization.AdamWeightDecay)
  params = [v.numpy().astype(np.float64) for v in variables]
  m = [np.zeros_like(p) for p in params]
  v_ = [np.zeros_like(p) for p in params]
  decayed = [True, False, False, False]  # kernel only
  for step in range(6):
    grads = [rng.standard_normal(p.shape).astype(np.float32) for p in params]
    optimizer.apply_gradients(zip([tf.constant(g) for g in grads], variables))
    rate = _np_learning_rate(step, lr, total, warmup)
    for i, g in enumerate(grads):
      m[i] = 0.9 * m[i] + 0.1 * g
      v_[i] = 0.999 * v_[i] + 0.001 * g.astype(np.float64) ** 2
      update = m[i] / (np.sqrt(v_[i]) + 1e-6)  # no bias correction
      if decayed[i]:
        update = update + decay * params[i]
      params[i] = params[i] - rate * update
    for i, var in enumerate(variables):
      np.testing.assert_allclose(var.numpy(), params[i], rtol=1e-5, atol=1e-6,
                                 err_msg=f"{var.path} step {step}")
  assert int(optimizer.iterations) == 6
  # Differs from Keras' bias-corrected Adam, which would move the
  # parameters much further in the first steps.
  assert optimizer.get_config()["epsilon"] == 1e-6


def test_no_clipping_inside_the_optimizer():
  for name in optimization.OPTIMIZERS:
    optimizer = optimization.create_optimizer(name, 1e-4, 100, 10)
    assert optimizer.clipnorm is None and optimizer.global_clipnorm is None
    assert optimizer.clipvalue is None
  with pytest.raises(ValueError, match="sgd"):
    optimization.create_optimizer("sgd", 1e-4, 100, 10)
  with pytest.raises(ValueError, match="num_train_steps"):
    optimization.create_optimizer("adamw", 1e-4)


@pytest.fixture(scope="module")
def pretrainer():
  return modeling.BertPretrainer(BertConfig(
      vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
      intermediate_size=32, max_position_embeddings=16))


def _expected_decay(path):
  # Kernels and embeddings are decayed; LayerNorm gamma/beta and every bias
  # are not (the original: LayerNorm, layer_norm, bias).
  return path.endswith("/kernel") or path.endswith("/embeddings")


def test_exclusion_list_on_a_real_pretrainer(pretrainer):
  paths = {v.path: optimization.uses_weight_decay(v) for v in pretrainer.trainable_variables}
  assert paths == {p: _expected_decay(p) for p in paths}
  for excluded in ("embeddings_layer_norm/gamma", "embeddings_layer_norm/beta",
                   "mlm_head/intermediate_layer_norm/gamma", "mlm_head/output_bias",
                   "nsp_head/bias", "pooled_dense/bias",
                   "transformer_layer_0/self_attention_layer/query/bias",
                   "transformer_layer_1/feedforward_layer_norm/beta"):
    assert paths[excluded] is False, excluded
  for decayed in ("token_embedding/embeddings", "position_embedding/embeddings",
                  "segment_embedding/embeddings", "mlm_head/intermediate_dense/kernel",
                  "nsp_head/kernel", "transformer_layer_0/self_attention_layer/query/kernel"):
    assert paths[decayed] is True, decayed


@pytest.mark.parametrize("name", optimization.OPTIMIZERS)
def test_zero_gradient_step_decays_exactly_the_right_variables(pretrainer, name):
  """With zero gradients only weight decay moves a parameter."""
  model = modeling.BertPretrainer(pretrainer.config)
  model.set_weights(pretrainer.get_weights())
  lr, decay = 0.5, 0.01
  optimizer = optimization.create_optimizer(name, lr, 10, 0, weight_decay=decay)
  before = {v.path: v.numpy() for v in model.trainable_variables}
  # Make LayerNorm/bias weights non-zero so a wrong decay would show.
  for v in model.trainable_variables:
    if not _expected_decay(v.path):
      v.assign(before[v.path] + 0.5)
      before[v.path] = v.numpy()
  optimizer.apply_gradients([(tf.zeros_like(v), v) for v in model.trainable_variables])
  for v in model.trainable_variables:
    if _expected_decay(v.path):
      # Original and Keras AdamW: p - lr * wd * p. LAMB: the update is wd * p,
      # whose trust ratio ||p|| / ||wd p|| = 1 / wd makes the step lr * p.
      shrink = lr if name == "lamb" else lr * decay
      np.testing.assert_allclose(v.numpy(), before[v.path] * (1 - shrink),
                                 rtol=1e-5, err_msg=v.path)
    else:
      np.testing.assert_array_equal(v.numpy(), before[v.path], err_msg=v.path)


def test_sparse_embedding_gradients_update_like_dense_ones():
  table_a = keras.Variable(np.ones((5, 3), np.float32), name="embeddings")
  table_b = keras.Variable(np.ones((5, 3), np.float32), name="embeddings")
  values = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
  sparse = tf.IndexedSlices(values, tf.constant([1, 3]), tf.constant([5, 3]))
  opt_a = optimization.create_optimizer("adamw_original", 0.1, 10, 0)
  opt_b = optimization.create_optimizer("adamw_original", 0.1, 10, 0)
  opt_a.apply_gradients([(sparse, table_a)])
  opt_b.apply_gradients([(tf.convert_to_tensor(sparse), table_b)])
  np.testing.assert_array_equal(table_a.numpy(), table_b.numpy())
  # Rows without gradient are still decayed, as in the original's dense update.
  np.testing.assert_allclose(table_a.numpy()[0], 1 - 0.1 * 0.01, rtol=1e-6)


# ------------------------------------------------------------------------------
# Against the original optimization.py's real trajectory
# ------------------------------------------------------------------------------
#
# ../shared/reference/golden/optimizer.npz: the original
# create_optimizer(loss, 0.1, num_train_steps=12, num_warmup_steps=4) applied
# 12 times (global-norm clipping at 1.0, AdamWeightDecay, decay 0.01 except
# LayerNorm and bias) to six variables with BERT names.
#
# Which schedule step: the original computes the learning rate from
# global_step and increments global_step in the same session.run, with no
# order between the two; under TF 2.21 the read came after the increment, so
# its update t (0-based) used the rate of step t + 1 (its first warmup update
# is not 0). bert_tf keeps the documented intent instead: update t uses the
# rate of step t, the number of updates already applied (the first warmup
# update has rate 0). So our DEFAULT trajectory differs from the observed one
# (checked below), and our update rule + schedule equal the observed one
# exactly when the schedule is read one step later (optimizer.iterations
# started at 1). Tolerance: |ours - original| <= 1e-6 + 1e-5 |original|.


def _run_golden_steps(golden, names, first_schedule_step):
  """Applies the golden gradients with our clipping and optimizer.

  Returns:
    (after, clipped): after[t][i] is variable i after update t; clipped is
    the number of updates whose gradient global norm exceeded the clip norm.
  """
  variables = variables_named_as_in_bert(golden, names)
  optimizer = optimization.create_optimizer(
      "adamw_original", learning_rate=0.1, num_train_steps=12, num_warmup_steps=4,
      weight_decay=0.01)
  optimizer.iterations.assign(first_schedule_step)
  after, clipped = [], 0
  for t in range(GOLDEN_STEPS):
    grads = [tf.constant(golden[f"grad/{t}/{name}"]) for name in names]
    # As the training loop does before apply_gradients.
    grads, norm = tf.clip_by_global_norm(grads, loop.CLIP_NORM)
    clipped += int(float(norm) > loop.CLIP_NORM)
    optimizer.apply_gradients(zip(grads, variables))
    after.append([v.numpy() for v in variables])
  return after, clipped


def test_matches_the_original_trajectory_with_the_step_read_one_later(shared_dir):
  golden, names = golden_optimizer_case(shared_dir)
  decayed = {name: optimization.uses_weight_decay(v)
             for name, v in zip(names, variables_named_as_in_bert(golden, names))}
  # The original's exclusion by name: LayerNorm and bias are not decayed.
  assert decayed == {
      "cls/predictions/output_bias": False, "embeddings/word_embeddings": True,
      "layer_0/attention/self/query/bias": False, "layer_0/attention/self/query/kernel": True,
      "layer_0/output/LayerNorm/beta": False, "layer_0/output/LayerNorm/gamma": False}
  after, clipped = _run_golden_steps(golden, names, first_schedule_step=1)
  assert clipped >= 3  # every third gradient is large: clipping acts
  for t in range(GOLDEN_STEPS):
    for name, value in zip(names, after[t]):
      np.testing.assert_allclose(value, golden[f"after/{t}/{name}"], rtol=1e-5, atol=1e-6,
                                 err_msg=f"update {t}, {name}")


def test_default_schedule_is_the_documented_intent_not_the_observed_one(shared_dir):
  golden, names = golden_optimizer_case(shared_dir)
  after, _ = _run_golden_steps(golden, names, first_schedule_step=0)
  # Our first warmup update has rate 0 (nothing moves); the original's
  # observed first update moved every variable.
  for name, value in zip(names, after[0]):
    np.testing.assert_array_equal(value, golden[f"init/{name}"], err_msg=name)
    assert np.abs(golden[f"after/0/{name}"] - golden[f"init/{name}"]).max() > 1e-3, name
  # Our update t + 1 uses the rate the original's update t used; the states
  # differ by that first update's move, which the later ones do not undo.
  final = {name: value for name, value in zip(names, after[-1])}
  gap = max(np.abs(final[n] - golden[f"after/{GOLDEN_STEPS - 1}/{n}"]).max() for n in names)
  assert gap > 1e-2


# ------------------------------------------------------------------------------
# LAMB (ALBERT's) and Adam with bias correction (RoBERTa's)
# ------------------------------------------------------------------------------


def _lamb_variables():
  """kernel, bias, LayerNorm gamma/beta, and an all-zero kernel (||w|| = 0)."""
  variables = _tiny_layers()
  zero = keras.layers.Dense(2, name="zero_dense")
  zero.build((None, 3))
  rng = np.random.default_rng(0)
  for v in variables:
    v.assign(rng.standard_normal(v.shape).astype(np.float32))
  zero.kernel.assign(np.zeros(zero.kernel.shape, np.float32))
  return variables + [zero.kernel]


def _np_lamb_step(params, m, v, grads, rate, decay, adapted, beta_1=0.9,
                  beta_2=0.999, epsilon=1e-6):
  """google-research/albert's LAMBOptimizer.apply_gradients, in numpy."""
  for i, g in enumerate(grads):
    g = g.astype(np.float64)
    m[i] = beta_1 * m[i] + (1 - beta_1) * g
    v[i] = beta_2 * v[i] + (1 - beta_2) * g ** 2
    update = m[i] / (np.sqrt(v[i]) + epsilon)
    if adapted[i]:  # one exclusion list decides decay and adaptation
      update = update + decay * params[i]
      w_norm, u_norm = np.linalg.norm(params[i]), np.linalg.norm(update)
      ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
    else:
      ratio = 1.0
    params[i] = params[i] - ratio * rate * update


def _run_lamb_case(optimizer, variables, steps=6, lr=1e-2, total=8, warmup=3, decay=0.01):
  rng = np.random.default_rng(1)
  params = [v.numpy().astype(np.float64) for v in variables]
  m = [np.zeros_like(p) for p in params]
  v_ = [np.zeros_like(p) for p in params]
  adapted = [optimization.uses_weight_decay(v) for v in variables]
  assert adapted == [True, False, False, False, True]
  worst = 0.0
  for step in range(steps):
    grads = [rng.standard_normal(p.shape).astype(np.float32) for p in params]
    optimizer.apply_gradients(zip([tf.constant(g) for g in grads], variables))
    _np_lamb_step(params, m, v_, grads, _np_learning_rate(step, lr, total, warmup),
                  decay, adapted)
    worst = max(worst, max(float(np.abs(var.numpy() - p).max())
                           for var, p in zip(variables, params)))
  return worst


def test_lamb_matches_the_albert_rule_for_several_steps():
  keras.utils.set_random_seed(0)
  variables = _lamb_variables()
  optimizer = optimization.create_optimizer("lamb", learning_rate=1e-2, num_train_steps=8,
                                            num_warmup_steps=3, weight_decay=0.01)
  assert isinstance(optimizer, optimization.Lamb)
  assert _run_lamb_case(optimizer, variables) < 2e-6
  # The zero kernel moved (ratio 1 when ||w|| = 0), as in the original.
  assert np.abs(variables[-1].numpy()).max() > 0


def test_keras_lamb_is_not_the_albert_rule():
  """Why `--optimizer=lamb` is ours: keras.optimizers.Lamb (bias correction,
  decay outside the trust ratio, ratio on LayerNorm and bias too) departs
  from the original by far more than rounding."""
  keras.utils.set_random_seed(0)
  variables = _lamb_variables()
  schedule = optimization.LinearWarmupLinearDecay(1e-2, 8, 3)
  keras_lamb = keras.optimizers.Lamb(learning_rate=schedule, weight_decay=0.01,
                                     beta_1=0.9, beta_2=0.999, epsilon=1e-6)
  keras_lamb.exclude_from_weight_decay(var_names=["gamma", "beta", "bias"])
  assert _run_lamb_case(keras_lamb, variables) > 1e-3


def test_lamb_excluded_variables_take_plain_adam_steps():
  norm = keras.layers.LayerNormalization(name="layer_norm")
  norm.build((None, 4))
  optimizer = optimization.create_optimizer("lamb", 0.1, 10, 0, weight_decay=0.5)
  grad = tf.constant([1.0, -2.0, 3.0, 0.5])
  optimizer.apply_gradients([(grad, norm.gamma)])
  # First step without bias correction: m = 0.1 g, v = 0.001 g^2, so the
  # step is lr * 0.1 g / (sqrt(0.001) |g| + 1e-6): no decay, no ratio.
  g = grad.numpy().astype(np.float64)
  expected = 1.0 - 0.1 * (0.1 * g) / (np.sqrt(0.001 * g ** 2) + 1e-6)
  np.testing.assert_allclose(norm.gamma.numpy(), expected, rtol=1e-6)


def _np_fairseq_adam(params, m, v, grads, rate, decay, decayed, t, beta_1, beta_2, epsilon):
  """fairseq's Adam (RoBERTa's optimizer) with decoupled weight decay."""
  for i, g in enumerate(grads):
    g = g.astype(np.float64)
    m[i] = beta_1 * m[i] + (1 - beta_1) * g
    v[i] = beta_2 * v[i] + (1 - beta_2) * g ** 2
    step_size = rate * np.sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
    if decayed[i]:
      params[i] = params[i] - rate * decay * params[i]
    params[i] = params[i] - step_size * m[i] / (np.sqrt(v[i]) + epsilon)


def test_adamw_is_bias_corrected_adam_with_decoupled_decay_and_options():
  keras.utils.set_random_seed(0)
  variables = _tiny_layers()
  rng = np.random.default_rng(0)
  for v in variables:
    v.assign(rng.standard_normal(v.shape).astype(np.float32))
  lr, total, warmup, decay = 1e-2, 8, 3, 0.01
  optimizer = optimization.create_optimizer(
      "adamw", learning_rate=lr, num_train_steps=total, num_warmup_steps=warmup,
      weight_decay=decay, beta_1=0.9, beta_2=0.98, epsilon=1e-6)
  params = [v.numpy().astype(np.float64) for v in variables]
  m = [np.zeros_like(p) for p in params]
  v_ = [np.zeros_like(p) for p in params]
  decayed = [optimization.uses_weight_decay(v) for v in variables]
  assert decayed == [True, False, False, False]
  for step in range(6):
    grads = [rng.standard_normal(p.shape).astype(np.float32) for p in params]
    optimizer.apply_gradients(zip([tf.constant(g) for g in grads], variables))
    _np_fairseq_adam(params, m, v_, grads, _np_learning_rate(step, lr, total, warmup),
                     decay, decayed, step + 1, 0.9, 0.98, 1e-6)
    for i, var in enumerate(variables):
      np.testing.assert_allclose(var.numpy(), params[i], rtol=1e-5, atol=1e-6,
                                 err_msg=f"{var.path} step {step}")


@pytest.mark.parametrize("name", optimization.OPTIMIZERS)
def test_adam_options_reach_every_optimizer(name):
  default = optimization.create_optimizer(name, 1e-4, 100, 10).get_config()
  assert (default["beta_1"], default["beta_2"], default["epsilon"]) == (0.9, 0.999, 1e-6)
  config = optimization.create_optimizer(name, 1e-4, 100, 10, beta_1=0.8, beta_2=0.98,
                                         epsilon=1e-8).get_config()
  assert (config["beta_1"], config["beta_2"], config["epsilon"]) == (0.8, 0.98, 1e-8)


@pytest.mark.parametrize("warmup", [0, 10, 40])
def test_the_electra_schedule_is_tf1_polynomial_decay_times_the_warmup_ratio(warmup):
  """google-research/electra's model/optimization.py: TF1's
  polynomial_decay(lr, step, T, end 0, power 1), multiplied by
  min(1, step / warmup); computed here with TF's own TF1 function."""
  schedule = optimization.LinearWarmupLinearDecay(5e-4, 100, warmup, warmup="electra")
  for step in (0, 1, 5, 10, 39, 40, 41, 99, 100, 150):
    expected = tf.compat.v1.train.polynomial_decay(5e-4, step, 100, end_learning_rate=0.0,
                                                   power=1.0, cycle=False)
    expected = float(expected() if callable(expected) else expected)
    if warmup:
      expected *= min(1.0, step / warmup)
    np.testing.assert_allclose(float(schedule(step)), expected, rtol=1e-6, atol=1e-12)
  restored = optimization.LinearWarmupLinearDecay.from_config(schedule.get_config())
  assert restored.warmup == "electra"
  if warmup:  # lower than BERT's at the end of warmup, by the share spent warming up
    bert = optimization.LinearWarmupLinearDecay(5e-4, 100, warmup)
    assert float(schedule(warmup)) == pytest.approx(float(bert(warmup)))
    assert float(schedule(warmup // 2)) < float(bert(warmup // 2))
