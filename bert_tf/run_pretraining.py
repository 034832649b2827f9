"""Pretrains BERT (masked LM + next sentence prediction) on TFRecords.

Same flags, meanings and defaults as google-research/bert's
run_pretraining.py, plus --strategy, --eval_input_file, --optimizer,
--mixed_precision, --jit_compile, --grad_accum_steps, --log_steps,
--eval_every_steps. Running the same command again resumes from the latest
checkpoint in --output_dir. --flagfile works (absl).

  python -m bert_tf.run_pretraining --bert_config_file=configs/bert_tiny.json \\
    --input_file=data/train-*.tfrecord --output_dir=/tmp/pretrain \\
    --do_train --do_eval --train_batch_size=64 --num_train_steps=2000
"""

from absl import app
from absl import flags
from absl import logging

from bert_tf import cli

FLAGS = flags.FLAGS


def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  f = flag_values
  flags.DEFINE_string("bert_config_file", None, "bert_config.json of the model to train.",
                      flag_values=f)
  flags.DEFINE_string("input_file", None,
                      "Input TFRecord files: comma-separated globs (plain or gzip).",
                      flag_values=f)
  flags.DEFINE_string("output_dir", None,
                      "Checkpoints, TensorBoard summaries and eval_results.txt go here.",
                      flag_values=f)
  flags.DEFINE_string("init_checkpoint", None,
                      "Warm start (weights only): a bert_tf training dir or checkpoint prefix, "
                      "or an original TF1 BERT checkpoint (bert_model.ckpt).", flag_values=f)
  flags.DEFINE_integer("max_seq_length", 128, "Sequence length of the records.", flag_values=f)
  flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked-LM predictions per record.",
                       flag_values=f)
  flags.DEFINE_bool("do_train", False, "Whether to train.", flag_values=f)
  flags.DEFINE_bool("do_eval", False, "Whether to evaluate (on --eval_input_file or --input_file).",
                    flag_values=f)
  flags.DEFINE_integer("train_batch_size", 32, "Global training batch size.", flag_values=f)
  flags.DEFINE_integer("eval_batch_size", 8, "Global eval batch size.", flag_values=f)
  flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.", flag_values=f)
  flags.DEFINE_integer("num_train_steps", 100000, "Training steps.", flag_values=f)
  flags.DEFINE_integer("num_warmup_steps", 10000, "Linear warmup steps.", flag_values=f)
  flags.DEFINE_integer("save_checkpoints_steps", 1000, "Checkpoint every this many steps.",
                       flag_values=f)
  flags.DEFINE_integer("iterations_per_loop", 1000,
                       "Steps per host round trip (one tf.function call).", flag_values=f)
  flags.DEFINE_integer("max_eval_steps", 100, "Maximum eval batches.", flag_values=f)
  flags.DEFINE_bool("use_tpu", False, "Train on a TPU (same as --strategy=tpu).", flag_values=f)
  flags.DEFINE_string("tpu_name", None, "TPU name or grpc address; 'local' for a TPU VM.",
                      flag_values=f)
  flags.DEFINE_string("tpu_zone", None, "GCE zone of the TPU.", flag_values=f)
  flags.DEFINE_string("gcp_project", None, "GCP project of the TPU.", flag_values=f)
  flags.DEFINE_string("master", None, "Accepted for compatibility (TPU master address); "
                      "use --tpu_name.", flag_values=f)
  flags.DEFINE_integer("num_tpu_cores", 8, "Accepted for compatibility; the TPU strategy "
                       "uses every core it finds.", flag_values=f)
  # New in bert_tf.
  flags.DEFINE_enum("strategy", None, ["one_device", "mirrored", "multi_worker_mirrored", "tpu"],
                    "Distribution strategy. Default: tpu with --use_tpu/--tpu_name, "
                    "mirrored with several GPUs, else one_device.", flag_values=f)
  flags.DEFINE_string("eval_input_file", None,
                      "Held-out TFRecords for --do_eval (default: --input_file, as the original).",
                      flag_values=f)
  flags.DEFINE_integer("eval_every_steps", 0,
                       "With --do_train --do_eval, also evaluate every this many steps.",
                       flag_values=f)
  flags.DEFINE_enum("optimizer", "adamw_original", ["adamw_original", "adamw", "lamb"],
                    "adamw_original: the original AdamWeightDecay; adamw: Keras AdamW; "
                    "lamb: Keras Lamb.", flag_values=f)
  flags.DEFINE_float("weight_decay", 0.01, "Weight decay (not on LayerNorm and biases).",
                     flag_values=f)
  flags.DEFINE_enum("mixed_precision", "none", ["none", "bfloat16", "float16"],
                    "Mixed precision policy; float16 uses dynamic loss scaling.", flag_values=f)
  flags.DEFINE_bool("jit_compile", False, "Compile each replica's forward/backward with XLA.",
                    flag_values=f)
  flags.DEFINE_integer("grad_accum_steps", 1,
                       "Micro-batches per optimizer step (train_batch_size stays the "
                       "examples per step).", flag_values=f)
  flags.DEFINE_integer("log_steps", 100, "Log and write summaries every this many steps.",
                       flag_values=f)
  flags.DEFINE_integer("keep_checkpoint_max", 5, "Checkpoints to keep.", flag_values=f)
  flags.DEFINE_integer("seed", 12345, "Seed of initialization and shuffling.", flag_values=f)


def config_from_flags():
  """Returns (TrainConfig, BertConfig) from FLAGS; raises app.UsageError."""
  from bert_tf.training import loop  # pylint: disable=g-import-not-at-top
  from bert_tf.models.config import BertConfig  # pylint: disable=g-import-not-at-top
  for name in ("bert_config_file", "output_dir"):
    if not FLAGS[name].value:
      raise app.UsageError(f"--{name} is required")
  if not FLAGS.input_file and not (FLAGS.do_eval and FLAGS.eval_input_file):
    raise app.UsageError("--input_file is required")
  if not FLAGS.do_train and not FLAGS.do_eval:
    raise app.UsageError("at least one of --do_train or --do_eval must be set")
  strategy = FLAGS.strategy
  if strategy is None and (FLAGS.use_tpu or FLAGS.tpu_name):
    strategy = "tpu"
  tpu_name = FLAGS.tpu_name or FLAGS.master or ""
  try:
    bert_config = BertConfig.from_json_file(FLAGS.bert_config_file)
  except (ValueError, OSError) as e:
    raise app.UsageError(f"--bert_config_file={FLAGS.bert_config_file}: {e}") from None
  config = loop.TrainConfig(
      input_file=FLAGS.input_file or "",
      output_dir=FLAGS.output_dir,
      eval_input_file=FLAGS.eval_input_file or "",
      init_checkpoint=FLAGS.init_checkpoint or "",
      max_seq_length=FLAGS.max_seq_length,
      max_predictions_per_seq=FLAGS.max_predictions_per_seq,
      do_train=FLAGS.do_train,
      do_eval=FLAGS.do_eval,
      train_batch_size=FLAGS.train_batch_size,
      eval_batch_size=FLAGS.eval_batch_size,
      learning_rate=FLAGS.learning_rate,
      num_train_steps=FLAGS.num_train_steps,
      num_warmup_steps=FLAGS.num_warmup_steps,
      save_checkpoints_steps=FLAGS.save_checkpoints_steps,
      iterations_per_loop=FLAGS.iterations_per_loop,
      max_eval_steps=FLAGS.max_eval_steps,
      eval_every_steps=FLAGS.eval_every_steps,
      strategy=strategy or "",
      tpu_name=tpu_name,
      tpu_zone=FLAGS.tpu_zone or "",
      gcp_project=FLAGS.gcp_project or "",
      optimizer=FLAGS.optimizer,
      weight_decay=FLAGS.weight_decay,
      mixed_precision=FLAGS.mixed_precision,
      jit_compile=FLAGS.jit_compile,
      grad_accum_steps=FLAGS.grad_accum_steps,
      log_steps=FLAGS.log_steps,
      keep_checkpoint_max=FLAGS.keep_checkpoint_max,
      seed=FLAGS.seed)
  try:
    config.validate()
  except ValueError as e:
    raise app.UsageError(str(e)) from None
  return config, bert_config


def main(argv):
  del argv
  from bert_tf.training import loop  # pylint: disable=g-import-not-at-top
  config, bert_config = config_from_flags()
  logging.set_verbosity(logging.INFO)
  try:
    result = loop.run(config, bert_config)
  except loop.TrainingDivergedError as e:
    raise cli.Error(str(e)) from None
  if "eval" in result:
    for key in sorted(result["eval"]):
      logging.info("  %s = %s", key, result["eval"][key])
  return 0


def run():
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
