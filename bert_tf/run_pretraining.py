"""Pretrains a BERT-style encoder on TFRecords: BERT (masked LM + next
sentence prediction) by default; the records' sentence task and --objective
choose ALBERT's sentence order, RoBERTa's masked LM alone or ELECTRA.

Same flags, meanings and defaults as google-research/bert's
run_pretraining.py, plus --strategy, --eval_input_file, --eval_every_steps,
--optimizer (and its Adam settings), --mixed_precision, --jit_compile,
--grad_accum_steps, --log_steps, --keep_checkpoint_max, --seed, --objective
and the options of the objectives that take any (ELECTRA's generator and
discriminator flags). Running the same command again resumes from the
latest checkpoint in --output_dir; a command of another run (another model
config, objective or training records: run_identity.json there) is refused,
and --init_checkpoint starts from that run's weights instead. --flagfile
works (absl).

A short run that learns (the original's defaults, lr 5e-5 with 10000 warmup
steps, are for BERT-base over 100k+ steps; a tiny model wants a higher rate
and a warmup of about 10% of its steps):

  python -m bert_tf.run_pretraining --bert_config_file=configs/bert_tiny.json \\
    --input_file=data/train-*.tfrecord --eval_input_file=data/heldout-*.tfrecord \\
    --output_dir=/tmp/pretrain --do_train --do_eval --train_batch_size=64 \\
    --num_train_steps=2000 --num_warmup_steps=200 --learning_rate=1e-3

TPUs, as in the original: --use_tpu --tpu_name=NAME (see --strategy).
"""

from absl import app
from absl import flags
from absl import logging

from bert_tf import cli
from bert_tf.cli import shared_flags
from bert_tf.training import objective_names
from bert_tf.training import objectives
from bert_tf.training import train_config

FLAGS = flags.FLAGS

def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import).

  A flag named as a TrainConfig field takes the field's default."""
  f = flag_values
  d = train_config.TrainConfig()  # the defaults
  shared_flags.define_bert_config_file(f)
  flags.DEFINE_string("input_file", None,
                      "Input TFRecord files: comma-separated globs (plain or gzip).",
                      flag_values=f)
  flags.DEFINE_string("output_dir", None,
                      "Checkpoints, TensorBoard summaries and eval_results.txt go here.",
                      flag_values=f)
  flags.DEFINE_string("init_checkpoint", None,
                      "Warm start (weights only), as the original's init_from_checkpoint: a "
                      "bert_tf training dir or checkpoint, an original TF1 bert_model.ckpt (an "
                      "encoder-only one leaves the cls/ heads initialized), or a transformers "
                      "folder (config.json + model.safetensors). The log says what was read; "
                      "a shape that differs is an error. Not used when --output_dir holds a "
                      "checkpoint (that run resumes).", flag_values=f)
  flags.DEFINE_integer("max_seq_length", d.max_seq_length, "Sequence length of the records.",
                       flag_values=f)
  flags.DEFINE_integer("max_predictions_per_seq", d.max_predictions_per_seq,
                       "Masked-LM predictions per record.", flag_values=f)
  flags.DEFINE_bool("do_train", d.do_train, "Whether to train.", flag_values=f)
  flags.DEFINE_bool("do_eval", d.do_eval,
                    "Whether to evaluate (on --eval_input_file, else on --input_file).",
                    flag_values=f)
  shared_flags.define_train_batch_size(f, d.train_batch_size)
  shared_flags.define_eval_batch_size(f, d.eval_batch_size)
  shared_flags.define_learning_rate(f, d.learning_rate)
  flags.DEFINE_integer("num_train_steps", d.num_train_steps, "Training steps.", flag_values=f)
  flags.DEFINE_integer("num_warmup_steps", d.num_warmup_steps,
                       "Linear warmup steps (a warning when >= half of --num_train_steps).",
                       flag_values=f)
  flags.DEFINE_integer("save_checkpoints_steps", d.save_checkpoints_steps,
                       "Checkpoint every this many steps.", flag_values=f)
  flags.DEFINE_integer("iterations_per_loop", d.iterations_per_loop,
                       "Steps per host round trip (one tf.function call).", flag_values=f)
  flags.DEFINE_integer("max_eval_steps", d.max_eval_steps, "Maximum eval batches.",
                       flag_values=f)
  shared_flags.define_strategy_flags(f)
  # New in bert_tf.
  flags.DEFINE_string("eval_input_file", None,
                      "Held-out TFRecords for --do_eval. Default: --input_file, as the "
                      "original (a warning says the figures are then on training data).",
                      flag_values=f)
  flags.DEFINE_integer("eval_every_steps", d.eval_every_steps,
                       "With --do_train --do_eval, also evaluate every this many steps.",
                       flag_values=f)
  flags.DEFINE_enum("optimizer", d.optimizer, list(train_config.OPTIMIZERS),
                    "adamw_original: the original BERT AdamWeightDecay (no bias "
                    "correction); adamw: bias-corrected Adam with decoupled decay "
                    "(Keras AdamW, RoBERTa's update); lamb: ALBERT's LAMB "
                    "(google-research/albert).", flag_values=f)
  flags.DEFINE_float("adam_beta1", d.adam_beta1, "Adam beta1 (every --optimizer).", flag_values=f)
  shared_flags.define_adam_beta2(f, d.adam_beta2)
  flags.DEFINE_float("adam_epsilon", d.adam_epsilon, "Epsilon added to sqrt(v).", flag_values=f)
  flags.DEFINE_float("weight_decay", d.weight_decay, "Decay (not of LayerNorm, biases).",
                     flag_values=f)
  flags.DEFINE_float("clip_norm", d.clip_norm, "Clip the gradients to this global norm "
                     "(the original's 1.0; DistilBERT's 5.0).", flag_values=f)
  flags.DEFINE_enum("lr_schedule", d.lr_schedule, list(train_config.LR_SCHEDULES),
                    "bert: linear warmup, then linear decay; electra: the decay times "
                    "min(1, step / warmup) (google-research/electra).", flag_values=f)
  flags.DEFINE_enum("mixed_precision", d.mixed_precision, list(train_config.MIXED_PRECISION),
                    "Mixed precision policy; float16 uses dynamic loss scaling.", flag_values=f)
  shared_flags.define_jit_compile(f, d.jit_compile)
  flags.DEFINE_integer("grad_accum_steps", d.grad_accum_steps,
                       "Micro-batches per optimizer step (train_batch_size stays the "
                       "examples per step).", flag_values=f)
  flags.DEFINE_integer("log_steps", d.log_steps,
                       "Log and write summaries every this many steps.", flag_values=f)
  flags.DEFINE_integer("keep_checkpoint_max", d.keep_checkpoint_max, "Checkpoints to keep.",
                       flag_values=f)
  shared_flags.define_seed(f, d.seed)
  flags.DEFINE_enum("objective", d.objective,
                    list(objective_names.FAMILIES + objective_names.OBJECTIVE_NAMES),
                    "Pretraining objective. bert: masked LM plus the records' sentence task "
                    "(next-sentence for the original's records, sentence order for "
                    "--sentence_task=sop, none for --sentence_task=none), i.e. mlm_nsp, "
                    "mlm_sop or mlm; naming one of those checks the records agree. "
                    "electra: ELECTRA's generator + replaced-token discriminator (the "
                    "records' masked positions; sentence labels unused); electra_15, "
                    "replace_mlm, all_tokens_mlm: its variants of the paper's Table 5 "
                    "(docs/bert_family.md).",
                    flag_values=f)
  # The options of each objective that takes any (its options dataclass's
  # flags), but those a tool of their own defines (distill's).
  for options_type in objectives.OPTIONS.values():
    if not options_type.own_tool:
      cli.define_option_flags(options_type, f, __name__)


def config_from_flags(bert_config=None, flag_values=None, objective=None):
  """Returns (TrainConfig, BertConfig) from the flags; raises app.UsageError.

  Logs a warning for each TPU flag that has no effect (see --strategy).

  Args:
    bert_config: the model's BertConfig when the caller has it (distill's
      default student); None reads --bert_config_file, then required.
    flag_values: the parsed flags (None: this module's FLAGS); a tool that
      adds flags to these (distill) passes its own.
    objective: the run's objective when the tool fixes it (distill); None:
      --objective.
  """
  fv = FLAGS if flag_values is None else flag_values
  from bert_tf.models import hf_checkpoint  # pylint: disable=g-import-not-at-top
  if not fv.output_dir:
    raise app.UsageError("--output_dir is required")
  if not fv.input_file and not (fv.do_eval and fv.eval_input_file):
    raise app.UsageError("--input_file is required")
  if not fv.do_train and not fv.do_eval:
    raise app.UsageError("at least one of --do_train or --do_eval must be set")
  strategy, tpu_name, notes = train_config.resolve_strategy(
      fv.strategy, fv.use_tpu, fv.tpu_name, fv.master,
      fv.num_tpu_cores if fv["num_tpu_cores"].present else None)
  for note in notes:
    logging.warning("%s", note)
  if bert_config is None:
    try:  # a transformers folder --init_checkpoint holds one
      bert_config = hf_checkpoint.config_for(fv.bert_config_file, fv.init_checkpoint,
                                             "bert_config_file")
    except ValueError as e:
      raise app.UsageError(str(e)) from None
  # Every TrainConfig field with a flag of its name; not given (None) is "".
  config = cli.options_from_flags(train_config.TrainConfig, fv, unset_keeps_default=True,
                                  strategy=strategy, tpu_name=tpu_name,
                                  **cli.objective_fields(objective, fv))
  try:
    config.validate()
  except ValueError as e:
    raise app.UsageError(str(e)) from None
  return config, bert_config


def train(config, bert_config):
  """loop.run's result; a diverged run is a one-line error (cli.Error)."""
  from bert_tf.training import loop  # pylint: disable=g-import-not-at-top
  try:
    return loop.run(config, bert_config)
  except loop.TrainingDivergedError as e:
    raise cli.Error(str(e)) from None


def log_eval(result):
  """Logs the final evaluation's metrics of a loop.run result, if any."""
  for key in sorted(result.get("eval", {})):
    logging.info("  %s = %s", key, result["eval"][key])


def main(argv):
  del argv
  config, bert_config = config_from_flags()
  logging.set_verbosity(logging.INFO)
  log_eval(train(config, bert_config))
  return 0


def run():
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
