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
--sentence_task=nsp|sop|none, --packing=segment_pair|full_sentences|doc_sentences,
--max_ngram, --dynamic_masking (see bert_tf.data.writer.DataOptions).
"""

import contextlib
import os

from absl import app
from absl import flags
from absl import logging

from bert_tf import cli
from bert_tf.data import writer

FLAGS = flags.FLAGS


def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  f = flag_values
  # The original's flags.
  flags.DEFINE_string("input_file", None, "Input raw text file (or comma-separated list of files; globs allowed).", flag_values=f)
  flags.DEFINE_string("output_file", None, "Output TF example file (or comma-separated list of files; instances dealt round-robin).", flag_values=f)
  flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.", flag_values=f)
  flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text. Should be True for uncased models.", flag_values=f)
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
                    "doc_sentences: the same within one document.", flag_values=f)
  flags.DEFINE_integer("max_ngram", writer.DataOptions.max_ngram,
                       "Mask spans of 1..N units (words with --do_whole_word_mask, else "
                       "WordPieces), n with probability proportional to 1/n (ALBERT uses 3).",
                       flag_values=f)
  flags.DEFINE_bool("dynamic_masking", writer.DataOptions.dynamic_masking,
                    "Write the real tokens and no masked_lm_* features; training masks each "
                    "example anew every epoch (same rules and options).", flag_values=f)


@contextlib.contextmanager
def _removed_if_left_empty(folders):
  """On an error, removes the folders (and their missing parents) that did
  not exist before and hold no file: a failed run leaves no empty output
  folder behind. Folders with files stay (shards a rerun resumes from)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  new = []
  for folder in folders:
    outermost = ""
    while folder and not tf.io.gfile.exists(folder):
      outermost, folder = folder, os.path.dirname(folder.rstrip("/"))
    if outermost:
      new.append(outermost)
  try:
    yield
  except BaseException:
    for folder in new:
      if tf.io.gfile.exists(folder) and not any(
          files for _, _, files in tf.io.gfile.walk(folder)):
        tf.io.gfile.rmtree(folder)
    raise


def main(argv):
  beam_args = argv[1:]
  if beam_args and FLAGS.driver != "beam":
    raise app.UsageError(f"unexpected arguments: {' '.join(beam_args)}")
  for name in ("input_file", "vocab_file"):
    if not getattr(FLAGS, name):
      raise app.UsageError(f"--{name} is required")
  if bool(FLAGS.output_file) == bool(FLAGS.output_dir):
    raise app.UsageError("give exactly one of --output_file and --output_dir")
  if FLAGS.num_output_shards < 1:
    raise app.UsageError(f"--num_output_shards={FLAGS.num_output_shards}: must be at least 1")
  num_workers = FLAGS.num_workers or writer.default_num_workers()
  if num_workers < 1:
    raise app.UsageError(f"--num_workers={num_workers}: must be at least 1")
  options = writer.DataOptions(
      max_seq_length=FLAGS.max_seq_length,
      max_predictions_per_seq=FLAGS.max_predictions_per_seq,
      masked_lm_prob=FLAGS.masked_lm_prob,
      short_seq_prob=FLAGS.short_seq_prob,
      dupe_factor=FLAGS.dupe_factor,
      random_seed=FLAGS.random_seed,
      do_lower_case=FLAGS.do_lower_case,
      do_whole_word_mask=FLAGS.do_whole_word_mask,
      block_bytes=FLAGS.block_bytes,
      decode_errors=FLAGS.decode_errors,
      sentence_task=FLAGS.sentence_task,
      packing=FLAGS.packing,
      max_ngram=FLAGS.max_ngram,
      dynamic_masking=FLAGS.dynamic_masking)
  if FLAGS.output_file:
    outputs = writer.Outputs(
        files=tuple(p.strip() for p in FLAGS.output_file.split(",") if p.strip()), gzip=FLAGS.gzip)
  else:
    outputs = writer.Outputs(directory=FLAGS.output_dir,
                                       num_shards=FLAGS.num_output_shards, gzip=FLAGS.gzip)
  output_dirs = [outputs.directory] if outputs.directory else [
      os.path.dirname(path) for path in outputs.files]
  with _removed_if_left_empty(output_dirs):
    if FLAGS.driver == "beam":
      from bert_tf.data import beam  # pylint: disable=g-import-not-at-top
      try:
        manifest = beam.run_beam(FLAGS.input_file, outputs, FLAGS.vocab_file, options,
                                 beam_args)
      except ImportError as e:  # apache-beam is not installed
        raise cli.Error(str(e)) from None
    else:
      manifest = writer.create_pretraining_data(
          FLAGS.input_file, outputs, FLAGS.vocab_file, options, num_workers=num_workers)
  counts, shares = manifest["counts"], manifest["shares"]
  logging.info("wrote %d instances from %d documents to %d file(s) in %.1f s (%.0f instances/s)",  # noqa
               counts["instances"], counts["documents"], len(manifest["files"]),
               manifest["run"]["seconds"],
               counts["instances"] / max(manifest["run"]["seconds"], 1e-9))
  logging.info("mean tokens %.1f | predictions/instance %.2f | [MASK] %.3f kept %.3f random %.3f "
               "| NSP random %.3f | undecodable bytes %d", shares["mean_tokens"],
               shares["predictions_per_instance"], shares["masked"], shares["kept"],
               shares["random"], shares["nsp_random"], counts["undecodable_bytes"])
  logging.info("manifest: %s", outputs.manifest_path())


def run():
  cli.run(main, define_flags, extra_args=True)


if __name__ == "__main__":
  run()
