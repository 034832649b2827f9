"""The comparison's stages: each makes one result under output_dir and is
skipped when that result is already there, so a rerun continues where a
run stopped.

  text          train.txt / heldout.txt, vocab.txt, bert_config.json
  records       records/<key>/ (done when its manifest exists)
  pretrain      runs/<key>/pretrain.json (the loop resumes from its
                checkpoint until then)
  heldout       runs/<key>/heldout_mlm.json
  pair tasks    probes/<task>/{train,dev}.tsv (the fine-tuned pair tasks)
  finetune      runs/<key>/finetune/<task>-<settings key>/results.json
                (a conll task's feature-based training: frozen_<task>-<key>)
  instruments   runs/<key>/instruments.json (extended when tasks are added)

Every JSON result goes through `cached`, the one rule for reusing a stage:
read the file when it holds a complete result, else compute and write it,
with the wall time it took beside it (<result>.seconds.json), so a table
finished over several invocations still says what it cost.
"""

import dataclasses
import os
import time

import numpy as np
from absl import logging

from bert_tf.io import file_io as files
from bert_tf.data import pair_tasks
from bert_tf.data.input import pipeline
from bert_tf.data.text import split
from bert_tf.data.tokenizers import vocab_learning as vocab_lib
from bert_tf.data.tokenizers import wordpiece_vocab
from bert_tf.data.pretraining import writer
from bert_tf.experiments import arms as arms_lib
from bert_tf.experiments import heldout_reading
from bert_tf.experiments import plan as plan_lib
from bert_tf.models import config as config_lib
from bert_tf.downstream import finetune
from bert_tf.training import evaluation
from bert_tf.training import loop
from bert_tf.training import objectives
from bert_tf.util import bootstrap


class RunStopped(Exception):
  """A pretraining run stopped by a signal before its last step: the plan
  stops too (nothing marked done), and the same command continues it."""


def cached(path, compute, complete=lambda result: True):
  """A stage's JSON result: (the result at `path`, True) when it is there
  and `complete(result)`; else (compute(the partial result or None),
  False), written to `path` once computed (never a half-written file)."""
  previous = files.read_json(path, "stage result") if plan_lib.exists(path) else None
  if previous is not None and complete(previous):
    return previous, True
  start = time.time()
  result = compute(previous)
  # A stage extended from a partial result (instruments) adds to its time.
  seconds = time.time() - start + ((recorded_seconds(path) or 0.0) if previous else 0.0)
  files.write_json(path, result)
  files.write_json(seconds_path(path), {"seconds": seconds})
  return result, False


def seconds_path(path):
  """Where `cached` keeps the wall time of the stage that wrote `path`."""
  return os.path.splitext(path)[0] + ".seconds.json"


def recorded_seconds(path):
  """The wall time the stage that wrote `path` took when it ran, or None
  (a result written before stage times were kept, or none at all)."""
  where = seconds_path(path)
  if not plan_lib.exists(where):
    return None
  return float(files.read_json(where, "stage time")["seconds"])


# ------------------------------------------------------------------------------
# Text and records
# ------------------------------------------------------------------------------


def prepare_text(options):
  """Held-out split, vocab and model config; returns (train.txt, heldout.txt,
  vocab file, BertConfig)."""
  out = options.output_dir
  train_txt, held_txt = os.path.join(out, "train.txt"), os.path.join(out, "heldout.txt")
  if not (plan_lib.exists(train_txt) and plan_lib.exists(held_txt)):
    split.split_corpus(options.corpus, train_txt, held_txt, options.heldout_every)
  vocab_file = options.vocab_file
  if not vocab_file:
    vocab_file = os.path.join(out, "vocab.txt")
    if not plan_lib.exists(vocab_file):
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


def records_outputs(options, name, text_file):
  """The writer.Outputs of the records `name` of `text_file`."""
  return writer.Outputs(directory=os.path.join(options.output_dir, "records", name),
                        num_shards=plan_lib.record_shards(files.size(text_file)))


def write_records(options, text_file, vocab_file, name, data_options):
  """Records of `text_file` under output_dir/records/<name> (skipped when
  their manifest exists); returns (the records glob, whether they were
  written before)."""
  outputs = records_outputs(options, name, text_file)
  written = plan_lib.exists(outputs.manifest_path())
  if not written:
    start = time.time()
    writer.create_pretraining_data(text_file, outputs, vocab_file, data_options,
                                   num_workers=writer.default_num_workers())
    files.write_json(seconds_path(outputs.manifest_path()), {"seconds": time.time() - start})
  return outputs.directory + "/*.tfrecord", written


# ------------------------------------------------------------------------------
# Pretraining
# ------------------------------------------------------------------------------


def steady_examples_per_second(history):
  """The training rate of a run: the mean examples/s of its host loops after
  the first (which includes tracing and compiling the step), or the first's
  when it is the only one; 0.0 for a run that trained no step."""
  rates = [h["examples_per_second"] for h in history]
  steady = rates[1:] or rates
  return sum(steady) / len(steady) if steady else 0.0


def pretrain_path(options, run):
  return os.path.join(run.directory(options), "pretrain.json")


def pretrained(options, run):
  """Whether `run`'s pretraining is finished (its pretrain.json holds a
  summary): its records are then not needed again."""
  path = pretrain_path(options, run)
  return plan_lib.exists(path) and bool(files.read_json(path, "pretraining summary"))


def pretrain(options, run, records, bert_config):
  """Pretrains `run` on `records` (or reads the same run of
  --reuse_runs_from's comparison); returns (its summary dict, whether it
  was done before). The summary is runs/<key>/pretrain.json."""

  def compute(_):
    other = reused_run(options, run)
    if other is not None:
      return other
    return _pretrain(options, run, records, bert_config)

  return cached(pretrain_path(options, run), compute, complete=bool)


def check_reuse(options, inputs):
  """Raises ValueError (one line) when --reuse_runs_from is not a comparison
  of the same corpus, split, vocab and model (`inputs`: this plan's
  plan_inputs; the corpus may be named by another path, and the inputs of
  evaluation sets alone may differ)."""
  if not options.reuse_runs_from:
    return
  path = os.path.join(options.reuse_runs_from, plan_lib.PLAN_NAME)
  if not plan_lib.exists(path):
    raise ValueError(f"--reuse_runs_from={options.reuse_runs_from}: no {plan_lib.PLAN_NAME} "
                     "there (not a comparison's --output_dir)")
  saved = files.read_json(path, "comparison plan")
  changed = [k for k in sorted(set(saved) | set(inputs))
             if k != "corpus" and k not in plan_lib.EVALUATION_INPUTS
             and saved.get(k) != inputs.get(k)]
  if changed:
    raise ValueError(f"--reuse_runs_from={options.reuse_runs_from}: a comparison of other "
                     f"inputs ({', '.join(changed)} differ): its runs are not this plan's")


def reused_run(options, run):
  """The pretraining summary of the same run (the same key: records,
  training and model) finished in --reuse_runs_from's comparison, its model
  read in place; None when there is none."""
  if not options.reuse_runs_from:
    return None
  directory = os.path.join(options.reuse_runs_from, "runs", run.key)
  path = os.path.join(directory, "pretrain.json")
  if not plan_lib.exists(path):
    return None
  summary = files.read_json(path, "pretraining summary")
  if not summary or summary.get("steps") != run.steps:
    return None
  # A run that comparison read from a third one is where it names (tables
  # share runs along a chain: each reuses the one before it).
  model_dir = (summary["model_dir"] if summary.get("reused_from")
               else os.path.join(directory, "model"))
  if not plan_lib.exists(os.path.join(model_dir, "checkpoint")):
    raise ValueError(f"--reuse_runs_from={options.reuse_runs_from}: run {run.key} has no "
                     f"model at {model_dir} (its pretrain.json names it)")
  return dict(summary, model_dir=model_dir, reused_from=options.reuse_runs_from)


def _initialize(options, run, bert_config):
  """The random_init arm's "pretraining": its model as initialized by the
  run's seed, saved as a step-0 checkpoint of its objective (what
  fine-tuning and the instruments read, as any run's); returns its
  summary."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert_tf.training import strategy as strategies  # pylint: disable=g-import-not-at-top
  directory = run.directory(options)
  model_dir = os.path.join(directory, "model")
  config = plan_lib.train_config(options, run.arm, "", model_dir, 1, run.seed)
  objective = objectives.get(run.arm.objective)
  start = time.time()
  strategy = strategies.make_strategy(config.strategy, config.tpu_name, config.tpu_zone,
                                      config.gcp_project)
  model, _, step = loop.build(config, bert_config, strategy, objective)
  checkpoint = tf.train.Checkpoint(model=model, step=step,
                                   **objectives.checkpoint_variables(objective))
  tf.train.CheckpointManager(checkpoint, model_dir, max_to_keep=1).save(checkpoint_number=0)
  files.write_json(os.path.join(directory, "run.json"),
                   {"arm": run.arm.describe(), "objective": run.arm.objective,
                    "pretrain_seed": run.seed_index, "seed": run.seed, "steps": 0,
                    "never_pretrained": True})
  return {"objective": run.arm.objective, "arm": run.arm.name, "model_dir": model_dir,
          "steps": 0, "num_train_steps": 0, "budget": options.budget, "seed": run.seed,
          "seconds": time.time() - start, "parameters": int(model.count_params()),
          "train_tokens": 0, "step_flops": 0, "train_flops": 0, "final_train_metrics": {},
          "examples_per_second": "", "flops_per_second": ""}


def _pretrain(options, run, records, bert_config):
  if run.steps == 0:
    return _initialize(options, run, bert_config)
  directory = run.directory(options)
  model_dir = os.path.join(directory, "model")
  config = plan_lib.train_config(options, run.arm, records, model_dir, run.steps, run.seed)
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
  flops = plan_lib.step_flops(options, run.arm, bert_config, config.train_batch_size)
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
  return summary


# ------------------------------------------------------------------------------
# Held-out masked LM
# ------------------------------------------------------------------------------


def mask_id(vocab_file):
  """The id of [MASK] in the comparison's vocab."""
  return wordpiece_vocab.load_vocab(vocab_file).mask_id


def record_outcomes(model, dataset, max_batches):
  """[(masked-LM hits, predictions)] of each held-out record (float [n, 2]),
  from the model's `mlm_logits` (eager, the evaluator's batches); None for
  a model without them."""
  from bert_tf.training import losses  # pylint: disable=g-import-not-at-top
  out = []
  for features in dataset.take(max_batches):
    logits = model(features, training=False).get("mlm_logits")
    if logits is None:
      return None
    _, hit = losses.sparse_cross_entropy_and_hit(features["masked_lm_ids"], logits)
    weights = np.asarray(features["masked_lm_weights"], np.float64)
    hits = np.asarray(hit, np.float64).reshape(weights.shape) * weights
    out.append(np.stack([hits.sum(axis=1), weights.sum(axis=1)], axis=1))
  return np.concatenate(out) if out else None


def heldout_path(options, run):
  return os.path.join(run.directory(options), "heldout_mlm.json")


def heldout(options, run, bert_config, model_dir, records, mask_id):
  """(the held-out figures of `run`'s model, whether measured before):
  runs/<key>/heldout_mlm.json (measured again when it lacks the split by
  input kind, which a masked-LM model's figures carry, or the per-record
  outcomes)."""
  return cached(heldout_path(options, run),
                lambda _: heldout_metrics(options, bert_config, model_dir, records, mask_id),
                complete=lambda r: "kinds_measured" in r and "outcomes" in r)


def heldout_metrics(options, bert_config, model_dir, records, mask_id, max_batches=50):
  """Held-out figures of the model in model_dir on the shared static
  held-out records (every record up to max_batches batches of 32, a short
  last batch included): masked-LM accuracy and its prediction count; for a
  model with a masked-LM head, the accuracy where the input held [MASK]
  (`masked_lm_accuracy_at_mask`, what context alone predicts) and where it
  held the label itself (`masked_lm_accuracy_kept`, predictable by
  copying), with their counts; and the objective's own `heldout_figures`
  (experiments.heldout_reading says how they read in the table)."""
  from bert_tf.training import checkpoints  # pylint: disable=g-import-not-at-top
  from bert_tf.training import losses  # pylint: disable=g-import-not-at-top
  objective = objectives.from_checkpoint(model_dir)
  model, _ = checkpoints.load_pretrainer(bert_config, model_dir, objective)
  info = pipeline.check_data(records, options.max_seq_length, options.max_predictions_per_seq)
  dataset = pipeline.make_dataset(info.files, 32, options.max_seq_length,
                                  options.max_predictions_per_seq, is_training=False,
                                  compression=info.compression, drop_remainder=False)

  def sums(outputs, features):
    out = objective.heldout_sums(outputs, features)
    if ("mlm_logits" in outputs
        and heldout_reading.reading(objective.name).mlm_metric == "masked_lm_accuracy"):
      out.update(losses.mlm_kind_sums(outputs["mlm_logits"], features, mask_id))
    return out

  evaluator = evaluation.Evaluator(model, objective, sums=sums)
  totals, _ = evaluator.totals(dataset, max_batches)
  weight = totals.get("mlm_weight_sum", 0.0)
  if not weight:
    raise ValueError(f"held-out records {records} hold no masked-LM prediction")
  figures = {"masked_lm_accuracy": totals["mlm_correct"] / weight, "predictions": weight,
             "kinds_measured": "at_mask_weight_sum" in totals}
  # Each record's (hits, predictions): the masked-LM figure's per-example
  # pieces for the multi-bootstrap, kept where they add up to it (None: not).
  outcomes = record_outcomes(model, dataset, max_batches)
  figures["outcomes"] = (
      bootstrap.record("ratio", range(len(outcomes)), [outcomes])
      if outcomes is not None and np.allclose(outcomes.sum(axis=0),
                                              [totals["mlm_correct"], weight], rtol=1e-4)
      else None)
  for kind in ("at_mask", "kept") if figures["kinds_measured"] else ():
    n = totals[f"{kind}_weight_sum"]
    if n:
      figures[f"masked_lm_accuracy_{kind}"] = totals[f"{kind}_correct"] / n
      figures[f"predictions_{kind}"] = n
  return {**figures, **objective.heldout_figures(totals)}


# ------------------------------------------------------------------------------
# Fine-tuning: the pair tasks and the user's tasks
# ------------------------------------------------------------------------------


def pair_task_files(options, held_txt):
  """Writes the pair tasks' TSVs (data.pair_tasks) from the held-out
  documents under output_dir/probes/<task>/; returns [plan.Task], named
  probe_<task> (the names of their metrics)."""
  with files.open_file(held_txt, "r") as f:
    documents = pair_tasks.parse_documents(f.read())
  tasks = []
  for name in options.pair_tasks:
    directory = os.path.join(options.output_dir, "probes", name)
    train_path, dev_path = os.path.join(directory, "train.tsv"), os.path.join(directory, "dev.tsv")
    if not plan_lib.exists(dev_path):
      rows = pair_tasks.task_rows(documents, name, seed=options.seed)
      train, dev = pair_tasks.split_rows(rows)
      limit = options.max_probe_examples
      # Written even when small: the preflight counts their rows and says
      # what a larger held-out share would give.
      files.atomic_write(train_path, pair_tasks.to_tsv(train[:limit]))
      files.atomic_write(dev_path, pair_tasks.to_tsv(dev[:limit]))
    tasks.append(plan_lib.Task(f"probe_{name}", directory, "text_a", "text_b", "label"))
  return tasks


def finetune_path(options, run, task, frozen=False):
  """Where the fine-tuning of `task` from `run` keeps its results (by the
  fine-tuning settings: other settings are other results); `frozen`: a
  tagging task's feature-based training (frozen_<task>)."""
  settings = {"epochs": options.finetune_epochs, "lr": options.finetune_learning_rate,
              "batch": options.finetune_batch_size, "seeds": options.seeds,
              "seed": options.seed, "task": task.kind_of.task_key(task),
              **task.kind_of.settings(options)}
  if frozen:
    settings.update(frozen_encoder=True, lr=options.frozen_learning_rate)
  name = f"frozen_{task.name}" if frozen else task.name
  out = os.path.join(run.directory(options), "finetune",
                     f"{name}-{arms_lib.key_of(settings)[:8]}")
  return os.path.join(out, "results.json")


def finetune_task(options, run, task, vocab_file, bert_config, init_checkpoint, frozen=False):
  """(the results dict of fine-tuning `task` from `init_checkpoint` over
  the seeds, whether done before): its kind's finetune (`frozen`: the
  feature-based job of a kind that has one)."""
  path = finetune_path(options, run, task, frozen)
  out = os.path.dirname(path)

  def compute(_):
    return task.kind_of.finetune(options, task, out, vocab_file, bert_config,
                                 init_checkpoint, frozen)

  return cached(path, compute, complete=bool)


# ------------------------------------------------------------------------------
# Instruments: the sentence head and frozen linear probes
# ------------------------------------------------------------------------------


def instruments_path(options, run):
  return os.path.join(run.directory(options), "instruments.json")


def tsv_tasks(options):
  """The --tasks a frozen linear probe reads (those of a kind with
  frozen_probe: the TSVs; a tagging task's frozen figure is a fine-tuning
  of its own, a span task has none)."""
  return [t for t in options.tasks if t.kind_of.frozen_probe]


def wanted_instruments(options, pair_sets, has_head):
  """The metric stems one run's instruments.json must hold."""
  wanted = [f"frozen_{name}_accuracy" for name in pair_sets] + [
      f"frozen_{t.name}" for t in tsv_tasks(options)]
  if has_head:
    wanted += [f"head_{name}_accuracy" for name in pair_sets]
    wanted += [f"head_{name}_accuracy_seen" for name, s in pair_sets.items()
               if s.seen is not None]
  return wanted


def has_sentence_head(objective):
  """Whether `objective`'s exported model has a sentence head (NSP or SOP)
  for the head instruments to read."""
  return objective.export_objective.sentence_name is not None


def instrument_figures(options, run, model_dir, bert_config, vocab_file, pair_sets, task_data):
  """(the head and frozen-probe figures of one run, whether measured
  before): {metric: {"value", "examples"}} in runs/<key>/instruments.json,
  extended when tasks are added. task_data: {task name: its kind's
  frozen_data}, filled on first use and shared by every run (each
  task is read and tokenized once)."""
  # The arm's objective says which figures a finished run holds, so a run
  # read back needs no model (its checkpoint may be deleted or elsewhere).
  has_head = has_sentence_head(objectives.get(run.arm.objective))
  wanted = wanted_instruments(options, pair_sets, has_head)

  def complete(figures):
    # Every figure wanted, each with its per-example outcomes.
    return (all(any(k == m or k.startswith(m + "_") for k in figures) for m in wanted)
            and all("outcomes" in f for f in figures.values()))

  def compute(previous):
    return _measure_instruments(options, run, model_dir, bert_config, vocab_file, pair_sets,
                                task_data, objectives.from_checkpoint(model_dir), has_head,
                                dict(previous or {}))

  return cached(instruments_path(options, run), compute, complete)


def _figure(kind, value_or_none, outcomes):
  """An instruments.json figure: its value, example count and per-example
  outcomes (util.bootstrap.record; ids: dev rows)."""
  outcomes = np.asarray(outcomes)
  value = float(np.mean(outcomes)) if value_or_none is None else float(value_or_none)
  return {"value": value, "examples": len(outcomes),
          "outcomes": bootstrap.record(kind, range(len(outcomes)), [outcomes])}


def _measure_instruments(options, run, model_dir, bert_config, vocab_file, pair_sets,
                         task_data, objective, has_head, figures):
  from bert_tf.experiments import instruments  # pylint: disable=g-import-not-at-top
  from bert_tf.training import checkpoints  # pylint: disable=g-import-not-at-top
  if has_head:
    pretrainer, _ = checkpoints.load_pretrainer(bert_config, model_dir, objective)
    for name, pairs in pair_sets.items():
      figures[f"head_{name}_accuracy"] = _figure(
          "mean", None, instruments.head_outcomes(pretrainer, pairs.dev, pairs.dev_labels))
      if pairs.seen is not None and len(pairs.seen_labels):
        figures[f"head_{name}_accuracy_seen"] = _figure(
            "mean", None, instruments.head_outcomes(pretrainer, pairs.seen, pairs.seen_labels))
    del pretrainer
  classifier, _ = finetune.build_classifier(bert_config, 2, init_checkpoint=model_dir)
  encoder = classifier.encoder
  for name, pairs in pair_sets.items():
    _, value, outcomes = instruments.frozen_probe(encoder, pairs.train, pairs.train_labels,
                                                  pairs.dev, pairs.dev_labels, None, pair=True)
    figures[f"frozen_{name}_accuracy"] = _figure("mean", value, outcomes)
  for task in tsv_tasks(options):
    if task.name not in task_data:
      task_data[task.name] = task.kind_of.frozen_data(options, task, vocab_file,
                                                      run.directory(options))
    data = task_data[task.name]
    kind, value, outcomes = instruments.frozen_probe(encoder, data.train, data.train_labels,
                                                     data.dev, data.dev_labels, data.space,
                                                     pair=bool(task.text_b_column))
    figures[f"frozen_{task.name}_{kind}"] = _figure(
        "pearson" if kind == "pearson" else "mean", value, outcomes)
  return figures
