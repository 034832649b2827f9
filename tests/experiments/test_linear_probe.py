"""Tests of bert_tf.experiments.linear_probe: converged, deterministic,
right on separable data and at chance on noise."""

import numpy as np
import pytest

from bert_tf.experiments import linear_probe


def test_separable_features_are_separated_and_the_answer_repeats():
  rng = np.random.default_rng(0)
  x = rng.normal(size=(900, 40))
  score = x[:, 3] - 0.5 * x[:, 7]
  x = x[np.abs(score) > 0.5][:600]  # separable with a margin
  y = (x[:, 3] - 0.5 * x[:, 7] > 0).astype(int)
  predictions = linear_probe.fit_predict(x[:400], y[:400], x[400:], 2)
  assert np.mean(predictions == y[400:]) > 0.97
  again = linear_probe.fit_predict(x[:400], y[:400], x[400:], 2)
  assert (again == predictions).all()


def test_the_fit_reaches_the_optimum():
  rng = np.random.default_rng(1)
  x = rng.normal(size=(300, 5))
  y = (x @ np.array([1.0, -2.0, 0.5, 0.0, 0.0]) + rng.normal(size=300) > 0)
  w = linear_probe.fit_binary(x, y, l2=0.01)
  # The gradient of the penalized mean log-loss vanishes there.
  xb = np.concatenate([x, np.ones((300, 1))], axis=1)
  p = 1 / (1 + np.exp(-xb @ w))
  penalty = np.r_[np.full(5, 0.01), 0.0]
  assert np.linalg.norm(xb.T @ (p - y) / 300 + penalty * w) < 1e-7


def test_noise_stays_at_chance_and_classes_and_regression():
  rng = np.random.default_rng(2)
  x = rng.normal(size=(2000, 20))
  y = rng.integers(0, 2, 2000)
  assert abs(np.mean(linear_probe.fit_predict(x[:1000], y[:1000], x[1000:], 2)
                     == y[1000:]) - 0.5) < 0.06
  y3 = np.digitize(x[:, 0], [-0.5, 0.5])
  assert np.mean(linear_probe.fit_predict(x[:1000], y3[:1000], x[1000:], 3) == y3[1000:]) > 0.85
  target = 2 * x[:, 1] + 0.1 * rng.normal(size=2000)
  predicted = linear_probe.fit_regression(x[:1000], target[:1000], x[1000:])
  assert np.corrcoef(predicted, target[1000:])[0, 1] > 0.99


def test_a_constant_feature_and_one_class_do_not_break_it():
  x = np.ones((50, 3))
  x[:, 0] = np.arange(50)
  y = np.zeros(50, int)
  assert (linear_probe.fit_predict(x, y, x, 2) == 0).all()
  with pytest.raises(RuntimeError, match="did not converge"):
    linear_probe.MAX_ITERATIONS, saved = 0, linear_probe.MAX_ITERATIONS
    try:
      linear_probe.fit_binary(x, (x[:, 0] > 20).astype(int))
    finally:
      linear_probe.MAX_ITERATIONS = saved
