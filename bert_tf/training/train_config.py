"""What a training run is told: TrainConfig, its option lists, the TPU flag
rule and the warnings about settings that will not train well.

No TensorFlow here: run_pretraining takes its flag defaults and choices from
this module, so `--help` does not wait for TensorFlow to import. The
objectives' names are objective_names'; the options of the run's objective
are its own dataclass (`objectives.OPTIONS`), held in `objective_options`.
"""

import dataclasses

from absl import logging

from bert_tf.training import objective_names as names
from bert_tf.training import recipe
from bert_tf.training import objectives

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")
# The Keras dtype policy of each --mixed_precision choice.
MIXED_PRECISION_POLICIES = {"none": None, "bfloat16": "mixed_bfloat16",
                            "float16": "mixed_float16"}
MIXED_PRECISION = tuple(MIXED_PRECISION_POLICIES)
# Kept in step with optimization.create_optimizer (a test checks).
OPTIMIZERS = ("adamw_original", "adamw", "lamb")
# How warmup meets the linear decay (optimization.SCHEDULE_SHAPES; kept in
# step, a test checks):
# bert switches from the warmup rate to the decayed one at num_warmup_steps
# (the original BERT's); electra multiplies the decayed rate by
# min(1, step / num_warmup_steps) (google-research/electra's).
LR_SCHEDULES = ("bert", "electra")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
  """Everything `loop.run` needs besides the BertConfig. The fields are the
  flags of run_pretraining, whose defaults are taken from here (the
  original's names and defaults where it had the flag).

  strategy: one of STRATEGIES, or "" to choose: "mirrored" with several
    GPUs, else "one_device" (run_pretraining maps --use_tpu to "tpu", see
    `resolve_strategy`).
  tpu_name: the TPU to connect to with strategy "tpu" ("" or "local": the
    TPU of this VM).
  iterations_per_loop: steps per host round trip (one tf.function call);
    the loop also returns to the host at every log, save and eval boundary.
  eval_input_file: held-out records; "" evaluates on `input_file`, as the
    original does (a warning says so).
  eval_every_steps: also evaluate every this many steps while training
    (0: only after training).
  grad_accum_steps: split each global batch into this many micro-batches
    whose gradients are summed before one optimizer step (same result, less
    memory); train_batch_size stays the examples per optimizer step.
  seed: model initialization and shuffling; the data seed is offset by the
    start step so a resumed run does not replay the first batches.
  """
  input_file: str = ""
  output_dir: str = ""
  eval_input_file: str = ""
  init_checkpoint: str = ""
  max_seq_length: int = 128
  max_predictions_per_seq: int = 20
  do_train: bool = False
  do_eval: bool = False
  train_batch_size: int = recipe.batch_size(32)
  eval_batch_size: int = recipe.batch_size(8)
  learning_rate: float = recipe.learning_rate(5e-5)
  num_train_steps: int = 100000
  num_warmup_steps: int = recipe.num_warmup_steps(10000)
  save_checkpoints_steps: int = recipe.save_checkpoints_steps(1000)
  iterations_per_loop: int = 1000
  max_eval_steps: int = 100
  eval_every_steps: int = 0
  strategy: str = ""
  tpu_name: str = ""
  tpu_zone: str = ""
  gcp_project: str = ""
  optimizer: str = "adamw_original"
  weight_decay: float = 0.01
  adam_beta1: float = recipe.adam_beta(0.9)
  adam_beta2: float = recipe.adam_beta(0.999)
  adam_epsilon: float = recipe.positive(1e-6)
  clip_norm: float = recipe.positive(1.0)
  lr_schedule: str = LR_SCHEDULES[0]
  mixed_precision: str = "none"
  jit_compile: bool = False
  grad_accum_steps: int = 1
  log_steps: int = 100
  keep_checkpoint_max: int = 5
  seed: int = 12345
  shuffle_buffer: int = 10000
  # The pretraining objective's family (objective_names.FAMILIES) or an
  # objective's name; the records' sentence task picks the BERT member.
  objective: str = names.BERT
  # The options of the objective's family (an instance of
  # objectives.OPTIONS[family], e.g. ElectraOptions); None: the family's
  # defaults (and for a family that takes none).
  objective_options: object = None

  def options(self):
    """`objective_options`, or the defaults of the objective's family (None
    for a family that takes no options)."""
    if self.objective_options is not None:
      return self.objective_options
    options_type = objectives.options_type(self.objective)
    return options_type() if options_type else None

  def validate(self):
    """Raises ValueError naming the first bad setting."""
    if not (self.do_train or self.do_eval):
      raise ValueError("at least one of do_train or do_eval must be set")
    if not self.output_dir:
      raise ValueError("output_dir is required")
    if not self.input_file and (self.do_train or not self.eval_input_file):
      raise ValueError("input_file is required")
    for name, choices in (("strategy", STRATEGIES), ("optimizer", OPTIMIZERS),
                          ("lr_schedule", LR_SCHEDULES),
                          ("mixed_precision", MIXED_PRECISION)):
      value = getattr(self, name)
      if (value or name != "strategy") and value not in choices:
        raise ValueError(f"{name}={value!r} is not one of {', '.join(choices)}")
    objective_names = names.FAMILIES + names.OBJECTIVE_NAMES
    if self.objective not in objective_names:
      raise ValueError(f"objective={self.objective!r} is not one of {', '.join(objective_names)}")
    options_type = objectives.options_type(self.objective)
    if self.objective_options is not None:
      if options_type is None or not isinstance(self.objective_options, options_type):
        raise ValueError(f"objective_options holds {type(self.objective_options).__name__}; "
                         f"objective {self.objective} takes "
                         f"{options_type.__name__ if options_type else 'no options'}")
      self.objective_options.validate()
    recipe.check(self)
    for name in ("max_seq_length", "max_predictions_per_seq", "iterations_per_loop",
                 "grad_accum_steps", "log_steps", "keep_checkpoint_max"):
      if getattr(self, name) <= 0:
        raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
    if self.do_train and self.num_train_steps <= 0:
      raise ValueError(f"num_train_steps must be positive, got {self.num_train_steps}")
    for name in ("max_eval_steps", "eval_every_steps"):
      if getattr(self, name) < 0:
        raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")


def objective_defaults(objective, given):
  """TrainConfig fields an objective sets where the user gave no flag (its
  options' `training_defaults`, e.g. ELECTRA's learning rate).

  Args:
    objective: an --objective value.
    given: the names of the TrainConfig fields whose flags were given.
  """
  options_type = objectives.options_type(objective)
  defaults = {k: v for k, v in (options_type.training_defaults if options_type else {}).items()
              if k not in given}
  for key, value in defaults.items():
    logging.info("--objective=%s: --%s=%s (the objective's default)", objective, key, value)
  return defaults


def resolve_strategy(strategy="", use_tpu=False, tpu_name="", master="",
                     num_tpu_cores=None):
  """The original's TPU flags and --strategy -> what to run on.

  The rule (the original run_pretraining.py builds its TPU resolver only
  with --use_tpu and --tpu_name, falls back to --master, and runs on CPU/GPU
  without --use_tpu):
    1. --strategy, when given, wins.
    2. Otherwise --use_tpu selects "tpu".
    3. Otherwise "" (mirrored with several GPUs, else one_device); --tpu_name
       and --master are then ignored, as in the original.
  With "tpu" the TPU is --tpu_name, else --master, else this VM's ("local").
  --num_tpu_cores is never needed: the strategy replicates over every core
  the TPU reports, as TPUEstimator did (it ignored TPUConfig.num_shards).

  Args:
    strategy: --strategy ("" or None when not given).
    use_tpu, tpu_name, master: the original's flags ("" or None: not given).
    num_tpu_cores: --num_tpu_cores when given on the command line, else None.

  Returns:
    (strategy name or "", TPU address or "", list of one-line notes about
    flags that have no effect, for the log).
  """
  strategy, tpu_name, master = strategy or "", tpu_name or "", master or ""
  notes = []
  if strategy:
    if use_tpu and strategy != "tpu":
      notes.append(f"--use_tpu is ignored: --strategy={strategy} is given and wins")
  elif use_tpu:
    strategy = "tpu"
  if strategy != "tpu":
    for name, value in (("tpu_name", tpu_name), ("master", master)):
      if value:
        notes.append(f"--{name}={value} is ignored without --use_tpu or --strategy=tpu "
                     f"(as in the original)")
    return strategy, "", notes
  if num_tpu_cores is not None:
    notes.append(f"--num_tpu_cores={num_tpu_cores} is not used: the TPU strategy "
                 f"replicates over every core the TPU reports")
  return strategy, tpu_name or master, notes


def setting_warnings(config):
  """One-line warnings about settings that run but will mislead: a warmup
  that never (or barely) ends, eval figures on the training data.

  Returns:
    list of str (empty when all is well).
  """
  warnings = []
  steps, warmup = config.num_train_steps, config.num_warmup_steps
  if config.do_train and warmup >= steps:
    warnings.append(
        f"num_warmup_steps={warmup} >= num_train_steps={steps}: the learning rate is "
        f"still warming up when training ends and never reaches learning_rate="
        f"{config.learning_rate:g}; lower --num_warmup_steps (about 10% of "
        f"--num_train_steps) or raise --num_train_steps")
  elif config.do_train and warmup > steps / 2:
    warnings.append(
        f"num_warmup_steps={warmup} is more than half of num_train_steps={steps}: the "
        f"learning rate peaks late and decays fast; about 10% of --num_train_steps "
        f"is usual")
  if config.do_eval and not config.eval_input_file:
    warnings.append(
        f"no --eval_input_file: eval reads the training data ({config.input_file}), as "
        f"the original does, so its figures are on training data, not held out")
  return warnings


def log_setting_warnings(config):
  """Logs `setting_warnings(config)` as absl warnings."""
  for message in setting_warnings(config):
    logging.warning("%s", message)
