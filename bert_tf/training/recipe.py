"""The training recipe's fields, each with its range check, written once.

An options dataclass (TrainConfig, FinetuneConfig, SquadConfig, the
quickstart's QuickstartOptions, the comparison's CompareOptions) declares a
recipe field with the helper of its name, which carries the field's check;
`check(config)` applies the checks of every such field, in declaration
order. Each config keeps its own field names and defaults (a helper called
without a default declares a field without one).

    learning_rate: float = recipe.learning_rate(5e-5)
"""

import dataclasses

_POSITIVE = (lambda v: v > 0, "must be positive")
_NON_NEGATIVE = (lambda v: v >= 0, "must be >= 0")
_FRACTION = (lambda v: 0 <= v < 1, "must be in [0, 1)")
_NO_DEFAULT = dataclasses.MISSING


def _field(default, rule):
  return dataclasses.field(default=default, metadata={"recipe_check": rule})


def learning_rate(default=_NO_DEFAULT):
  """The peak learning rate (> 0)."""
  return _field(default, _POSITIVE)


def batch_size(default=_NO_DEFAULT):
  """Examples per batch: train_batch_size, eval_batch_size, predict_batch_size (> 0)."""
  return _field(default, _POSITIVE)


def num_train_epochs(default=_NO_DEFAULT):
  return _field(default, _POSITIVE)


def warmup_proportion(default=_NO_DEFAULT):
  """The share of the steps of linear warmup, in [0, 1)."""
  return _field(default, _FRACTION)


def num_warmup_steps(default=_NO_DEFAULT):
  return _field(default, _NON_NEGATIVE)


def seeds(default=_NO_DEFAULT):
  """Runs over seeds seed, seed + 1, ... (> 0)."""
  return _field(default, _POSITIVE)


def save_checkpoints_steps(default=_NO_DEFAULT):
  return _field(default, _POSITIVE)


def adam_beta(default=_NO_DEFAULT):
  """adam_beta1, adam_beta2: a moment's decay rate, in [0, 1)."""
  return _field(default, _FRACTION)


def dropout(default=_NO_DEFAULT):
  """A dropout probability, in [0, 1)."""
  return _field(default, _FRACTION)


def positive(default=_NO_DEFAULT):
  """adam_epsilon, clip_norm, a step count and other recipe values that must be > 0."""
  return _field(default, _POSITIVE)


def check(config, prefix=""):
  """Raises ValueError naming the first recipe field of `config` (a
  dataclass) out of its range: `{prefix}{name} must be ..., got {value}`
  (prefix "--" where the fields are flags)."""
  for field in dataclasses.fields(config):
    rule = field.metadata.get("recipe_check")
    value = getattr(config, field.name)
    if rule is not None and not rule[0](value):
      raise ValueError(f"{prefix}{field.name} {rule[1]}, got {value}")
