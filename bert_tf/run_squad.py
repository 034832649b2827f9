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
are skipped, as the original skips them, and counted in the output.
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

FLAGS = flags.FLAGS


def define_flags(flag_values):
  """The original run_squad.py's flags (see bert_tf.cli: defined when it runs)."""
  from bert_tf.downstream.span.squad_finetune import SquadConfig  # pylint: disable=g-import-not-at-top
  f, d = flag_values, SquadConfig()
  flags.DEFINE_string("bert_config_file", None, "bert_config.json of the model (default with "
                      "a transformers folder --init_checkpoint: its config.json).",
                      flag_values=f)
  flags.DEFINE_string("vocab_file", None, "The model's vocab.txt (default with a transformers "
                      "folder --init_checkpoint: its vocab).", flag_values=f)
  flags.DEFINE_string("spm_model_file", None, "ALBERT's SentencePiece model, in the place of "
                      "--vocab_file (which is then not read); default with a transformers "
                      "ALBERT folder --init_checkpoint: its spiece.model or Unigram "
                      "tokenizer.json.", flag_values=f)
  flags.DEFINE_string("output_dir", None, "Predictions, eval_results.txt and the fine-tuned "
                      "model (model.*).", flag_values=f)
  flags.DEFINE_string("train_file", None, "SQuAD JSON for training, e.g. train-v1.1.json.",
                      flag_values=f)
  flags.DEFINE_string("predict_file", None, "SQuAD JSON for predictions, e.g. "
                      "dev-v1.1.json (with answers: also evaluated).", flag_values=f)
  flags.DEFINE_string("init_checkpoint", None, "Encoder weights (see the module docstring). "
                      "Empty: random initialization.", flag_values=f)
  flags.DEFINE_bool("do_lower_case", d.do_lower_case, "Lower-case and strip accents "
                    "(uncased models).", flag_values=f)
  flags.DEFINE_integer("max_seq_length", d.max_seq_length, "Window length in pieces "
                       "tokens: [CLS] question [SEP] document part [SEP].", flag_values=f)
  flags.DEFINE_integer("doc_stride", d.doc_stride, "Tokens between the starts of a "
                       "document's windows.", flag_values=f)
  flags.DEFINE_integer("max_query_length", d.max_query_length, "Questions are cut to this "
                       "many tokens.", flag_values=f)
  flags.DEFINE_bool("do_train", False, "Train.", flag_values=f)
  flags.DEFINE_bool("do_predict", False, "Predict (and evaluate) on --predict_file.",
                    flag_values=f)
  flags.DEFINE_integer("train_batch_size", d.train_batch_size, "Training batch size.",
                       flag_values=f)
  flags.DEFINE_integer("predict_batch_size", d.predict_batch_size, "Prediction batch size.",
                       flag_values=f)
  flags.DEFINE_float("learning_rate", d.learning_rate, "Peak learning rate of AdamWeightDecay.",
                     flag_values=f)
  flags.DEFINE_float("num_train_epochs", d.num_train_epochs, "Epochs over the training "
                     "questions.", flag_values=f)
  flags.DEFINE_float("warmup_proportion", d.warmup_proportion, "Share of steps of linear "
                     "warmup.", flag_values=f)
  flags.DEFINE_integer("save_checkpoints_steps", d.save_checkpoints_steps, "Write the model "
                       "every this many steps (and at the end).", flag_values=f)
  flags.DEFINE_integer("iterations_per_loop", 1000, "Accepted; unused (TPU loop).",
                       flag_values=f)
  flags.DEFINE_integer("n_best_size", d.n_best_size, "Answers kept per question in "
                       "nbest_predictions.json.", flag_values=f)
  flags.DEFINE_integer("max_answer_length", d.max_answer_length, "Longest answer, in tokens.",
                       flag_values=f)
  flags.DEFINE_bool("use_tpu", False, "Accepted; must stay False (TPU estimators are not "
                    "used here).", flag_values=f)
  for name in ("tpu_name", "tpu_zone", "gcp_project", "master"):
    flags.DEFINE_string(name, None, "Accepted; unused (TPU).", flag_values=f)
  flags.DEFINE_integer("num_tpu_cores", 8, "Accepted; unused (TPU).", flag_values=f)
  flags.DEFINE_bool("verbose_logging", False, "Log progress at INFO level (windows, "
                    "training steps and loss).", flag_values=f)
  flags.DEFINE_bool("version_2_with_negative", False, "SQuAD 2.0: questions may have no "
                    "answer.", flag_values=f)
  flags.DEFINE_float("null_score_diff_threshold", d.null_score_diff_threshold, "2.0: answer "
                     "\"\" when the null score minus the best span's exceeds this.",
                     flag_values=f)
  flags.DEFINE_string("hf_out", "", "Write the fine-tuned span model as a transformers "
                      "BertForQuestionAnswering (Albert..., Electra...) folder here.",
                      flag_values=f)
  flags.DEFINE_integer("seed", d.seed, "Seed of the head's initialization and the shuffle.",
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
                "seed")


def config_from_flags():
  """(SquadConfig, BertConfig) from FLAGS; raises app.UsageError."""
  from bert_tf.downstream.span import squad_finetune  # pylint: disable=g-import-not-at-top
  if FLAGS.use_tpu:
    raise app.UsageError("--use_tpu: TPU estimators are not used here; run without it")
  bert_config, vocab_file, spm_model_file, casing = cli.model_files(FLAGS)
  values = {name: FLAGS[name].value for name in CONFIG_FLAGS}
  values = {k: ("" if v is None else v) for k, v in values.items()}
  values["vocab_file"], values["spm_model_file"] = vocab_file, spm_model_file
  if casing is not None:  # a transformers folder's tokenizer's
    values["do_lower_case"] = casing
  config = squad_finetune.SquadConfig(**values)
  try:
    config.validate(bert_config, prefix="--")
  except ValueError as e:
    raise app.UsageError(str(e)) from None
  return config, bert_config


def main(argv):
  del argv
  config, bert_config = config_from_flags()
  from bert_tf import file_io as files  # pylint: disable=g-import-not-at-top
  from bert_tf.data import tokenizer_json  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.span import answer_export  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.span import squad_finetune  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream import hf_out  # pylint: disable=g-import-not-at-top
  from bert_tf.serving import hf_export  # pylint: disable=g-import-not-at-top
  if FLAGS.export_dir:  # refused before hours of training
    if tokenizer_json.is_tokenizer_json(config.spm_model_file):
      raise app.UsageError(f"--export_dir with --spm_model_file={config.spm_model_file}: a "
                           "tokenizer.json's Unigram model has no graph tokenizer for the "
                           "`answer` signature; give its spiece.model")
    files.check_absent(FLAGS.export_dir, FLAGS.overwrite, "--export_dir")
  if FLAGS.hf_out and config.spm_model_file and not bert_config.is_albert:
    raise app.UsageError(f"--hf_out={FLAGS.hf_out}: {hf_export.SENTENCEPIECE_NOT_ALBERT}")
  logging.set_verbosity(logging.INFO if FLAGS.verbose_logging else logging.WARNING)
  results = squad_finetune.run(config, bert_config)
  print("\n".join(squad_finetune.summary_lines(config, results)))
  hf_out.write_span_model(config, bert_config, FLAGS.hf_out, FLAGS.overwrite)
  if FLAGS.export_dir:
    print(answer_export.export_finetuned(config, bert_config, FLAGS.export_dir, FLAGS.overwrite))
  return 0


def run():
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
