"""Evaluation of a model on records under a tf.distribute strategy.

`Evaluator` adds up an objective's sums over eval batches (no dropout),
all-reduced across replicas; `evaluate` turns them into the original's eval
metrics (streaming means over every batch) and `write_eval_results` writes
them as the original's `eval_results.txt`. The training loop
(`training/loop.py`) evaluates with these during and after training, and
compare_objectives reads its held-out figures with `Evaluator`.
"""

import time

import tensorflow as tf
from absl import logging

from bert_tf.io import file_io as files
from bert_tf.data.input import pipeline


def own_function(method):
  """A plain function calling a bound `method`, for tf.function to wrap.

  TensorFlow counts the tracings of a tf.function by the Python function it
  wraps, and a bound method is its class's one function: the tenth Trainer
  of a process (compare_objectives pretrains one per arm and seed) traced
  its own step for the first time, yet was warned of "excessive
  retracing". A function of its own per instance is counted on its own.
  """
  def call(*args):
    return method(*args)
  return call


class Evaluator:
  """Additive sums of `model` over eval batches under `strategy` (the
  default strategy when None), without dropout: by default the
  objective's `loss_sums` (what training logs) and each batch's total loss;
  `sums(outputs, features)` totals other sums instead (compare_objectives'
  held-out figures: the objective's `heldout_sums`)."""

  def __init__(self, model, objective, strategy=None, sums=None):
    self.model, self.objective = model, objective
    self.strategy = strategy or tf.distribute.get_strategy()
    self._sums = sums
    self._step = tf.function(own_function(self._global_batch))

  def _replica(self, features):
    ctx = tf.distribute.get_replica_context()
    outputs = self.model(features, training=False)
    if self._sums is not None:
      return ctx.all_reduce(tf.distribute.ReduceOp.SUM, self._sums(outputs, features))
    sums = ctx.all_reduce(tf.distribute.ReduceOp.SUM,
                          self.objective.loss_sums(outputs, features))
    return dict(sums, loss=self.objective.metrics(sums)["loss"])

  def _global_batch(self, batch):
    return first_replica(self.strategy, self.strategy.run(self._replica, args=(batch,)))

  def totals(self, dataset, max_batches):
    """(the sums added over up to `max_batches` batches of `dataset`: dict
    of float, each batch's total loss: list of float, empty with `sums`)."""
    totals, batch_losses, batches = {}, [], 0
    for batch in dataset:
      if batches >= max_batches:
        break
      out = self._step(batch)
      batches += 1
      for key, value in out.items():
        if key != "loss" or self._sums is not None:
          totals[key] = totals.get(key, 0.0) + float(value)
      if self._sums is None:
        batch_losses.append(float(out["loss"]))
    return totals, batch_losses


def evaluate(evaluator, eval_info, config, step):
  """Up to max_eval_steps batches -> the original's eval metrics.

  Streaming means over every batch, as the original's tf.metrics: masked-LM
  loss and accuracy weighted by masked_lm_weights over all predictions, the
  sentence task over all examples; "loss" is the mean of the batches' total
  losses.

  Returns:
    dict "global_step" (int) and the objective's metric_keys -> float.
  """
  objective = evaluator.objective
  start = time.time()
  dataset = pipeline.distributed_dataset(evaluator.strategy, eval_info,
                                         config.eval_batch_size, is_training=False)
  with pipeline.naming_damage(eval_info, "eval records"):
    totals, batch_losses = evaluator.totals(dataset, config.max_eval_steps)
  if not batch_losses:
    raise ValueError(f"eval data {config.eval_input_file or config.input_file} holds fewer "
                     f"than eval_batch_size={config.eval_batch_size} records")
  metrics = objective.metrics({k: tf.constant(v, tf.float64) for k, v in totals.items()},
                              mlm_epsilon=0)
  results = {k: float(v) for k, v in metrics.items()}
  results.update(global_step=step, loss=sum(batch_losses) / len(batch_losses))
  logging.info("Eval at step %d over %d batches (%.1f s): %s", step, len(batch_losses),
               time.time() - start,
               "  ".join(f"{k} = {results[k]:.4f}" for k in sorted(objective.metric_keys)))
  return results


def first_replica(strategy, values):
  """The value of the first replica of each of `values` (a nest of
  per-replica values all-reduced already, so identical on every replica)."""
  return tf.nest.map_structure(lambda v: strategy.experimental_local_results(v)[0], values)


def write_eval_results(path, results):
  files.atomic_write(path, "".join(f"{key} = {results[key]}\n" for key in sorted(results)))
