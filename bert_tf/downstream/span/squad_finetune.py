"""SQuAD 1.1 / 2.0 span answers: train and predict as the original run_squad.

`run(SquadConfig, BertConfig) -> results`:
- train (do_train): examples of train_file (data.squad; misplaced answers
  counted and skipped; a malformed question an error, or with
  skip_malformed_questions counted and skipped), shuffled with random.Random(12345) as the original,
  cut into windows; `int(examples / train_batch_size * num_train_epochs)`
  steps of the original recipe (AdamWeightDecay with weight decay 0.01, no
  bias correction, epsilon 1e-6; linear warmup over warmup_proportion then
  linear decay to 0; gradients clipped to global norm 1.0), batches drop
  their remainder, the windows shuffled each epoch. The encoder comes from
  init_checkpoint through the path fine-tuning uses (bert_tf checkpoint,
  original TF1 release, transformers folder, keras-hub preset, ELECTRA's
  discriminator); the span head (models.span_head) starts new. The model
  is written to output_dir/model (a tf.train.Checkpoint(model=...)) every
  save_checkpoints_steps and at the end. Progress (loss, windows/s, ETA) is
  logged at INFO about every 5% of the steps.
- predict (do_predict): the windows of predict_file, their logits, and
  downstream.span.span_answers' decoding into output_dir/predictions.json,
  nbest_predictions.json (and null_odds.json for 2.0). Without do_train the
  model is output_dir/model when a training run left one there (as the
  original's Estimator reads its output_dir), else the encoder of
  init_checkpoint with a new head (said in the results). Progress
  (windows/s, ETA) is logged as for training.
- Both files are read, and the model built, before output_dir is created:
  a refused input leaves nothing behind.
- When predict_file has gold answers: EM and F1 as the official script of
  its version (downstream.span.squad_metrics), in output_dir/eval_results.txt.
"""

import dataclasses
import os
import random
import time
import weakref

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.io import file_io as files
from bert_tf.data.input import length_buckets
from bert_tf.downstream.span import squad
from bert_tf.downstream.classification import classifier as classifier_lib
from bert_tf.models import hf_checkpoint
from bert_tf.downstream.span import span_head
from bert_tf.models.config import BertConfig
from bert_tf.training import checkpoints
from bert_tf.downstream import finetune
from bert_tf.training import objectives
from bert_tf.training import recipe
from bert_tf.training import optimization
from bert_tf.training import progress
from bert_tf.downstream.span import span_answers
from bert_tf.downstream.span import squad_metrics

CHECKPOINT_NAME = "model"
# The original pre-shuffles the training examples with this seed.
EXAMPLE_SHUFFLE_SEED = 12345


@dataclasses.dataclass(frozen=True)
class SquadConfig:
  """One run; defaults are the original run_squad's flags'.

  spm_model_file: a SentencePiece model (ALBERT's) in the place of
  vocab_file, which is then not read (google-research/albert's rule)."""
  vocab_file: str = ""
  spm_model_file: str = ""
  output_dir: str = ""
  train_file: str = ""
  predict_file: str = ""
  init_checkpoint: str = ""
  do_lower_case: bool = True
  max_seq_length: int = 384
  doc_stride: int = 128
  max_query_length: int = 64
  do_train: bool = False
  do_predict: bool = False
  train_batch_size: int = recipe.batch_size(32)
  predict_batch_size: int = recipe.batch_size(8)
  learning_rate: float = recipe.learning_rate(5e-5)
  num_train_epochs: float = recipe.num_train_epochs(3.0)
  warmup_proportion: float = recipe.warmup_proportion(0.1)
  weight_decay: float = 0.01
  save_checkpoints_steps: int = recipe.save_checkpoints_steps(1000)
  n_best_size: int = 20
  max_answer_length: int = 30
  version_2_with_negative: bool = False
  null_score_diff_threshold: float = 0.0
  seed: int = 0
  skip_malformed_questions: bool = False
  verbose_logging: bool = False

  def validate(self, bert_config=None, prefix=""):
    """Raises ValueError naming the field (after `prefix`: "--" for flags)
    for a value that cannot run."""
    if not self.do_train and not self.do_predict:
      raise ValueError(f"{prefix}do_train or {prefix}do_predict: at least one must be set")
    needed = ([] if self.spm_model_file else ["vocab_file"]) + ["output_dir"] + (
        ["train_file"] if self.do_train else []) + (["predict_file"] if self.do_predict else [])
    for name in needed:
      if not getattr(self, name):
        raise ValueError(f"{prefix}{name} is required")
    recipe.check(self, prefix)
    for name, ok in (("n_best_size", self.n_best_size >= 1),
                     ("max_answer_length", self.max_answer_length >= 1)):
      if not ok:
        raise ValueError(f"{prefix}{name}={getattr(self, name)} is out of range")
    squad.check_window(self.max_seq_length, self.doc_stride, self.max_query_length, prefix)
    if bert_config is not None and self.max_seq_length > bert_config.max_position_embeddings:
      raise ValueError(f"{prefix}max_seq_length={self.max_seq_length} exceeds the bert_config's "
                       f"max_position_embeddings={bert_config.max_position_embeddings}")


# ------------------------------------------------------------------------------
# Model
# ------------------------------------------------------------------------------


def build_span_model(bert_config, init_checkpoint="", seed=0):
  """A BertSpanModel, its encoder read from init_checkpoint when given (as
  finetune.build_classifier reads a classifier's), and its span head too
  from a transformers *ForQuestionAnswering folder (its qa_outputs).
  Returns (model, description)."""
  model, described = _span_model_encoder(bert_config, init_checkpoint, seed)
  head = hf_checkpoint.load_hf_head(model.head, init_checkpoint, hf_checkpoint.QUESTION_ANSWERING)
  finetune.read_as_trained(model, init_checkpoint)
  return model, described + (f"; read {head}" if head else "")


def _span_model_encoder(bert_config, init_checkpoint, seed):
  keras.utils.set_random_seed(seed)
  if init_checkpoint and not classifier_lib.is_keras_hub_preset(init_checkpoint):
    prefix = checkpoints.resolve_checkpoint(init_checkpoint)
    saved = objectives.from_checkpoint(prefix)
    if saved.builds_own_encoder:  # ELECTRA: answer on the discriminator's encoder
      pretrainer, _ = checkpoints.load_pretrainer(
          bert_config, prefix, saved, require_heads=not hf_checkpoint.is_hf_folder(prefix))
      model = span_head.BertSpanModel(bert_config, encoder=pretrainer.encoder)
      return model, (f"initialized the ELECTRA discriminator's {len(pretrainer.encoder.weights)}"
                     f" encoder weights from checkpoint {prefix}")
  model = span_head.BertSpanModel(bert_config)
  if not init_checkpoint:
    return model, "random initialization (no init_checkpoint)"
  return model, finetune.load_encoder_weights(model, init_checkpoint)



def _saved_model_prefix(output_dir):
  prefix = os.path.join(output_dir, CHECKPOINT_NAME)
  return prefix if files.exists(prefix + ".index") else None


def _model_for_prediction(config, bert_config):
  prefix = _saved_model_prefix(config.output_dir)
  if prefix is None:
    model, described = build_span_model(bert_config, config.init_checkpoint, config.seed)
    if "ForQuestionAnswering head" in described:  # a transformers QA model, as it is
      return model, described
    return model, described + "; the span head is untrained (no do_train, no " \
        f"{os.path.join(config.output_dir, CHECKPOINT_NAME)} checkpoint)"
  model = span_head.BertSpanModel(bert_config)
  tf.train.Checkpoint(model=model).read(prefix).assert_existing_objects_matched()
  finetune.read_as_trained(model, config.init_checkpoint)
  return model, f"read the fine-tuned span model {prefix}"


# ------------------------------------------------------------------------------
# Training
# ------------------------------------------------------------------------------


def num_train_steps(config, num_examples):
  """The original's int(examples / batch * epochs), at least 1."""
  return max(1, int(num_examples / config.train_batch_size * config.num_train_epochs))


def _log_dropped(what, dropped, total, verbose):
  """One warning for the training questions left out, naming the first 5
  (verbose: every one, with its reason)."""
  if not dropped:
    return
  shown = ", ".join(qid for qid, _ in dropped[:5]) + (" ..." if len(dropped) > 5 else "")
  logging.warning("skipped %d of %d training %s (%s); first: %s", len(dropped), total, what,
                  shown, dropped[0][1])
  if verbose:
    for qid, reason in dropped:
      logging.warning("skipped question %s: %s", qid, reason)


def read_training_data(config, tokenizer):
  """(examples, features, skipped, malformed) of train_file, examples
  shuffled as the original; skipped: answers whose text is not at their
  answer_start; malformed: with skip_malformed_questions, the questions
  that could not be read (else the first raises squad.MalformedQuestion)."""
  read = squad.read_examples(config.train_file, True, config.version_2_with_negative,
                             skip_malformed=config.skip_malformed_questions)
  total = len(read.examples) + len(read.skipped) + len(read.malformed)
  _log_dropped("questions, malformed", read.malformed, total, config.verbose_logging)
  _log_dropped("answers whose text is not at their answer_start", read.skipped, total,
               config.verbose_logging)
  if not read.examples:
    raise ValueError(f"SQuAD file {config.train_file}: no training question left")
  examples = list(read.examples)
  random.Random(EXAMPLE_SHUFFLE_SEED).shuffle(examples)
  features = squad.convert_examples(examples, tokenizer, config.max_seq_length,
                                    config.doc_stride, config.max_query_length, True)
  return examples, features, read.skipped, read.malformed


class _Progress:
  """A progress line about every 5% of a loop's steps (and at least once
  a minute): the caller's figures, windows/s since the start, and the ETA
  of training.progress (which leaves out the first step's tracing)."""

  def __init__(self, what, total, windows_per_step):
    self.what, self.total, self.windows_per_step = what, total, windows_per_step
    self.start = self.last_log = time.time()
    self.eta = progress.EtaEstimator(0, self.start, total)
    self.every = max(1, total // 20)

  def step_done(self, step, figures=""):
    now = time.time()
    self.eta.loop_done(step, now)
    if step % self.every and step != self.total and now - self.last_log < 60:
      return
    self.last_log = now
    rate = step * self.windows_per_step / max(now - self.start, 1e-9)
    logging.info("%s %d/%d  %s%.1f windows/s  ETA %s", self.what, step, self.total,
                 f"{figures}  " if figures else "", rate, self.eta.text(step))


def train(model, config, features, num_examples):
  """Trains `model` on the windows; returns (steps, mean loss of the last 10%)."""
  steps = num_train_steps(config, num_examples)
  optimizer = optimization.create_optimizer(
      "adamw_original", config.learning_rate, num_train_steps=steps,
      num_warmup_steps=int(steps * config.warmup_proportion),
      weight_decay=config.weight_decay)
  optimizer.build(model.trainable_variables)

  def train_step(batch):
    with tf.GradientTape() as tape:
      start, end = model(batch, training=True)
      loss = span_head.span_loss(start, end, batch["start_positions"], batch["end_positions"])
    # The pooler gets no gradient (the span head reads the sequence): as
    # the original's optimizer, only the variables with one are updated.
    pairs = [(g, v) for g, v in zip(tape.gradient(loss, model.trainable_variables),
                                    model.trainable_variables) if g is not None]
    grads, _ = tf.clip_by_global_norm([g for g, _ in pairs], finetune.CLIP_NORM)
    optimizer.apply_gradients(zip(grads, [v for _, v in pairs]))
    return loss

  # Traced once, without autograph (nothing in the step branches on a
  # tensor): autograph's conversion of the optimizer's update was most of
  # the tracing, itself over a third of a short run (bench_peers' squad).
  train_step = length_buckets.StepsByShape(train_step)

  arrays = squad.feature_arrays(features, with_positions=True)
  dataset = tf.data.Dataset.from_tensor_slices(arrays).shuffle(
      len(features), seed=config.seed, reshuffle_each_iteration=True).repeat().batch(
          min(config.train_batch_size, len(features)), drop_remainder=True).prefetch(2)
  ckpt = tf.train.Checkpoint(model=model)
  prefix = os.path.join(config.output_dir, CHECKPOINT_NAME)
  losses, shown = [], _Progress("step", steps, min(config.train_batch_size, len(features)))
  for step, batch in enumerate(dataset.take(steps), start=1):
    losses.append(float(train_step(batch)))
    shown.step_done(step, f"loss {np.mean(losses[-shown.every:]):.4f}")
    if step % config.save_checkpoints_steps == 0 or step == steps:
      ckpt.write(prefix)
  return steps, float(np.mean(losses[-max(1, steps // 10):]))


# ------------------------------------------------------------------------------
# Prediction
# ------------------------------------------------------------------------------


def predict_logits(model, features, batch_size):
  """RawResults of the features, in order. The model's inference is traced
  once and kept with the model (_predict_fn), for every batch size:
  predicting again with the same model (a dev set each epoch, a benchmark's
  rounds) traces nothing."""
  call = _predict_fn(model)
  arrays = squad.feature_arrays(features, with_positions=False)
  starts, ends = [], []
  shown = _Progress("predicting batch", -(-len(features) // batch_size), batch_size)
  for step, i in enumerate(range(0, len(features), batch_size), start=1):
    start, end = call({k: tf.constant(v[i:i + batch_size]) for k, v in arrays.items()})
    starts.append(start.numpy())
    ends.append(end.numpy())
    shown.step_done(step)
  starts, ends = np.concatenate(starts).tolist(), np.concatenate(ends).tolist()
  return [span_answers.RawResult(f.unique_id, s, e) for f, s, e in zip(features, starts, ends)]


_PREDICT_FNS = weakref.WeakKeyDictionary()


def _predict_fn(model):
  """The model's inference as finetune.make_predict_fn's (one concrete
  function for every batch size), made at its first prediction and kept
  while the model lives: the function holds the model only weakly, so
  that the cache does not keep it alive."""
  if model not in _PREDICT_FNS:
    held = weakref.ref(model)
    _PREDICT_FNS[model] = length_buckets.StepsByShape(
        lambda batch: held()(batch, training=False))
  return _PREDICT_FNS[model]


def evaluate(config, predictions, null_odds):
  """The official script's numbers for predict_file (None without gold answers)."""
  data = files.read_json(config.predict_file, "SQuAD file")["data"]
  if not any(golds for _, golds in squad_metrics.questions(data)):
    return None
  if config.version_2_with_negative:
    return squad_metrics.evaluate_v2(data, predictions, na_probs=null_odds)
  return squad_metrics.evaluate_v1(data, predictions)


def read_predict_data(config, tokenizer):
  """(examples, features) of predict_file."""
  examples = squad.read_examples(config.predict_file, False).examples
  features = squad.convert_examples(examples, tokenizer, config.max_seq_length,
                                    config.doc_stride, config.max_query_length, False)
  return examples, features


def predict(model, config, examples, features):
  """Writes the prediction files; returns (results dict, paths written)."""
  logging.info("predicting %d questions (%d windows)", len(examples), len(features))
  raw = predict_logits(model, features, config.predict_batch_size)
  predictions, nbest, null_odds = span_answers.decode(
      examples, features, raw, config.n_best_size, config.max_answer_length,
      config.do_lower_case, config.version_2_with_negative, config.null_score_diff_threshold,
      sentencepiece=bool(config.spm_model_file))
  paths = span_answers.write_predictions(config.output_dir, predictions, nbest, null_odds,
                                         config.version_2_with_negative)
  results = {"num_predict_examples": len(examples), "num_predict_features": len(features)}
  metrics = evaluate(config, predictions, null_odds)
  if metrics is not None:
    results.update(metrics)
  return results, paths


def run(config: SquadConfig, bert_config: BertConfig):
  """Trains and/or predicts as `config` says.

  Returns:
    dict: init (what the model was read from), and as done:
    num_train_examples, num_train_features, skipped_answers,
    malformed_questions (skipped with skip_malformed_questions),
    num_train_steps, final_train_loss; num_predict_examples,
    num_predict_features, the official metrics (v1.1: exact_match, f1;
    v2.0: exact, f1, HasAns_*, NoAns_*, best_*) when predict_file has
    answers; written (paths).

  Raises:
    ValueError, FileNotFoundError: a bad config or file, before output_dir
      is created (and before training).
  """
  config.validate(bert_config)
  tokenizer = finetune.config_tokenizer(config, bert_config)  # its size is the model's
  for name in ("train_file", "predict_file"):  # before hours of training
    path = getattr(config, name)
    if path and not files.exists(path):
      raise FileNotFoundError(f"{path}: no such SQuAD file (--{name})")
  results, written = {}, []
  if config.do_train:
    examples, features, skipped, malformed = read_training_data(config, tokenizer)
  to_predict = read_predict_data(config, tokenizer) if config.do_predict else None
  if config.do_train:
    model, results["init"] = build_span_model(bert_config, config.init_checkpoint, config.seed)
  else:
    model, results["init"] = _model_for_prediction(config, bert_config)
  files.makedirs(config.output_dir)  # the inputs are read: nothing refused leaves it
  if config.do_train:
    logging.info("training on %d questions (%d windows); %s", len(examples), len(features),
                 results["init"])
    steps, loss = train(model, config, features, len(examples))
    results.update(num_train_examples=len(examples), num_train_features=len(features),
                   skipped_answers=len(skipped), malformed_questions=len(malformed),
                   num_train_steps=steps, final_train_loss=loss)
    written.append(os.path.join(config.output_dir, CHECKPOINT_NAME))
  if config.do_predict:
    predicted, paths = predict(model, config, *to_predict)
    results.update(predicted)
    written.extend(paths)
  eval_path = os.path.join(config.output_dir, "eval_results.txt")
  finetune.write_eval_results(eval_path, results)
  results["written"] = written + [eval_path]
  return results


def summary_lines(config, results):
  """What run_squad prints at the end: the encoder it started from, the
  training it did (with the answers skipped for text not at their
  answer_start, and the malformed questions skipped), the dev figures and the files written."""
  out = [results["init"]]
  if config.do_train:
    out.append(f"trained on {results['num_train_examples']} questions "
               f"({results['num_train_features']} windows), {results['num_train_steps']} "
               f"steps; skipped {results['skipped_answers']} answers whose text is not at "
               "their answer_start" + (f" and {results['malformed_questions']} malformed "
                                       "questions (--skip_malformed_questions)"
                                       if config.skip_malformed_questions else ""))
  out += [f"{key} = {results[key]:.2f}" for key in
          ("exact_match", "exact", "f1", "HasAns_f1", "NoAns_f1", "best_f1") if key in results]
  return out + [f"wrote {path}" for path in results["written"]]
