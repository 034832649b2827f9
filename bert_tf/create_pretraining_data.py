r"""Raw text -> WordPiece -> masked, NSP-paired TFRecords (original BERT schema).

Every flag of google-research/bert's create_pretraining_data.py, same name,
meaning and default, so existing command lines run unchanged:

  python -m bert_tf.create_pretraining_data \
    --input_file=corpus/*.txt --output_file=out.tfrecord \
    --vocab_file=vocab.txt --dupe_factor=5

New: --output_dir with --num_output_shards (resumable shards), --num_workers,
--gzip, --block_bytes (the unit of work and memory), --decode_errors (input
bytes that are not UTF-8: dropped and counted, or an error as in the original).
RoBERTa / ALBERT variants (defaults: the original's records, same bytes):
--sentence_task=nsp|sop|none,
--packing=segment_pair|full_sentences|doc_sentences|sentence_pair,
--max_ngram, --dynamic_masking, and the masking rule's shares
--masked_token_share / --random_token_share / --kept_token_share (0.8 / 0.1 /
0.1; see bert_tf.data.pretraining.writer.DataOptions).
"""

from absl import app
from absl import flags

from bert_tf import cli
from bert_tf.cli import shared_flags
from bert_tf.data.pretraining import writer
from bert_tf.data.pretraining import writer_cli

FLAGS = flags.FLAGS


def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  f = flag_values
  # The original's flags.
  flags.DEFINE_string("input_file", None, "Input raw text file (or comma-separated list of files; globs allowed).", flag_values=f)
  flags.DEFINE_string("output_file", None, "Output TF example file (or comma-separated list of files; instances dealt round-robin).", flag_values=f)
  shared_flags.define_vocab_flags(f)
  flags.DEFINE_bool("do_whole_word_mask", False, "Whether to use whole word masking rather than per-WordPiece masking.", flag_values=f)
  flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.", flag_values=f)
  flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum number of masked LM predictions per sequence.", flag_values=f)
  flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.", flag_values=f)
  flags.DEFINE_integer("dupe_factor", 10, "Number of times to duplicate the input data (with different masks).", flag_values=f)
  flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.", flag_values=f)
  flags.DEFINE_float("short_seq_prob", 0.1, "Probability of creating sequences which are shorter than the maximum length.", flag_values=f)
  # New.
  flags.DEFINE_string("output_dir", None, "Write --num_output_shards resumable shards and manifest.json here (instead of --output_file).", flag_values=f)
  flags.DEFINE_integer("num_output_shards", 1, "Shards with --output_dir.", flag_values=f)
  flags.DEFINE_bool("overwrite", False, "Replace the records of another input (or other "
                    "options) in --output_dir or --output_file, and write every shard again; "
                    "without it that is an error, and a rerun of the same command resumes "
                    "(rewriting the shards that fail their check).", flag_values=f)
  flags.DEFINE_integer("num_workers", None, "Worker processes (default: all cores).", flag_values=f)
  flags.DEFINE_bool("gzip", False, "GZIP-compress the TFRecords.", flag_values=f)
  flags.DEFINE_enum("driver", "local", ["local", "beam"],
                    "local: processes on this machine; beam: an Apache Beam pipeline (needs "
                    "--output_dir; Beam pipeline options such as --runner=DataflowRunner go "
                    "after a '--').", flag_values=f)
  flags.DEFINE_integer("block_bytes", writer.DataOptions.block_bytes,
                       "Bytes of text per block: the unit of work and memory (random next-sentence "
                       "segments still come from any other document of the whole input).",
                       flag_values=f)
  flags.DEFINE_enum("decode_errors", writer.DataOptions.decode_errors, ["ignore", "strict"],
                    "Input bytes that are not UTF-8: ignore = drop them and count them in the "
                    "manifest; strict = stop with an error naming the file and byte offset (what "
                    "the original does under Python 3).", flag_values=f)
  flags.DEFINE_enum("sentence_task", writer.DataOptions.sentence_task, list(writer.SENTENCE_TASKS),
                    "nsp: next sentence prediction (the original); sop: ALBERT's sentence order "
                    "(A, B consecutive spans of one document, swapped with probability 0.5, "
                    "next_sentence_labels = 1 when swapped); none: no sentence label (needs "
                    "--packing other than segment_pair).", flag_values=f)
  flags.DEFINE_enum("packing", writer.DataOptions.packing, list(writer.PACKINGS),
                    "segment_pair: [CLS] A [SEP] B [SEP] (the original); full_sentences: "
                    "RoBERTa's FULL-SENTENCES, whole sentences packed up to max_seq_length - 2 "
                    "tokens across documents ([SEP] between documents), one segment; "
                    "doc_sentences: the same within one document; sentence_pair: RoBERTa's "
                    "SENTENCE-PAIR, A and B one natural sentence each (B the next one or, "
                    "half the time, one of another document), with --sentence_task=nsp.",
                    flag_values=f)
  flags.DEFINE_integer("max_ngram", writer.DataOptions.max_ngram,
                       "Mask spans of 1..N units (words with --do_whole_word_mask, else "
                       "WordPieces), n with probability proportional to 1/n (ALBERT uses 3).",
                       flag_values=f)
  flags.DEFINE_bool("dynamic_masking", writer.DataOptions.dynamic_masking,
                    "Write the real tokens and no masked_lm_* features; training masks each "
                    "example anew every epoch (same rules and options).", flag_values=f)
  flags.DEFINE_float("masked_token_share", writer.DataOptions.masked_token_share,
                     "Share of the chosen positions that become [MASK] (the original's "
                     "0.8; 1.0: always [MASK]).", flag_values=f)
  flags.DEFINE_float("random_token_share", None, "Share that become a uniform random id "
                     "(default: half of what --masked_token_share and --kept_token_share "
                     "leave: 0.1).", flag_values=f)
  flags.DEFINE_float("kept_token_share", None, "Share left as they are (default: what the "
                     "other two leave, half of the rest when neither is set: 0.1).",
                     flag_values=f)


def main(argv):
  beam_args = argv[1:]
  if beam_args and FLAGS.driver != "beam":
    raise app.UsageError(f"unexpected arguments: {' '.join(beam_args)}")
  if not FLAGS.input_file:
    raise app.UsageError("--input_file is required")
  if not FLAGS.vocab_file and not FLAGS.spm_model_file:
    raise app.UsageError("--vocab_file is required (or --spm_model_file)")
  cli.note_vocab_not_read(FLAGS)
  try:
    outputs = writer_cli.outputs_from_flags(FLAGS.output_file, FLAGS.output_dir,
                                            FLAGS.num_output_shards, FLAGS.gzip)
    num_workers = writer_cli.num_workers_of(FLAGS.num_workers)
  except writer_cli.FlagError as e:
    raise app.UsageError(str(e)) from None
  options = cli.options_from_flags(writer.DataOptions, FLAGS)
  with writer_cli.removed_if_left_empty(outputs.folders()):
    # Refuses another input's records there.
    claim = writer_cli.claim_of(FLAGS.input_file, outputs, options, FLAGS.vocab_file,
                                FLAGS.spm_model_file)
    if outputs.directory:
      writer_cli.claim_output_dir(outputs.directory, claim, FLAGS.overwrite)
    else:
      writer_cli.check_output_files(outputs, claim, FLAGS.overwrite)
    if FLAGS.driver == "beam":
      from bert_tf.data.pretraining import beam  # pylint: disable=g-import-not-at-top
      try:
        manifest = beam.run_beam(FLAGS.input_file, outputs, FLAGS.vocab_file, options,
                                 beam_args, spm_model_file=FLAGS.spm_model_file)
      except ImportError as e:  # apache-beam is not installed
        raise cli.Error(str(e)) from None
    else:
      manifest = writer.create_pretraining_data(
          FLAGS.input_file, outputs, FLAGS.vocab_file, options, num_workers=num_workers,
          spm_model_file=FLAGS.spm_model_file)
  writer_cli.log_summary(manifest, outputs)


def run():
  cli.run(main, define_flags, extra_args=True)


if __name__ == "__main__":
  run()
