"""Fine-tunes BERT on a GLUE-style TSV task (the original run_classifier's recipe).

    python -m bert_tf.finetune --bert_config_file=model/bert_config.json \\
      --init_checkpoint=model --vocab_file=model/vocab.txt \\
      --train_file=tasks/wic/train.tsv --dev_file=tasks/wic/dev.tsv \\
      --text_a_column=sentence1 --text_b_column=sentence2 --label_column=label \\
      --output_dir=/tmp/wic --seeds=3

Task files are tab-separated with a header row; columns by name or 0-based
index. --init_checkpoint takes a bert_tf training directory or checkpoint,
an original TF1 BERT checkpoint (or its release directory), or a keras-hub
preset directory; without it the encoder starts from random weights (the
baseline). An ALBERT model's SentencePiece model is --spm_model_file
(google-research/albert's flag) in the place of --vocab_file.
eval_results.txt in --output_dir holds each dev metric's mean
over the seeds, its median (_median) and standard deviation (_sd);
--export_dir writes a SavedModel with a text-in `classify` signature
(`text`, or `text_a` and `text_b` for a pair task), which `bert_tf.predict`
answers.

GLUE: `--task_name=MNLI --data_dir=GLUE/MNLI` reads the task's files from
the directory with the original processors' columns (downstream/classification/glue.py), fills
--text_a_column/--text_b_column/--label_column/--task_type (an explicit one
that differs is an error), evaluates each dev file (MNLI: matched and
mismatched, reported separately) and prints the task's official metrics;
test predictions are written when the directory holds the test file.

--do_train, --do_eval, --do_predict: the original's steps, each on by
default (--do_predict: when there is a test file). --do_train=false takes
the model as it is from --init_checkpoint, a fine-tuned transformers
folder (*ForSequenceClassification, *ForTokenClassification) whose
id2label must be the task's labels, and evaluates and/or predicts with it
(downstream/evaluate_only.py). An existing --hf_out or --export_dir is
refused before training.

--task_type=tagging tags tokens instead, on CoNLL files (token first,
label last): entity F1 as conlleval, dev_predictions.conll (and
test_predictions.conll for a --test_file), a `tag`
signature; --frozen_encoder trains a head on the last four layers alone
(docs/tagging.md).

The original recipe (lr 5e-5, 3 epochs, batch 32) is for tasks of thousands
of examples: a run of under 100 optimizer steps warns, naming its steps and
the epochs that reach 100 (a small task wants more epochs and, for a small
model, --learning_rate=1e-4 when below it; see the README's small-task recipe).
"""

from absl import app
from absl import flags
from absl import logging

from bert_tf import cli
from bert_tf.cli import shared_flags

FLAGS = flags.FLAGS
# The task kinds (bert_tf/downstream/registry.py) this tool runs name it.
TOOL = "finetune"


def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  from bert_tf.downstream import registry  # pylint: disable=g-import-not-at-top
  f = flag_values
  d = registry.for_tool(TOOL, "auto").default_config()
  shared_flags.define_model_files(f, d.do_lower_case)
  flags.DEFINE_string("train_file", None, "Training TSV (header row).", flag_values=f)
  flags.DEFINE_string("dev_file", None, "Dev TSV: the metrics are computed on it.",
                      flag_values=f)
  flags.DEFINE_string("test_file", "", "Optional test TSV (labels optional): "
                      "test_results.tsv gets the first seed's predictions.", flag_values=f)
  flags.DEFINE_string("text_a_column", d.text_a_column, "Column of the (first) text: "
                      "header name or 0-based index.", flag_values=f)
  flags.DEFINE_string("text_b_column", "", "Column of the second text of a sentence-pair "
                      "task (empty: single-sentence task).", flag_values=f)
  flags.DEFINE_string("label_column", d.label_column, "Column of the label.", flag_values=f)
  flags.DEFINE_enum("task_type", d.task_type, registry.tool_task_types(TOOL),
                    "auto: regression when every train label is a number and some are not "
                    "whole numbers. tagging: token tagging on CoNLL files (token first, "
                    "label last, a blank line between sentences; docs/tagging.md).",
                    flag_values=f)
  flags.DEFINE_bool("frozen_encoder", False, "tagging: train only a head on the last four "
                    "layers' outputs, the encoder frozen (BERT's feature-based Table 7).",
                    flag_values=f)
  flags.DEFINE_integer("window_stride", 0, "tagging: pieces between the windows of a "
                       "sentence longer than max_seq_length (0: half a window).",
                       flag_values=f)
  flags.DEFINE_integer("max_seq_length", d.max_seq_length, "[CLS] A [SEP] B [SEP] length; "
                       "longer pairs are cut as the original (longer side first).",
                       flag_values=f)
  flags.DEFINE_integer("length_buckets", d.length_buckets, "Cut each batch to the shortest "
                       "of this many lengths (max_seq_length in equal steps, multiples of 8) that "
                       "holds its longest example: the same results, faster on short texts; "
                       "1 pads every batch to max_seq_length, as the original.",
                       flag_values=f)
  shared_flags.define_encoder_checkpoint(f, "")
  flags.DEFINE_string("output_dir", None, "eval_results.txt, TensorBoard logs (seed_<n>/), "
                      "the first seed's model.", flag_values=f)
  shared_flags.define_finetune_recipe(f, d)
  shared_flags.define_eval_batch_size(f, d.eval_batch_size)
  flags.DEFINE_integer("seeds", d.seeds, "Runs with seeds seed, seed+1, ...; the metrics "
                       "are their mean and standard deviation.", flag_values=f)
  flags.DEFINE_string("export_dir", "", "Write the first seed's classifier as a SavedModel "
                      "here (signatures classify and classify_ids).", flag_values=f)
  flags.DEFINE_string("hf_out", "", "Write the first seed's classifier as a transformers "
                      "folder here (BertForSequenceClassification, AlbertFor...; "
                      "docs/interchange.md).", flag_values=f)
  flags.DEFINE_bool("overwrite", False, "Replace an existing --export_dir / --hf_out.",
                    flag_values=f)
  flags.DEFINE_string("task_name", "", "A GLUE task (CoLA, SST-2, MRPC, QQP, STS-B, MNLI, "
                      "QNLI, RTE, WNLI): its files under --data_dir, columns, labels and "
                      "official metrics.", flag_values=f)
  flags.DEFINE_bool("do_train", d.do_train, "Fine-tune on the train file. false: take the "
                    "model as it is from --init_checkpoint, a fine-tuned transformers folder "
                    "(*ForSequenceClassification, *ForTokenClassification with id2label), "
                    "to evaluate and/or predict.", flag_values=f)
  flags.DEFINE_bool("do_eval", d.do_eval, "Evaluate on the dev file(s): eval_results.txt.",
                    flag_values=f)
  flags.DEFINE_bool("do_predict", d.do_predict, "Write test_results.tsv for the test file "
                    "(--test_file, or a GLUE --data_dir's test.tsv) when there is one; "
                    "given explicitly, one is required.", flag_values=f)
  flags.DEFINE_string("data_dir", "", "With --task_name: the task's GLUE directory "
                      "(train.tsv, dev.tsv or MNLI's dev_matched.tsv and "
                      "dev_mismatched.tsv, test.tsv).", flag_values=f)


def config_from_flags():
  """(task kind, its config, BertConfig) from FLAGS; raises app.UsageError."""
  from bert_tf.downstream import registry  # pylint: disable=g-import-not-at-top
  kind = registry.for_tool(TOOL, FLAGS["task_type"].default)
  try:  # a GLUE task's directory holds the files; see downstream/classification/glue.py
    glue = kind.preset_fields(FLAGS.task_name, FLAGS.data_dir,
                              {n: FLAGS[n].value for n in FLAGS if FLAGS[n].present},
                              FLAGS.do_train, FLAGS.do_eval)
  except ValueError as e:
    raise app.UsageError(str(e)) from None
  bert_config, vocab_file, spm_model_file, casing = cli.model_files(FLAGS)
  values = {field: FLAGS[field].value for field in (
      "train_file", "dev_file", "test_file", "output_dir", "text_a_column",
      "text_b_column", "label_column", "do_lower_case", "max_seq_length", "init_checkpoint",
      "num_train_epochs", "learning_rate", "warmup_proportion", "train_batch_size",
      "eval_batch_size", "seeds", "seed", "task_type", "length_buckets", "do_train",
      "do_eval", "do_predict")}
  values.update(glue, vocab_file=vocab_file, spm_model_file=spm_model_file)
  if casing is not None:
    values["do_lower_case"] = casing  # the folder's tokenizer's
  try:
    kind = registry.for_tool(TOOL, values["task_type"])
    config = kind.config_for(values, frozen_encoder=FLAGS.frozen_encoder,
                             window_stride=FLAGS.window_stride)
    config.validate(bert_config)
  except ValueError as e:
    raise app.UsageError(f"--{e}") from None
  if FLAGS["do_predict"].present and FLAGS.do_predict and not config.test_file:
    raise app.UsageError("--do_predict needs --test_file (or a GLUE --data_dir with test.tsv)")
  return kind, config, bert_config


def main(argv):
  del argv
  kind, config, bert_config = config_from_flags()
  # Refused before the training, not after it.
  kind.check_outputs(config, bert_config, FLAGS.export_dir, FLAGS.hf_out, FLAGS.overwrite)
  logging.set_verbosity(logging.INFO)
  results = kind.run(config, bert_config)
  print("\n".join(kind.summary_lines(config, results)))
  if FLAGS.export_dir:
    print(kind.export_saved_model(config, bert_config, results, FLAGS.export_dir,
                                  FLAGS.overwrite))
  kind.write_hf(config, bert_config, results, FLAGS.hf_out, FLAGS.overwrite)
  return 0


def run():
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
