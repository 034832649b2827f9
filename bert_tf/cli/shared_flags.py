"""The flags several tools share, each defined here once with one help text.

A tool's `define_flags` calls the group it takes (a tool keeps its own flag
names; a default that differs by tool, such as a learning rate, is an
argument). A flag name that means something else in one tool (build_vocab's
--vocab_file is its output) is that tool's own flag; tests/cli/
test_shared_flags.py lists those and fails on any other flag defined by two
tools with two help texts.
"""

from absl import flags

from bert_tf.training import train_config

# The flags defined here belong to the tool that calls (its --help lists them
# with its own): absl skips a disclaimed module when it names a flag's module.
flags.disclaim_key_flags()

# The model's files, for a tool that reads a model (or writes records for one).
BERT_CONFIG_FILE_HELP = ("bert_config.json of the model (default when its checkpoint is a "
                         "transformers folder: the folder's config.json).")
VOCAB_FILE_HELP = ("The model's WordPiece vocab.txt (default when its checkpoint is a "
                   "transformers folder: the folder's vocab).")
SPM_MODEL_FILE_HELP = (
    "The model's SentencePiece model (ALBERT's), in the place of --vocab_file, which is then "
    "not read (google-research/albert's rule); default when its checkpoint is a transformers "
    "ALBERT folder: the folder's spiece.model or Unigram tokenizer.json.")
DO_LOWER_CASE_HELP = ("Lower-case and strip accents (uncased models); default when the "
                      "model's checkpoint is a transformers folder: its tokenizer's.")
ENCODER_CHECKPOINT_HELP = (
    "Encoder weights: a bert_tf checkpoint or training dir, an original TF1 checkpoint, a "
    "keras-hub preset dir, or a transformers folder (config.json + model.safetensors).")
_STRATEGY_HELP = (
    "Distribution strategy; when given it wins over --use_tpu. Without it: tpu with "
    "--use_tpu (the TPU is --tpu_name, else --master, else this TPU VM's), else "
    "mirrored with several GPUs, else one_device; --tpu_name and --master are ignored "
    "without --use_tpu, as in the original.")
# TPU flags the original's run_squad.py took; a tool that runs no TPU accepts them.
UNUSED_TPU_HELP = "Accepted as in the original's command lines; unused (no TPU here)."


def define_bert_config_file(f):
  flags.DEFINE_string("bert_config_file", None, BERT_CONFIG_FILE_HELP, flag_values=f)


def define_vocab_flags(f, do_lower_case=True):
  """--vocab_file, --spm_model_file and --do_lower_case."""
  flags.DEFINE_string("vocab_file", None, VOCAB_FILE_HELP, flag_values=f)
  flags.DEFINE_string("spm_model_file", None, SPM_MODEL_FILE_HELP, flag_values=f)
  define_do_lower_case(f, do_lower_case)


def define_do_lower_case(f, default=True):
  flags.DEFINE_bool("do_lower_case", default, DO_LOWER_CASE_HELP, flag_values=f)


def define_model_files(f, do_lower_case=True):
  """--bert_config_file and the vocab flags of a tool that reads a model."""
  define_bert_config_file(f)
  define_vocab_flags(f, do_lower_case)


def define_encoder_checkpoint(f, default=None):
  """--init_checkpoint of a tool that starts from a pretrained encoder."""
  flags.DEFINE_string("init_checkpoint", default, ENCODER_CHECKPOINT_HELP, flag_values=f)


def define_strategy_flags(f):
  """--strategy and the original's TPU flags, used (run_pretraining, distill)."""
  flags.DEFINE_enum("strategy", None, list(train_config.STRATEGIES), _STRATEGY_HELP,
                    flag_values=f)
  flags.DEFINE_bool("use_tpu", False, "Train on a TPU (the original's flag; see --strategy).",
                    flag_values=f)
  flags.DEFINE_string("tpu_name", None, "The TPU: a name or grpc://address, 'local' for a TPU "
                      "VM. Only with --use_tpu or --strategy=tpu.", flag_values=f)
  flags.DEFINE_string("tpu_zone", None, "GCE zone of the TPU.", flag_values=f)
  flags.DEFINE_string("gcp_project", None, "GCP project of the TPU.", flag_values=f)
  flags.DEFINE_string("master", None, "TPU address when --tpu_name is not given (the "
                      "original's TensorFlow master URL).", flag_values=f)
  flags.DEFINE_integer("num_tpu_cores", 8, "Accepted as in the original, where TPUEstimator "
                       "ignored it too: the TPU strategy uses every core the TPU reports.",
                       flag_values=f)


def define_unused_tpu_flags(f):
  """The original's TPU flags, accepted and unused (run_squad); --use_tpu
  must stay False."""
  flags.DEFINE_bool("use_tpu", False, UNUSED_TPU_HELP + " Must stay False.", flag_values=f)
  for name in ("tpu_name", "tpu_zone", "gcp_project", "master"):
    flags.DEFINE_string(name, None, UNUSED_TPU_HELP, flag_values=f)
  flags.DEFINE_integer("num_tpu_cores", 8, UNUSED_TPU_HELP, flag_values=f)
  flags.DEFINE_integer("iterations_per_loop", 1000, UNUSED_TPU_HELP, flag_values=f)


def define_finetune_recipe(f, d):
  """The fine-tuning recipe: --learning_rate, --train_batch_size,
  --num_train_epochs, --warmup_proportion and --seed, with the defaults of
  `d` (the tool's config dataclass)."""
  define_learning_rate(f, d.learning_rate)
  define_train_batch_size(f, d.train_batch_size)
  flags.DEFINE_float("num_train_epochs", d.num_train_epochs, "Epochs over the training "
                     "examples (a task of a few hundred needs many more than 3).",
                     flag_values=f)
  flags.DEFINE_float("warmup_proportion", d.warmup_proportion, "Share of the steps of linear "
                     "learning-rate warmup.", flag_values=f)
  define_seed(f, d.seed)


def define_seed(f, default):
  flags.DEFINE_integer("seed", default, "Seed of initialization and shuffling (with --seeds: "
                       "the first seed).", flag_values=f)


# The training recipe (the defaults differ by tool).
def define_learning_rate(f, default):
  flags.DEFINE_float("learning_rate", default, "Peak learning rate, reached after the linear "
                     "warmup, then decayed linearly (the original suggests 2e-5 to 5e-5 for "
                     "fine-tuning BERT-base).", flag_values=f)


def define_train_batch_size(f, default):
  flags.DEFINE_integer("train_batch_size", default, "Training batch size (global: all "
                       "replicas together).", flag_values=f)


def define_eval_batch_size(f, default):
  flags.DEFINE_integer("eval_batch_size", default, "Eval batch size (global: all replicas "
                       "together).", flag_values=f)


def define_adam_beta2(f, default):
  flags.DEFINE_float("adam_beta2", default, "Adam's beta2 (the original's 0.999; RoBERTa's "
                     "0.98 keeps higher learning rates stable).", flag_values=f)


def define_jit_compile(f, default):
  flags.DEFINE_bool("jit_compile", default, "Compile the training step (each replica's "
                    "forward/backward) with XLA; --nojit_compile for plain TensorFlow.",
                    flag_values=f)
