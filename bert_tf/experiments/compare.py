"""Compare pretraining objectives, or any variants of one, at equal compute
on one corpus.

One plan: for each ARM (a name, an objective and writer / training flags:
experiments.arms) and each of `pretrain_seeds` pretraining seeds, write
its records, pretrain the same model size on the same batch x tokens for an
equal budget, then measure every model the same way. The budget
(`budget`): "steps", num_train_steps steps each; or "flops",
num_train_steps steps of the FIRST arm and, for every other one, the steps
that spend the same training FLOPs (`plan_steps`; each objective's
`train_flops`, `models/flops.py`). Pretraining seed k (0, 1, ...) is
`seed + k`: it changes the records' masks and pairs, the initialization
and the data order; the corpus split, the vocab and every evaluation set
stay. Arms whose records or whole pretraining come out the same share them.

  masked_lm_accuracy   held-out masked-LM accuracy on ONE set of static
                       held-out records (the original's masking), so every
                       arm is scored on the same predictions
  generator_masked_lm_accuracy
                       ELECTRA's instead: its generator's (1/4 width), on
                       the same positions re-masked by ELECTRA's rule (85%
                       [MASK], 15% kept): not the same quantity as BERT's,
                       so a column of its own
  discriminator_*      ELECTRA only, on the same held-out records: the
                       discriminator's loss, accuracy, precision and recall
                       of "replaced", the share of tokens replaced, and
                       discriminator_loss_vs_prior = its loss minus the
                       binary entropy of that share (the loss of the best
                       constant guess): below 0, it learned beyond the prior
  head_<pair>_accuracy the model's own NSP / SOP head, as trained, on
                       held-out segment pairs (experiments.instruments)
  frozen_<task>_accuracy
                       a deterministic linear probe on the frozen encoder,
                       for each pair task and each user task
  probe_<task>         the sentence-pair probes of `data/probes.py` (NSP with
                       random / same-document negatives, sentence order),
                       fine-tuned from each pretrained encoder
  <name>_accuracy      the user's downstream TSV tasks, fine-tuned

each fine-tuning repeated over `seeds` (nested in each pretraining run).
Everything is written under output_dir: plan.json (the inputs every stage
depends on: a rerun with other ones is refused, naming them), the split,
vocab and evaluation sets, records/<key>/ and runs/<key>/ (one per distinct
records and pretraining run; run.json says which arm and seed); a stage
whose result file exists is skipped, so a rerun continues where a run
stopped (pretraining itself resumes from its last checkpoint). What every
stage needs (held-out predictions, evaluation sets large enough, readable
tasks) is checked before the first pretraining starts.

What the spreads measure: see experiments.results. With pretrain_seeds=1
they are fine-tuning and held-out sampling noise only, and results.md says
that no difference is then evidence about the objectives.
"""

import dataclasses
import math
import os
import time

from absl import logging

from bert_tf import file_io as files
from bert_tf.data import pipeline
from bert_tf.data import probes
from bert_tf.data import split
from bert_tf.data import wordpiece_vocab
from bert_tf.data import writer
from bert_tf.data import vocab_learning as vocab_lib
from bert_tf.experiments import arms as arms_lib
from bert_tf.models import config as config_lib
from bert_tf.training import finetune
from bert_tf.training import loop
from bert_tf.training import objectives

# --budget values: equal steps, or equal training FLOPs.
BUDGETS = ("steps", "flops")
# Evaluation sets: below MIN_EVAL_EXAMPLES rows a metric cannot separate
# anything (a binomial standard error above 0.11): refused before any
# pretraining; below WARN_EVAL_EXAMPLES a warning says which differences it
# cannot tell apart.
MIN_EVAL_EXAMPLES = 20
WARN_EVAL_EXAMPLES = 200


class RunStopped(Exception):
  """A pretraining run stopped by a signal before its last step: the plan
  stops too (nothing marked done), and the same command continues it."""


@dataclasses.dataclass(frozen=True)
class Task:
  """A downstream TSV task: a folder with train.tsv and dev.tsv, and its
  text_a, text_b ("" for single texts) and label columns."""
  name: str
  directory: str
  text_a_column: str
  text_b_column: str
  label_column: str

  @classmethod
  def parse(cls, spec):
    """NAME=DIR,TEXT_A[,TEXT_B],LABEL -> Task; ValueError naming the spec."""
    name, sep, rest = spec.partition("=")
    parts = rest.split(",")
    if not sep or not name or len(parts) not in (3, 4) or not all(parts):
      raise ValueError(f"--task={spec!r}: expected NAME=DIR,TEXT_A[,TEXT_B],LABEL "
                       "(columns by header name or 0-based index)")
    text_b = parts[2] if len(parts) == 4 else ""
    return cls(name, parts[0], parts[1], text_b, parts[-1])

  def file(self, split_name):
    return os.path.join(self.directory, f"{split_name}.tsv")


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
  train_batch_size: int = 32
  learning_rate: float = 1e-3
  probes: tuple = probes.TASKS
  tasks: tuple = ()  # of Task
  seeds: int = 3
  finetune_epochs: float = 3.0
  finetune_learning_rate: float = 1e-4
  finetune_batch_size: int = 32
  max_probe_examples: int = 4000
  seed: int = 12345

  @property
  def max_predictions_per_seq(self):
    return math.ceil(self.max_seq_length * 0.15)

  @property
  def arm_list(self):
    """The arms compared: `arms`, or one preset per objective."""
    return tuple(self.arms) or tuple(arms_lib.Arm.preset(name) for name in self.objectives)

  def base_data_options(self, seed):
    """The writer options every arm's records start from, for `seed`."""
    return writer.DataOptions(
        max_seq_length=self.max_seq_length,
        max_predictions_per_seq=self.max_predictions_per_seq, dupe_factor=self.dupe_factor,
        do_lower_case=self.do_lower_case, random_seed=seed, block_bytes=RECORD_BLOCK_BYTES)

  def validate(self):
    """One-line ValueError naming the first impossible option (an arm's
    flags included: nothing has run yet)."""
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
    for name in self.probes:
      if name not in probes.TASKS:
        raise ValueError(f"--probes: {name!r} is not one of {', '.join(probes.TASKS)}")
    for name in ("num_train_steps", "train_batch_size", "seeds", "dupe_factor",
                 "max_probe_examples", "pretrain_seeds"):
      if getattr(self, name) < 1:
        raise ValueError(f"--{name}={getattr(self, name)}: must be at least 1")
    names = [a.name for a in arm_list] + [t.name for t in self.tasks]
    for task in self.tasks:
      if names.count(task.name) > 1 or task.name.startswith(("probe_", "head_", "frozen_")):
        raise ValueError(f"--task={task.name}: the name is taken (an arm, another task, or a "
                         "prefix of the comparison's own metrics)")


class Progress:
  """Counts the plan's stages and prints each with elapsed time and an ETA
  (from the mean time of the stages that ran; skipped ones cost nothing)."""

  def __init__(self, total):
    self.total, self.done, self.ran, self.start = total, 0, 0, time.time()
    self.ran_seconds = 0.0

  def stage(self, text, skipped=False, seconds=0.0):
    self.done += 1
    if not skipped:
      self.ran += 1
      self.ran_seconds += seconds
    remaining = self.total - self.done
    eta = (self.ran_seconds / self.ran * remaining) if self.ran else float("nan")
    eta_text = f"ETA {eta / 60:.1f} min" if math.isfinite(eta) else "ETA ?"
    print(f"[{self.done}/{self.total}] {text}{' (done before, skipped)' if skipped else ''}"
          f" | elapsed {(time.time() - self.start) / 60:.1f} min, {eta_text}", flush=True)


def files_exists(path):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.io.gfile.exists(path)


def _read_json(path):
  """A finished stage's result, or None when the stage has not finished."""
  return files.read_json(path, "stage result") if files_exists(path) else None


# ------------------------------------------------------------------------------
# The plan's inputs: what a rerun must agree on
# ------------------------------------------------------------------------------


def plan_inputs(options):
  """What the split, vocab, config and evaluation sets depend on (dict):
  a rerun on the same output_dir must give the same (`check_plan`). Arms,
  budgets, seeds and tasks are not among them: their work is kept by key,
  so changing them adds work instead of mixing results."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  for flag, path in (("--corpus", options.corpus), ("--bert_config_file",
                                                    options.bert_config_file)):
    if not tf.io.gfile.exists(path):
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


def files_sha256(path, chunk=1 << 24):
  """SHA-256 of a file's bytes, read through gfile: a corpus edited in
  place (same size, other documents) is another corpus."""
  import hashlib  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  digest = hashlib.sha256()
  with tf.io.gfile.GFile(path, "rb") as f:
    while True:
      block = f.read(chunk)
      if not block:
        return digest.hexdigest()
      digest.update(block)


def check_plan(options):
  """Writes output_dir/plan.json, or checks that a rerun's inputs are the
  ones it holds; ValueError naming every input that differs."""
  path = os.path.join(options.output_dir, "plan.json")
  current = plan_inputs(options)
  if files_exists(path):
    saved = files.read_json(path, "comparison plan")
    changed = [f"{key} {saved.get(key)!r} -> {current.get(key)!r}"
               for key in sorted(set(saved) | set(current)) if saved.get(key) != current.get(key)]
    if changed:
      raise ValueError(f"{options.output_dir} holds a comparison of other inputs "
                       f"({'; '.join(changed)}): its split, vocab and evaluation sets would "
                       "not match; use another --output_dir (or remove this one)")
    return
  if files_exists(os.path.join(options.output_dir, "train.txt")):
    raise ValueError(f"{options.output_dir} holds a comparison written by an earlier bert_tf "
                     "(no plan.json to check its inputs against): use another --output_dir")
  files.write_json(path, current)


# ------------------------------------------------------------------------------
# Stages
# ------------------------------------------------------------------------------


def prepare_text(options):
  """Held-out split, vocab and model config; returns (train.txt, heldout.txt,
  vocab file, BertConfig)."""
  out = options.output_dir
  train_txt, held_txt = os.path.join(out, "train.txt"), os.path.join(out, "heldout.txt")
  if not (files_exists(train_txt) and files_exists(held_txt)):
    split.split_corpus(options.corpus, train_txt, held_txt, options.heldout_every)
  vocab_file = options.vocab_file
  if not vocab_file:
    vocab_file = os.path.join(out, "vocab.txt")
    if not files_exists(vocab_file):
      tokens = vocab_lib.build_vocab([train_txt], options.vocab_size,
                                     do_lower_case=options.do_lower_case)
      vocab_lib.write_vocab(tokens, vocab_file)
  vocab_size = len(wordpiece_vocab.load_vocab(vocab_file).tokens)
  config_path = os.path.join(out, "bert_config.json")
  bert_config = config_lib.write_bert_config(
      options.bert_config_file, vocab_size, config_path,
      max_position_embeddings=max(options.max_seq_length,
                                  config_lib.BertConfig.from_json_file(
                                      options.bert_config_file).max_position_embeddings))
  return train_txt, held_txt, vocab_file, bert_config


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


def write_records(options, text_file, vocab_file, name, data_options):
  """Records of `text_file` under output_dir/records/<name> (skipped when
  their manifest exists); returns (the records glob, whether they were
  written before)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  directory = os.path.join(options.output_dir, "records", name)
  outputs = writer.Outputs(directory=directory,
                           num_shards=record_shards(tf.io.gfile.stat(text_file).length))
  written = files_exists(outputs.manifest_path())
  if not written:
    writer.create_pretraining_data(text_file, outputs, vocab_file, data_options,
                                   num_workers=writer.default_num_workers())
  return directory + "/*.tfrecord", written


def step_flops(options, objective, bert_config, train_batch_size=None):
  """Training FLOPs of one pretraining step of `objective` (int)."""
  return objectives.get(objective).train_flops(
      bert_config, train_batch_size or options.train_batch_size, options.max_seq_length,
      options.max_predictions_per_seq)


def plan_steps(options, bert_config):
  """Pretraining steps of each arm: {name: steps}.

  budget "steps": num_train_steps each. budget "flops": num_train_steps for
  the first arm, round(num_train_steps x F(first) / F(arm)) (at least 1)
  for the others, F = `step_flops`. An arm's own num_train_steps flag
  overrides either.
  """
  arm_list = options.arm_list

  def flops(arm):
    batch = dict(arm.training_flags).get("train_batch_size")
    return step_flops(options, arm.objective, bert_config, batch)

  steps = {}
  for arm in arm_list:
    if options.budget == "steps" or arm is arm_list[0]:
      steps[arm.name] = options.num_train_steps
    else:
      steps[arm.name] = max(1, int(round(options.num_train_steps * flops(arm_list[0])
                                         / flops(arm))))
    steps[arm.name] = dict(arm.training_flags).get("num_train_steps", steps[arm.name])
  return steps


def steady_examples_per_second(history):
  """The training rate of a run: the mean examples/s of its host loops after
  the first (which includes tracing and compiling the step), or the first's
  when it is the only one; 0.0 for a run that trained no step."""
  rates = [h["examples_per_second"] for h in history]
  steady = rates[1:] or rates
  return sum(steady) / len(steady) if steady else 0.0


def train_config(options, arm, records, model_dir, steps, seed):
  """The loop.TrainConfig of one pretraining run of `arm`."""
  training = {"learning_rate": options.learning_rate,
              "train_batch_size": options.train_batch_size,
              "num_warmup_steps": steps // 10, **arm.training_options()}
  training["num_train_steps"] = steps
  return loop.TrainConfig(
      input_file=records, output_dir=model_dir, do_train=True,
      max_seq_length=options.max_seq_length,
      max_predictions_per_seq=options.max_predictions_per_seq,
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


def pretrain(options, run, records, bert_config):
  """Pretrains `run` on `records`; returns (its summary dict, whether it was
  done before). The summary is runs/<key>/pretrain.json."""
  directory = run.directory(options)
  model_dir = os.path.join(directory, "model")
  summary_path = os.path.join(directory, "pretrain.json")
  done = _read_json(summary_path)
  if done:
    return done, True
  config = train_config(options, run.arm, records, model_dir, run.steps, run.seed)
  files.write_json(os.path.join(directory, "run.json"),
                   {"arm": run.arm.describe(), "objective": run.arm.objective,
                    "pretrain_seed": run.seed_index, "seed": run.seed, "steps": run.steps,
                    "records": records,
                    "train_config": {k: v for k, v in dataclasses.asdict(config).items()
                                     if v != getattr(loop.TrainConfig, k, None)}})
  start = time.time()
  verbosity = logging.get_verbosity()
  logging.set_verbosity(logging.INFO)  # the loop's progress lines: losses, rate, ETA
  try:
    result = loop.run(config, bert_config)
  finally:
    logging.set_verbosity(verbosity)
  if result.get("stopped_by_signal") or result["global_step"] < run.steps:
    # Stopped by SIGTERM (a preempted VM): the checkpoint is saved, the run
    # is not finished; a rerun resumes it. Nothing is marked done.
    raise RunStopped(f"{run.arm.name} (seed {run.seed_index}) stopped at step "
                    f"{result['global_step']} of {run.steps} (signal); its checkpoint is in "
                    f"{model_dir}: run the same command again to continue")
  params = int(result["model"].count_params())
  flops = step_flops(options, run.arm.objective, bert_config, config.train_batch_size)
  summary = {"objective": run.arm.objective, "arm": run.arm.name, "model_dir": model_dir,
             "steps": result["global_step"], "num_train_steps": run.steps,
             "budget": options.budget, "seed": run.seed, "seconds": time.time() - start,
             "parameters": params,
             "train_tokens": run.steps * config.train_batch_size * options.max_seq_length,
             "step_flops": flops, "train_flops": result["global_step"] * flops,
             "final_train_metrics": result["train"]}
  rate = steady_examples_per_second(result["train_history"])
  summary.update(examples_per_second=rate,
                 flops_per_second=rate / config.train_batch_size * summary["step_flops"])
  files.write_json(summary_path, summary)
  return summary, False


def heldout_metrics(options, bert_config, model_dir, records, max_batches=50):
  """Held-out figures of the model in model_dir on the shared static
  held-out records (every record up to max_batches batches of 32, a short
  last batch included): masked-LM accuracy and its prediction count, and
  the objective's `heldout_figures` (ELECTRA: its discriminator's; its
  masked-LM accuracy is the generator's, on the positions re-masked by its
  rule)."""
  from bert_tf.training import checkpoints  # pylint: disable=g-import-not-at-top
  objective = objectives.from_checkpoint(model_dir)
  model, _ = checkpoints.load_pretrainer(bert_config, model_dir, objective)
  info = pipeline.check_data(records, options.max_seq_length, options.max_predictions_per_seq)
  dataset = pipeline.make_dataset(info.files, 32, options.max_seq_length,
                                  options.max_predictions_per_seq, is_training=False,
                                  compression=info.compression, drop_remainder=False)
  evaluator = loop.Evaluator(model, objective, sums=objective.heldout_sums)
  totals, _ = evaluator.totals(dataset, max_batches)
  weight = totals.get("mlm_weight_sum", 0.0)
  if not weight:
    raise ValueError(f"held-out records {records} hold no masked-LM prediction")
  return {"masked_lm_accuracy": totals["mlm_correct"] / weight, "predictions": weight,
          **objective.heldout_figures(totals)}


def probe_tasks(options, held_txt):
  """Writes the probe TSVs from the held-out documents; returns [Task]."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  with tf.io.gfile.GFile(held_txt, "r") as f:
    documents = probes.parse_documents(f.read())
  tasks = []
  for name in options.probes:
    directory = os.path.join(options.output_dir, "probes", name)
    train_path, dev_path = os.path.join(directory, "train.tsv"), os.path.join(directory, "dev.tsv")
    if not files_exists(dev_path):
      rows = probes.probe_rows(documents, name, seed=options.seed)
      train, dev = probes.split_rows(rows)
      if not train or not dev:
        raise ValueError(f"probe {name}: the held-out text {held_txt} gives too few sentence "
                         f"pairs ({len(rows)}); use a larger corpus or a smaller "
                         "--heldout_every")
      limit = options.max_probe_examples
      files.atomic_write(train_path, probes.to_tsv(train[:limit]))
      files.atomic_write(dev_path, probes.to_tsv(dev[:limit]))
    tasks.append(Task(f"probe_{name}", directory, "text_a", "text_b", "label"))
  return tasks


def eval_size_note(what, n, hint):
  """None when `n` evaluation rows can separate differences a comparison
  cares about; a warning line when they are few; ValueError (before any
  pretraining) when they are too few to separate anything."""
  if n < MIN_EVAL_EXAMPLES:
    raise ValueError(f"{what}: {n} evaluation rows, fewer than {MIN_EVAL_EXAMPLES}: its "
                     f"accuracy could not separate anything; {hint}")
  if n < WARN_EVAL_EXAMPLES:
    # Two arms' accuracies near 0.5 differ beyond 2 standard errors of the
    # difference only by more than 2 x sqrt(2 x 0.25 / n).
    return (f"{what}: only {n} evaluation rows; differences below "
            f"{2 * math.sqrt(0.5 / n):.2f} cannot be told apart")
  return None


def preflight(options, heldout_records, held_txt, probe_list, pair_sets):
  """Checks what every stage needs before the first pretraining starts:
  held-out masked-LM predictions, evaluation sets large enough, readable
  tasks. Returns (the warning lines, also printed; {metric: the share of
  its dev set's majority class}); raises ValueError."""
  from bert_tf.data import classification  # pylint: disable=g-import-not-at-top
  from bert_tf.data import manifest as manifest_lib  # pylint: disable=g-import-not-at-top
  hint = "use a larger corpus or a smaller --heldout_every"
  manifest = manifest_lib.Manifest.find(heldout_records)
  predictions = manifest.count("predictions") if manifest else None
  if not predictions:
    raise ValueError(f"the held-out text {held_txt} gives {manifest.count('instances') or 0} "
                     f"held-out instances and no masked-LM prediction; {hint}")
  notes, chance = [], {}
  for task in probe_list + list(options.tasks):
    text_b = task.text_b_column or None
    sizes = {}
    for split_name in ("train", "dev"):
      examples = classification.read_tsv(task.file(split_name), task.text_a_column, text_b,
                                         task.label_column)
      sizes[split_name] = len(examples)
    labels = [e.label for e in examples]
    if labels:  # the dev split's majority class: what always answering it scores
      share = max(labels.count(label) for label in set(labels)) / len(labels)
      chance[f"{task.name}_accuracy"] = chance[f"frozen_{task.name}_accuracy"] = share
    if sizes["train"] < 2:
      raise ValueError(f"{task.file('train')}: {sizes['train']} rows: too few to fine-tune on")
    notes.append(eval_size_note(f"{task.name} (dev {task.file('dev')})", sizes["dev"],
                                hint if task.name.startswith("probe_") else
                                "give the task a larger dev.tsv"))
  for name, pairs in pair_sets.items():
    notes.append(eval_size_note(f"pairs {name} (held-out segment pairs, dev)",
                                len(pairs.dev_labels), hint))
    if len(pairs.dev_labels):
      share = float(pairs.dev_labels.mean())
      chance[f"head_{name}_accuracy"] = chance[f"frozen_{name}_accuracy"] = max(share,
                                                                                1 - share)
    if len(pairs.train_labels) < 2:
      raise ValueError(f"pairs {name}: {len(pairs.train_labels)} train pairs; {hint}")
  notes = [n for n in notes if n]
  for note in notes:
    print(f"warning: {note}", flush=True)
  return notes, chance


def finetune_task(options, directory, task, vocab_file, bert_config, init_checkpoint):
  """Fine-tunes `task` from `init_checkpoint` over the seeds; returns the
  results dict of `finetune.run` (cached as JSON under the run's directory,
  by the fine-tuning settings)."""
  settings = {"epochs": options.finetune_epochs, "lr": options.finetune_learning_rate,
              "batch": options.finetune_batch_size, "seeds": options.seeds,
              "seed": options.seed, "task": dataclasses.asdict(task)}
  out = os.path.join(directory, "finetune", f"{task.name}-{arms_lib.key_of(settings)[:8]}")
  cached = os.path.join(out, "results.json")
  done = _read_json(cached)
  if done:
    return done, True
  config = finetune.FinetuneConfig(
      train_file=task.file("train"), dev_file=task.file("dev"), output_dir=out,
      vocab_file=vocab_file,
      text_a_column=task.text_a_column, text_b_column=task.text_b_column,
      label_column=task.label_column, do_lower_case=options.do_lower_case,
      max_seq_length=options.max_seq_length, init_checkpoint=init_checkpoint,
      num_train_epochs=options.finetune_epochs, learning_rate=options.finetune_learning_rate,
      train_batch_size=options.finetune_batch_size, seeds=options.seeds, seed=options.seed,
      save_model=False)
  results = finetune.run(config, bert_config)
  files.write_json(cached, results)
  return results, False


def instrument_figures(options, run_dir, model_dir, bert_config, vocab_file, pair_sets,
                       task_data):
  """The head and frozen-probe figures of one run (runs/<key>/
  instruments.json, extended when tasks are added): {metric: {"value",
  "examples"}}. task_data: {task name: finetune.TaskData}, filled on first
  use and shared by every run (each task is read and tokenized once)."""
  from bert_tf.experiments import instruments  # pylint: disable=g-import-not-at-top
  from bert_tf.training import checkpoints  # pylint: disable=g-import-not-at-top
  path = os.path.join(run_dir, "instruments.json")
  figures = _read_json(path) or {}
  objective = objectives.from_checkpoint(model_dir)
  head = objective.export_objective.sentence_name is not None
  wanted = [f"frozen_{name}_accuracy" for name in pair_sets] + [
      f"frozen_{t.name}" for t in options.tasks]
  if head:
    wanted += [f"head_{name}_accuracy" for name in pair_sets]
  missing = [m for m in wanted if not any(k == m or k.startswith(m + "_") for k in figures)]
  if not missing:
    return figures, True
  if head:
    pretrainer, _ = checkpoints.load_pretrainer(bert_config, model_dir, objective)
    for name, pairs in pair_sets.items():
      figures[f"head_{name}_accuracy"] = {
          "value": instruments.head_accuracy(pretrainer, pairs.dev, pairs.dev_labels),
          "examples": len(pairs.dev_labels)}
    del pretrainer
  classifier, _ = finetune.build_classifier(bert_config, 2, init_checkpoint=model_dir)
  encoder = classifier.encoder
  for name, pairs in pair_sets.items():
    _, value = instruments.frozen_probe(encoder, pairs.train, pairs.train_labels, pairs.dev,
                                        pairs.dev_labels, None, pair=True)
    figures[f"frozen_{name}_accuracy"] = {"value": value, "examples": len(pairs.dev_labels)}
  for task in options.tasks:
    if task.name not in task_data:
      task_data[task.name] = finetune.load_task(finetune.FinetuneConfig(
          train_file=task.file("train"), dev_file=task.file("dev"), output_dir=run_dir,
          vocab_file=vocab_file, text_a_column=task.text_a_column,
          text_b_column=task.text_b_column, label_column=task.label_column,
          do_lower_case=options.do_lower_case, max_seq_length=options.max_seq_length))
    data = task_data[task.name]
    kind, value = instruments.frozen_probe(encoder, data.train, data.train_labels, data.dev,
                                           data.dev_labels, data.space,
                                           pair=bool(task.text_b_column))
    figures[f"frozen_{task.name}_{kind}"] = {"value": value, "examples": len(data.dev_labels)}
  files.write_json(path, figures)
  return figures, False


# ------------------------------------------------------------------------------
# One run's measures, and the rows over runs
# ------------------------------------------------------------------------------


# Held-out discriminator figures (ELECTRA): (metric, the count its binomial
# standard error is over, or None for a loss, whose spread is not measured).
DISCRIMINATOR_ROWS = (("discriminator_loss", None), ("discriminator_loss_vs_prior", None),
                      ("discriminator_accuracy", "tokens"),
                      ("discriminator_precision", "predicted_replaced"),
                      ("discriminator_recall", "replaced"), ("replaced_share", "tokens"))


def _binomial_se(p, n):
  return math.sqrt(p * (1 - p) / n) if n else 0.0


def figure_order(figures, pair_names, task_names):
  """The instrument metrics of `figures` in table order: heads, then frozen
  probes of the pair tasks, then of the user tasks (each in its flag's
  order)."""
  wanted = ([f"head_{n}_accuracy" for n in pair_names]
            + [f"frozen_{n}_accuracy" for n in pair_names]
            + [f"frozen_{n}_{kind}" for n in task_names for kind in ("accuracy", "pearson")])
  return [m for m in wanted if m in figures]


def run_measures(heldout, figures, task_results, order=None):
  """One run's figures: [(metric, value, its spread within the run (a
  standard error; for fine-tuned metrics the fine-tuning seeds' sd; None:
  not measured), the fine-tuning seeds (else 1), what the spread measures,
  evaluation examples)]."""
  from bert_tf.experiments import results as results_lib  # pylint: disable=g-import-not-at-top
  sample, tuned = results_lib.SPREAD_SAMPLE, results_lib.SPREAD_FINETUNE
  p = heldout["masked_lm_accuracy"]
  generator = "discriminator_loss" in heldout
  predictions = int(heldout["predictions"])
  out = [("generator_masked_lm_accuracy" if generator else "masked_lm_accuracy", p,
          _binomial_se(p, predictions), 1, sample, predictions)]
  for metric, count in DISCRIMINATOR_ROWS:
    if metric in heldout:
      if count is None:
        out.append((metric, heldout[metric], None, 1, results_lib.SPREAD_NONE, None))
      else:
        out.append((metric, heldout[metric], _binomial_se(heldout[metric], heldout[count]), 1,
                    sample, int(heldout[count])))
  for metric in order if order is not None else sorted(figures):
    value, n = figures[metric]["value"], figures[metric]["examples"]
    se = (_binomial_se(value, n) if metric.endswith("_accuracy")
          else (1 - value ** 2) / math.sqrt(max(n - 1, 1)))  # a correlation's
    out.append((metric, value, se, 1, sample, n))
  for task_name, res in task_results:
    key = "pearson" if res.get("task_type") == "regression" else "accuracy"
    out.append((f"{task_name}_{key}", res[key], res[f"{key}_sd"], res["num_seeds"], tuned,
                res.get("num_dev_examples")))
  return out


def arm_rows(arm_name, per_run):
  """Result rows of one arm from [(seed index, summary, measures)] (see
  experiments.results: mean and sd over pretraining runs when there are
  several, else the run's own spread)."""
  from bert_tf.experiments import results as results_lib  # pylint: disable=g-import-not-at-top
  summaries = [s for _, s, _ in per_run]
  summary = dict(summaries[0])
  for key in ("seconds", "examples_per_second", "flops_per_second"):
    values = [s[key] for s in summaries if s.get(key) not in (None, "")]
    if values:
      summary[key] = sum(values) / len(values)
  metrics = []
  for _, _, measures in per_run:
    metrics += [m[0] for m in measures if m[0] not in metrics]
  rows = []
  for metric in metrics:
    found = [(k, next(m for m in measures if m[0] == metric)) for k, _, measures in per_run
             if any(m[0] == metric for m in measures)]
    values = {k: m[1] for k, m in found}
    examples = found[0][1][5]
    if len(found) > 1:
      mean = sum(values.values()) / len(values)
      sd = math.sqrt(sum((v - mean) ** 2 for v in values.values()) / (len(values) - 1))
      rows.append(results_lib.row(arm_name, metric, mean, sd, len(found), summary,
                                  pretrain_seeds=len(found), eval_examples=examples,
                                  values=values))
      continue
    _, (_, value, spread_value, n, spread, _) = found[0]
    if spread == results_lib.SPREAD_FINETUNE:
      sd = spread_value
      se = sd / math.sqrt(n) if n > 1 and sd > 0 else float("nan")
    else:
      sd, se = 0.0, float("nan") if spread_value is None else spread_value
    rows.append(results_lib.row(arm_name, metric, value, sd, n, summary, se=se,
                                eval_examples=examples, spread=spread, values=values))
  return rows


def _notes(options, bert_config, runs, summaries, size_notes):
  """The notes under the table: corpus, model, budget, arms, what each
  figure is."""
  budget = {"steps": f"equal steps: every arm pretrained {options.num_train_steps} steps",
            "flops": f"equal training FLOPs (--budget=flops): {options.arm_list[0].name} "
                     f"pretrained {options.num_train_steps} steps, each other arm the "
                     "steps of the same FLOPs (bert_tf/models/flops.py: matmuls, 3 x forward)"}
  seen, steps = set(), []
  for run in runs:
    if run.arm.name not in seen:
      seen.add(run.arm.name)
      s = summaries[run.key]
      steps.append(f"{run.arm.name} {s['steps']} steps ({s['train_flops']:.3g} FLOPs)")
  notes = [f"corpus {options.corpus}; model {options.bert_config_file} "
           f"({bert_config.num_hidden_layers} layers, hidden {bert_config.hidden_size}); "
           f"budget {budget[options.budget]}: {', '.join(steps)}; batch "
           f"{options.train_batch_size} x {options.max_seq_length} tokens, lr "
           f"{options.learning_rate:g}; {options.pretrain_seeds} pretraining run(s) per arm "
           f"(seeds {options.seed}..{options.seed + options.pretrain_seeds - 1})",
           "arms: " + "; ".join(f"`{arm.describe()}`" for arm in options.arm_list)]
  shared = {}
  for run in runs:
    shared.setdefault(run.key, []).append(run.arm.name)
  same = sorted({" = ".join(dict.fromkeys(v)) for v in shared.values() if len(set(v)) > 1})
  if same:
    notes.append("identical pretraining (one run shared): " + "; ".join(same))
  notes.append("masked_lm_accuracy: on the same static held-out records for every arm; "
               "with one run its ± is the binomial standard error over the predictions")
  if any(r.arm.objective == "electra" for r in runs):
    notes.append(
        "electra: generator_masked_lm_accuracy is its generator's (1/4 of the hidden size) "
        "on the same held-out positions, re-masked by ELECTRA's rule (85% [MASK], 15% kept, "
        "no random token): not the same quantity as masked_lm_accuracy. Its discriminator "
        "(what fine-tuning starts from) is scored on every real token of the generator's "
        "corrupted text: replaced_share is the share replaced, discriminator_loss_vs_prior "
        "its loss (nats) minus the binary entropy of that share, the loss of always "
        "guessing the share: below 0 it learned beyond the prior. Always answering "
        "\"original\" scores accuracy 1 - replaced_share and precision and recall 0. The "
        "losses carry no standard error")
  if options.probes or options.tasks:
    notes.append(
        "head_*: the model's own sentence head as trained, on held-out segment pairs built "
        "like pretraining pairs (bert_tf/data/segment_pairs.py; class 0 = B follows A / in "
        "order); frozen_*: a linear probe (logistic regression to convergence, "
        "bert_tf/experiments/linear_probe.py) on the frozen encoder's features ([CLS], the "
        "means u, v of A and B, |u - v|, u * v), fitted on the train pairs, scored on the "
        "same dev pairs as the head; no fine-tuning noise in either")
    notes.append(
        f"probe_* and task metrics: fine-tuned (all weights) for {options.finetune_epochs:g} "
        f"epochs at lr {options.finetune_learning_rate:g} from each pretrained model, "
        f"{options.seeds} fine-tuning seed(s) inside each pretraining run")
  notes += [f"warning: {n}" for n in size_notes]
  return notes


def run_comparison(options):
  """Runs (or continues) the whole plan; writes results.md, results.csv, one
  PNG per metric and TensorBoard HParams data to output_dir; returns the
  result rows."""
  from bert_tf.experiments import instruments  # pylint: disable=g-import-not-at-top
  from bert_tf.experiments import results as results_lib  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  options.validate()
  out = options.output_dir
  check_plan(options)
  start = time.time()
  train_txt, held_txt, vocab_file, bert_config = prepare_text(options)
  heldout_records, _ = write_records(
      options, held_txt, vocab_file, "heldout",
      dataclasses.replace(options.base_data_options(options.seed), dupe_factor=1))
  probe_list = probe_tasks(options, held_txt)
  all_tasks = probe_list + list(options.tasks)
  tokenizer = finetune.task_tokenizer(vocab_file, options.do_lower_case)
  with tf.io.gfile.GFile(held_txt, "r") as f:
    pair_sets = instruments.pair_sets(f.read(), options.probes, tokenizer,
                                      options.max_seq_length, options.seed,
                                      options.max_probe_examples)
  size_notes, chance = preflight(options, heldout_records, held_txt, probe_list, pair_sets)
  runs = plan_runs(options, bert_config)
  unique = []  # the first arm of each distinct run trains it
  for run in runs:
    if run.key not in {u.key for u in unique}:
      unique.append(run)
  progress = Progress(1 + len(unique) * (4 + len(all_tasks)))
  progress.stage(f"text: split, vocab ({bert_config.vocab_size} entries), held-out records, "
                 f"{len(all_tasks)} fine-tuning tasks, {len(pair_sets)} pair sets; "
                 f"{len(options.arm_list)} arms x {options.pretrain_seeds} pretraining "
                 f"seed(s) = {len(unique)} distinct runs; budget {options.budget}",
                 seconds=time.time() - start)
  summaries, measures, task_data = {}, {}, {}
  for run in unique:
    label = f"{run.arm.name} (seed {run.seed_index})"
    run_dir = run.directory(options)
    t = time.time()
    records, skipped = write_records(options, train_txt, vocab_file,
                                     f"train-{run.records_key}", run.data_options)
    progress.stage(f"{label}: records {records}", skipped, time.time() - t)
    t = time.time()
    summary, skipped = pretrain(options, run, records, bert_config)
    summaries[run.key] = summary
    progress.stage(f"{label}: pretrained {summary['steps']} steps in {summary['seconds']:.0f} s",
                   skipped, time.time() - t)
    t = time.time()
    heldout_path = os.path.join(run_dir, "heldout_mlm.json")
    heldout = _read_json(heldout_path)
    skipped = heldout is not None
    if not skipped:
      heldout = heldout_metrics(options, bert_config, summary["model_dir"], heldout_records)
      files.write_json(heldout_path, heldout)
    disc = (f", discriminator loss {heldout['discriminator_loss']:.4f} "
            f"({heldout['discriminator_loss_vs_prior']:+.4f} vs the prior's)"
            if "discriminator_loss" in heldout else "")
    progress.stage(f"{label}: held-out masked-LM accuracy "
                   f"{heldout['masked_lm_accuracy']:.4f} over {int(heldout['predictions'])} "
                   f"predictions{disc}", skipped, time.time() - t)
    t = time.time()
    figures, skipped = instrument_figures(options, run_dir, summary["model_dir"], bert_config,
                                          vocab_file, pair_sets, task_data)
    progress.stage(f"{label}: " + (", ".join(f"{k} {v['value']:.4f}"
                                             for k, v in sorted(figures.items()))
                                   or "no head or frozen probe (no pair task or --task)"),
                   skipped, time.time() - t)
    task_results = []
    for task in all_tasks:
      t = time.time()
      res, skipped = finetune_task(options, run_dir, task, vocab_file, bert_config,
                                   summary["model_dir"])
      task_results.append((task.name, res))
      progress.stage(f"{label}: {task.name} accuracy {res.get('accuracy', float('nan')):.4f} "
                     f"± {res.get('accuracy_sd', 0.0):.4f} over {res['num_seeds']} seeds",
                     skipped, time.time() - t)
    order = figure_order(figures, list(pair_sets), [t.name for t in options.tasks])
    measures[run.key] = run_measures(heldout, figures, task_results, order)
  rows = []
  for arm in options.arm_list:
    per_run = [(r.seed_index, summaries[r.key], measures[r.key]) for r in runs if r.arm == arm]
    rows += arm_rows(arm.name, per_run)
  for r in rows:
    r["chance"] = chance.get(r["metric"], "")
  notes = _notes(options, bert_config, runs, summaries, size_notes)
  files.atomic_write(os.path.join(out, "results.md"),
                     results_lib.markdown(rows, "Pretraining objectives compared", notes))
  files.atomic_write(os.path.join(out, "results.csv"), results_lib.to_csv(rows))
  plots = results_lib.write_plots(rows, os.path.join(out, "plots"))
  results_lib.write_hparams(rows, os.path.join(out, "hparams"))
  print(f"results: {os.path.join(out, 'results.md')}, results.csv, {len(plots)} plots, "
        f"TensorBoard HParams: tensorboard --logdir {os.path.join(out, 'hparams')}")
  return rows
