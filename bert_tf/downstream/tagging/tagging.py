"""Fine-tuning BERT for token tagging (named entities, chunks) on CoNLL files.

`run(TaggingConfig, BertConfig) -> results` reads the train and dev files
(`data.conll`: the label on each word's first WordPiece, long sentences in
overlapping windows), then for each seed builds a
`models.token_head.BertTokenTagger` (its encoder read from
`init_checkpoint` as the classifier's: `finetune.build_classifier`),
trains it with the classifier's recipe (`finetune`: AdamWeightDecay,
linear warmup and decay, clipping at global norm 1.0, the original's step
count, the last step's model evaluated) on the mean cross-entropy of the
scored positions (each word's first piece in its best window), and
evaluates on the dev file with conlleval's counting
(`downstream.tagging.conlleval`).

Results: entity_f1, entity_precision, entity_recall, token_accuracy, each
the mean over seeds with `<name>_sd` and each seed's value, in
output_dir/eval_results.txt (atomic); the first seed's dev predictions in
conlleval's input format in output_dir/dev_predictions.conll (and of a
test file, output_dir/test_predictions.conll); TensorBoard
scalars per seed under output_dir/seed_<n>/{train,eval}; the first seed's
model as output_dir/seed_<n>/model for export.
"""

import dataclasses
import os

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.io import file_io as files
from bert_tf.downstream.tagging import conll
from bert_tf.downstream.classification import tsv as classification
from bert_tf.data.input import length_buckets
from bert_tf.models import hf_checkpoint
from bert_tf.downstream.tagging import token_head
from bert_tf.downstream.tagging import conlleval
from bert_tf.downstream import export
from bert_tf.downstream import finetune
from bert_tf.util import bootstrap

METRICS = ("entity_f1", "entity_precision", "entity_recall", "token_accuracy")
# What the finetune tool prints, of whichever task ran.
REPORTED_METRICS = finetune.CLASSIFICATION_METRICS + finetune.REGRESSION_METRICS + METRICS
PREDICTIONS_FILE = "dev_predictions.conll"
# The test file's words with the first seed's labels, in conlleval's input
# format: its own last column stands as the gold one (a file without gold
# labels may carry any placeholder there, O say: it is not read).
TEST_PREDICTIONS_FILE = "test_predictions.conll"


@dataclasses.dataclass(frozen=True)
class TaggingConfig(finetune.FinetuneRecipe):
  """A tagging task: FinetuneRecipe's files, recipe and steps, plus:

  frozen_encoder: train only the head on the last four layers' outputs.
  window_stride: pieces between the starts of a long sentence's windows
    (0: half a window, (max_seq_length - 2) // 2).
  """
  task_type: str = "tagging"
  frozen_encoder: bool = False
  window_stride: int = 0

  def check_task(self):
    if self.task_type != "tagging":
      raise ValueError(f"task_type={self.task_type!r}: a TaggingConfig's is 'tagging'")

  def validate(self, bert_config=None):
    """Raises ValueError naming the field for a value that cannot run."""
    super().validate(bert_config)
    if not 0 <= self.window_stride <= self.max_seq_length - 2:
      raise ValueError(f"window_stride={self.window_stride} must lie in [0, "
                       f"max_seq_length - 2 = {self.max_seq_length - 2}] (0: half a window)")

  @property
  def stride(self):
    return self.window_stride or max(1, (self.max_seq_length - 2) // 2)


@dataclasses.dataclass(frozen=True)
class TaggingData:
  """The label list, the sentences of each split and their windows (a split
  the config's steps do not read: [] and None)."""
  labels: tuple
  train: list
  train_features: conll.Features
  dev: list
  dev_features: conll.Features
  notes: tuple
  test: list = ()
  test_features: conll.Features | None = None


def task_labels(config, train):
  """The label list of the train sentences `train`.

  Raises:
    ValueError: fewer than two labels.
  """
  labels = conll.label_list(train)
  if len(labels) < 2:
    raise ValueError(f"{config.train_file}: {len(labels)} distinct label(s) "
                     f"({', '.join(labels)}): a tagger needs two or more")
  return labels


def load_task(config, labels=None):
  """Reads and packs the train (do_train), dev (do_eval) and test (a
  test_file and do_predict) files of `config`. labels: the label list
  (None: the train file's). The test file's last column is not checked
  against the labels: it is copied to the predictions as it stands.

  Raises:
    ValueError, FileNotFoundError: a bad file (naming file and line), a dev
      label the train file lacks, a train file of fewer than two labels.
  """
  tokenizer = finetune.config_tokenizer(config)
  train = conll.read_conll(config.train_file) if config.do_train else []
  dev = conll.read_conll(config.dev_file) if config.do_eval else []
  labels = labels or task_labels(config, train)
  conll.check_labels(dev, labels, config.dev_file)
  notes, packed = [], {}
  for name, sentences, read in (("train", train, config.do_train),
                                ("dev", dev, config.do_eval)):
    if not read:
      packed[name] = None
      continue
    features = conll.convert_sentences(sentences, tokenizer, labels, config.max_seq_length,
                                       config.stride)
    packed[name] = features
    if features.num_split:
      notes.append(f"{features.num_split} of {len(sentences)} {name} sentences are longer "
                   f"than max_seq_length={config.max_seq_length} and were packed in "
                   f"overlapping windows ({config.stride} pieces apart); each word is "
                   f"predicted once, in its window of most context")
    if features.num_empty_words:
      notes.append(f"{features.num_empty_words} {name} words have no piece (only "
                   f"characters the tokenizer drops) and are read as the unknown token")
  test, test_features = [], None
  if config.test_file and config.do_predict:
    test = conll.read_conll(config.test_file)
    # Packed under any known label: the windows and word positions need none.
    test_features = conll.convert_sentences(
        [dataclasses.replace(s, labels=(labels[0],) * len(s.words)) for s in test],
        tokenizer, labels, config.max_seq_length, config.stride)
  return TaggingData(labels, train, packed["train"], dev, packed["dev"], tuple(notes), test,
                     test_features)


def make_tagger(config):
  """make_model for finetune.build_classifier: a BertTokenTagger as `config` asks."""
  def make(bert_config, num_outputs, encoder=None):
    return token_head.BertTokenTagger(bert_config, num_outputs,
                                      frozen_encoder=config.frozen_encoder, encoder=encoder)
  return make


def tagging_loss(label_ids, label_weights, logits):
  """Mean cross-entropy over the scored positions (weight 1)."""
  losses = tf.nn.sparse_softmax_cross_entropy_with_logits(tf.cast(label_ids, tf.int32), logits)
  weights = tf.cast(label_weights, tf.float32)
  return tf.reduce_sum(losses * weights) / tf.maximum(tf.reduce_sum(weights), 1.0)


def predict_labels(model, features, batch_size, predict_fn=None, lengths=None):
  """Label ids int [windows, seq] of the model's argmax at every position
  (a batch cut to a bucket length: 0 past it, where no word is)."""
  call = predict_fn or finetune.make_predict_fn(model)
  inputs = features.inputs()
  seq = inputs["input_ids"].shape[1]
  dataset = classification.make_dataset(inputs, batch_size=batch_size, lengths=lengths)
  out = []
  for batch in dataset:
    ids = np.argmax(call(batch).numpy(), axis=-1)
    out.append(np.pad(ids, ((0, 0), (0, seq - ids.shape[1]))))
  return np.concatenate(out, axis=0)


def write_test_predictions(config, model, task, lengths=None):
  """Writes the test sentences' predicted labels (TEST_PREDICTIONS_FILE in
  config.output_dir) and returns a note naming it, or None without a test
  set."""
  if task.test_features is None:
    return None
  predicted = predict_labels(model, task.test_features, config.eval_batch_size, lengths=lengths)
  guesses = conll.sentence_predictions(task.test_features, predicted, task.test, task.labels)
  path = os.path.join(config.output_dir, TEST_PREDICTIONS_FILE)
  files.atomic_write(path, conll.format_conll(task.test, guesses))
  return f"wrote {len(task.test)} test sentences' predicted labels to {path}"


def evaluate(model, task, batch_size, predict_fn=None, lengths=None):
  """(dev metrics, each dev sentence's predicted labels)."""
  predicted = predict_labels(model, task.dev_features, batch_size, predict_fn, lengths)
  guesses = conll.sentence_predictions(task.dev_features, predicted, task.dev, task.labels)
  return conlleval.evaluate((s.labels, g) for s, g in zip(task.dev, guesses)), guesses


def train_seed(config, bert_config, task, seed, seed_dir):
  """Trains one tagger with `seed`; returns (model, dev metrics, dev
  predictions ({} and [] without a dev set: do_eval false), init
  description)."""
  model, described = finetune.build_classifier(
      bert_config, len(task.labels), config.init_checkpoint, seed, labels=task.labels,
      make_model=make_tagger(config), head_task=hf_checkpoint.TOKEN_CLASSIFICATION)
  arrays = task.train_features.arrays
  metrics, guesses = finetune.fit(
      model, lambda targets, logits: tagging_loss(targets[0], targets[1], logits),
      task.train_features.inputs(), (arrays["label_ids"], arrays["label_weights"]), config,
      seed, seed_dir, (lambda predict_fn, lengths: evaluate(
          model, task, config.eval_batch_size, predict_fn, lengths))
      if task.dev_features is not None else None)  # do_eval
  return model, metrics, guesses or [], described


def _entity_counts(gold, guessed):
  """(true positives, false positives, false negatives) of one sentence's
  entities: summed over sentences, conlleval's entity F1."""
  counts = conlleval.count([(gold, guessed)])
  return [counts.correct_chunks, counts.guessed_chunks - counts.correct_chunks,
          counts.gold_chunks - counts.correct_chunks]


def check_vocab(config, bert_config):
  """Raises ValueError when the vocab file's (SentencePiece model's) size is
  not the bert_config's."""
  finetune.config_tokenizer(config, bert_config)


def run(config: TaggingConfig, bert_config):
  """Fine-tunes `config.seeds` taggers and evaluates them on the dev file
  (do_eval).

  Returns:
    dict: each of METRICS' mean over seeds and `<metric>_sd`,
    `seed_<s>_<metric>` per seed, num_seeds, num_train_examples and
    num_dev_examples (sentences), num_train_windows, num_train_steps,
    task_type, labels (list), init, notes (list of lines).

  Raises:
    ValueError, FileNotFoundError: bad config, files or labels (before any
      training).
  """
  config.validate(bert_config)
  if not config.do_train:
    raise ValueError("do_train=false: downstream/evaluate_only.py runs the model as it is")
  check_vocab(config, bert_config)
  task = load_task(config)
  num_windows = len(task.train_features.arrays["input_ids"])
  steps = finetune.num_train_steps(config, num_windows)
  logging.info("Tagging: %d train sentences (%d windows), %d labels, %d steps of batch %d, "
               "%d seed(s)%s; dev %d sentences", len(task.train), num_windows,
               len(task.labels), steps, config.train_batch_size, config.seeds,
               ", frozen encoder" if config.frozen_encoder else "", len(task.dev))
  short = finetune.too_few_steps_warning(config, num_windows)
  if short:
    logging.warning("%s", short)
  per_seed, results, outcomes = [], {}, []
  for i in range(config.seeds):
    seed = config.seed + i
    seed_dir = export.seed_dir(config.output_dir, seed)
    model, metrics, guesses, described = train_seed(config, bert_config, task, seed, seed_dir)
    per_seed.append(metrics)
    if guesses:  # each dev sentence's entity counts (the comparison's bootstrap)
      outcomes.append([_entity_counts(s.labels, g) for s, g in zip(task.dev, guesses)])
    results.update({f"seed_{seed}_{k}": v for k, v in metrics.items()})
    if i == 0:
      results["init"] = described
      if config.save_model:
        tf.train.Checkpoint(model=model).write(
            os.path.join(seed_dir, finetune.CHECKPOINT_NAME))
      if config.do_eval:
        files.atomic_write(os.path.join(config.output_dir, PREDICTIONS_FILE),
                           conll.format_conll(task.dev, guesses))
      test_note = write_test_predictions(
          config, model, task,
          length_buckets.boundaries(config.max_seq_length, config.length_buckets))
    del model
    keras.backend.clear_session()
  results.update(finetune.summarize(per_seed))
  results.update(num_seeds=config.seeds, num_train_examples=len(task.train),
                 num_dev_examples=len(task.dev), num_train_windows=num_windows,
                 num_train_steps=steps, task_type="tagging",
                 frozen_encoder=int(config.frozen_encoder))
  if config.do_eval:
    finetune.write_eval_results(os.path.join(config.output_dir, "eval_results.txt"),
                                results)
  results["labels"] = list(task.labels)
  if outcomes:
    results["outcomes"] = {"entity_f1": bootstrap.record("f1", range(len(task.dev)), outcomes)}
  results["official_metrics"] = [k for k in REPORTED_METRICS if k in results]
  results["notes"] = list(task.notes) + ([short] if short else []) + (
      [predictions_note(config, "the first seed's")] if config.do_eval else []) + (
          [test_note] if test_note else [])
  return results


def predictions_note(config, whose):
  return (f"wrote {whose} dev predictions (conlleval's input) to "
          f"{os.path.join(config.output_dir, PREDICTIONS_FILE)}")
