"""Fine-tuning BERT on a GLUE-style TSV task, as the original run_classifier.

`run(FinetuneConfig, BertConfig) -> results` reads the task, then for each
seed: builds a `classification.classifier.BertClassifier`, fills its
encoder from `init_checkpoint`, trains and evaluates on the dev file with
the shared recipe of downstream/finetune.py. A task may be regression
(mean squared error on one output; the original had none).

Metrics: classification: accuracy, Matthews correlation (multi-class as
Gorodkin's R_K), F1 of the second label (binary tasks: "1" of "0"/"1");
regression: Pearson, Spearman, MSE; those of each further dev file
(`extra_dev_files`, MNLI's mismatched) prefixed with its name. Each is the
mean over seeds, with `<name>_median`, `<name>_sd` and each seed's value.
A GLUE task (`task_name`, see classification/glue.py) reads its files by
the task's layout, takes its fixed label list, and names its official
metrics (`official_metrics`). The first seed's classifier is saved as
output_dir/seed_<n>/model (a tf.train.Checkpoint(model=...)) for export.
"""

import dataclasses
import math
import os

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.io import file_io as files
from bert_tf.data.input import length_buckets
from bert_tf.downstream import export
from bert_tf.downstream import finetune
from bert_tf.downstream.classification import glue
from bert_tf.downstream.classification import tsv as classification
from bert_tf.models.config import BertConfig
from bert_tf.util import bootstrap

# Below this many dev examples a single run's score is noisy: said in the output.
SMALL_DEV_SET = 1000


def accuracy(labels, predictions):
  return float(np.mean(np.asarray(labels) == np.asarray(predictions)))


def f1_score(labels, predictions, positive=1):
  """F1 of class `positive`; 0.0 when it is never predicted nor present."""
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  tp = np.sum((predictions == positive) & (labels == positive))
  fp = np.sum((predictions == positive) & (labels != positive))
  fn = np.sum((predictions != positive) & (labels == positive))
  return float(2 * tp / (2 * tp + fp + fn)) if tp + fp + fn else 0.0


def matthews_corrcoef(labels, predictions, num_classes):
  """Matthews correlation; for K classes Gorodkin's R_K (0.0 when undefined)."""
  confusion = np.zeros([num_classes, num_classes], np.float64)
  np.add.at(confusion, (np.asarray(labels), np.asarray(predictions)), 1)
  t, p = confusion.sum(axis=1), confusion.sum(axis=0)
  c, s = np.trace(confusion), confusion.sum()
  denominator = math.sqrt((s * s - p @ p) * (s * s - t @ t))
  return float((c * s - t @ p) / denominator) if denominator else 0.0


def _ranks(x):
  """1-based ranks, ties sharing their average rank."""
  x = np.asarray(x, np.float64)
  order = np.argsort(x, kind="stable")
  ranks = np.empty(len(x), np.float64)
  sorted_x = x[order]
  start = 0
  for end in range(1, len(x) + 1):
    if end == len(x) or sorted_x[end] != sorted_x[start]:
      ranks[order[start:end]] = (start + end + 1) / 2.0
      start = end
  return ranks


def spearman(x, y):
  return finetune.pearson(_ranks(x), _ranks(y))


def compute_metrics(outputs, labels, space):
  """Dev metrics from model outputs.

  Args:
    outputs: float [n, num_outputs] logits (regression: [n, 1] values).
    labels: int class ids [n] or float values [n].
    space: the task's classification.LabelSpace.
  """
  if space.regression:
    values = np.asarray(outputs, np.float64)[:, 0]
    return {"pearson": finetune.pearson(values, labels), "spearman": spearman(values, labels),
            "mse": float(np.mean((values - np.asarray(labels)) ** 2))}
  predictions = np.argmax(outputs, axis=-1)
  metrics = {"accuracy": accuracy(labels, predictions),
             "mcc": matthews_corrcoef(labels, predictions, len(space.labels))}
  if len(space.labels) == 2:
    metrics["f1"] = f1_score(labels, predictions, positive=1)
  return metrics


@dataclasses.dataclass(frozen=True)
class TaskData:
  """Features (dicts of int32 [n, seq]) and targets of each split read
  (None: a split the config's steps do not read)."""
  space: classification.LabelSpace
  train: dict | None
  train_labels: np.ndarray | None
  dev: dict | None
  dev_labels: np.ndarray | None
  test: dict | None
  notes: tuple
  extra_dev: tuple = ()  # (name, features, labels) of each extra dev file


def example_reader(config):
  """read(path, test) -> Examples: by the GLUE task's layouts, or the columns."""
  if config.task_name:
    task = glue.preset(config.task_name)
    return lambda path, test=False: glue.read_split(task, path, test)
  columns = (config.text_a_column, config.text_b_column or None, config.label_column)
  return lambda path, test=False: classification.read_tsv(
      path, *columns, require_labels=not test)


def task_space(config, train=None):
  """The task's LabelSpace: a GLUE task's label list, else that of the train
  examples (`train`, or read from config.train_file); None without either."""
  if config.task_name:
    labels = glue.preset(config.task_name).labels
    return classification.LabelSpace(labels, not labels)
  if train is None:
    if not config.train_file:
      return None
    train = example_reader(config)(config.train_file)
  return classification.label_space(train, config.task_type)


def load_task(config, space=None):
  """Reads and tokenizes the files of the steps `config` takes: train
  (do_train), dev and extra dev (do_eval), test (do_predict, when there is
  a test_file). space: the task's LabelSpace (None: `task_space`'s)."""
  tokenizer = finetune.config_tokenizer(config)
  read = example_reader(config)
  train = read(config.train_file) if config.do_train else None
  space = space or task_space(config, train)
  if space is None:
    raise ValueError("train_file is required: the task's labels are its labels")
  splits = {"train": train} if config.do_train else {}
  if config.do_eval:
    splits["dev"] = read(config.dev_file)
    splits.update({name: read(path) for name, path in config.extra_dev_files})
  paths = dict(config.extra_dev_files, train=config.train_file, dev=config.dev_file)
  features, labels, notes = {}, {}, []
  for name, examples in splits.items():
    features[name], truncated = classification.convert_examples(
        examples, tokenizer, config.max_seq_length)
    labels[name] = classification.label_values(examples, space, paths[name])
    if truncated:
      notes.append(f"{truncated} of {len(examples)} {name} examples cut to "
                   f"max_seq_length={config.max_seq_length}")
  test = None
  if config.do_predict and config.test_file:
    test, _ = classification.convert_examples(read(config.test_file, test=True), tokenizer,
                                              config.max_seq_length)
  extra_dev = tuple((name, features[name], labels[name])
                    for name, _ in config.extra_dev_files if name in features)
  return TaskData(space, features.get("train"), labels.get("train"), features.get("dev"),
                  labels.get("dev"), test, tuple(notes), extra_dev)


def _loss_fn(space):
  if space.regression:
    return lambda labels, outputs: tf.reduce_mean(
        tf.square(outputs[:, 0] - tf.cast(labels, tf.float32)))
  return lambda labels, outputs: tf.reduce_mean(
      tf.nn.sparse_softmax_cross_entropy_with_logits(tf.cast(labels, tf.int32), outputs))


def train_seed(config, bert_config, task, seed, seed_dir):
  """Trains one classifier with `seed`; returns (model, dev metrics ({}
  without a dev set: do_eval false), init description)."""
  model, described = finetune.build_classifier(bert_config, task.space.num_outputs,
                                      config.init_checkpoint, seed,
                                      labels=list(task.space.labels) or None)

  def evaluate(predict_fn, lengths):
    outputs = finetune.predict(model, task.dev, config.eval_batch_size, predict_fn, lengths)
    return compute_metrics(outputs, task.dev_labels, task.space), None

  metrics, _ = finetune.fit(model, _loss_fn(task.space), task.train, task.train_labels, config, seed,
                   seed_dir, evaluate if task.dev is not None else None)
  return model, metrics, described


def noise_note(num_dev, results, space):
  """The line that says how noisy a dev score of this size is (or None)."""
  if space.regression or num_dev >= SMALL_DEV_SET:
    return None
  acc = results["accuracy"]
  se = math.sqrt(max(acc * (1 - acc), 1e-12) / num_dev)
  return (f"note: the dev set has only {num_dev} examples: accuracy {acc:.4f} has a "
          f"sampling standard error of about {se:.4f} from the examples alone, before "
          f"seed-to-seed variation (accuracy_sd); compare means over several seeds "
          f"(--seeds) and differences larger than both")


def dev_outcomes(outputs, task):
  """Each dev example's outcome: 1/0 correct (classification) or
  (prediction, target) (regression), by dev row."""
  if task.space.regression:
    return np.stack([np.asarray(outputs, np.float64)[:, 0],
                     np.asarray(task.dev_labels, np.float64)], axis=1)
  return (np.argmax(outputs, axis=-1) == np.asarray(task.dev_labels)).astype(np.int64)


def write_test_predictions(path, model, task, config):
  """test_results.tsv: each test example's label and class probabilities
  (regression: its value)."""
  outputs = finetune.predict(model, task.test, config.eval_batch_size,
                    lengths=length_buckets.boundaries(config.max_seq_length,
                                                      config.length_buckets))
  if task.space.regression:
    text = "prediction\n" + "".join(f"{v:.6f}\n" for v in outputs[:, 0])
  else:
    probs = tf.nn.softmax(outputs).numpy()
    header = "label\t" + "\t".join(f"p_{label}" for label in task.space.labels)
    rows = [task.space.labels[int(np.argmax(p))] + "\t" + "\t".join(f"{x:.6f}" for x in p)
            for p in probs]
    text = header + "\n" + "".join(r + "\n" for r in rows)
  files.atomic_write(path, text)


def run(config: finetune.FinetuneConfig, bert_config: BertConfig):
  """Fine-tunes `config.seeds` classifiers and evaluates them on the dev file
  (do_eval; do_predict: the first seed's test predictions).

  Returns:
    dict: each metric's mean over seeds, `<metric>_median` and `<metric>_sd`,
    `seed_<s>_<metric>`
    per seed, num_seeds, num_train_examples, num_dev_examples,
    num_train_steps, task_type, labels (list), init (what the encoder was
    read from), notes (list of lines, the noise note among them).
    eval_results.txt in output_dir holds the numbers (do_eval).

  Raises:
    ValueError, FileNotFoundError: bad config, files, columns or labels
      (before any training).
  """
  config.validate(bert_config)
  if not config.do_train:
    raise ValueError("do_train=false: downstream/evaluate_only.py runs the model as it is")
  task = load_task(config)
  finetune.config_tokenizer(config, bert_config)  # its size is the model's
  num_train = len(task.train_labels)
  num_dev = 0 if task.dev_labels is None else len(task.dev_labels)
  steps = finetune.num_train_steps(config, num_train)
  logging.info("Fine-tuning on %d examples (%s, %s), %d steps of batch %d, %d seed(s); "
               "dev %d examples", num_train,
               "regression" if task.space.regression else f"{len(task.space.labels)} classes",
               "pairs" if config.text_b_column else "single texts", steps,
               config.train_batch_size, config.seeds, num_dev)
  short = finetune.too_few_steps_warning(config, num_train)
  if short:
    logging.warning("%s", short)
  lengths = length_buckets.boundaries(config.max_seq_length, config.length_buckets)
  per_seed, results, outcomes = [], {}, []
  for i in range(config.seeds):
    seed = config.seed + i
    seed_dir = export.seed_dir(config.output_dir, seed)
    model, metrics, described = train_seed(config, bert_config, task, seed, seed_dir)
    if task.dev is not None:  # each dev example's outcome (the comparison's bootstrap)
      outcomes.append(dev_outcomes(finetune.predict(model, task.dev, config.eval_batch_size,
                                                    lengths=lengths), task))
    for name, features, labels in task.extra_dev:
      outputs = finetune.predict(model, features, config.eval_batch_size, lengths=lengths)
      metrics.update({f"{name}_{k}": v for k, v in
                      compute_metrics(outputs, labels, task.space).items()})
    per_seed.append(metrics)
    results.update({f"seed_{seed}_{k}": v for k, v in metrics.items()})
    if i == 0:
      results["init"] = described
      if config.save_model:
        tf.train.Checkpoint(model=model).write(os.path.join(seed_dir, finetune.CHECKPOINT_NAME))
      if task.test is not None:
        write_test_predictions(os.path.join(config.output_dir, "test_results.tsv"),
                               model, task, config)
    del model
    keras.backend.clear_session()
  results.update(finetune.summarize(per_seed))
  results.update(num_seeds=config.seeds, num_train_examples=num_train,
                 num_dev_examples=num_dev, num_train_steps=steps,
                 task_type="regression" if task.space.regression else "classification")
  notes = list(task.notes) + ([short] if short else [])
  note = None
  if config.do_eval:
    finetune.write_eval_results(os.path.join(config.output_dir, "eval_results.txt"), results)
    note = noise_note(num_dev, results, task.space)
  if note:
    notes.append(note)
  results["labels"] = list(task.space.labels)
  results["notes"] = notes
  if outcomes:
    results["outcomes"] = {("pearson" if task.space.regression else "accuracy"): bootstrap.record(
        "pearson" if task.space.regression else "mean", range(num_dev), outcomes)}
  if config.task_name:
    results["official_metrics"] = list(glue.preset(config.task_name).metrics)
  return results
