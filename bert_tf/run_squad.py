"""Question answering on SQuAD 1.1 / 2.0 (the original run_squad.py's flags and outputs).

    python -m bert_tf.run_squad --bert_config_file=model/bert_config.json \\
      --vocab_file=model/vocab.txt --init_checkpoint=model \\
      --do_train --train_file=squad/train-v1.1.json \\
      --do_predict --predict_file=squad/dev-v1.1.json \\
      --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad

Writes predictions.json and nbest_predictions.json (and null_odds.json with
--version_2_with_negative) in --output_dir as the original does, and, when
the predict file has gold answers, eval_results.txt with the official
evaluation script's EM and F1 (2.0: also HasAns/NoAns and the best
threshold of null_odds). --init_checkpoint takes what `bert_tf.finetune`
takes: a bert_tf training directory or checkpoint (ELECTRA: its
discriminator), an original TF1 checkpoint or release directory, a
transformers folder (its config.json and vocab then need no flag), or a
keras-hub preset. Training answers whose text is not at their answer_start
are skipped, as the original skips them, and counted in the output; a
malformed training question (not exactly one answer, an answer without
text, a non-integer answer_start or one outside its context) is a one-line
error naming the file and the question, or with --skip_malformed_questions
skipped and counted. Progress (loss, windows/s, ETA) is logged while
training and predicting; both files are read before --output_dir is
created, so a refused input leaves nothing behind.
--use_tpu, --tpu_name, --tpu_zone, --gcp_project, --master, --num_tpu_cores
and --iterations_per_loop are accepted for the original's command lines
and do nothing here. --export_dir writes the fine-tuned model as a
SavedModel whose `answer` signature takes question and context text and
returns the answer text, its character offsets and score (one window:
bert_tf/downstream/span/answer_export.py says how it differs from the predictions
here); `bert_tf.predict --text_a=QUESTION --text_b=CONTEXT` asks it.
ALBERT models with SentencePiece: --spm_model_file in the place of
--vocab_file (docs/squad.md says how the windows and answers are made);
the `answer` signature then tokenizes by ALBERT's rules in the graph.
"""

from absl import app
from absl import flags
from absl import logging

from bert_tf import cli
from bert_tf.cli import shared_flags

FLAGS = flags.FLAGS
# The task kind (bert_tf/downstream/registry.py) this tool runs names it.
TOOL = "run_squad"


def define_flags(flag_values):
  """The original run_squad.py's flags (see bert_tf.cli: defined when it runs)."""
  from bert_tf.downstream import registry  # pylint: disable=g-import-not-at-top
  f, d = flag_values, registry.for_tool(TOOL).default_config()
  shared_flags.define_model_files(f, d.do_lower_case)
  flags.DEFINE_string("output_dir", None, "Predictions, eval_results.txt and the fine-tuned "
                      "model (model.*).", flag_values=f)
  flags.DEFINE_string("train_file", None, "SQuAD JSON for training, e.g. train-v1.1.json.",
                      flag_values=f)
  flags.DEFINE_string("predict_file", None, "SQuAD JSON for predictions, e.g. "
                      "dev-v1.1.json (with answers: also evaluated).", flag_values=f)
  shared_flags.define_encoder_checkpoint(f)
  flags.DEFINE_integer("max_seq_length", d.max_seq_length, "Window length in tokens (word "
                       "pieces): [CLS] question [SEP] document part [SEP].", flag_values=f)
  flags.DEFINE_integer("doc_stride", d.doc_stride, "Tokens between the starts of a "
                       "document's windows.", flag_values=f)
  flags.DEFINE_integer("max_query_length", d.max_query_length, "Questions are cut to this "
                       "many tokens.", flag_values=f)
  flags.DEFINE_bool("do_train", False, "Train.", flag_values=f)
  flags.DEFINE_bool("do_predict", False, "Predict (and evaluate) on --predict_file.",
                    flag_values=f)
  shared_flags.define_finetune_recipe(f, d)
  flags.DEFINE_integer("predict_batch_size", d.predict_batch_size, "Prediction batch size.",
                       flag_values=f)
  flags.DEFINE_integer("save_checkpoints_steps", d.save_checkpoints_steps, "Write the model "
                       "every this many steps (and at the end).", flag_values=f)
  shared_flags.define_unused_tpu_flags(f)
  flags.DEFINE_integer("n_best_size", d.n_best_size, "Answers kept per question in "
                       "nbest_predictions.json.", flag_values=f)
  flags.DEFINE_integer("max_answer_length", d.max_answer_length, "Longest answer, in tokens.",
                       flag_values=f)
  flags.DEFINE_bool("verbose_logging", False, "Log every training question skipped, with "
                    "its reason (by default: the count and the first 5 ids).", flag_values=f)
  flags.DEFINE_bool("skip_malformed_questions", False, "Skip training questions that are "
                    "malformed (not exactly one answer, an answer without text, a non-integer "
                    "answer_start or one outside its context), counted in the log and the "
                    "output, instead of stopping at the first.", flag_values=f)
  flags.DEFINE_bool("version_2_with_negative", False, "SQuAD 2.0: questions may have no "
                    "answer.", flag_values=f)
  flags.DEFINE_float("null_score_diff_threshold", d.null_score_diff_threshold, "2.0: answer "
                     "\"\" when the null score minus the best span's exceeds this.",
                     flag_values=f)
  flags.DEFINE_string("hf_out", "", "Write the fine-tuned span model as a transformers "
                      "BertForQuestionAnswering (Albert..., Electra...) folder here.",
                      flag_values=f)
  flags.DEFINE_string("export_dir", "", "Write the fine-tuned span model (--output_dir/model) "
                      "as a SavedModel here: signature `answer` (question, context -> "
                      "answer, start, end, score; one window, see "
                      "bert_tf/downstream/span/answer_export.py).", flag_values=f)
  flags.DEFINE_bool("overwrite", False, "Replace an existing --export_dir / --hf_out.",
                    flag_values=f)


CONFIG_FLAGS = ("output_dir", "train_file", "predict_file", "init_checkpoint", "do_lower_case",
                "max_seq_length", "doc_stride", "max_query_length", "do_train", "do_predict",
                "train_batch_size", "predict_batch_size", "learning_rate", "num_train_epochs",
                "warmup_proportion", "save_checkpoints_steps", "n_best_size",
                "max_answer_length", "version_2_with_negative", "null_score_diff_threshold",
                "seed", "skip_malformed_questions", "verbose_logging")


def config_from_flags():
  """(task kind, its config, BertConfig) from FLAGS; raises app.UsageError."""
  from bert_tf.downstream import registry  # pylint: disable=g-import-not-at-top
  if FLAGS.use_tpu:
    raise app.UsageError("--use_tpu: TPU estimators are not used here; run without it")
  bert_config, vocab_file, spm_model_file, casing = cli.model_files(FLAGS)
  values = {name: FLAGS[name].value for name in CONFIG_FLAGS}
  values = {k: ("" if v is None else v) for k, v in values.items()}
  values["vocab_file"], values["spm_model_file"] = vocab_file, spm_model_file
  if casing is not None:  # a transformers folder's tokenizer's
    values["do_lower_case"] = casing
  kind = registry.for_tool(TOOL)
  config = kind.config_for(values)
  try:
    config.validate(bert_config, prefix="--")
  except ValueError as e:
    raise app.UsageError(str(e)) from None
  return kind, config, bert_config


def main(argv):
  del argv
  kind, config, bert_config = config_from_flags()
  try:  # refused before hours of training
    kind.check_outputs(config, bert_config, FLAGS.export_dir, FLAGS.hf_out, FLAGS.overwrite)
  except ValueError as e:
    raise app.UsageError(str(e)) from None
  logging.set_verbosity(logging.INFO)  # progress: loss, windows/s, ETA
  results = kind.run(config, bert_config)  # a malformed question: ValueError naming the flag
  print("\n".join(kind.summary_lines(config, results)))
  kind.write_hf(config, bert_config, results, FLAGS.hf_out, FLAGS.overwrite)
  if FLAGS.export_dir:
    print(kind.export_saved_model(config, bert_config, results, FLAGS.export_dir,
                                  FLAGS.overwrite))
  return 0


def run():
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
