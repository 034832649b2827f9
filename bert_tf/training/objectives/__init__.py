"""Pretraining objectives: one module per family, one base class.

  base              `Objective`: the interface and the defaults every objective has
  bert              mlm_nsp (BERT), mlm_sop (ALBERT), mlm (RoBERTa)
  electra           ELECTRA: generator + replaced-token discriminator
  electra_variants  ELECTRA 15%, Replace MLM, All-Tokens MLM (ELECTRA's Table 5)
  ltr               a left-to-right LM, no NSP (BERT's Table 5 "LTR & No NSP")
  distillation      DistilBERT: a student against a frozen teacher
  registry          the objectives by name; the objective of --objective and the
                    records (`resolve`), of a model, of a checkpoint
  checkpoint_tag    the objective's name and options saved in a checkpoint
  options           an objective's options dataclass: fields, defaults, help,
                    flag names, validation (no TensorFlow)
  electra_options   `ElectraOptions` (no TensorFlow)
  distill_options   `DistillOptions` (no TensorFlow)
  heldout           `HeldoutReading`: how an objective's held-out figures read in
                    the comparison's table (no TensorFlow)

Names live in `training/objective_names.py`, the options of each family in
`OPTIONS` here; both without TensorFlow, so the tools define their flags
from them quickly (this package imports its TensorFlow modules only when
one of the names below them is first used). The training loop, the
evaluation, the export, fine-tuning and the comparison call only
`Objective`'s methods and attributes (docs/architecture.md works an
example of a new objective).

The package's API, for `from bert_tf.training import objectives`:
"""

import importlib

from bert_tf.training import objective_names as names
from bert_tf.training.objectives.distill_options import DistillOptions
from bert_tf.training.objectives.electra_options import ElectraOptions

# The options dataclass of each family that takes options (the others take
# none); the tools' flags, TrainConfig.objective_options and arm flags come
# from these.
OPTIONS = {names.ELECTRA: ElectraOptions, names.DISTILL: DistillOptions}


def options_type(objective):
  """The options dataclass of an --objective value's family, or None;
  ValueError for an unknown objective."""
  return OPTIONS.get(names.family_of(objective))


# The names below come from modules that import TensorFlow: each is imported
# when first used.
_FROM_MODULE = {
    "Objective": "base", "BertObjective": "bert", "checkpoint_variables": "checkpoint_tag",
    "check_teacher_vocab": "distillation", "DistillationObjective": "distillation",
    "DistillSettings": "distillation", "ElectraObjective": "electra",
    "ElectraSettings": "electra", "check_objective": "registry",
    "from_checkpoint": "registry", "get": "registry", "OBJECTIVES": "registry",
    "of_model": "registry", "resolve": "registry"}


def __getattr__(name):
  if name not in _FROM_MODULE:
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
  value = getattr(importlib.import_module(f"{__name__}.{_FROM_MODULE[name]}"), name)
  globals()[name] = value
  return value
