"""The original optimization.py's recorded run (../shared/reference/golden):
its steps, and Keras variables named as the original's."""

import contextlib
import os

import keras
import numpy as np


GOLDEN_STEPS = 12


def golden_optimizer_case(shared_dir):
  path = os.path.join(shared_dir, "reference", "golden", "optimizer.npz")
  golden = dict(np.load(path))
  names = sorted(k[len("init/"):] for k in golden if k.startswith("init/"))
  assert len(names) == 6
  return golden, names


def variables_named_as_in_bert(golden, names):
  """Keras variables whose paths are the original's variable names."""
  variables = []
  for name in names:
    scopes, leaf = name.split("/")[:-1], name.split("/")[-1]
    with contextlib.ExitStack() as stack:
      for scope in scopes:  # a Keras name scope holds no "/": nest them
        stack.enter_context(keras.name_scope(scope))
      variable = keras.Variable(golden["init/" + name], name=leaf)
    assert variable.path == name
    variables.append(variable)
  return variables
