"""Compare pretraining objectives at equal compute, on one corpus.

One plan: for each objective, write its records, pretrain the same model
size for the same steps x batch x tokens, then measure every model the same
way:

  masked_lm_accuracy   held-out masked-LM accuracy on ONE set of static
                       held-out records (the original's masking), so every
                       objective is scored on the same predictions
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
import json
import math
import os
import time

from absl import logging

from bert_tf.data import files
from bert_tf.data import pipeline
from bert_tf.data import probes
from bert_tf.data import split
from bert_tf.data import tokenization
from bert_tf.data import writer
from bert_tf.data import vocab as vocab_lib
from bert_tf.models import config as config_lib
from bert_tf.training import finetune
from bert_tf.training import losses
from bert_tf.training import loop
from bert_tf.training import objectives

# How each objective's records are written (DataOptions fields), after the
# papers: BERT's segment pairs with NSP; RoBERTa's FULL-SENTENCES with
# dynamic masking and no sentence task; ALBERT's segment pairs with sentence
# order. ELECTRA reads BERT's records (it re-masks from their positions).
RECORD_OPTIONS = {
    "mlm_nsp": {},
    "mlm": {"sentence_task": "none", "packing": "full_sentences", "dynamic_masking": True},
    "mlm_sop": {"sentence_task": "sop"},
}


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
  """One comparison: corpus, model, budget, objectives, evaluations."""
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
  vocab_size = len(tokenization.load_vocab(vocab_file).tokens)
  config_path = os.path.join(out, "bert_config.json")
  bert_config = config_lib.write_bert_config(
      options.bert_config_file, vocab_size, config_path,
      max_position_embeddings=max(options.max_seq_length,
                                  config_lib.BertConfig.from_json_file(
                                      options.bert_config_file).max_position_embeddings))
  return train_txt, held_txt, vocab_file, bert_config


def write_records(options, text_file, vocab_file, name, record_options, dupe_factor):
  """Records of `text_file` under output_dir/records/<name> (skipped when
  their manifest exists); returns (the records glob, whether they were
  written before)."""
  directory = os.path.join(options.output_dir, "records", name)
  outputs = writer.Outputs(directory=directory, num_shards=2)
  written = files_exists(outputs.manifest_path())
  if not written:
    data_options = writer.DataOptions(
        max_seq_length=options.max_seq_length,
        max_predictions_per_seq=options.max_predictions_per_seq, dupe_factor=dupe_factor,
        do_lower_case=options.do_lower_case, random_seed=options.seed, block_bytes=256 << 10,
        **record_options)
    writer.create_pretraining_data(text_file, outputs, vocab_file, data_options,
                                   num_workers=writer.default_num_workers())
  return directory + "/*.tfrecord", written


def _records_name(objective):
  """Objectives with the same record options share their records."""
  options = RECORD_OPTIONS.get(objective, {})
  for name, other in RECORD_OPTIONS.items():
    if other == options:
      return name
  return objective


def pretrain(options, objective, records, bert_config):
  """Pretrains `objective` on `records`; returns its summary dict (written to
  output_dir/<objective>/pretrain.json; read back on a rerun)."""
  model_dir = os.path.join(options.output_dir, objective, "model")
  summary_path = os.path.join(options.output_dir, objective, "pretrain.json")
  done = _read_json(summary_path)
  if done:
    return done, True
  config = loop.TrainConfig(
      input_file=records, output_dir=model_dir, do_train=True,
      max_seq_length=options.max_seq_length,
      max_predictions_per_seq=options.max_predictions_per_seq,
      train_batch_size=options.train_batch_size, learning_rate=options.learning_rate,
      num_train_steps=options.num_train_steps,
      num_warmup_steps=options.num_train_steps // 10,
      save_checkpoints_steps=max(100, options.num_train_steps // 4),
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
             "seconds": time.time() - start, "parameters": params,
             "train_tokens": options.num_train_steps * options.train_batch_size
                             * options.max_seq_length,
             "final_train_metrics": result["train"]}
  files.write_json(summary_path, summary)
  return summary, False


def heldout_mlm_accuracy(options, bert_config, model_dir, records, max_batches=50):
  """Masked-LM accuracy (and prediction count) of the model in model_dir on
  the shared static held-out records."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert_tf.serving import export  # pylint: disable=g-import-not-at-top
  model, _ = export.load_pretrainer(bert_config, model_dir)
  info = pipeline.check_data(records, options.max_seq_length, options.max_predictions_per_seq)
  dataset = pipeline.make_dataset(info.files, 32, options.max_seq_length,
                                  options.max_predictions_per_seq, is_training=False,
                                  compression=info.compression)
  @tf.function
  def forward(batch):
    return losses.mlm_sums(model(batch, training=False)["mlm_logits"], batch)

  correct = weight = 0.0
  for i, batch in enumerate(dataset):
    if i >= max_batches:
      break
    sums = forward(batch)
    correct += float(sums["mlm_correct"])
    weight += float(sums["mlm_weight_sum"])
  if not weight:
    raise ValueError(f"held-out records {records} hold no masked-LM prediction")
  return {"masked_lm_accuracy": correct / weight, "predictions": weight}


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


def _objective_rows(options, name, summary, mlm, task_results):
  """Result rows of one objective (see experiments.results)."""
  from bert_tf.experiments import results as results_lib  # pylint: disable=g-import-not-at-top
  p = mlm["masked_lm_accuracy"]
  rows = [results_lib.row(name, "masked_lm_accuracy", p, 0.0, 1, summary,
                          se=math.sqrt(p * (1 - p) / mlm["predictions"]))]
  for task_name, res in task_results:
    key = "pearson" if res.get("task_type") == "regression" else "accuracy"
    rows.append(results_lib.row(name, f"{task_name}_{key}", res[key], res[f"{key}_sd"],
                                res["num_seeds"], summary))
  return rows


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
  progress.stage(f"text: split, vocab ({bert_config.vocab_size} entries), held-out records, "
                 f"{len(all_tasks)} fine-tuning tasks", seconds=time.time() - start)
  rows = []
  for name in options.objectives:
    t = time.time()
    records, skipped = write_records(options, train_txt, vocab_file, _records_name(name),
                                     RECORD_OPTIONS.get(name, {}), options.dupe_factor)
    progress.stage(f"{name}: records {records}", skipped, time.time() - t)
    t = time.time()
    summary, skipped = pretrain(options, name, records, bert_config)
    progress.stage(f"{name}: pretrained {summary['steps']} steps in {summary['seconds']:.0f} s",
                   skipped, time.time() - t)
    t = time.time()
    mlm_path = os.path.join(out, name, "heldout_mlm.json")
    mlm = _read_json(mlm_path)
    skipped = mlm is not None
    if not skipped:
      mlm = heldout_mlm_accuracy(options, bert_config, summary["model_dir"], heldout_records)
      files.write_json(mlm_path, mlm)
    progress.stage(f"{name}: held-out masked-LM accuracy {mlm['masked_lm_accuracy']:.4f}",
                   skipped, time.time() - t)
    task_results = []
    for task in all_tasks:
      t = time.time()
      res, skipped = finetune_task(options, name, task, vocab_file, bert_config,
                                   summary["model_dir"])
      task_results.append((task.name, res))
      progress.stage(f"{name}: {task.name} accuracy {res.get('accuracy', float('nan')):.4f} "
                     f"± {res.get('accuracy_sd', 0.0):.4f} over {res['num_seeds']} seeds",
                     skipped, time.time() - t)
    rows += _objective_rows(options, name, summary, mlm, task_results)
  notes = [f"corpus {options.corpus}; model {options.bert_config_file} "
           f"({bert_config.num_hidden_layers} layers, hidden {bert_config.hidden_size}); "
           f"every objective pretrained {options.num_train_steps} steps x batch "
           f"{options.train_batch_size} x {options.max_seq_length} tokens, lr "
           f"{options.learning_rate:g}, seed {options.seed}",
           "masked_lm_accuracy: one pretraining run each, on the same static held-out "
           "records; its ± is the binomial standard error over the predictions",
           f"probe_* and task metrics: fine-tuned (all weights) for {options.finetune_epochs:g} "
           f"epochs at lr {options.finetune_learning_rate:g} from each pretrained model, "
           f"mean ± sd over {options.seeds} fine-tuning seeds; the seeds measure fine-tuning "
           "noise only, not pretraining noise (one pretraining run per objective)"]
  files.atomic_write(os.path.join(out, "results.md"),
                     results_lib.markdown(rows, "Pretraining objectives compared", notes))
  files.atomic_write(os.path.join(out, "results.csv"), results_lib.to_csv(rows))
  plots = results_lib.write_plots(rows, os.path.join(out, "plots"))
  results_lib.write_hparams(rows, os.path.join(out, "hparams"))
  print(f"results: {os.path.join(out, 'results.md')}, results.csv, {len(plots)} plots, "
        f"TensorBoard HParams: tensorboard --logdir {os.path.join(out, 'hparams')}")
  return rows
