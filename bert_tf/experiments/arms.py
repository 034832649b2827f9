"""Arms of a comparison: a name, an objective, and the writer and training
flags that make it a variant.

    --arm=bert:objective=mlm_nsp
    --arm=mask100:objective=mlm_nsp,masked_token_share=1.0
    --arm=mask40:objective=mlm,masked_lm_prob=0.4
    --arm=wwm:objective=mlm_nsp,do_whole_word_mask=true
    --arm=electra_fast:objective=electra,learning_rate=1e-3

or a JSON arms file (`--arms_file`): a list of objects, each with "name",
"objective" and any of the same flags as keys:

    [{"name": "bert", "objective": "mlm_nsp"},
     {"name": "mask100", "objective": "mlm_nsp", "masked_token_share": 1.0}]

A flag is a WRITER flag (a `data.pretraining.writer.DataOptions` field: how the arm's
records are made, e.g. masked_lm_prob, masked_token_share,
do_whole_word_mask, max_ngram, dynamic_masking, dupe_factor), a TRAINING
flag (a `training.train_config.TrainConfig` field: how it is pretrained,
e.g. learning_rate, num_train_steps) or an OPTION of the arm's objective
(a flag of its options dataclass, `objectives.OPTIONS`: ELECTRA's generator
size, for one). The settings
every arm shares (sequence length, predictions, casing, the seed, the
output places) are the comparison's own flags and cannot be set per arm.
The objective's own record options (RoBERTa's full sentences and dynamic
masking, ALBERT's sentence order) come first; an arm's writer flags go on
top of them. `--objectives=mlm_nsp,mlm` is shorthand for one arm per
objective, named after it.

Two arms whose records come out the same (same writer options and seed)
share them; two whose pretraining comes out the same (same records,
objective, training flags and steps) share one pretrained model.
"""

import dataclasses
import math
import hashlib
import json
import re
import typing

from bert_tf.io import file_io as files
from bert_tf.data.pretraining import writer
from bert_tf.training import objectives
from bert_tf.training import train_config
from bert_tf.training.objectives import options

# Per-comparison settings an arm cannot change: one sequence length and
# prediction count for every arm (the held-out records are shared), the
# comparison's seeds, and where things go.
SHARED_WRITER_FIELDS = ("max_seq_length", "max_predictions_per_seq", "random_seed",
                        "do_lower_case", "block_bytes", "decode_errors")
SHARED_TRAINING_FIELDS = (
    "input_file", "output_dir", "eval_input_file", "init_checkpoint", "max_seq_length",
    "max_predictions_per_seq", "do_train", "do_eval", "eval_batch_size", "max_eval_steps",
    "eval_every_steps", "strategy", "tpu_name", "tpu_zone", "gcp_project",
    "save_checkpoints_steps", "iterations_per_loop", "log_steps", "keep_checkpoint_max",
    "seed", "objective")

WRITER_FLAGS = tuple(f.name for f in dataclasses.fields(writer.DataOptions)
                     if f.name not in SHARED_WRITER_FIELDS)
# objective_options: set by the objective's option flags (`Arm.option_flags`).
TRAINING_FLAGS = tuple(f.name for f in dataclasses.fields(train_config.TrainConfig)
                       if f.name not in SHARED_TRAINING_FIELDS + ("objective_options",))


def option_flags(objective):
  """{flag name: options.OptionFlag} of `objective`'s options ({}: it
  takes none)."""
  options_type = objectives.options_type(objective)
  return {f.name: f for f in options.flags_of(options_type)} if options_type else {}

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def _kind(cls, name):
  """The Python type of a dataclass field (Optional[float] -> float)."""
  hint = typing.get_type_hints(cls)[name]
  args = [a for a in typing.get_args(hint) if a is not type(None)]
  return args[0] if args else hint


def _parse_value(kind, text, where):
  """A flag value of `kind` from text (or a JSON value); ValueError naming it."""
  if not isinstance(text, str):
    if kind is float and isinstance(text, (int, float)) and not isinstance(text, bool):
      return float(text)
    if isinstance(text, kind) and not (kind is int and isinstance(text, bool)):
      return text
    raise ValueError(f"{where}: {text!r} is not a{'n' if kind is int else ''} "
                     f"{kind.__name__}")
  if kind is bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
      return True
    if lowered in ("false", "0", "no"):
      return False
    raise ValueError(f"{where}: {text!r} is not true or false")
  try:
    return kind(text)
  except ValueError:
    raise ValueError(f"{where}: {text!r} is not a{'n' if kind is int else ''} "
                     f"{kind.__name__}") from None


@dataclasses.dataclass(frozen=True)
class Arm:
  """One arm: `name`, `objective` (an objectives.OBJECTIVES name), and its
  writer and training flags as sorted (name, value) tuples."""
  name: str
  objective: str
  writer_flags: tuple = ()
  training_flags: tuple = ()

  @classmethod
  def of(cls, name, objective, flags=None, where=None):
    """An Arm from a dict of flags; ValueError naming the arm and the flag
    (an unknown objective or flag, a value of the wrong type)."""
    where = where or f"arm {name!r}"
    if not name or not _NAME.match(name):
      raise ValueError(f"{where}: the name {name!r} must be letters, digits, '_', '.' or '-'")
    if objective not in objectives.OBJECTIVES:
      raise ValueError(f"{where}: objective {objective!r} is not one of "
                       f"{', '.join(objectives.OBJECTIVES)}")
    writer_flags, training_flags = {}, {}
    own_options = option_flags(objective)
    for key, value in (flags or {}).items():
      if key in WRITER_FLAGS:
        writer_flags[key] = _parse_value(_kind(writer.DataOptions, key), value,
                                         f"{where}: {key}")
      elif key in TRAINING_FLAGS:
        training_flags[key] = _parse_value(_kind(train_config.TrainConfig, key), value,
                                           f"{where}: {key}")
      elif key in own_options:
        training_flags[key] = _parse_value(own_options[key].kind, value, f"{where}: {key}")
      elif key in SHARED_WRITER_FIELDS or key in SHARED_TRAINING_FIELDS:
        raise ValueError(f"{where}: {key} is the same for every arm (a flag of "
                         "compare_objectives itself), not an arm flag")
      else:
        _unknown_flag(key, objective, own_options, where)
    arm = cls(name, objective, tuple(sorted(writer_flags.items())),
              tuple(sorted(training_flags.items())))
    try:
      arm.training_options()  # the options' validation
    except ValueError as e:
      raise ValueError(f"{where}: {e}") from None
    return arm

  @classmethod
  def parse(cls, spec):
    """NAME:objective=OBJ[,flag=value,...] -> Arm; ValueError naming the spec."""
    where = f"--arm={spec}"
    name, sep, rest = spec.partition(":")
    if not sep:
      raise ValueError(f"{where}: expected NAME:objective=OBJECTIVE[,flag=value,...]")
    values = {}
    for item in rest.split(","):
      key, eq, value = item.partition("=")
      key = key.strip()
      if not eq or not key:
        raise ValueError(f"{where}: {item!r} is not flag=value")
      if key in values:
        raise ValueError(f"{where}: {key} given twice")
      values[key] = value.strip()
    objective = values.pop("objective", None)
    if objective is None:
      raise ValueError(f"{where}: no objective=... (one of {', '.join(objectives.OBJECTIVES)})")
    return cls.of(name.strip(), objective, values, where)

  @classmethod
  def preset(cls, objective):
    """The arm of `--objectives=objective`: named after it, no flags."""
    return cls.of(objective, objective, {}, f"--objectives: {objective}")

  def describe(self):
    """The arm as its --arm spec."""
    flags = [f"objective={self.objective}"] + [
        f"{k}={v}" for k, v in self.writer_flags + self.training_flags]
    return f"{self.name}:{','.join(flags)}"

  def data_options(self, base):
    """The writer options of this arm's records: `base` (the comparison's
    DataOptions), the objective's record options, then the arm's writer
    flags; ValueError naming the arm for an impossible combination."""
    flags = dict(self.writer_flags)
    if "masked_lm_prob" in flags:
      # Room for the arm's share of predictions (the comparison's own cap is
      # for 15%): 40% of 64 tokens is 26 predictions, not 10.
      flags["max_predictions_per_seq"] = math.ceil(base.max_seq_length
                                                   * float(flags["masked_lm_prob"]))
    options = dataclasses.replace(base, **{**objectives.get(self.objective).record_options,
                                           **flags})
    try:
      options.validate()
    except ValueError as e:
      raise ValueError(f"arm {self.name}: {e}") from None
    objective = objectives.get(self.objective)
    wants = objective.sentence_task
    if (wants is not None and options.sentence_task != wants
        and not objective.ignores_sentence_labels(options.sentence_task)):
      raise ValueError(f"arm {self.name}: objective {self.objective} trains on records of "
                       f"sentence_task={wants}, its flags make sentence_task="
                       f"{options.sentence_task}")
    return options

  def training_options(self):
    """The TrainConfig fields of the arm's training flags (dict), its
    objective's option flags as `objective_options` (an instance of its
    options dataclass; ValueError for a bad value)."""
    fields = dict(self.training_flags)
    own = {k: fields.pop(k) for k in list(fields) if k in option_flags(self.objective)}
    if own:
      fields["objective_options"] = options.from_flags(
          objectives.options_type(self.objective), own)
    return fields


def _unknown_flag(key, objective, own_options, where):
  """The ValueError of an arm flag that is none of the arm's: another
  objective's option, or no flag at all."""
  for family, options_type in objectives.OPTIONS.items():
    if key in {f.name for f in options.flags_of(options_type)}:
      raise ValueError(f"{where}: {key} is an option of objective {family}, not of "
                       f"{objective}")
  raise ValueError(f"{where}: unknown flag {key!r} (writer flags: {', '.join(WRITER_FLAGS)}; "
                   f"training flags: {', '.join(TRAINING_FLAGS + tuple(own_options))})")


# The arm every table may have (--random_init): the encoder as initialized,
# never pretrained, put through the same held-out reading, probes and
# fine-tuning; an arm "leads" a metric only beyond noise above it
# (experiments.report). Its objective only names the heads its checkpoint
# carries: MLM (no sentence head to read).
RANDOM_INIT = "random_init"
RANDOM_INIT_OBJECTIVE = "mlm"


def random_init_arm():
  """The random_init arm: zero pretraining steps (experiments.plan)."""
  return Arm.of(RANDOM_INIT, RANDOM_INIT_OBJECTIVE, {}, f"the {RANDOM_INIT} arm")


def never_pretrained(arm):
  """Whether `arm` is the random_init arm."""
  return arm.name == RANDOM_INIT


def parse_arms_file(path):
  """The arms of a JSON arms file (a list of objects with "name",
  "objective" and flags); ValueError naming the file and the arm."""
  data = files.read_json(path, "arms file")
  if not isinstance(data, list) or not data:
    raise ValueError(f"{path}: an arms file holds a non-empty JSON list of arms")
  arms = []
  for i, entry in enumerate(data):
    where = f"{path}: arm {i}"
    if not isinstance(entry, dict) or "name" not in entry or "objective" not in entry:
      raise ValueError(f"{where}: each arm is an object with \"name\" and \"objective\"")
    flags = {k: v for k, v in entry.items() if k not in ("name", "objective")}
    arms.append(Arm.of(str(entry["name"]), str(entry["objective"]), flags,
                       f"{where} ({entry['name']})"))
  return arms


def check_unique(arms):
  """ValueError when two arms share a name, or when there is none."""
  if not arms:
    raise ValueError("no arm to compare (--objectives, --arm or --arms_file)")
  seen = set()
  for arm in arms:
    if arm.name in seen:
      raise ValueError(f"two arms are named {arm.name!r}")
    seen.add(arm.name)


def key_of(payload):
  """A short stable name of a JSON-able payload (the directory of records
  or of a pretraining run that depends on exactly it)."""
  text = json.dumps(payload, sort_keys=True, default=str)
  return hashlib.sha256(text.encode()).hexdigest()[:12]
