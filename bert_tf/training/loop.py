"""BERT pretraining: a custom training loop under any tf.distribute strategy.

`run(TrainConfig, BertConfig)` trains and/or evaluates like the original
`run_pretraining.py`, as one straight-line function in banner sections:
strategy; data; model, optimizer, checkpoint; train; evaluate; save. The
update step is `Trainer.update_step`, one function under the "Update step"
banner: global normalizers, forward and backward by micro-batch, all-reduce,
clip, apply; the objective (`objectives`) supplies the model and the loss.
What the loop adds over the original:

- one code path for one device, several GPUs (MirroredStrategy), several
  hosts (MultiWorkerMirroredStrategy) and TPUs; `iterations_per_loop` steps
  run inside one `tf.function` (a loop over the distributed iterator), so the
  host round trip is paid once per loop, as with TPUEstimator;
- the loss and gradients of a global batch are those of a single device
  whatever the strategy: each replica differentiates its share of the
  original's loss with the GLOBAL masked-LM weight sum and batch size
  (all-reduced before the forward pass, see `losses`), and the gradients
  are summed across replicas before clipping to global norm 1.0;
- resume from the latest checkpoint in `output_dir` (model, optimizer slots,
  global step), a checkpoint on SIGTERM, and a stop with the step named on a
  NaN/Inf loss without saving the bad state;
- one summary line of what will run, and warnings about settings that
  mislead (`train_config.setting_warnings`).

Evaluation (`Evaluator`, the original's eval metrics) is `training/evaluation.py`.
"""

import os
import signal
import threading
import time

import keras
import tensorflow as tf
from absl import logging

from bert_tf.io import file_io as files
from bert_tf.data.input import pipeline
from bert_tf.models.config import BertConfig
from bert_tf.training import chance_level
from bert_tf.training import checkpoints
from bert_tf.training import evaluation
from bert_tf.training import objectives
from bert_tf.training import optimization
from bert_tf.training import progress
from bert_tf.training import run_identity
from bert_tf.training import strategy as strategies
from bert_tf.training import train_config
from bert_tf.training.train_config import TrainConfig

CLIP_NORM = 1.0  # the original's clip_by_global_norm(grads, clip_norm=1.0); --clip_norm


class TrainingDivergedError(RuntimeError):
  """The loss became NaN or Inf; the last good checkpoint is kept."""


# --------------------------------------------------------------------------
# Data, model
# --------------------------------------------------------------------------


def check_data(config, bert_config, replicas):
  """(train DataInfo or None, eval DataInfo or None); ValueError on a
  batch size the replicas do not divide or records that do not fit."""
  train_info = eval_info = None
  if config.do_train:
    if config.train_batch_size % (replicas * config.grad_accum_steps):
      raise ValueError(f"train_batch_size={config.train_batch_size} is not divisible by "
                       f"{replicas} replicas x grad_accum_steps={config.grad_accum_steps}")
    train_info = pipeline.check_data(config.input_file, config.max_seq_length,
                                     config.max_predictions_per_seq, bert_config.vocab_size)
  if config.do_eval:
    if config.eval_batch_size % replicas:
      raise ValueError(f"eval_batch_size={config.eval_batch_size} is not divisible by "
                       f"{replicas} replicas")
    eval_info = pipeline.check_data(config.eval_input_file or config.input_file,
                                    config.max_seq_length, config.max_predictions_per_seq,
                                    bert_config.vocab_size)
  return train_info, eval_info


def resolve_objective(config, train_info, eval_info):
  """The objective of `config.objective` on these records (training's and
  eval's must hold the same sentence task)."""
  tasks = {info.sentence_task for info in (train_info, eval_info) if info is not None}
  if len(tasks) > 1:
    raise ValueError(f"training records have sentence_task={train_info.sentence_task} but "
                     f"eval records ({config.eval_input_file}) have "
                     f"sentence_task={eval_info.sentence_task}; write both with one "
                     "--sentence_task")
  return objectives.resolve(config.objective, tasks.pop() if tasks else None,
                            options=config, data=train_info or eval_info)


def build(config, bert_config, strategy, objective):
  """(model, optimizer, global_step) created under the strategy's scope."""
  keras.utils.set_random_seed(config.seed)
  with strategy.scope():
    model = objective.build_model(
        bert_config, dtype=train_config.MIXED_PRECISION_POLICIES[config.mixed_precision])
    optimizer = optimization.create_optimizer(
        config.optimizer, config.learning_rate, config.num_train_steps,
        config.num_warmup_steps, weight_decay=config.weight_decay,
        beta_1=config.adam_beta1, beta_2=config.adam_beta2, epsilon=config.adam_epsilon,
        warmup=config.lr_schedule)
    if config.mixed_precision == "float16":
      # Dynamic loss scaling: skips the update and halves the scale when the
      # float16 gradients overflow.
      optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    optimizer.build(objective.trainable_variables(model))
    global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step",
                              aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
  return model, optimizer, global_step


def _files_phrase(info):
  count = f" ({info.num_instances:,} instances)" if info.num_instances else ""
  return f"{len(info.files)} file{'s' if len(info.files) != 1 else ''}{count}"


def _plan_line(config, bert_config, params, strategy, train_info, eval_info, objective):
  """One readable line of what `run` will do."""
  family = "ALBERT" if bert_config.is_albert else "BERT"
  parts = [f"{family} {params / 1e6:.2f}M params ({bert_config.num_hidden_layers} layers, "
           f"hidden {bert_config.hidden_size}), objective {objective.name}"]
  if train_info:
    parts.append(f"train {config.num_train_steps} steps x batch {config.train_batch_size} x "
                 f"{config.max_seq_length} tokens, lr {config.learning_rate:g} warmup "
                 f"{config.num_warmup_steps} ({config.optimizer})")
    parts.append(f"train data {_files_phrase(train_info)}")
  if eval_info:
    source = "held out" if config.eval_input_file else "the TRAINING data"
    parts.append(f"eval up to {config.max_eval_steps} x {config.eval_batch_size} on "
                 f"{source}, {_files_phrase(eval_info)}")
  replicas = strategy.num_replicas_in_sync
  parts.append(f"{type(strategy).__name__} x {replicas} replica{'s' * (replicas != 1)}")
  return "Plan: " + "; ".join(parts) + f"; output {config.output_dir}"


# --------------------------------------------------------------------------
# Update step
# --------------------------------------------------------------------------


class Trainer:
  """The update step of `objective` on `model` and the host loop that runs it.

  `update_step(features)` is one optimizer step on this replica's share of
  a global batch, run by `strategy.run`; `train_steps(iterator, num_steps)`
  runs up to `num_steps` of them inside one tf.function and returns
  (the steps' `train_keys` metrics averaged: float32, steps run: int32, all
  losses finite: bool), stopping after a non-finite loss.

  jit_compile: with one replica the whole update step is one XLA cluster
  (forward, backward, clipping and the optimizer update; its all-reduces
  are no-ops). With several, or on TPUs (which compile the whole step
  anyway), only the forward and backward are: a compiled function may hold
  no cross-replica synchronization. `compiled_update_step` and
  `compiled_forward_backward` are what run: the raw `update_step` and
  `forward_backward`, or their XLA-compiled forms as that choice says.
  """

  def __init__(self, strategy, model, optimizer, objective, global_step, accum_steps=1,
               loss_scaling=False, jit_compile=False, clip_norm=CLIP_NORM):
    self.strategy, self.model, self.optimizer = strategy, model, optimizer
    self.clip_norm = float(clip_norm)
    self.objective, self.global_step = objective, global_step
    self.train_keys = objective.metric_keys + ("gradient_norm",)
    self.trainable = objective.trainable_variables(model)
    self.accum_steps, self.loss_scaling = accum_steps, loss_scaling
    self.gradient_error = None  # set when tracing finds a weight without a gradient
    # The jit choice, in one place.
    whole_step = (jit_compile and strategy.num_replicas_in_sync == 1
                  and not isinstance(strategy, tf.distribute.TPUStrategy))
    if jit_compile and not whole_step:
      logging.info("jit_compile: compiling the forward/backward only; the all-reduce and "
                   "optimizer update of %s x %d replicas run uncompiled",
                   type(strategy).__name__, strategy.num_replicas_in_sync)
    self.compiled_forward_backward = (tf.function(self.forward_backward, jit_compile=True)
                                      if jit_compile and not whole_step
                                      else self.forward_backward)
    self.compiled_update_step = (tf.function(self.update_step, jit_compile=True) if whole_step
                                 else self.update_step)
    self.host_loop_function = tf.function(evaluation.own_function(self._host_loop))

  def update_step(self, features):
    """One optimizer step on this replica's share of the global batch.

    Returns the objective's metrics of the global batch plus its gradient
    norm before clipping (float32 scalars, identical on every replica).
    """
    ctx = tf.distribute.get_replica_context()
    # 1. The loss normalizers of the GLOBAL batch (all-reduced before the
    #    forward pass), so each replica's loss is its share of one loss.
    counts = self.objective.global_counts(features)
    # 2. Forward and backward, micro-batch by micro-batch.
    grads, sums = self.compiled_forward_backward(features, counts)
    # 3. Sum gradients and loss sums over the replicas: the single-device
    #    gradient of the global batch, whatever the strategy.
    grads, sums = ctx.all_reduce(tf.distribute.ReduceOp.SUM, (grads, sums))
    if self.loss_scaling:
      grads = [g / self.optimizer.dynamic_scale for g in grads]
    # 4. Clip to global norm 1.0, as the original (--clip_norm).
    grad_norm = tf.linalg.global_norm(grads)
    grads, _ = tf.clip_by_global_norm(grads, self.clip_norm, use_norm=grad_norm)
    # 5. Apply. Keras optimizers all-reduce (sum) the gradients once more
    #    inside apply(); ours are summed already, so each replica passes its
    #    1/n part (and the loss-scale optimizer unscales what it is given).
    replicas = ctx.num_replicas_in_sync
    if self.loss_scaling:
      grads = [g * (self.optimizer.dynamic_scale / replicas) for g in grads]
    elif replicas > 1:
      grads = [g * (1.0 / replicas) for g in grads]
    self.optimizer.apply(grads, self.trainable)
    return dict(self.objective.metrics(sums), gradient_norm=grad_norm)

  def forward_backward(self, features, counts):
    """This replica's gradients (float32, like `trainable`) and loss sums,
    summed over `accum_steps` micro-batches; `counts` are the objective's
    global normalizers."""
    if self.accum_steps == 1:
      return self._loss_gradients(features, counts)
    split = {k: tf.reshape(v, [self.accum_steps, -1] + v.shape[1:].as_list())
             for k, v in features.items()}
    grads = [tf.zeros_like(v) for v in self.trainable]
    sums = {k: tf.constant(0.0) for k in self.objective.sum_keys}
    for i in tf.range(self.accum_steps):
      micro_grads, micro_sums = self._loss_gradients({k: v[i] for k, v in split.items()},
                                                     counts)
      grads = [g + m for g, m in zip(grads, micro_grads)]
      sums = {k: sums[k] + micro_sums[k] for k in sums}
    return grads, sums

  def _loss_gradients(self, features, counts):
    with tf.GradientTape() as tape:
      sums = self.objective.loss_sums(self.model(features, training=True), features)
      loss = self.objective.replica_loss(sums, counts)
      if self.loss_scaling:
        loss = self.optimizer.scale_loss(loss)
    grads = tape.gradient(loss, self.trainable)
    # Embedding lookups give IndexedSlices; the tied MLM output layer makes
    # the word-embedding gradient dense anyway, and dense tensors all-reduce,
    # accumulate and clip uniformly. A trainable weight the loss does not
    # reach is the objective's mistake (its `trainable_variables` should
    # leave it out, as MLM alone leaves out the pooler): say which.
    missing = [v.path for g, v in zip(grads, self.trainable) if g is None]
    if missing:
      self.gradient_error = (
          f"objective {self.objective.name}: the loss reaches no gradient to "
          f"{', '.join(missing[:3])}; leave them out of its trainable_variables")
      raise ValueError(self.gradient_error)
    return [tf.convert_to_tensor(g) for g in grads], sums

  def train_steps(self, iterator, num_steps):
    """See the class docstring."""
    try:
      return self.host_loop_function(iterator, num_steps)
    except ValueError:
      if self.gradient_error:  # one line, without autograph's traceback
        raise ValueError(self.gradient_error) from None
      raise

  def _host_loop(self, iterator, num_steps):
    totals = {k: tf.constant(0.0) for k in self.train_keys}
    done, finite = tf.constant(0), tf.constant(True)
    for _ in tf.range(num_steps):
      metrics = evaluation.first_replica(self.strategy,
                               self.strategy.run(self.compiled_update_step,
                                                 args=(next(iterator),)))
      self.global_step.assign_add(1)
      done += 1
      totals = {k: totals[k] + metrics[k] for k in self.train_keys}
      if not tf.math.is_finite(metrics["loss"]):
        finite = tf.constant(False)
        break
    return {k: v / tf.cast(done, tf.float32) for k, v in totals.items()}, done, finite


# --------------------------------------------------------------------------
# Host-side helpers
# --------------------------------------------------------------------------


def _steps_to_next_stop(step, config):
  """Steps until the next host boundary: end, iterations_per_loop, or a
  log, save or eval step."""
  boundaries = [config.num_train_steps, step + config.iterations_per_loop]
  for every in (config.log_steps, config.save_checkpoints_steps, config.eval_every_steps):
    if every:
      boundaries.append((step // every + 1) * every)
  return min(boundaries) - step


def _host_metrics(metrics, done, elapsed, optimizer, config):
  """The host loop's metrics (floats) plus learning rate and throughput."""
  out = {k: float(v) for k, v in metrics.items()}
  out["learning_rate"] = float(optimizer.learning_rate)
  out["examples_per_second"] = done * config.train_batch_size / elapsed
  out["tokens_per_second"] = done * config.train_batch_size * config.max_seq_length / elapsed
  if config.mixed_precision == "float16":
    out["loss_scale"] = float(optimizer.dynamic_scale)
  return out


class _TrainInput:
  """The training iterator, and its release on another thread.

  Destroying a tf.data iterator cancels its reading at once, then joins its
  threads, the autotuner's among them, which sleeps up to a minute between
  optimizations: we saw 10 to 47 s of idle wait at the end of runs
  (py-spy: RootDataset::Iterator::~Iterator joining a thread of its
  UnboundedThreadPool), the longer the run the longer the wait. `release`
  hands the last reference to another thread, so the run goes on at once
  (the destructor runs without the GIL); `seconds` is how long the
  destruction took there, once `thread` is done. The thread is not a daemon:
  Python joins it before the interpreter exits (a daemon thread still in
  the destructor then aborted the process inside TensorFlow's C++), so a
  process that ends right after training may still wait for it at exit.
  Disabling autotuning also removes the wait but cost 9% of training
  examples/s.
  """

  def __init__(self, iterator):
    self.iterator = iterator
    self.thread = None
    self.seconds = None

  def release(self):
    if self.thread is not None:
      return
    held, self.iterator = [self.iterator], None

    def destroy():
      start = time.time()
      held.clear()
      self.seconds = time.time() - start

    self.thread = threading.Thread(target=destroy, name="release-train-input", daemon=False)
    self.thread.start()


class _StopOnSignal:
  """Sets a flag on SIGTERM (preemption), checked between host loops: the
  loop then saves the step and `run` returns (`stopped_by_signal`).

  Not tf.distribute.experimental.PreemptionCheckpointHandler: that supports
  only MultiWorkerMirroredStrategy and TPUStrategy (not one device or
  MirroredStrategy) and ends the process after saving, where `run` is a
  function that returns to its caller (tests, compare_objectives).
  """

  def __init__(self):
    self.requested = False
    self._previous = None

  def __enter__(self):
    if threading.current_thread() is threading.main_thread():
      self._previous = signal.signal(signal.SIGTERM, self._handle)
    return self

  def _handle(self, signum, frame):  # pylint: disable=unused-argument
    self.requested = True

  def __exit__(self, *exc):
    if self._previous is not None:
      signal.signal(signal.SIGTERM, self._previous)


class _RunDirectory:
  """output_dir and the TensorBoard writers, for the `with` around the run.

  Entering creates output_dir (only now, once the settings, data and model
  are known to be good) and the writers (the chief's; other workers write
  none). Leaving closes the writers on every path, and after a failure
  removes an output_dir this run created if it holds no checkpoint and no
  eval results yet, so a failed run leaves nothing behind.
  """

  def __init__(self, config, is_chief, identity=None):
    self.dir, self.is_chief, self.do_eval = config.output_dir, is_chief, config.do_eval
    self.identity = identity  # run_identity's, recorded on entering
    self.existed = files.exists(self.dir)
    self.train = self.eval = tf.summary.create_noop_writer()

  def __enter__(self):
    if self.is_chief:
      files.makedirs(self.dir)
      if self.identity is not None:
        run_identity.write(self.dir, self.identity)
      self.train = tf.summary.create_file_writer(os.path.join(self.dir, "train"))
      if self.do_eval:
        self.eval = tf.summary.create_file_writer(os.path.join(self.dir, "eval"))
    return self

  def scalars(self, writer, step, values):
    with writer.as_default(step=step):
      for key, value in values.items():
        tf.summary.scalar(key, value)
    writer.flush()

  def __exit__(self, exc_type, *unused):
    self.train.close()
    self.eval.close()
    if (exc_type is not None and self.is_chief and not self.existed
        and not tf.train.latest_checkpoint(self.dir)
        and not files.exists(os.path.join(self.dir, "eval_results.txt"))):
      files.rmtree(self.dir)


def _checkpoint(config, strategy, is_chief, model, optimizer, global_step, objective):
  """(checkpoint, manager, its directory, the prefix resumed from or None).

  Resuming: the same command continues where it stopped, with the same
  optimizer slots and schedule position, and init_checkpoint is not used;
  otherwise init_checkpoint warm-starts the model. A checkpoint of another
  objective in output_dir is an error.
  """
  objectives.check_objective(config.output_dir, objective)
  checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=global_step,
                                   **objectives.checkpoint_variables(objective))
  ckpt_dir = config.output_dir
  if not is_chief:
    # Every worker takes part in saving; only the chief keeps its files.
    resolver = strategy.cluster_resolver
    ckpt_dir = os.path.join(ckpt_dir, f"workertemp_{resolver.task_type}_{resolver.task_id}")
  manager = tf.train.CheckpointManager(checkpoint, ckpt_dir,
                                       max_to_keep=config.keep_checkpoint_max)
  resumed = checkpoints.restore_training_state(checkpoint, config.output_dir)
  if resumed:
    logging.info("Resumed from %s at step %d", resumed, int(global_step.numpy()))
  elif config.init_checkpoint:
    report = checkpoints.warm_start(model, config.init_checkpoint)
    if report.format == "transformers" and is_chief:
      # The model's config came from the folder's config.json: keep ours
      # beside the checkpoints, for export and fine-tuning.
      checkpoints.write_config_beside(model.config, config.output_dir, report.prefix)
  return checkpoint, manager, ckpt_dir, resumed


# --------------------------------------------------------------------------
# run
# --------------------------------------------------------------------------


def run(config: TrainConfig, bert_config: BertConfig, strategy=None):
  """Trains and/or evaluates BERT pretraining as `config` says.

  Args:
    config: TrainConfig.
    bert_config: BertConfig of the model.
    strategy: a tf.distribute.Strategy, or None to make one from config.
  Returns:
    dict with "global_step" (int), "train" (metrics of the last host
    loop, float), "train_history" (those of every host loop), "eval" (the
    eval_results.txt values, when do_eval) and "eval_history" (list of eval
    result dicts in step order), "model" (the trained model, for a caller
    that goes on with it in the same process: compare counts its
    parameters), "stopped_by_signal" (True when SIGTERM ended the run: its
    step is saved, the run is not finished) and "replicas" (how many ran
    the step). The optimizer state is in the checkpoints.
  Raises:
    ValueError / FileNotFoundError: bad settings or data (one line).
    TrainingDivergedError: NaN or Inf loss (the step is named).
  """
  config.validate()
  # === Strategy ===
  if strategy is None:
    strategy = strategies.make_strategy(config.strategy, config.tpu_name, config.tpu_zone,
                             config.gcp_project)
  is_chief = strategies.is_chief(strategy)

  # === Data ===
  train_info, eval_info = check_data(config, bert_config, strategy.num_replicas_in_sync)
  objective = resolve_objective(config, train_info, eval_info)
  train_config.log_setting_warnings(config)

  # === Model, optimizer, checkpoint ===
  model, optimizer, global_step = build(config, bert_config, strategy, objective)
  logging.info("%s", _plan_line(config, bert_config, model.count_params(), strategy,
                                train_info, eval_info, objective))
  identity = run_identity.identity_of(bert_config, objective, train_info)
  run_identity.check(config.output_dir, identity)  # another run there: a one-line error
  _, manager, ckpt_dir, resumed = _checkpoint(
      config, strategy, is_chief, model, optimizer, global_step, objective)
  trainer = Trainer(strategy, model, optimizer, objective, global_step,
                    accum_steps=config.grad_accum_steps,
                    loss_scaling=config.mixed_precision == "float16",
                    jit_compile=config.jit_compile, clip_norm=config.clip_norm)
  evaluator = evaluation.Evaluator(model, objective, strategy)
  step = int(global_step.numpy())
  result = {"global_step": step, "train": {}, "train_history": [], "eval_history": [],
            "model": model, "stopped_by_signal": False,
            "replicas": strategy.num_replicas_in_sync}

  with _RunDirectory(config, is_chief, identity) as out, _StopOnSignal() as stop:
    # === Train ===
    if config.do_train and step < config.num_train_steps:
      train_input = _TrainInput(iter(pipeline.distributed_dataset(
          strategy, train_info, config.train_batch_size, is_training=True,
          seed=config.seed + step, shuffle_buffer=config.shuffle_buffer)))
      # Released on every way out (the end, SIGTERM, a NaN stop, an error).
      try:
        logging.info("Training from step %d to %d", step, config.num_train_steps)
        eta = progress.EtaEstimator(step, time.time(), config.num_train_steps)
        while step < config.num_train_steps:
          loop_start = time.time()
          with pipeline.naming_damage(train_info, "training records"):
            metrics, done, finite = trainer.train_steps(
                train_input.iterator, tf.constant(_steps_to_next_stop(step, config), tf.int32))
          elapsed = time.time() - loop_start
          step = int(global_step.numpy())
          eta.loop_done(step, time.time())
          if not bool(finite):
            raise TrainingDivergedError(
                f"loss is NaN or Inf at step {step}; stopped without saving; the last good "
                f"checkpoint in {config.output_dir} is "
                f"{tf.train.latest_checkpoint(config.output_dir)}")
          metrics = _host_metrics(metrics, int(done), elapsed, optimizer, config)
          result["train"] = metrics
          result["train_history"].append(dict(metrics, global_step=step))
          out.scalars(out.train, step, metrics)
          last = step == config.num_train_steps
          if step % config.log_steps == 0 or last:
            progress.log_progress(step, config.num_train_steps, metrics, eta.text(step), objective)
          if step % config.save_checkpoints_steps == 0 or last or stop.requested:
            logging.info("Saved checkpoint %s", manager.save(checkpoint_number=step))
          if stop.requested:
            logging.warning("SIGTERM: saved step %d and stopped", step)
            return dict(result, global_step=step, stopped_by_signal=True)
          if (config.do_eval and config.eval_every_steps and not last
              and step % config.eval_every_steps == 0):
            result["eval_history"].append(evaluation.evaluate(evaluator, eval_info, config, step))
            out.scalars(out.eval, step, {k: result["eval_history"][-1][k]
                                         for k in objective.metric_keys})
        logging.info("Training done at step %d", step)
      finally:
        train_input.release()
    result["global_step"] = step

    # === Evaluate ===
    if config.do_eval:
      if not config.do_train and not resumed and not config.init_checkpoint:
        logging.warning("Evaluating a freshly initialized model: no checkpoint in %s and "
                        "no init_checkpoint", config.output_dir)
      history = result["eval_history"]
      if not (history and history[-1]["global_step"] == step):
        history.append(evaluation.evaluate(evaluator, eval_info, config, step))
        out.scalars(out.eval, step, {k: history[-1][k] for k in objective.metric_keys})
      result["eval"] = history[-1]
      result["chance_warning"] = chance_level.warning(
          result["eval"], bert_config.vocab_size, config, result["train"],
          bert_config.hidden_dropout_prob, history)
      if result["chance_warning"]:
        logging.warning("%s", result["chance_warning"])

      # === Save ===
      if is_chief:
        evaluation.write_eval_results(os.path.join(config.output_dir, "eval_results.txt"),
                            result["eval"])
  if not is_chief and files.exists(ckpt_dir):
    files.rmtree(ckpt_dir)
  return result
