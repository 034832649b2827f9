"""A deterministic linear probe: L2-regularized logistic regression (or
ridge regression) fitted to convergence by Newton's method, in numpy.

Why not a Keras layer trained by SGD: a probe is an instrument, and an
instrument must give the same answer every time and have converged, or its
spread is mixed into the comparison. Newton's method on this convex loss
reaches the unique optimum in a few dozen steps with no seed, batch order
or learning rate to choose.

Features are standardized with the train split's mean and standard
deviation (so one penalty suits every encoder), a bias is added
unpenalized, and the loss is

    mean log-loss + l2 / 2 * ||w||^2

with l2 = 1e-2 by default. More than two classes are fitted one against
the rest (the class of the largest score wins); a regression task is
closed-form ridge on the same standardized features.
"""

import numpy as np

L2 = 1e-2
MAX_ITERATIONS = 100
TOLERANCE = 1e-8


def standardize(train, other):
  """(train, other) features scaled by the train split's mean and sd."""
  mean = train.mean(axis=0)
  sd = train.std(axis=0)
  sd[sd < 1e-12] = 1.0
  return (train - mean) / sd, (other - mean) / sd


def _with_bias(x):
  return np.concatenate([x, np.ones((x.shape[0], 1), x.dtype)], axis=1)


def fit_binary(x, y, l2=L2):
  """Weights [d + 1] (bias last) of logistic regression of y (0/1) on x,
  fitted by Newton's method to a gradient norm below TOLERANCE; raises
  RuntimeError if it has not converged in MAX_ITERATIONS."""
  x = _with_bias(np.asarray(x, np.float64))
  y = np.asarray(y, np.float64)
  n, d = x.shape
  penalty = np.full(d, l2)
  penalty[-1] = 0.0  # the bias is not penalized
  w = np.zeros(d)
  for _ in range(MAX_ITERATIONS):
    z = x @ w
    p = 1.0 / (1.0 + np.exp(-z))
    gradient = x.T @ (p - y) / n + penalty * w
    if np.linalg.norm(gradient) < TOLERANCE:
      return w
    hessian = (x * (p * (1 - p))[:, None]).T @ x / n + np.diag(penalty)
    # A tiny ridge keeps the bias's row solvable when one class is absent.
    step = np.linalg.solve(hessian + 1e-10 * np.eye(d), gradient)
    # Damped: halve the step until the loss does not rise.
    loss = _loss(x, y, w, penalty)
    scale = 1.0
    while scale > 1e-6 and _loss(x, y, w - scale * step, penalty) > loss + 1e-15:
      scale /= 2
    w = w - scale * step
  raise RuntimeError(f"the linear probe did not converge in {MAX_ITERATIONS} Newton steps")


def _loss(x, y, w, penalty):
  z = x @ w
  # log(1 + exp(z)) - y z, stable for large |z|.
  return float(np.mean(np.logaddexp(0.0, z) - y * z) + 0.5 * np.sum(penalty * w * w))


def fit_predict(train_x, train_y, dev_x, num_classes, l2=L2):
  """Predicted dev classes (int [n_dev]) of a probe fitted on train.

  train_y: int classes 0..num_classes-1.
  """
  train_x, dev_x = standardize(np.asarray(train_x, np.float64), np.asarray(dev_x, np.float64))
  train_y = np.asarray(train_y)
  if num_classes == 2:
    w = fit_binary(train_x, train_y == 1, l2)
    return (_with_bias(dev_x) @ w > 0).astype(np.int64)
  scores = np.stack([_with_bias(dev_x) @ fit_binary(train_x, train_y == k, l2)
                     for k in range(num_classes)], axis=1)
  return np.argmax(scores, axis=1)


def fit_regression(train_x, train_y, dev_x, l2=L2):
  """Dev predictions of ridge regression (closed form, standardized x)."""
  train_x, dev_x = standardize(np.asarray(train_x, np.float64), np.asarray(dev_x, np.float64))
  x = _with_bias(train_x)
  n, d = x.shape
  penalty = np.full(d, l2 * n)
  penalty[-1] = 0.0
  w = np.linalg.solve(x.T @ x + np.diag(penalty) + 1e-10 * np.eye(d),
                      x.T @ np.asarray(train_y, np.float64))
  return _with_bias(dev_x) @ w
