"""Compare pretraining objectives at equal compute, on one corpus.

One plan: for each objective, write its records, pretrain the same model
size on the same batch x tokens for an equal budget, then measure every
model the same way. The budget (`budget`): "steps", num_train_steps steps
each; or "flops", num_train_steps steps of the FIRST objective listed and,
for every other one, the steps that spend the same training FLOPs
(`plan_steps`; each objective's `train_flops`, `models/flops.py`).

  masked_lm_accuracy   held-out masked-LM accuracy on ONE set of static
                       held-out records (the original's masking), so every
                       objective is scored on the same predictions
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
  probe_<task>         the sentence-pair probes of `data/probes.py` (NSP with
                       random / same-document negatives, sentence order),
                       fine-tuned from each pretrained encoder
  task_<name>          the user's downstream TSV tasks, fine-tuned

each fine-tuning repeated over `seeds`. Everything is written under
output_dir, one folder per stage; a stage whose result file exists is
skipped, so a rerun continues where a run stopped (pretraining itself
resumes from its last checkpoint).

What the seeds measure: the spread of FINE-TUNING from one pretrained model
per objective. Pretraining is run once per objective (it is the expensive
part), so a difference between objectives smaller than the fine-tuning
spread is not evidence, and one larger than it is evidence about these
pretraining runs, not yet about the objectives in general. `results.md`
says so next to the table.
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
from bert_tf.models import config as config_lib
from bert_tf.training import finetune
from bert_tf.training import loop
from bert_tf.training import objectives

# --budget values: equal steps, or equal training FLOPs.
BUDGETS = ("steps", "flops")


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


@dataclasses.dataclass(frozen=True)
class CompareOptions:
  """One comparison: corpus, model, budget, objectives, evaluations.

  budget: "steps" (num_train_steps for every objective) or "flops"
  (num_train_steps of the first objective, the same FLOPs for the others).
  """
  corpus: str
  output_dir: str
  bert_config_file: str
  objectives: tuple = ("mlm_nsp", "mlm", "mlm_sop")
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

  def validate(self):
    """One-line ValueError naming the first impossible option."""
    for name in self.objectives:
      if name not in objectives.OBJECTIVES:
        raise ValueError(f"--objectives: {name!r} is not one of "
                         f"{', '.join(objectives.OBJECTIVES)}")
    if not self.objectives:
      raise ValueError("--objectives is empty")
    if self.budget not in BUDGETS:
      raise ValueError(f"--budget={self.budget!r} is not one of {', '.join(BUDGETS)}")
    for name in self.objectives:
      if self.budget == "flops" and objectives.get(name).train_flops is None:
        raise ValueError(f"--budget=flops: objective {name} has no FLOPs model "
                         "(training.objectives: train_flops); use --budget=steps")
    for name in self.probes:
      if name not in probes.TASKS:
        raise ValueError(f"--probes: {name!r} is not one of {', '.join(probes.TASKS)}")
    for name in ("num_train_steps", "train_batch_size", "seeds", "dupe_factor",
                 "max_probe_examples"):
      if getattr(self, name) < 1:
        raise ValueError(f"--{name}={getattr(self, name)}: must be at least 1")


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


def write_records(options, text_file, vocab_file, name, record_options, dupe_factor):
  """Records of `text_file` under output_dir/records/<name> (skipped when
  their manifest exists); returns (the records glob, whether they were
  written before)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  directory = os.path.join(options.output_dir, "records", name)
  outputs = writer.Outputs(directory=directory,
                           num_shards=record_shards(tf.io.gfile.stat(text_file).length))
  written = files_exists(outputs.manifest_path())
  if not written:
    data_options = writer.DataOptions(
        max_seq_length=options.max_seq_length,
        max_predictions_per_seq=options.max_predictions_per_seq, dupe_factor=dupe_factor,
        do_lower_case=options.do_lower_case, random_seed=options.seed,
        block_bytes=RECORD_BLOCK_BYTES, **record_options)
    writer.create_pretraining_data(text_file, outputs, vocab_file, data_options,
                                   num_workers=writer.default_num_workers())
  return directory + "/*.tfrecord", written


def _records_name(objective):
  """Objectives with the same record options (each objective's
  `record_options`) share their records: those of the first registered
  objective with them (ELECTRA reads mlm_nsp's)."""
  options = objectives.get(objective).record_options
  return next(name for name, other in objectives.OBJECTIVES.items()
              if other.record_options == options)


def step_flops(options, objective, bert_config):
  """Training FLOPs of one pretraining step of `objective` (int)."""
  return objectives.get(objective).train_flops(
      bert_config, options.train_batch_size, options.max_seq_length,
      options.max_predictions_per_seq)


def plan_steps(options, bert_config):
  """Pretraining steps of each objective: {name: steps}.

  budget "steps": num_train_steps each. budget "flops": num_train_steps for
  the first objective, round(num_train_steps x F(first) / F(name)) (at
  least 1) for the others, F = `step_flops`.
  """
  if options.budget == "steps":
    return {name: options.num_train_steps for name in options.objectives}
  first = step_flops(options, options.objectives[0], bert_config)
  return {name: max(1, int(round(options.num_train_steps * first
                                 / step_flops(options, name, bert_config))))
          for name in options.objectives}


def steady_examples_per_second(history):
  """The training rate of a run: the mean examples/s of its host loops after
  the first (which includes tracing and compiling the step), or the first's
  when it is the only one; 0.0 for a run that trained no step."""
  rates = [h["examples_per_second"] for h in history]
  steady = rates[1:] or rates
  return sum(steady) / len(steady) if steady else 0.0


def pretrain(options, objective, records, bert_config, steps):
  """Pretrains `objective` on `records` for `steps` steps; returns (its
  summary dict, whether it was done before). The summary is written to
  output_dir/<objective>/pretrain.json and read back on a rerun, which must
  plan the same steps."""
  model_dir = os.path.join(options.output_dir, objective, "model")
  summary_path = os.path.join(options.output_dir, objective, "pretrain.json")
  done = _read_json(summary_path)
  if done:
    planned = done.get("num_train_steps", done["steps"])
    if planned != steps:
      raise ValueError(f"{summary_path}: {objective} was pretrained for {planned} steps, this "
                       f"plan gives it {steps} (--num_train_steps, --budget or the order of "
                       "--objectives changed): use another --output_dir")
    done.setdefault("train_flops", done["steps"] * step_flops(options, objective, bert_config))
    return done, True
  config = loop.TrainConfig(
      input_file=records, output_dir=model_dir, do_train=True,
      max_seq_length=options.max_seq_length,
      max_predictions_per_seq=options.max_predictions_per_seq,
      train_batch_size=options.train_batch_size, learning_rate=options.learning_rate,
      num_train_steps=steps, num_warmup_steps=steps // 10,
      save_checkpoints_steps=max(100, steps // 4),
      iterations_per_loop=100, log_steps=100, seed=options.seed, objective=objective)
  start = time.time()
  verbosity = logging.get_verbosity()
  logging.set_verbosity(logging.INFO)  # the loop's progress lines: losses, rate, ETA
  try:
    result = loop.run(config, bert_config)
  finally:
    logging.set_verbosity(verbosity)
  params = int(result["model"].count_params())
  summary = {"objective": objective, "model_dir": model_dir, "steps": result["global_step"],
             "num_train_steps": steps, "budget": options.budget,
             "seconds": time.time() - start, "parameters": params,
             "train_tokens": steps * options.train_batch_size * options.max_seq_length,
             "step_flops": step_flops(options, objective, bert_config),
             "train_flops": result["global_step"] * step_flops(options, objective, bert_config),
             "final_train_metrics": result["train"]}
  rate = steady_examples_per_second(result["train_history"])
  summary.update(examples_per_second=rate,
                 flops_per_second=rate / options.train_batch_size * summary["step_flops"])
  files.write_json(summary_path, summary)
  return summary, False


def heldout_metrics(options, bert_config, model_dir, records, max_batches=50):
  """Held-out figures of the model in model_dir on the shared static
  held-out records: masked-LM accuracy and its prediction count, and the
  objective's `heldout_figures` (ELECTRA: its discriminator's; its
  masked-LM accuracy is the generator's, on the positions re-masked by its
  rule)."""
  from bert_tf.training import checkpoints  # pylint: disable=g-import-not-at-top
  objective = objectives.from_checkpoint(model_dir)
  model, _ = checkpoints.load_pretrainer(bert_config, model_dir, objective)
  info = pipeline.check_data(records, options.max_seq_length, options.max_predictions_per_seq)
  dataset = pipeline.make_dataset(info.files, 32, options.max_seq_length,
                                  options.max_predictions_per_seq, is_training=False,
                                  compression=info.compression)
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


def finetune_task(options, objective, task, vocab_file, bert_config, init_checkpoint):
  """Fine-tunes `task` from `init_checkpoint` over the seeds; returns the
  results dict of `finetune.run` (cached as JSON)."""
  out = os.path.join(options.output_dir, objective, "finetune", task.name)
  cached = os.path.join(out, "results.json")
  done = _read_json(cached)
  if done:
    return done, True
  config = finetune.FinetuneConfig(
      train_file=os.path.join(task.directory, "train.tsv"),
      dev_file=os.path.join(task.directory, "dev.tsv"), output_dir=out, vocab_file=vocab_file,
      text_a_column=task.text_a_column, text_b_column=task.text_b_column,
      label_column=task.label_column, do_lower_case=options.do_lower_case,
      max_seq_length=options.max_seq_length, init_checkpoint=init_checkpoint,
      num_train_epochs=options.finetune_epochs, learning_rate=options.finetune_learning_rate,
      train_batch_size=options.finetune_batch_size, seeds=options.seeds, seed=options.seed,
      save_model=False)
  results = finetune.run(config, bert_config)
  files.write_json(cached, results)
  return results, False


# ------------------------------------------------------------------------------
# The plan
# ------------------------------------------------------------------------------


# Held-out discriminator figures (ELECTRA): (metric, the count its binomial
# standard error is over, or None for a loss, whose spread is not measured).
DISCRIMINATOR_ROWS = (("discriminator_loss", None), ("discriminator_loss_vs_prior", None),
                      ("discriminator_accuracy", "tokens"),
                      ("discriminator_precision", "predicted_replaced"),
                      ("discriminator_recall", "replaced"), ("replaced_share", "tokens"))


def _binomial_se(p, n):
  return math.sqrt(p * (1 - p) / n) if n else 0.0


def _objective_rows(name, summary, heldout, task_results):
  """Result rows of one objective (see experiments.results); objectives
  without a discriminator have no discriminator rows (empty cells), and
  ELECTRA's masked-LM accuracy (its generator's) is a metric of its own."""
  from bert_tf.experiments import results as results_lib  # pylint: disable=g-import-not-at-top
  p = heldout["masked_lm_accuracy"]
  generator = "discriminator_loss" in heldout
  rows = [results_lib.row(name, "generator_masked_lm_accuracy" if generator
                          else "masked_lm_accuracy", p, 0.0, 1, summary,
                          se=_binomial_se(p, heldout["predictions"]))]
  for metric, count in DISCRIMINATOR_ROWS:
    if metric in heldout:
      se = float("nan") if count is None else _binomial_se(heldout[metric], heldout[count])
      rows.append(results_lib.row(name, metric, heldout[metric], 0.0, 1, summary, se=se))
  for task_name, res in task_results:
    key = "pearson" if res.get("task_type") == "regression" else "accuracy"
    rows.append(results_lib.row(name, f"{task_name}_{key}", res[key], res[f"{key}_sd"],
                                res["num_seeds"], summary))
  return rows


def _notes(options, bert_config, summaries):
  """The notes under the table: corpus, model, budget, what each figure is."""
  budget = {"steps": f"equal steps: every objective pretrained {options.num_train_steps} "
                     "steps",
            "flops": f"equal training FLOPs (--budget=flops): {options.objectives[0]} "
                     f"pretrained {options.num_train_steps} steps, each other objective the "
                     "steps of the same FLOPs (bert_tf/models/flops.py: matmuls, 3 x forward)"}
  steps = ", ".join(f"{name} {s['steps']} steps ({s['train_flops']:.3g} FLOPs)"
                    for name, s in summaries.items())
  notes = [f"corpus {options.corpus}; model {options.bert_config_file} "
           f"({bert_config.num_hidden_layers} layers, hidden {bert_config.hidden_size}); "
           f"budget {budget[options.budget]}: {steps}; batch {options.train_batch_size} x "
           f"{options.max_seq_length} tokens, lr {options.learning_rate:g}, seed {options.seed}",
           "masked_lm_accuracy: one pretraining run each, on the same static held-out "
           "records; its ± is the binomial standard error over the predictions"]
  if "electra" in summaries:
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
  notes.append(
      f"probe_* and task metrics: fine-tuned (all weights) for {options.finetune_epochs:g} "
      f"epochs at lr {options.finetune_learning_rate:g} from each pretrained model"
      f"{' (ELECTRA: its discriminator)' if 'electra' in summaries else ''}, mean ± sd over "
      f"{options.seeds} fine-tuning seeds; the seeds "
      "measure fine-tuning noise only, not pretraining noise (one pretraining run per "
      "objective)")
  return notes


def run_comparison(options):
  """Runs (or continues) the whole plan; writes results.md, results.csv, one
  PNG per metric and TensorBoard HParams data to output_dir; returns the
  result rows."""
  from bert_tf.experiments import results as results_lib  # pylint: disable=g-import-not-at-top
  options.validate()
  out = options.output_dir
  tasks = list(options.tasks)
  per_objective = 3 + len(options.probes) + len(tasks)  # records, pretrain, mlm, fine-tunes
  progress = Progress(1 + len(options.objectives) * per_objective)
  start = time.time()
  train_txt, held_txt, vocab_file, bert_config = prepare_text(options)
  heldout_records, _ = write_records(options, held_txt, vocab_file, "heldout", {}, 1)
  all_tasks = probe_tasks(options, held_txt) + tasks
  steps = plan_steps(options, bert_config)
  progress.stage(f"text: split, vocab ({bert_config.vocab_size} entries), held-out records, "
                 f"{len(all_tasks)} fine-tuning tasks; budget {options.budget}: "
                 + ", ".join(f"{n} {k} steps" for n, k in steps.items()),
                 seconds=time.time() - start)
  rows, summaries = [], {}
  for name in options.objectives:
    t = time.time()
    records, skipped = write_records(options, train_txt, vocab_file, _records_name(name),
                                     objectives.get(name).record_options, options.dupe_factor)
    progress.stage(f"{name}: records {records}", skipped, time.time() - t)
    t = time.time()
    summary, skipped = pretrain(options, name, records, bert_config, steps[name])
    summaries[name] = summary
    progress.stage(f"{name}: pretrained {summary['steps']} steps in {summary['seconds']:.0f} s",
                   skipped, time.time() - t)
    t = time.time()
    heldout_path = os.path.join(out, name, "heldout_mlm.json")
    heldout = _read_json(heldout_path)
    skipped = heldout is not None
    if not skipped:
      heldout = heldout_metrics(options, bert_config, summary["model_dir"], heldout_records)
      files.write_json(heldout_path, heldout)
    disc = (f", discriminator loss {heldout['discriminator_loss']:.4f} "
            f"({heldout['discriminator_loss_vs_prior']:+.4f} vs the prior's)"
            if "discriminator_loss" in heldout else "")
    progress.stage(f"{name}: held-out masked-LM accuracy "
                   f"{heldout['masked_lm_accuracy']:.4f}{disc}", skipped, time.time() - t)
    task_results = []
    for task in all_tasks:
      t = time.time()
      res, skipped = finetune_task(options, name, task, vocab_file, bert_config,
                                   summary["model_dir"])
      task_results.append((task.name, res))
      progress.stage(f"{name}: {task.name} accuracy {res.get('accuracy', float('nan')):.4f} "
                     f"± {res.get('accuracy_sd', 0.0):.4f} over {res['num_seeds']} seeds",
                     skipped, time.time() - t)
    rows += _objective_rows(name, summary, heldout, task_results)
  notes = _notes(options, bert_config, summaries)
  files.atomic_write(os.path.join(out, "results.md"),
                     results_lib.markdown(rows, "Pretraining objectives compared", notes))
  files.atomic_write(os.path.join(out, "results.csv"), results_lib.to_csv(rows))
  plots = results_lib.write_plots(rows, os.path.join(out, "plots"))
  results_lib.write_hparams(rows, os.path.join(out, "hparams"))
  print(f"results: {os.path.join(out, 'results.md')}, results.csv, {len(plots)} plots, "
        f"TensorBoard HParams: tensorboard --logdir {os.path.join(out, 'hparams')}")
  return rows
