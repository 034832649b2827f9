"""A comparison's plan: its options, the inputs a rerun must agree on
(plan.json, `check_plan`), and the pretraining runs it makes (`plan_runs`:
each arm at each pretraining seed, with the steps of its budget and the
keys under which identical records and identical runs are shared).

Nothing here trains or measures: experiments/stages.py runs the plan.
"""

import dataclasses
import math
import os

from bert_tf.io import file_io as files
from bert_tf.data import pair_tasks
from bert_tf.data.pretraining import writer
from bert_tf.downstream import registry
from bert_tf.experiments import arms as arms_lib
from bert_tf.experiments import paper_figures
from bert_tf.training import loop
from bert_tf.training import objectives
from bert_tf.training import recipe

# --budget values: equal steps, or equal training FLOPs.
BUDGETS = ("steps", "flops")
# Metric-name prefixes of the comparison's own figures: no --task may use them.
OWN_PREFIXES = ("probe_", "head_", "frozen_")


def exists(path):
  return files.exists(path)


@dataclasses.dataclass(frozen=True)
class Task:
  """A downstream task in a folder, of a kind of downstream.registry (its
  files, sizes, fine-tuning and metrics): the column-spec kind (TSVs:
  train.tsv and dev.tsv, with its text_a, text_b ("" for single texts) and
  label columns), or a kind the spec names (NAME=<kind>:DIR; the columns
  unused)."""
  name: str
  directory: str
  text_a_column: str = ""
  text_b_column: str = ""
  label_column: str = ""
  kind: str = registry.DEFAULT

  @classmethod
  def parse(cls, spec):
    """NAME=DIR,TEXT_A[,TEXT_B],LABEL or NAME=<kind>:DIR -> Task; ValueError
    naming the spec."""
    name, sep, rest = spec.partition("=")
    kind, colon, directory = rest.partition(":")
    named = {k.name: k for k in registry.named_kinds()}
    if sep and name and colon and kind in named:
      if not directory:
        raise ValueError(f"--task={spec!r}: expected NAME={kind}:DIR (a folder of "
                         f"{named[kind].files_help()})")
      return cls(name, directory, kind=kind)
    parts = rest.split(",")
    if not sep or not name or len(parts) not in (3, 4) or not all(parts):
      raise ValueError(f"--task={spec!r}: expected NAME=DIR,TEXT_A[,TEXT_B],LABEL "
                       "(columns by header name or 0-based index), "
                       + " or ".join(f"NAME={k}:DIR" for k in named))
    text_b = parts[2] if len(parts) == 4 else ""
    return cls(name, parts[0], parts[1], text_b, parts[-1])

  @property
  def kind_of(self):
    """Its downstream.task.TaskKind."""
    return registry.get(self.kind)

  def file(self, split_name):
    return self.kind_of.file(self, split_name)

  def check_files(self):
    """FileNotFoundError naming the task and the first missing file."""
    for split_name in ("train", "dev"):
      if not exists(self.file(split_name)):
        raise FileNotFoundError(f"--task={self.name}: {self.file(split_name)}: no such file "
                                f"(a {self.kind} task's folder holds "
                                f"{self.kind_of.files_help()})")


@dataclasses.dataclass(frozen=True)
class CompareOptions:
  """One comparison: corpus, model, budget, arms, evaluations.

  arms: experiments.arms.Arm tuple; empty: one arm per name of
  `objectives` (the family presets).
  budget: "steps" (num_train_steps for every arm) or "flops"
  (num_train_steps of the first arm, the same FLOPs for the others).
  pretrain_seeds: pretraining runs of each arm (seeds seed, seed + 1, ...).
  """
  corpus: str
  output_dir: str
  bert_config_file: str
  objectives: tuple = ("mlm_nsp", "mlm", "mlm_sop")
  arms: tuple = ()
  pretrain_seeds: int = 1
  vocab_file: str = ""  # "": built from the training documents
  vocab_size: int = 8000
  do_lower_case: bool = True
  heldout_every: int = 10
  max_seq_length: int = 64
  dupe_factor: int = 5
  num_train_steps: int = 1000
  budget: str = "steps"
  train_batch_size: int = recipe.batch_size(32)
  learning_rate: float = recipe.learning_rate(1e-3)
  # The pair tasks (data.pair_tasks) fine-tuned from each model: --probes.
  pair_tasks: tuple = pair_tasks.TASKS
  tasks: tuple = ()  # of Task
  seeds: int = recipe.seeds(3)
  finetune_epochs: float = recipe.num_train_epochs(3.0)
  finetune_learning_rate: float = recipe.learning_rate(1e-4)
  # A tagger on the frozen encoder trains its head alone: at the fine-tuning
  # rate it barely moves in a few epochs (entity F1 0.16 against 0.55 at
  # 1e-3 on the names task, docs/reproductions.md).
  frozen_learning_rate: float = recipe.learning_rate(1e-3)
  finetune_batch_size: int = recipe.batch_size(32)
  max_probe_examples: int = 4000
  # SQuAD windows (--task=NAME=squad:DIR): question pieces kept, and pieces
  # between the starts of a long document's windows; both fit max_seq_length=64.
  squad_max_query_length: int = 16
  squad_doc_stride: int = 16
  seed: int = 12345
  # A paper's figures for the arms (experiments.paper_figures.PaperFigure):
  # shown beside ours in results.md; they change no work.
  paper_figures: tuple = ()
  # The multi-bootstrap's samples (util/bootstrap.py): results.md's noise.
  bootstrap_samples: int = 1000
  # An arm `random_init` (arms.RANDOM_INIT): the encoder never pretrained,
  # through the same instruments and fine-tuning (--random_init).
  random_init: bool = True
  # Finished pretraining runs of the same keys are read from this
  # comparison's folder instead of trained again (--reuse_runs_from).
  reuse_runs_from: str = ""

  @property
  def max_predictions_per_seq(self):
    return math.ceil(self.max_seq_length * 0.15)

  @property
  def arm_list(self):
    """The arms compared: `arms`, or one preset per objective; then the
    random_init arm (`random_init`, unless an arm already has its name)."""
    listed = tuple(self.arms) or tuple(arms_lib.Arm.preset(name) for name in self.objectives)
    if self.random_init and not any(arms_lib.never_pretrained(a) for a in listed):
      listed += (arms_lib.random_init_arm(),)
    return listed

  def base_data_options(self, seed):
    """The writer options every arm's records start from, for `seed`."""
    return writer.DataOptions(
        max_seq_length=self.max_seq_length,
        max_predictions_per_seq=self.max_predictions_per_seq, dupe_factor=self.dupe_factor,
        do_lower_case=self.do_lower_case, random_seed=seed, block_bytes=RECORD_BLOCK_BYTES)

  def validate(self):
    """One-line ValueError naming the first impossible option (an arm's
    flags included: nothing has run yet)."""
    recipe.check(self, prefix="--")
    if not self.arms:
      if not self.objectives:
        raise ValueError("--objectives is empty")
      for name in self.objectives:
        if name not in objectives.OBJECTIVES:
          raise ValueError(f"--objectives: {name!r} is not one of "
                           f"{', '.join(objectives.OBJECTIVES)}")
    arm_list = self.arm_list
    arms_lib.check_unique(arm_list)
    if self.budget not in BUDGETS:
      raise ValueError(f"--budget={self.budget!r} is not one of {', '.join(BUDGETS)}")
    for arm in arm_list:
      if self.budget == "flops" and objectives.get(arm.objective).train_flops is None:
        raise ValueError(f"--budget=flops: objective {arm.objective} (arm {arm.name}) has no "
                         "FLOPs model (training.objectives: train_flops); use --budget=steps")
      arm.data_options(self.base_data_options(self.seed))
      try:
        train_config(self, arm, "records", "model", 1, self.seed).validate()
      except ValueError as e:
        raise ValueError(f"arm {arm.name}: {e}") from None
    for name in self.pair_tasks:
      if name not in pair_tasks.TASKS:
        raise ValueError(f"--probes: {name!r} is not one of {', '.join(pair_tasks.TASKS)}")
    for name in ("num_train_steps", "dupe_factor", "max_probe_examples", "pretrain_seeds",
                 "bootstrap_samples"):
      if getattr(self, name) < 1:
        raise ValueError(f"--{name}={getattr(self, name)}: must be at least 1")
    paper_figures.check(self.paper_figures, [a.name for a in arm_list])
    names = [a.name for a in arm_list] + [t.name for t in self.tasks]
    for task in self.tasks:
      if task.kind in registry.KINDS:
        task.kind_of.check(task, self)
    for task in self.tasks:
      if task.kind not in registry.KINDS:
        raise ValueError(f"--task={task.name}: kind {task.kind!r} is not one of "
                         f"{', '.join(registry.KINDS)}")
      if names.count(task.name) > 1 or task.name.startswith(OWN_PREFIXES):
        raise ValueError(f"--task={task.name}: the name is taken (an arm, another task, or a "
                         "prefix of the comparison's own metrics)")


# ------------------------------------------------------------------------------
# The plan's inputs: what a rerun must agree on
# ------------------------------------------------------------------------------


def plan_inputs(options):
  """What the split, vocab, config and evaluation sets depend on (dict):
  a rerun on the same output_dir must give the same (`check_plan`). Arms,
  budgets, seeds and tasks are not among them: their work is kept by key,
  so changing them adds work instead of mixing results."""
  for flag, path in (("--corpus", options.corpus), ("--bert_config_file",
                                                    options.bert_config_file)):
    if not files.exists(path):
      raise FileNotFoundError(f"{flag}={path}: no such file")
  inputs = {"corpus": options.corpus, "corpus_sha256": files_sha256(options.corpus),
            "heldout_every": options.heldout_every, "vocab_file": options.vocab_file,
            "vocab_size": options.vocab_size, "do_lower_case": options.do_lower_case,
            "max_seq_length": options.max_seq_length,
            "bert_config": files.read_json(options.bert_config_file, "BERT config"),
            "max_probe_examples": options.max_probe_examples, "seed": options.seed}
  if options.vocab_file:
    inputs["vocab_file_sha256"] = files_sha256(options.vocab_file)
  return inputs


# Inputs of the evaluation sets alone: a pretraining run does not depend on
# them, so another comparison's runs are shared across them.
EVALUATION_INPUTS = ("max_probe_examples",)


def files_sha256(path, chunk=1 << 24):
  """SHA-256 of a file's bytes, read through file_io: a corpus edited in
  place (same size, other documents) is another corpus."""
  import hashlib  # pylint: disable=g-import-not-at-top
  digest = hashlib.sha256()
  with files.open_file(path, "rb") as f:
    while True:
      block = f.read(chunk)
      if not block:
        return digest.hexdigest()
      digest.update(block)


PLAN_NAME = "plan.json"
# Written when the text stage starts, renamed to PLAN_NAME (the claim on the
# folder) once the preflight passes: a refused run leaves no claim.
DRAFT_NAME = "plan.draft.json"
# What the text stage writes before the claim, under output_dir: discarded
# with a draft of other inputs (a run its preflight refused).
UNCLAIMED_OUTPUTS = ("probes", os.path.join("records", "heldout"), "bert_config.json",
                     "vocab.txt", "heldout.txt", "train.txt")


class PlanMismatch(ValueError):
  """output_dir holds a comparison of other inputs; `suggested_dir` is a
  folder free for these (or already holding them)."""

  def __init__(self, message, suggested_dir):
    super().__init__(message)
    self.suggested_dir = suggested_dir


def _changed(saved, current):
  return [key for key in sorted(set(saved) | set(current)) if saved.get(key) != current.get(key)]


def _holds_other_plan(directory, current):
  """Whether `directory` holds a claimed comparison of inputs other than `current`."""
  path = os.path.join(directory, PLAN_NAME)
  return exists(path) and bool(_changed(files.read_json(path, "comparison plan"), current))


def suggested_dir(options, changed, current):
  """A folder beside output_dir for a comparison of `current` inputs:
  named after the changed inputs (heldout_every5), not holding another
  claimed comparison."""
  simple = all(isinstance(current.get(k), (int, float, str, bool)) and not k.endswith("sha256")
               and k not in ("corpus", "vocab_file") for k in changed)
  tag = ("-".join(f"{k}{current.get(k)}" for k in changed) if simple
         else arms_lib.key_of(current)[:8])
  base = f"{options.output_dir.rstrip('/')}-{tag}"
  candidate, n = base, 2
  while _holds_other_plan(candidate, current):
    candidate, n = f"{base}-{n}", n + 1
  return candidate


def check_plan(options):
  """Checks that output_dir may hold this comparison, before any work:
  PlanMismatch naming every input that differs from its claimed plan.json
  (and a folder for these inputs); an unclaimed draft of other inputs (a
  run refused by its preflight) has its text-stage outputs removed, so
  the next run starts clean; a folder of an earlier bert_tf (train.txt,
  no plan) is refused. Writes nothing else: `start_draft` and `claim` do.
  Returns the inputs (plan_inputs: the corpus is hashed once)."""
  out = options.output_dir
  current = plan_inputs(options)
  if exists(os.path.join(out, PLAN_NAME)):
    saved = files.read_json(os.path.join(out, PLAN_NAME), "comparison plan")
    changed = _changed(saved, current)
    if changed:
      where = suggested_dir(options, changed, current)
      raise PlanMismatch(
          f"{out} holds a comparison of other inputs ("
          + "; ".join(f"{key} {saved.get(key)!r} -> {current.get(key)!r}" for key in changed)
          + "): its split, vocab and evaluation sets would not match; use another "
          f"--output_dir, such as {where} (or remove this one)", where)
    return current
  draft = os.path.join(out, DRAFT_NAME)
  if exists(draft):
    if _changed(files.read_json(draft, "comparison plan draft"), current):
      for name in UNCLAIMED_OUTPUTS:  # the draft last: a kill half-way discards again
        files.remove_if_present(os.path.join(out, name))
      files.remove_if_present(draft)
    return current
  if exists(os.path.join(out, "train.txt")):
    raise ValueError(f"{out} holds a comparison written by an earlier bert_tf "
                     "(no plan.json to check its inputs against): use another --output_dir")
  return current


def start_draft(options, inputs):
  """Writes output_dir/plan.draft.json (`inputs`, those the text stage is
  about to write for) unless the folder is claimed already."""
  if not exists(os.path.join(options.output_dir, PLAN_NAME)):
    files.write_json(os.path.join(options.output_dir, DRAFT_NAME), inputs)


def claim(options, inputs):
  """Claims output_dir for this comparison once its preflight passed:
  plan.json (`inputs`), which a rerun with other inputs is checked against."""
  path = os.path.join(options.output_dir, PLAN_NAME)
  if not exists(path):
    files.write_json(path, inputs)
    files.remove_if_present(os.path.join(options.output_dir, DRAFT_NAME))


# ------------------------------------------------------------------------------
# The runs: arms x pretraining seeds, their steps and keys
# ------------------------------------------------------------------------------


# The data writer's blocks of text for the comparison's records, and the
# most shards they are written to.
RECORD_BLOCK_BYTES = 256 << 10
MAX_RECORD_SHARDS = 2


def record_shards(text_bytes, block_bytes=RECORD_BLOCK_BYTES, max_shards=MAX_RECORD_SHARDS):
  """Shards for `text_bytes` of text: at most one per block the writer makes
  (about text_bytes / block_bytes of them), so none is left empty and the
  writer does not warn. It fills a block to at least `block_bytes` and joins
  a last one of under half of it to the one before: text of k x block_bytes
  holds at least k // 2 blocks unless single documents are longer than a
  block (a shard may then be empty: the writer says so)."""
  return max(1, min(max_shards, int(text_bytes // block_bytes) // 2))


def step_flops(options, arm, bert_config, train_batch_size=None):
  """Training FLOPs of one pretraining step of `arm` (int): its objective
  at its own batch size and prediction slots (a 40% arm's records hold
  2.7 x the 15% slots, and its masked-LM head runs at each)."""
  batch = train_batch_size or dict(arm.training_flags).get("train_batch_size")
  predictions = arm.data_options(options.base_data_options(options.seed)).max_predictions_per_seq
  return objectives.get(arm.objective).train_flops(
      bert_config, batch or options.train_batch_size, options.max_seq_length, predictions)


def plan_steps(options, bert_config):
  """Pretraining steps of each arm: {name: steps}.

  budget "steps": num_train_steps each. budget "flops": num_train_steps for
  the first arm, round(num_train_steps x F(first) / F(arm)) (at least 1)
  for the others, F = `step_flops`. An arm's own num_train_steps flag
  overrides either. The random_init arm: 0.
  """
  arm_list = options.arm_list

  def flops(arm):
    return step_flops(options, arm, bert_config)

  steps = {}
  for arm in arm_list:
    if arms_lib.never_pretrained(arm):
      steps[arm.name] = 0
      continue
    if options.budget == "steps" or arm is arm_list[0]:
      steps[arm.name] = options.num_train_steps
    else:
      steps[arm.name] = max(1, int(round(options.num_train_steps * flops(arm_list[0])
                                         / flops(arm))))
    steps[arm.name] = dict(arm.training_flags).get("num_train_steps", steps[arm.name])
  return steps


def train_config(options, arm, records, model_dir, steps, seed):
  """The loop.TrainConfig of one pretraining run of `arm`."""
  training = {"learning_rate": options.learning_rate,
              "train_batch_size": options.train_batch_size,
              "num_warmup_steps": steps // 10, **arm.training_options()}
  training["num_train_steps"] = steps
  return loop.TrainConfig(
      input_file=records, output_dir=model_dir, do_train=True,
      max_seq_length=options.max_seq_length,
      max_predictions_per_seq=arm.data_options(
          options.base_data_options(seed)).max_predictions_per_seq,
      save_checkpoints_steps=max(100, steps // 4), iterations_per_loop=100, log_steps=100,
      seed=seed, objective=arm.objective, **training)


@dataclasses.dataclass(frozen=True)
class Run:
  """One pretraining run: an arm at pretraining seed index k."""
  arm: arms_lib.Arm
  seed_index: int
  seed: int
  steps: int
  data_options: writer.DataOptions
  records_key: str
  key: str

  def directory(self, options):
    return os.path.join(options.output_dir, "runs", self.key)


def plan_runs(options, bert_config):
  """Every (arm, pretraining seed) as a Run, seed-major (every arm's first
  run before any second one), with the keys that make identical records and
  identical pretraining runs share their directories."""
  steps = plan_steps(options, bert_config)
  runs = []
  for k in range(options.pretrain_seeds):
    seed = options.seed + k
    for arm in options.arm_list:
      data = arm.data_options(options.base_data_options(seed))
      records_key = arms_lib.key_of({"records": dataclasses.asdict(data)})
      config = train_config(options, arm, "", "", steps[arm.name], seed)
      training = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)
                  if f.name not in ("input_file", "output_dir")}
      key = arms_lib.key_of({"records": records_key, "training": training,
                             "model": bert_config.to_dict()})
      runs.append(Run(arm, k, seed, steps[arm.name], data, records_key, key))
  return runs




def distinct_runs(runs):
  """The runs to train: the first of each key (arms whose pretraining comes
  out the same share it), in plan order."""
  seen, out = set(), []
  for run in runs:
    if run.key not in seen:
      seen.add(run.key)
      out.append(run)
  return out
