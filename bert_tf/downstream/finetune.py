"""Fine-tuning apart from any one task: the loop, optimizer, seeds and
metric plumbing every task kind's training uses (classification/
finetune_tsv.py, tagging/tagging.py, span/squad_finetune.py).

The original run_classifier's recipe: AdamWeightDecay
(`optimization.AdamWeightDecay`: weight decay 0.01, no bias correction,
epsilon 1e-6), linear warmup over `warmup_proportion` of the steps then
linear decay to 0, gradients clipped to global norm 1.0 (`fit`),
`num_train_steps = int(train examples / batch size * epochs)`, batches
drop their remainder, the model of the last step is evaluated (no early
stopping); the training shuffle buffer holds the whole task (the
original's held 100 examples). `build_classifier` makes a task's model
(its head on an encoder read from `init_checkpoint`, seeded; none: random
initialization, the baseline a comparison needs), `summarize` the mean,
`<name>_median` and `<name>_sd` (sample standard deviation, ddof=1) of each
metric over seeds; TensorBoard scalars per seed under
output_dir/seed_<n>/{train,eval}, and `eval_results.txt` (`key = value`
lines, sorted, as the original's) written atomically.
"""

import dataclasses
import functools
import math
import os
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.downstream.classification import tsv as classification
from bert_tf.data.input import length_buckets
from bert_tf.downstream.classification import glue
from bert_tf.io import file_io as files
from bert_tf.util import statistics
from bert_tf.downstream.classification import classifier as classifier_lib
from bert_tf.models import hf_checkpoint
from bert_tf.models import modeling
from bert_tf.training import checkpoints
from bert_tf.training import objectives
from bert_tf.training import optimization
from bert_tf.training import recipe

CLIP_NORM = 1.0
CHECKPOINT_NAME = "model"
CLASSIFICATION_METRICS = ("accuracy", "f1", "mcc")
# Fewer optimizer steps than this and a run is said to be too short to learn.
# The original recipe was published for tasks of 230 steps and more (RTE:
# 2,490 examples / 32 x 3 epochs = 233; MRPC 343), and with 10% warmup a run
# under 10 steps has none. At lr 5e-5 each weight moves at most about
# steps x lr: 7 steps, 3.5e-4, a fiftieth of the initializer's 0.02, so the
# new head stays near its random start (measured on a 76-row task: dev
# accuracy at chance, 0.500, against 0.6+ in 102 steps; the README's
# small-task recipe). 100 steps is below every task the recipe was
# published for.
MIN_TRAIN_STEPS = 100
# The rate of the small-task recipe (docs/tools.md#a-small-task); the warning
# above suggests it, never a rate already in use.
SMALL_TASK_LEARNING_RATE = 1e-4
REGRESSION_METRICS = ("pearson", "spearman", "mse")


@dataclasses.dataclass(frozen=True)
class FinetuneRecipe:
  """What every task of the finetune tool has (defaults: the original
  run_classifier's): its files, its model files, its recipe (the fields
  training/recipe.py checks) and steps. FinetuneConfig (TSV columns) and
  tagging.TaggingConfig extend it.

  test_file "" for none. init_checkpoint "": random initialization. seeds:
  how many runs (seed, seed + 1, ...). task_type: what the run is, one of
  the finetune tool's --task_type values. do_train, do_eval, do_predict: the
  original run_classifier's steps: train (on train_file), evaluate on the
  dev files, predict test_file (when there is one). do_train False takes
  the model as it is from init_checkpoint, a fine-tuned transformers
  folder (downstream/evaluate_only.py). spm_model_file: a SentencePiece
  model (ALBERT's) in the place of vocab_file, which is then not read.
  """
  train_file: str = ""
  dev_file: str = ""
  output_dir: str = ""
  vocab_file: str = ""
  spm_model_file: str = ""
  test_file: str = ""
  do_lower_case: bool = True
  max_seq_length: int = 128
  init_checkpoint: str = ""
  num_train_epochs: float = recipe.num_train_epochs(3.0)
  learning_rate: float = recipe.learning_rate(5e-5)
  warmup_proportion: float = recipe.warmup_proportion(0.1)
  weight_decay: float = 0.01
  train_batch_size: int = recipe.batch_size(32)
  eval_batch_size: int = recipe.batch_size(32)
  seeds: int = recipe.seeds(1)
  seed: int = 0
  task_type: str = "auto"
  save_model: bool = True
  # Batches cut to the shortest of this many lengths that holds their
  # longest example (data/input/length_buckets.py); 1: padded to max_seq_length,
  # the original's.
  length_buckets: int = 8
  do_train: bool = True
  do_eval: bool = True
  do_predict: bool = True

  def required_fields(self):
    """The fields that must not be empty."""
    return (("train_file",) if self.do_train else ()) + (
        ("dev_file",) if self.do_eval else ()) + ("output_dir",)

  def check_task(self):
    """Raises ValueError naming a task field out of its range (task_type)."""

  def validate(self, bert_config=None):
    """Raises ValueError naming the field for a value that cannot run."""
    for name in self.required_fields():
      if not getattr(self, name):
        raise ValueError(f"{name} is required")
    if not (self.vocab_file or self.spm_model_file):
      raise ValueError("vocab_file is required (or spm_model_file, a SentencePiece model)")
    if not (self.do_train or self.do_eval or (self.do_predict and self.test_file)):
      raise ValueError("do_train, do_eval and do_predict are off (or do_predict has no "
                       "test_file): nothing to do")
    if not self.do_train and not self.init_checkpoint:
      raise ValueError("init_checkpoint is required with do_train=false: the fine-tuned "
                       "model to evaluate as it is (a transformers *ForSequenceClassification "
                       "or *ForTokenClassification folder)")
    recipe.check(self)
    checks = [
        ("max_seq_length", self.max_seq_length >= 4),
        ("length_buckets", self.length_buckets >= 1),
    ]
    for name, ok in checks:
      if not ok:
        raise ValueError(f"{name}={getattr(self, name)} is out of range")
    self.check_task()
    if bert_config is not None and self.max_seq_length > bert_config.max_position_embeddings:
      raise ValueError(f"max_seq_length={self.max_seq_length} exceeds the bert_config's "
                       f"max_position_embeddings={bert_config.max_position_embeddings}")


@dataclasses.dataclass(frozen=True)
class FinetuneConfig(FinetuneRecipe):
  """A sentence classification or regression task on TSVs: FinetuneRecipe's
  files and recipe, plus its columns, header names or 0-based indices (as
  str); text_b_column "" for single-sentence tasks. task_type: "auto",
  "classification" or "regression". task_name: a GLUE task
  (downstream/classification/glue.py) whose layouts read the files and
  whose label list is the classes. extra_dev_files: (name, path) pairs
  evaluated after training, their metrics prefixed `<name>_`.
  """
  text_a_column: str = "sentence"
  text_b_column: str = ""
  label_column: str = "label"
  task_name: str = ""
  extra_dev_files: tuple = ()

  def required_fields(self):
    return super().required_fields() + ("text_a_column", "label_column")

  def check_task(self):
    if self.task_name:
      glue.preset(self.task_name)
    if self.task_type not in classification.TASK_TYPES:
      raise ValueError(f"task_type={self.task_type!r}: choose one of "
                       f"{', '.join(classification.TASK_TYPES)}")


# ------------------------------------------------------------------------------
# Seeds
# ------------------------------------------------------------------------------


def pearson(x, y):
  x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
  x, y = x - x.mean(), y - y.mean()
  denominator = math.sqrt(float(x @ x) * float(y @ y))
  return float(x @ y / denominator) if denominator else 0.0


def summarize(per_seed):
  """Mean, median and sample sd (ddof=1; 0.0 for one seed) of each metric
  over seeds."""
  out = {}
  for key in per_seed[0]:
    values = [m[key] for m in per_seed]
    out[key] = statistics.mean(values)
    out[f"{key}_median"] = statistics.median(values)
    out[f"{key}_sd"] = statistics.sample_sd(values)
  return out


# ------------------------------------------------------------------------------
# Model
# ------------------------------------------------------------------------------


def load_encoder_weights(classifier, checkpoint):
  """Fills a BertClassifier's encoder from `checkpoint`; the head stays new.

  Args:
    classifier: a models.classifier.BertClassifier.
    checkpoint: a keras-hub preset directory, or anything
      `checkpoints.resolve_checkpoint` takes (a bert_tf training directory or
      prefix, an original TF1 checkpoint or release directory, pretrained or
      fine-tuned).

  Returns:
    A one-line description of what was read.

  Raises:
    FileNotFoundError: no checkpoint there.
    ValueError: shapes or depth differ from the bert_config, or the
      checkpoint lacks encoder weights (nothing is assigned then).
  """
  encoder = classifier.encoder
  if classifier_lib.is_keras_hub_preset(checkpoint):
    count = classifier_lib.copy_from_preset(encoder, checkpoint)
    return f"initialized {count} encoder weights from keras-hub preset {checkpoint}"
  # A pretrainer around the classifier's own encoder: the checkpoint's object
  # paths (model/encoder/...) and TF1 names (bert/...) then find its weights.
  pretrainer = modeling.BertPretrainer(classifier.config, encoder=encoder)
  before = [w.numpy() for w in encoder.weights]
  prefix = checkpoints.resolve_checkpoint(checkpoint)
  # Where the objective keeps its exported network (a distilled student: model/student).
  root = objectives.from_checkpoint(prefix).checkpoint_root
  report = checkpoints.read_weights(pretrainer, prefix, require_all=False, root=root)
  encoder_names = {w.path for w in encoder.weights}
  missing = sorted(name for name in report.missing if name in encoder_names)
  if missing:
    for weight, value in zip(encoder.weights, before):
      weight.assign(value)
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    raise ValueError(f"checkpoint {report.prefix} lacks encoder weights: "
                     f"{', '.join(missing[:3])}{more}")
  kind = checkpoints.FORMAT_NAMES[report.format]
  pooler = [n for n in report.missing if n.startswith("bert/pooler/")]
  if pooler:  # a transformers masked-LM model has none
    return (f"initialized {len(encoder.weights) - len(pooler)} encoder weights from {kind} "
            f"{report.prefix}; its pooler is not there and starts at random")
  return f"initialized {len(encoder.weights)} encoder weights from {kind} {report.prefix}"


def read_as_trained(model, init_checkpoint):
  """Marks `model.encoder` to be read as init_checkpoint's objective means
  it (`Objective.causal_encoder`, `pooled_position`: a left-to-right LM's
  causal mask, its sentence vector from the last real token;
  models.modeling.read_causally), the one place fine-tuning, probes,
  features and exports ask. Nothing for another objective, a keras-hub
  preset or no checkpoint. Returns the model."""
  saved = init_objective(init_checkpoint)
  if saved is not None and saved.causal_encoder:
    modeling.read_causally(model.encoder, saved.pooled_position)
  return model


def init_objective(init_checkpoint):
  """The objective init_checkpoint records (training.objectives), None for
  none or a keras-hub preset."""
  if not init_checkpoint or classifier_lib.is_keras_hub_preset(init_checkpoint):
    return None
  return objectives.from_checkpoint(checkpoints.resolve_checkpoint(init_checkpoint))


def _own_encoder_model(bert_config, num_outputs, init_checkpoint, make_model):
  """(model, description) on the encoder of a checkpoint whose objective
  builds its own encoder (`Objective.builds_own_encoder`: ELECTRA's
  discriminator); (None, None) for any other checkpoint."""
  if not init_checkpoint or classifier_lib.is_keras_hub_preset(init_checkpoint):
    return None, None
  prefix = checkpoints.resolve_checkpoint(init_checkpoint)
  saved = objectives.from_checkpoint(prefix)
  if not saved.builds_own_encoder:
    return None, None
  # ELECTRA fine-tunes its discriminator: rebuild both networks as
  # trained, read them, and classify on the discriminator's encoder.
  # A transformers discriminator may come without its generator/ (the
  # released ones do): its encoder is all fine-tuning reads.
  pretrainer, _ = checkpoints.load_pretrainer(
      bert_config, prefix, saved, require_heads=not hf_checkpoint.is_hf_folder(prefix))
  model = make_model(bert_config, num_outputs, encoder=pretrainer.encoder)
  return model, (f"initialized the ELECTRA discriminator's {len(pretrainer.encoder.weights)}"
                 f" encoder weights from checkpoint {prefix}")


def build_classifier(bert_config, num_outputs, init_checkpoint="", seed=0, labels=None,
                     make_model=None, head_task=hf_checkpoint.SEQUENCE_CLASSIFICATION):
  """A BertClassifier with seeded initialization, its encoder read from
  init_checkpoint when given, and its head from a transformers folder of
  `head_task` (*ForSequenceClassification) whose labels are `labels` (the
  task's). Returns (classifier, description).

  make_model: builds another model with an `encoder` and a Dense `head` (a
  token tagger, head_task hf_checkpoint.TOKEN_CLASSIFICATION), called as
  make_model(bert_config, num_outputs, encoder=None or a given encoder);
  default BertClassifier."""
  make_model = make_model or classifier_lib.BertClassifier
  keras.utils.set_random_seed(seed)
  model, described = _own_encoder_model(bert_config, num_outputs, init_checkpoint, make_model)
  if model is None:
    model = make_model(bert_config, num_outputs)
    if not init_checkpoint:
      return model, "random initialization (no init_checkpoint)"
    described = load_encoder_weights(model, init_checkpoint)
  # A transformers folder of the head's task: its head too.
  head = hf_checkpoint.load_hf_head(model.head, init_checkpoint, head_task, labels)
  return read_as_trained(model, init_checkpoint), described + (f"; read {head}" if head else "")


# ------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4)
def _cached_tokenizer(vocab_file, do_lower_case, spm_model_file, stamp):
  del stamp  # in the key only: a changed file is read again
  if spm_model_file:
    from bert_tf.data.tokenizers import sentencepiece_vocab  # pylint: disable=g-import-not-at-top
    return sentencepiece_vocab.SentencePieceTokenizer(
        sentencepiece_vocab.load_sentencepiece(spm_model_file), do_lower_case)
  return classification.make_tokenizer(vocab_file, do_lower_case)


def task_tokenizer(vocab_file, do_lower_case, spm_model_file=""):
  """The tokenizer of `vocab_file` (WordPiece), or of `spm_model_file` (a
  SentencePiece model, ALBERT's: then vocab_file is not read), one per file
  (its size and time of change) and casing in a process: each tokenizer
  traces its tf.function once, and compare_objectives fine-tunes many tasks
  with one vocab (a tokenizer per task made TensorFlow warn of
  retracing)."""
  path = spm_model_file or vocab_file
  stat = files.stat(path)
  return _cached_tokenizer("" if spm_model_file else vocab_file, do_lower_case,
                           spm_model_file or "", (stat.length, stat.mtime_nsec))


def config_tokenizer(config, bert_config=None):
  """task_tokenizer of a config's vocab_file or spm_model_file and casing;
  with bert_config, checked to have its vocab_size.

  Raises:
    ValueError: naming the vocab file or SentencePiece model whose size is
      not the bert_config's.
  """
  tokenizer = task_tokenizer(config.vocab_file, config.do_lower_case, config.spm_model_file)
  size = len(tokenizer.vocab)
  if bert_config is not None and size != bert_config.vocab_size:
    what = (f"SentencePiece model {config.spm_model_file} has {size} pieces"
            if config.spm_model_file else f"vocab file {config.vocab_file} has {size} tokens")
    raise ValueError(f"{what} but the bert_config's vocab_size is {bert_config.vocab_size}")
  return tokenizer


# ------------------------------------------------------------------------------
# Training
# ------------------------------------------------------------------------------


def make_predict_fn(model):
  """The model's inference for every `predict` of it: a callable on a batch
  (dict of int32 [batch, seq]). Traced once, as a concrete function for
  any sequence length (every length bucket) and batch size (the short last
  one too); calls of a concrete function never count as retracing, so many
  short runs in one process (compare_objectives: a model per seed and task,
  a batch or two of dev each) do not make TensorFlow warn of retracing."""
  return length_buckets.StepsByShape(lambda features: model(features, training=False),
                                     any_batch=True, any_length=True)


def predict(model, features, batch_size, predict_fn=None, lengths=None):
  """Model outputs float32 [n, num_outputs] for features (dict of [n, seq]).
  predict_fn: `make_predict_fn(model)`, made once when predicting repeatedly.
  lengths: bucket lengths (length_buckets.boundaries); None: full padding."""
  call = predict_fn or make_predict_fn(model)
  outputs = []
  for i in range(0, len(features["input_ids"]), batch_size):
    batch = {k: v[i:i + batch_size] for k, v in features.items()}
    if lengths and len(lengths) > 1:
      batch = length_buckets.trim_arrays(batch, lengths)
    outputs.append(call({k: tf.constant(v) for k, v in batch.items()}).numpy())
  return np.concatenate(outputs, axis=0)


def num_train_steps(config, num_examples):
  """The original's int(examples / batch * epochs), at least 1."""
  return max(1, int(num_examples / config.train_batch_size * config.num_train_epochs))


def too_few_steps_warning(config, num_examples):
  """The one-line warning for a run of under MIN_TRAIN_STEPS optimizer steps
  (None for a longer one): the step count, and the epochs that reach
  MIN_TRAIN_STEPS. Names the fields (the finetune tool's flags)."""
  steps = num_train_steps(config, num_examples)
  if steps >= MIN_TRAIN_STEPS:
    return None
  epochs = math.ceil(MIN_TRAIN_STEPS * config.train_batch_size / num_examples)
  return (f"warning: only {steps} optimizer steps ({num_examples} train examples / batch "
          f"{config.train_batch_size} x {config.num_train_epochs:g} epochs, "
          f"{int(steps * config.warmup_proportion)} of warmup): too few to learn, the dev "
          f"score may stay at chance; raise --num_train_epochs (to {epochs} for "
          f"{MIN_TRAIN_STEPS} steps) or lower --train_batch_size{_rate_advice(config)}")


def _rate_advice(config):
  """The learning-rate part of the too-few-steps line: the small-task rate
  when below it; at or above it none (5e-4 did worse than 1e-4 on the
  76-row task of docs/tools.md#a-small-task)."""
  if config.learning_rate < SMALL_TASK_LEARNING_RATE:
    return (f", and try --learning_rate={SMALL_TASK_LEARNING_RATE:g} (now "
            f"{config.learning_rate:g}; a small model's rate in the README's small-task recipe)")
  return (f" (--learning_rate={config.learning_rate:g} is already at or above the small-task "
          f"recipe's {SMALL_TASK_LEARNING_RATE:g}: a higher one did worse there)")


def fit(model, loss_fn, inputs, targets, config, seed, seed_dir, evaluate):
  """The fine-tuning loop of a task model (classifier, tagger): the
  original's AdamW with warmup and linear decay, gradients clipped at
  CLIP_NORM, shuffled batches (the remainder dropped as the original, unless
  the data is smaller than a batch) of length buckets; at each epoch's end
  and the last step the mean train loss and learning rate go to
  seed_dir/train and `evaluate`'s metrics to seed_dir/eval (TensorBoard),
  and a log line.

  Args:
    model: the Keras model, built.
    loss_fn: (targets, model outputs) -> scalar loss.
    inputs: the training inputs (dict of arrays, classification.make_dataset's).
    targets: their targets (an array, or a tuple of arrays).
    config: the run's config (train_batch_size, num_train_epochs,
      learning_rate, warmup_proportion, weight_decay, max_seq_length,
      length_buckets, eval_batch_size).
    seed: the shuffling seed.
    seed_dir: where the summaries go.
    evaluate: (predict_fn, lengths) -> (dev metrics dict, anything else), or
      None without a dev set (do_eval false).

  Returns:
    What the last `evaluate` returned (({}, None) when there was no step).
  """
  num_examples = len(targets[0] if isinstance(targets, tuple) else targets)
  steps = num_train_steps(config, num_examples)
  steps_per_epoch = max(1, num_examples // config.train_batch_size)
  optimizer = optimization.create_optimizer(
      "adamw_original", config.learning_rate, num_train_steps=steps,
      num_warmup_steps=int(steps * config.warmup_proportion),
      weight_decay=config.weight_decay)
  optimizer.build(model.trainable_variables)
  lengths = length_buckets.boundaries(config.max_seq_length, config.length_buckets)

  def train_step(features, step_targets):
    with tf.GradientTape() as tape:
      loss = loss_fn(step_targets, model(features, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    grads, _ = tf.clip_by_global_norm(grads, CLIP_NORM)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss

  # Drop the remainder as the original, unless the task is smaller than a batch.
  dataset = classification.make_dataset(
      inputs, targets, batch_size=min(config.train_batch_size, num_examples),
      shuffle=True, seed=seed, repeat=True, drop_remainder=True, lengths=lengths)
  # Traced once for every bucket length: as make_predict_fn, a concrete
  # function's calls never count as retracing across seeds and runs.
  train_step = length_buckets.StepsByShape(train_step, any_length=True)
  train_writer = tf.summary.create_file_writer(os.path.join(seed_dir, "train"))
  eval_writer = tf.summary.create_file_writer(os.path.join(seed_dir, "eval"))
  predict_fn = make_predict_fn(model)
  evaluated, losses, start = ({}, None), [], time.time()
  for step, (features, step_targets) in enumerate(dataset.take(steps), start=1):
    losses.append(float(train_step(features, step_targets)))
    if step % steps_per_epoch == 0 or step == steps:
      with train_writer.as_default(step=step):
        tf.summary.scalar("loss", np.mean(losses))
        tf.summary.scalar("learning_rate", float(optimizer.learning_rate))
      if evaluate is not None:  # do_eval
        evaluated = evaluate(predict_fn, lengths)
        with eval_writer.as_default(step=step):
          for key, value in evaluated[0].items():
            tf.summary.scalar(key, value)
      logging.info("seed %d step %d/%d: train loss %.4f, dev %s (%.0f s)", seed, step, steps,
                   np.mean(losses), _format(evaluated[0]) or "not evaluated",
                   time.time() - start)
      losses = []
  train_writer.close()
  eval_writer.close()
  return evaluated


def _format(metrics):
  return ", ".join(f"{k} {v:.4f}" for k, v in sorted(metrics.items()))


def summary_lines(config, results):
  """What the finetune tool prints of `run`'s (or evaluate_only's) results:
  the data, each metric (a GLUE task: its official ones) with its median
  and sd over seeds when trained, the notes, eval_results.txt."""
  names = results.get("official_metrics") or [
      k for k in CLASSIFICATION_METRICS + REGRESSION_METRICS if k in results]
  counts = [f"{results[f'num_{split}_examples']} {split}" for split, shown in (
      ("train", "num_train_examples" in results), ("dev", config.do_eval)) if shown]
  seeds = f", {results['num_seeds']} seed(s)" if "num_seeds" in results else ""
  lines = [f"{results['init']}; {', '.join(counts) or 'no'} examples{seeds}"]
  task_name = getattr(config, "task_name", "")  # a GLUE task's (FinetuneConfig)
  if task_name and names:
    lines.append(f"{task_name} official metrics (dev):")
  lines += [f"{name} = {results[name]:.4f}" + (
      f" (median {results[name + '_median']:.4f}, sd {results[name + '_sd']:.4f})"
      if name + "_median" in results else "") for name in names if name in results]
  if task_name and config.do_predict:
    lines.append(f"test predictions: {config.output_dir}/test_results.tsv" if config.test_file
                 else "test predictions: none (no test file in --data_dir)")
  lines += list(results["notes"])
  if config.do_eval:
    lines.append(f"wrote {config.output_dir}/eval_results.txt")
  return lines


def write_eval_results(path, results):
  """`key = value` lines, sorted, as the original's eval_results.txt; atomic."""
  lines = [f"{key} = {results[key]}" for key in sorted(results)
           if isinstance(results[key], (int, float, str))]
  files.atomic_write(path, "\n".join(lines) + "\n")


