"""BERT pretraining: a custom training loop under any tf.distribute strategy.

`run(TrainConfig, BertConfig)` trains and/or evaluates, reading like the
original `run_pretraining.py` but as one straight-line function with banner
sections. What it adds over the original:

- one code path for one device, several GPUs (MirroredStrategy), several
  hosts (MultiWorkerMirroredStrategy) and TPUs; `iterations_per_loop` steps
  run inside one `tf.function` (a loop over the distributed iterator), so the
  host round trip is paid once per loop, as with TPUEstimator;
- the loss and gradients of a global batch are those of a single device
  whatever the strategy: each replica's masked-LM numerator is divided by the
  masked-LM weight sum of the *global* batch (all-reduced before the forward
  pass), the NSP sum by the global batch size, and the gradients are summed
  across replicas before clipping to global norm 1.0;
- resume from the latest checkpoint in `output_dir` (model, optimizer slots,
  global step), a checkpoint on SIGTERM, and a stop with the step named on a
  NaN/Inf loss without saving the bad state.
"""

import dataclasses
import math
import os
import signal
import threading
import time

import keras
import tensorflow as tf
from absl import logging

from bert_tf.data import pipeline
from bert_tf.training import losses
from bert_tf.models import modeling
from bert_tf.training import optimization
from bert_tf.models.config import BertConfig

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")
OPTIMIZERS = ("adamw_original", "adamw", "lamb")
MIXED_PRECISION = ("none", "bfloat16", "float16")
CLIP_NORM = 1.0
_MLM_EPSILON = losses.MLM_EPSILON
# Names of eval_results.txt, exactly the original's keys.
EVAL_KEYS = ("global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
             "next_sentence_accuracy", "next_sentence_loss")


class TrainingDivergedError(RuntimeError):
  """The loss became NaN or Inf; the last good checkpoint is kept."""


@dataclasses.dataclass
class TrainConfig:
  """Everything `run` needs besides the BertConfig (the flags of
  run_pretraining, same names and defaults as the original where it had them).

  strategy: one of STRATEGIES, or "" to choose: "tpu" when `tpu_name` is
    set, "mirrored" with several GPUs, else "one_device".
  iterations_per_loop: steps per host round trip (one tf.function call);
    the loop also returns to the host at every log, save and eval boundary.
  eval_input_file: held-out records; "" evaluates on `input_file`, as the
    original does.
  eval_every_steps: also evaluate every this many steps while training
    (0: only after training).
  grad_accum_steps: split each global batch into this many micro-batches
    whose gradients are summed before one optimizer step (same result, less
    memory); train_batch_size stays the examples per optimizer step.
  seed: model initialization and shuffling; the data seed is offset by the
    start step so a resumed run does not replay the first batches.
  """
  input_file: str = ""
  output_dir: str = ""
  eval_input_file: str = ""
  init_checkpoint: str = ""
  max_seq_length: int = 128
  max_predictions_per_seq: int = 20
  do_train: bool = False
  do_eval: bool = False
  train_batch_size: int = 32
  eval_batch_size: int = 8
  learning_rate: float = 5e-5
  num_train_steps: int = 100000
  num_warmup_steps: int = 10000
  save_checkpoints_steps: int = 1000
  iterations_per_loop: int = 1000
  max_eval_steps: int = 100
  eval_every_steps: int = 0
  strategy: str = ""
  tpu_name: str = ""
  tpu_zone: str = ""
  gcp_project: str = ""
  optimizer: str = "adamw_original"
  weight_decay: float = 0.01
  mixed_precision: str = "none"
  jit_compile: bool = False
  grad_accum_steps: int = 1
  log_steps: int = 100
  keep_checkpoint_max: int = 5
  seed: int = 12345
  shuffle_buffer: int = 10000

  def validate(self):
    """Raises ValueError naming the first bad setting."""
    if not (self.do_train or self.do_eval):
      raise ValueError("at least one of do_train or do_eval must be set")
    if not self.output_dir:
      raise ValueError("output_dir is required")
    if not self.input_file and (self.do_train or not self.eval_input_file):
      raise ValueError("input_file is required")
    if self.strategy and self.strategy not in STRATEGIES:
      raise ValueError(f"strategy={self.strategy!r} is not one of {', '.join(STRATEGIES)}")
    if self.optimizer not in OPTIMIZERS:
      raise ValueError(f"optimizer={self.optimizer!r} is not one of {', '.join(OPTIMIZERS)}")
    if self.mixed_precision not in MIXED_PRECISION:
      raise ValueError(f"mixed_precision={self.mixed_precision!r} is not one of "
                       f"{', '.join(MIXED_PRECISION)}")
    for name in ("max_seq_length", "max_predictions_per_seq", "train_batch_size",
                 "eval_batch_size", "save_checkpoints_steps", "iterations_per_loop",
                 "grad_accum_steps", "log_steps", "keep_checkpoint_max"):
      if getattr(self, name) <= 0:
        raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
    if self.do_train and self.num_train_steps <= 0:
      raise ValueError(f"num_train_steps must be positive, got {self.num_train_steps}")
    for name in ("num_warmup_steps", "max_eval_steps", "eval_every_steps"):
      if getattr(self, name) < 0:
        raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")


# --------------------------------------------------------------------------
# Strategy
# --------------------------------------------------------------------------


def make_strategy(name="", tpu_name="", tpu_zone="", gcp_project=""):
  """Returns the tf.distribute.Strategy named `name` ("" chooses, see
  TrainConfig.strategy). Raises ValueError when a TPU is asked for but none
  is reachable (within a second for tpu_name "" or "local")."""
  gpus = tf.config.list_physical_devices("GPU")
  if not name:
    name = "tpu" if tpu_name else ("mirrored" if len(gpus) > 1 else "one_device")
  if name == "one_device":
    return tf.distribute.OneDeviceStrategy("/gpu:0" if gpus else "/cpu:0")
  if name == "mirrored":
    return tf.distribute.MirroredStrategy()
  if name == "multi_worker_mirrored":
    return tf.distribute.MultiWorkerMirroredStrategy()
  if name == "tpu":
    # "local" (a TPU VM) when no name is given: an unnamed resolver would
    # query the GCE metadata server, which can take minutes to time out.
    target = tpu_name or "local"
    try:
      resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
          tpu=target, zone=tpu_zone or None, project=gcp_project or None)
      if target != "local":
        tf.config.experimental_connect_to_cluster(resolver)
      tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, tf.errors.OpError, RuntimeError) as e:
      first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
      raise ValueError(f"--strategy=tpu: no TPU found (tpu_name={target!r}): {first_line[:200]}; "
                       "name a reachable TPU with --tpu_name or choose another --strategy"
                       ) from e
    return tf.distribute.TPUStrategy(resolver)
  raise ValueError(f"strategy={name!r} is not one of {', '.join(STRATEGIES)}")


def _is_chief(strategy):
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not resolver.task_type:
    return True
  if resolver.task_type == "chief":
    return True
  has_chief = "chief" in resolver.cluster_spec().as_dict()
  return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief


# --------------------------------------------------------------------------
# Losses of one replica's share of a global batch
# --------------------------------------------------------------------------


_SHARE_KEYS = ("mlm_loss", "nsp_loss", "mlm_correct", "nsp_correct")


def replica_loss_terms(outputs, features, global_weight_sum, global_batch_size):
  """This replica's additive shares (`losses.replica_losses`): dict of float32
  scalars mlm_loss, nsp_loss (shares of the global losses), mlm_correct
  (weighted right predictions), nsp_correct. Summed over replicas and
  micro-batches they give the single-device values of the global batch."""
  shares = losses.replica_losses(outputs, features, global_weight_sum, global_batch_size)
  return {k: shares[k] for k in _SHARE_KEYS}


def _global_metrics(sums, weight_sum, batch_size):
  """Turns all-reduced shares into the logged metrics (float32 scalars)."""
  return {
      "loss": sums["mlm_loss"] + sums["nsp_loss"],
      "masked_lm_loss": sums["mlm_loss"],
      "next_sentence_loss": sums["nsp_loss"],
      "masked_lm_accuracy": sums["mlm_correct"] / tf.maximum(weight_sum, 1.0),
      "next_sentence_accuracy": sums["nsp_correct"] / batch_size,
  }


# --------------------------------------------------------------------------
# Checkpoints
# --------------------------------------------------------------------------


def _resolve_checkpoint(path):
  """A training directory -> its latest checkpoint prefix; a prefix as is."""
  if tf.io.gfile.isdir(path):
    latest = tf.train.latest_checkpoint(path)
    released = os.path.join(path, "bert_model.ckpt")
    if latest is None and tf.io.gfile.exists(released + ".index"):
      latest = released  # an unpacked original release has no "checkpoint" file
    if latest is None:
      raise FileNotFoundError(f"init_checkpoint {path}: directory holds no checkpoint")
    return latest
  if not tf.io.gfile.exists(path + ".index"):
    raise FileNotFoundError(f"init_checkpoint {path}: no checkpoint there "
                            f"({path}.index does not exist)")
  return path


def warm_start(model, init_checkpoint):
  """Loads weights only (no optimizer state, no step) from `init_checkpoint`:
  a bert_tf training directory or checkpoint prefix, or an original TF1 BERT
  checkpoint (`bert_model.ckpt`)."""
  from bert_tf.models import tf1_checkpoint  # pylint: disable=g-import-not-at-top
  prefix = _resolve_checkpoint(init_checkpoint)
  if tf1_checkpoint.is_tf1_checkpoint(prefix):
    logging.info("Warm start from original TF1 checkpoint %s", prefix)
    tf1_checkpoint.load_tf1_checkpoint(model, prefix)
    return
  logging.info("Warm start (weights only) from %s", prefix)
  status = tf.train.Checkpoint(model=model).restore(prefix)
  status.expect_partial()
  try:
    status.assert_existing_objects_matched()
  except AssertionError as e:
    raise ValueError(f"init_checkpoint {prefix} does not hold this model's weights: "
                     f"{str(e).splitlines()[0]}") from None


def _write_eval_results(path, results):
  tmp = path + ".tmp"
  with tf.io.gfile.GFile(tmp, "w") as f:
    for key in sorted(results):
      f.write(f"{key} = {results[key]}\n")
  tf.io.gfile.rename(tmp, path, overwrite=True)


class _StopOnSignal:
  """Sets a flag on SIGTERM (preemption), checked between host loops."""

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


def _format_eta(seconds):
  if not math.isfinite(seconds):
    return "?"
  seconds = int(seconds)
  return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


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
    eval_results.txt values, when do_eval) and
    "eval_history" (list of eval result dicts in step order), "model" and
    "optimizer" (the trained objects, for inspection and tests) and
    "stopped_by_signal" (True when SIGTERM ended the run), "replicas".
  Raises:
    ValueError / FileNotFoundError: bad settings or data (one line).
    TrainingDivergedError: NaN or Inf loss (the step is named).
  """
  config.validate()
  if strategy is None:
    strategy = make_strategy(config.strategy, config.tpu_name, config.tpu_zone,
                             config.gcp_project)
  replicas = strategy.num_replicas_in_sync
  is_chief = _is_chief(strategy)
  tf.io.gfile.makedirs(config.output_dir)
  logging.info("TrainConfig: %s", config)
  logging.info("BertConfig: %s", bert_config.to_json_string())
  logging.info("Strategy %s with %d replicas", type(strategy).__name__, replicas)

  # === Input pipeline ===
  train_info = eval_info = None
  if config.do_train:
    if config.train_batch_size % (replicas * config.grad_accum_steps):
      raise ValueError(f"train_batch_size={config.train_batch_size} is not divisible by "
                       f"{replicas} replicas x grad_accum_steps={config.grad_accum_steps}")
    train_info = pipeline.check_data(
        config.input_file, config.max_seq_length, config.max_predictions_per_seq,
        bert_config.vocab_size)
    logging.info("Training on %d files (%s instances)", len(train_info.files),
                 train_info.num_instances or "unknown")
  if config.do_eval:
    if config.eval_batch_size % replicas:
      raise ValueError(f"eval_batch_size={config.eval_batch_size} is not divisible by "
                       f"{replicas} replicas")
    eval_info = pipeline.check_data(
        config.eval_input_file or config.input_file, config.max_seq_length,
        config.max_predictions_per_seq, bert_config.vocab_size)

  # === Model & optimizer ===
  keras.utils.set_random_seed(config.seed)
  dtype = {"none": None, "bfloat16": "mixed_bfloat16",
           "float16": "mixed_float16"}[config.mixed_precision]
  with strategy.scope():
    model = modeling.BertPretrainer(bert_config, dtype=dtype)
    optimizer = optimization.create_optimizer(
        config.optimizer, config.learning_rate, config.num_train_steps,
        config.num_warmup_steps, weight_decay=config.weight_decay)
    if config.mixed_precision == "float16":
      # Dynamic loss scaling: skips the update and halves the scale when the
      # float16 gradients overflow.
      optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    optimizer.build(model.trainable_variables)
    global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step",
                              aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
  trainable = model.trainable_variables
  logging.info("Model: %s parameters", f"{model.count_params():,}")

  # === Checkpoint ===
  checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=global_step)
  ckpt_dir = config.output_dir
  if not is_chief:
    # Every worker takes part in saving; only the chief keeps its files.
    resolver = strategy.cluster_resolver
    ckpt_dir = os.path.join(config.output_dir,
                            f"workertemp_{resolver.task_type}_{resolver.task_id}")
  manager = tf.train.CheckpointManager(checkpoint, ckpt_dir,
                                       max_to_keep=config.keep_checkpoint_max)
  latest = tf.train.latest_checkpoint(config.output_dir)
  if latest:
    # Resuming: the same command continues where it stopped, with the same
    # optimizer slots and schedule position; init_checkpoint is not used.
    checkpoint.restore(latest).assert_existing_objects_matched()
    logging.info("Resumed from %s at step %d", latest, int(global_step.numpy()))
  elif config.init_checkpoint:
    warm_start(model, config.init_checkpoint)

  def save(step):
    path = manager.save(checkpoint_number=step)
    logging.info("Saved checkpoint %s", path)

  # === Update step ===
  accum = config.grad_accum_steps
  seq_len = config.max_seq_length
  loss_scaling = config.mixed_precision == "float16"

  def compute_gradients(features, global_weight_sum, global_batch_size):
    """Forward and backward of this replica's batch, in `accum` micro-batches.

    Returns (grads: list of float32 tensors like `trainable`, shares: dict of
    float32 scalars as `replica_loss_terms`)."""
    def micro_step(micro):
      with tf.GradientTape() as tape:
        outputs = model(micro, training=True)
        shares = replica_loss_terms(outputs, micro, global_weight_sum, global_batch_size)
        loss = shares["mlm_loss"] + shares["nsp_loss"]
        if loss_scaling:
          loss = optimizer.scale_loss(loss)
      grads = tape.gradient(loss, trainable)
      # Embedding lookups give IndexedSlices; the tied MLM output layer makes
      # the word-embedding gradient dense anyway, and dense tensors all-reduce,
      # accumulate and clip uniformly.
      return [tf.convert_to_tensor(g) for g in grads], shares

    if accum == 1:
      return micro_step(features)
    split = {k: tf.reshape(v, [accum, -1] + v.shape[1:].as_list()) for k, v in features.items()}
    grads = [tf.zeros_like(v) for v in trainable]
    shares = {k: tf.constant(0.0) for k in _SHARE_KEYS}
    for i in tf.range(accum):
      micro_grads, micro_shares = micro_step({k: v[i] for k, v in split.items()})
      grads = [g + m for g, m in zip(grads, micro_grads)]
      shares = {k: shares[k] + micro_shares[k] for k in shares}
    return grads, shares

  if config.jit_compile:
    # Only the forward/backward is compiled: it holds no cross-replica
    # synchronization, which a nested compiled function may not contain.
    compute_gradients = tf.function(compute_gradients, jit_compile=True)

  def replica_step(features):
    ctx = tf.distribute.get_replica_context()
    local_counts = tf.stack([tf.reduce_sum(features["masked_lm_weights"]),
                             tf.cast(tf.shape(features["input_ids"])[0], tf.float32)])
    weight_sum, batch_size = tf.unstack(ctx.all_reduce(tf.distribute.ReduceOp.SUM, local_counts))
    grads, shares = compute_gradients(features, weight_sum, batch_size)
    grads, shares = ctx.all_reduce(tf.distribute.ReduceOp.SUM, (grads, shares))
    if loss_scaling:
      grads = [g / optimizer.dynamic_scale for g in grads]
    grad_norm = tf.linalg.global_norm(grads)
    grads, _ = tf.clip_by_global_norm(grads, CLIP_NORM, use_norm=grad_norm)
    # Keras optimizers all-reduce (sum) the gradients once more inside
    # apply(); ours are summed already, so each replica passes its 1/n part.
    if loss_scaling:
      grads = [g * (optimizer.dynamic_scale / replicas) for g in grads]
    elif replicas > 1:
      grads = [g * (1.0 / replicas) for g in grads]
    optimizer.apply(grads, trainable)
    metrics = _global_metrics(shares, weight_sum, batch_size)
    metrics["gradient_norm"] = grad_norm
    return metrics

  def eval_replica_step(features):
    ctx = tf.distribute.get_replica_context()
    local_counts = tf.stack([tf.reduce_sum(features["masked_lm_weights"]),
                             tf.cast(tf.shape(features["input_ids"])[0], tf.float32)])
    weight_sum, batch_size = tf.unstack(ctx.all_reduce(tf.distribute.ReduceOp.SUM, local_counts))
    outputs = model(features, training=False)
    shares = replica_loss_terms(outputs, features, weight_sum, batch_size)
    shares = ctx.all_reduce(tf.distribute.ReduceOp.SUM, shares)
    # Sums over batches, turned into the original's streaming metrics on the
    # host: weighted means over every prediction / example seen.
    return {"weight_sum": weight_sum, "batch_size": batch_size,
            "mlm_ce_sum": shares["mlm_loss"] * (weight_sum + _MLM_EPSILON),
            "mlm_correct": shares["mlm_correct"],
            "nsp_ce_sum": shares["nsp_loss"] * batch_size,
            "nsp_correct": shares["nsp_correct"],
            "batch_loss": shares["mlm_loss"] + shares["nsp_loss"]}

  def first_replica(values):
    # Values are all-reduced already, identical on every replica.
    return tf.nest.map_structure(lambda v: strategy.experimental_local_results(v)[0], values)

  @tf.function
  def train_loop(iterator, num_steps):
    """Runs up to `num_steps` steps; stops after a non-finite loss.

    Returns (mean metrics over the steps run, steps run: int32, finite: bool)."""
    names = ("loss", "masked_lm_loss", "next_sentence_loss", "masked_lm_accuracy",
             "next_sentence_accuracy", "gradient_norm")
    sums = {k: tf.constant(0.0) for k in names}
    done = tf.constant(0)
    finite = tf.constant(True)
    for _ in tf.range(num_steps):
      metrics = first_replica(strategy.run(replica_step, args=(next(iterator),)))
      global_step.assign_add(1)
      done += 1
      sums = {k: sums[k] + metrics[k] for k in names}
      if not tf.math.is_finite(metrics["loss"]):
        finite = tf.constant(False)
        break
    return {k: v / tf.cast(done, tf.float32) for k, v in sums.items()}, done, finite

  @tf.function
  def eval_step(batch):
    return first_replica(strategy.run(eval_replica_step, args=(batch,)))

  def evaluate():
    dataset = pipeline.distributed_dataset(strategy, eval_info, config.eval_batch_size,
                                                 is_training=False)
    totals, batches = {}, 0
    for batch in dataset:
      if batches >= config.max_eval_steps:
        break
      out = {k: float(v) for k, v in eval_step(batch).items()}
      totals = {k: totals.get(k, 0.0) + v for k, v in out.items()}
      batches += 1
    if not batches:
      raise ValueError(f"eval data {config.eval_input_file or config.input_file} holds fewer "
                       f"than eval_batch_size={config.eval_batch_size} records")
    results = {
        "global_step": int(global_step.numpy()),
        "loss": totals["batch_loss"] / batches,
        "masked_lm_accuracy": totals["mlm_correct"] / max(totals["weight_sum"], 1.0),
        "masked_lm_loss": totals["mlm_ce_sum"] / max(totals["weight_sum"], 1e-5),
        "next_sentence_accuracy": totals["nsp_correct"] / totals["batch_size"],
        "next_sentence_loss": totals["nsp_ce_sum"] / totals["batch_size"],
    }
    logging.info("Eval at step %d over %d batches: %s", results["global_step"], batches,
                 "  ".join(f"{k} = {results[k]:.4f}" for k in EVAL_KEYS[1:]))
    if is_chief:
      with eval_writer.as_default(step=results["global_step"]):
        for key in EVAL_KEYS[1:]:
          tf.summary.scalar(key, results[key])
      eval_writer.flush()
    return results

  # === Loop ===
  summary_dir = config.output_dir if is_chief else ckpt_dir
  train_writer = tf.summary.create_file_writer(os.path.join(summary_dir, "train"))
  eval_writer = (tf.summary.create_file_writer(os.path.join(summary_dir, "eval"))
                 if config.do_eval else tf.summary.create_noop_writer())
  result = {"global_step": int(global_step.numpy()), "train": {}, "train_history": [],
            "eval_history": [],
            "model": model, "optimizer": optimizer, "replicas": replicas}
  step = result["global_step"]
  if config.do_train and step < config.num_train_steps:
    dataset = pipeline.distributed_dataset(
        strategy, train_info, config.train_batch_size, is_training=True,
        seed=config.seed + step, shuffle_buffer=config.shuffle_buffer)
    iterator = iter(dataset)
    tokens_per_step = config.train_batch_size * seq_len
    start_step, start_time = step, time.time()
    logging.info("Training from step %d to %d", step, config.num_train_steps)
    with _StopOnSignal() as stop:
      while step < config.num_train_steps:
        boundaries = [config.num_train_steps, step + config.iterations_per_loop]
        for every in (config.log_steps, config.save_checkpoints_steps,
                      config.eval_every_steps):
          if every:
            boundaries.append((step // every + 1) * every)
        num_steps = min(boundaries) - step
        loop_start = time.time()
        metrics, done, finite = train_loop(iterator, tf.constant(num_steps, tf.int32))
        elapsed = time.time() - loop_start
        step = int(global_step.numpy())
        if not bool(finite):
          raise TrainingDivergedError(
              f"loss is NaN or Inf at step {step}; "
              f"stopped without saving; the last good checkpoint in {config.output_dir} "
              f"is {tf.train.latest_checkpoint(config.output_dir)}")
        metrics = {k: float(v) for k, v in metrics.items()}
        metrics["learning_rate"] = float(optimizer.learning_rate)
        metrics["examples_per_second"] = int(done) * config.train_batch_size / elapsed
        metrics["tokens_per_second"] = int(done) * tokens_per_step / elapsed
        if loss_scaling:
          metrics["loss_scale"] = float(optimizer.dynamic_scale)
        result["train"] = metrics
        result["train_history"].append(dict(metrics, global_step=step))
        if is_chief:
          with train_writer.as_default(step=step):
            for key, value in metrics.items():
              tf.summary.scalar(key, value)
        if step % config.log_steps == 0 or step == config.num_train_steps:
          rate = (step - start_step) / max(time.time() - start_time, 1e-9)
          logging.info(
              "step %d/%d  loss %.4f  mlm %.4f  nsp %.4f  mlm_acc %.4f  nsp_acc %.4f  "
              "lr %.3g  grad_norm %.3g  %.1f ex/s  %.0f tok/s  ETA %s",
              step, config.num_train_steps, metrics["loss"], metrics["masked_lm_loss"],
              metrics["next_sentence_loss"], metrics["masked_lm_accuracy"],
              metrics["next_sentence_accuracy"], metrics["learning_rate"],
              metrics["gradient_norm"], metrics["examples_per_second"],
              metrics["tokens_per_second"],
              _format_eta((config.num_train_steps - step) / rate if rate else float("inf")))
        if step % config.save_checkpoints_steps == 0 or step == config.num_train_steps:
          save(step)
        if stop.requested:
          if step % config.save_checkpoints_steps and step != config.num_train_steps:
            save(step)
          logging.warning("SIGTERM: saved step %d and stopped", step)
          result["global_step"] = step
          result["stopped_by_signal"] = True
          train_writer.close()
          eval_writer.close()
          return result
        if (config.do_eval and config.eval_every_steps and step % config.eval_every_steps == 0
            and step < config.num_train_steps):
          result["eval_history"].append(evaluate())
    train_writer.flush()
  result["global_step"] = step

  if config.do_eval and not (result["eval_history"] and
                             result["eval_history"][-1]["global_step"] == step):
    if not config.do_train and not latest and not config.init_checkpoint:
      logging.warning("Evaluating a freshly initialized model: no checkpoint in %s and "
                      "no init_checkpoint", config.output_dir)
    result["eval_history"].append(evaluate())
  if config.do_eval:
    result["eval"] = result["eval_history"][-1]
    if is_chief:
      _write_eval_results(os.path.join(config.output_dir, "eval_results.txt"), result["eval"])
  train_writer.close()
  eval_writer.close()
  if not is_chief and tf.io.gfile.exists(ckpt_dir):
    tf.io.gfile.rmtree(ckpt_dir)
  return result
