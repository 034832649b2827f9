"""An objective's options: one frozen dataclass per objective declares each
setting once, with its default, help, flag name, choices and validation;
the tools' flags, `TrainConfig.objective_options`, compare_objectives' arm
flags and the checkpoint tag are derived from it.

No TensorFlow here (nor in an options module): the tools define their flags
from these dataclasses, and `--help` does not wait for TensorFlow.

    @dataclasses.dataclass(frozen=True)
    class SmoothingOptions(options.Options):
      smoothing: float = options.option(0.1, "mlm_smooth: the label smoothing.",
                                        flag="label_smoothing")

A field made with `option` is a flag (named as the field unless `flag`
says otherwise); a plain field is not (an objective's settings resolved
at run time, such as the records' [MASK] id, are plain fields of a
subclass).
"""

import collections
import dataclasses
import typing

# One flag of an options dataclass: its name, the field it sets, the field's
# type (float, int, bool or str), default, help and choices (None: any).
OptionFlag = collections.namedtuple(
    "OptionFlag", "name field kind default help choices flag_default")

_UNSET = object()


def option(default, help_text, flag=None, choices=None, flag_default=_UNSET):
  """A dataclass field that is a flag.

  Args:
    default: the field's default (and the flag's).
    help_text: the flag's help.
    flag: the flag's name when it is not the field's.
    choices: the values allowed (an enum flag; `Options.validate` checks).
    flag_default: the flag's default when it differs from the field's (None:
      the flag shows no default and, not given, leaves the field's).
  """
  return dataclasses.field(default=default, metadata={
      "help": help_text, "flag": flag, "choices": tuple(choices) if choices else None,
      "flag_default": default if flag_default is _UNSET else flag_default})


def _kind(options_type, name):
  hint = typing.get_type_hints(options_type)[name]
  args = [a for a in typing.get_args(hint) if a is not type(None)]
  return args[0] if args else hint


def flags_of(options_type):
  """The OptionFlags of an options dataclass, in field order."""
  return [OptionFlag(f.metadata["flag"] or f.name, f.name, _kind(options_type, f.name),
                     f.default, f.metadata["help"], f.metadata["choices"],
                     f.metadata["flag_default"])
          for f in dataclasses.fields(options_type) if "help" in f.metadata]


def from_flags(options_type, values):
  """An `options_type` from {flag name: value}: each given flag's field
  (ValueError from its validation)."""
  fields = {flag.name: flag.field for flag in flags_of(options_type)}
  return options_type(**{fields[name]: value for name, value in values.items()})


class Options:
  """The base of an objective's options dataclass: validation on
  construction (choices, then the subclass's `validate`), JSON-able dicts
  for the checkpoint, and the TrainConfig fields the objective sets where
  the user gave no flag (`training_defaults`)."""

  # {TrainConfig field: value} this objective's runs take when the user
  # gives no flag for the field (e.g. ELECTRA's learning rate).
  training_defaults = {}
  # True: the flags of these options are defined by a tool of their own
  # (bert_tf.distill), not by run_pretraining.
  own_tool = False

  def __post_init__(self):
    self.validate()

  def validate(self):
    """Raises ValueError naming the flag and value of the first bad option
    (a subclass adds its own checks after calling this)."""
    for flag in flags_of(type(self)):
      value = getattr(self, flag.field)
      if flag.choices and value not in flag.choices:
        raise ValueError(f"{flag.name}={value!r} is not one of {', '.join(flag.choices)}")

  def to_dict(self):
    """The fields as JSON-able data."""
    return dataclasses.asdict(self)

  @classmethod
  def from_dict(cls, d):
    """From a dict of fields (`to_dict`'s); fields it lacks take their
    defaults; ValueError naming unknown fields."""
    unknown = sorted(set(d) - {f.name for f in dataclasses.fields(cls)})
    if unknown:
      raise ValueError(f"unknown {cls.__name__} field(s) {unknown}")
    return cls(**d)
