r"""Reads pretraining TFRecords back and reports what is in them.

Checks every record against the schema and computes, from the records alone,
the figures that say whether the data is what BERT pretraining expects:
instances, mean real tokens, predictions per instance, the [MASK] / kept /
random split, the share of random next sentences, the share of short
instances. Works on records of the original script too.

Prints JSON: `records` (the figures computed from the records) and, when the
data writer left a manifest beside them, `manifest` (the same figures, same
names, as the manifest states them), so the two read side by side. When the
records inspected are all the files of the manifest, a count that differs
from the manifest's is an error (records lost or changed since written).

  python -m bert_tf.inspect_records --input_file='out/*.tfrecord' \
    --vocab_file=vocab.txt
"""

import json

from absl import app
from absl import flags

from bert_tf import cli

FLAGS = flags.FLAGS


def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  flags.DEFINE_string("input_file", None, "Records to inspect (comma-separated globs).",
                      flag_values=flag_values)
  flags.DEFINE_string("vocab_file", None, "Vocab the records were written with (for the "
                      "[MASK] id): vocab.txt, a transformers tokenizer.json or folder.",
                      flag_values=flag_values)
  flags.DEFINE_string("spm_model_file", None, "Instead of --vocab_file: the SentencePiece "
                      "model (ALBERT's .model, or a Unigram tokenizer.json) the records were "
                      "written with.", flag_values=flag_values)


def inspect(input_patterns, mask_id):
  """The report: {"records": record_statistics, "manifest": its figures or None}.

  Raises:
    cli.Error: the records inspected are exactly the manifest's files but
      their counts differ from the manifest's.
  """
  from bert_tf.data.records import manifest as manifest_lib
  from bert_tf.data.records import stats as stats_lib
  records = stats_lib.record_statistics(input_patterns, mask_id)
  manifest = manifest_lib.Manifest.find(input_patterns)
  report = {"records": records,
            "manifest": stats_lib.manifest_figures(manifest) if manifest else None}
  if manifest is not None and manifest.files is not None:
    inspected = {p.rsplit("/", 1)[-1] for p in manifest_lib.record_files(input_patterns)}
    listed = {p.rsplit("/", 1)[-1] for p in manifest.files}
    if inspected == listed:
      for name, have in records["counts"].items():
        stated = report["manifest"]["counts"][name]
        if stated is not None and stated != have:
          raise cli.Error(f"the records hold counts.{name}={have} but {manifest.source} "
                          f"states counts.{name}={stated}")
  return report


def main(argv):
  del argv
  if not FLAGS.input_file:
    raise app.UsageError("--input_file is required")
  if bool(FLAGS.vocab_file) == bool(FLAGS.spm_model_file):
    raise app.UsageError("give one of --vocab_file and --spm_model_file")
  from bert_tf.data.tokenizers import tokenization
  vocab = tokenization.tokenizer_for(FLAGS.vocab_file, True, FLAGS.spm_model_file).vocab
  print(json.dumps(inspect(FLAGS.input_file, vocab.mask_id), indent=1))


def run():
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
