"""The data writer as an Apache Beam pipeline, for corpora of any size.

The same per-block function as the local driver (`pretraining_data.
block_records`) runs in a Beam `DoFn`, so a Wikipedia+Books-sized corpus runs
on an existing distributed engine (Dataflow, Flink, Spark) instead of a
home-made one, and the shards are byte-identical to the local driver's.

  Blocks (scanned on the launcher) -> [tokenize + all passes, per block] ->
  one temporary TFRecord file per block -> GroupByKey(shard) -> [shard:
  concatenate its blocks' files in block order, rename] -> manifest.

Needs the `beam` extra: `pip install 'bert_tf[beam]'`. Only `--output_dir`
output is supported (round-robin dealing needs the global record order).
"""

import json
import time

from absl import logging

from bert_tf.data import writer as pd_lib


def _import_beam():
  try:
    import apache_beam as beam  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ImportError("the Beam driver needs apache-beam: pip install 'bert_tf[beam]'") from None
  return beam


def run_beam(input_patterns, outputs, vocab_file, options, beam_args=()):
  """Runs the writer as a Beam pipeline; returns the manifest dict.

  Args:
    input_patterns, vocab_file, options: as create_pretraining_data.
    outputs: pretraining_data.Outputs with a directory (not files).
    beam_args: Beam pipeline options, e.g. ["--runner=DirectRunner"].
  """
  beam = _import_beam()
  import tensorflow as tf
  from apache_beam.options.pipeline_options import PipelineOptions
  from bert_tf.data import manifest as manifest_lib
  from bert_tf.data import tokenization

  started = time.time()
  if outputs.files:
    raise ValueError("the Beam driver writes --output_dir shards; --output_file is local-only")
  options.validate()
  vocab = tokenization.load_vocab(vocab_file)
  files = pd_lib.expand_inputs(input_patterns)
  paths = outputs.paths()
  pd_lib._check_writable(paths)  # pylint: disable=protected-access
  blocks = pd_lib.scan_blocks(files, options.block_bytes)
  fingerprint = pd_lib._fingerprint(files, options, vocab)  # pylint: disable=protected-access
  num_shards = outputs.num_shards
  shard_of_block = [b.index * num_shards // len(blocks) for b in blocks]
  tmp_dir = outputs.directory.rstrip("/") + "/.blocks"
  tf.io.gfile.makedirs(tmp_dir)
  compression = "GZIP" if outputs.gzip else None
  logging.info("beam: %d files, %d blocks, %d shards", len(files), len(blocks), num_shards)

  class BlockFn(beam.DoFn):
    """Tokenizes one block, runs all its passes, writes a temporary file."""

    def setup(self):
      self.vocab = tokenization.load_vocab(vocab_file)
      self.tokenizer = tokenization.Tokenizer(self.vocab, options.do_lower_case)
      self.masking_vocab = pd_lib.masking_vocab_of(self.vocab)
      self.encoder = pd_lib.schema.ExampleEncoder(
          options.max_seq_length, options.max_predictions_per_seq, self.vocab.size)

    def process(self, block):
      tokenized = pd_lib.tokenize_block(block, self.tokenizer, options.decode_errors)
      records, stats = pd_lib.block_records(tokenized, options, self.masking_vocab, self.encoder)
      path = f"{tmp_dir}/block-{block.index:08d}.tfrecord"
      with tf.io.TFRecordWriter(path + ".tmp", options=compression) as writer:
        for record in records:
          writer.write(record)
      tf.io.gfile.rename(path + ".tmp", path, overwrite=True)
      yield shard_of_block[block.index], (block.index, path, stats.to_dict())

  class ShardFn(beam.DoFn):
    """Concatenates a shard's block files in block order."""

    def process(self, element):
      shard, parts = element
      parts = sorted(parts)
      path = paths[shard]
      stats = pd_lib.BlockStats(options.max_seq_length // pd_lib.HISTOGRAM_BUCKET + 1)
      with tf.io.TFRecordWriter(path + ".tmp", options=compression) as writer:
        for _, block_path, block_stats in parts:
          for record in tf.data.TFRecordDataset(block_path, compression_type=compression or ""):
            writer.write(record.numpy())
          stats.merge(pd_lib.BlockStats.from_dict(block_stats))
      pd_lib._write_json(path + ".stats.json",  # pylint: disable=protected-access
                         {"fingerprint": fingerprint, "stats": stats.to_dict()})
      tf.io.gfile.rename(path + ".tmp", path, overwrite=True)
      for _, block_path, _ in parts:
        tf.io.gfile.remove(block_path)
      yield shard

  runner = None
  if not any(a.startswith("--runner") for a in beam_args):
    # Beam's in-process engine; "DirectRunner" would first try to download
    # the Prism runner binary.
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    runner = FnApiRunner()
  with beam.Pipeline(runner=runner, options=PipelineOptions(list(beam_args))) as pipeline:
    _ = (pipeline
         | "Blocks" >> beam.Create(blocks)
         | "Reshuffle" >> beam.Reshuffle()
         | "Block" >> beam.ParDo(BlockFn())
         | "ByShard" >> beam.GroupByKey()
         | "Shard" >> beam.ParDo(ShardFn()))

  # The shards wrote their counts beside them; shards that got no block are
  # empty, valid files.
  total = pd_lib.BlockStats(options.max_seq_length // pd_lib.HISTOGRAM_BUCKET + 1)
  for path in paths:
    if not tf.io.gfile.exists(path):
      tf.io.TFRecordWriter(path + ".tmp", options=compression).close()
      pd_lib._write_json(path + ".stats.json",  # pylint: disable=protected-access
                         {"fingerprint": fingerprint, "stats": total.to_dict()})
      tf.io.gfile.rename(path + ".tmp", path, overwrite=True)
      continue
    with tf.io.gfile.GFile(path + ".stats.json") as f:
      total.merge(pd_lib.BlockStats.from_dict(json.load(f)["stats"]))
  if tf.io.gfile.exists(tmp_dir) and not tf.io.gfile.listdir(tmp_dir):
    tf.io.gfile.rmtree(tmp_dir)
  if total.instances == 0:
    raise ValueError(f"--input_file: no instance could be made from {len(files)} file(s)")
  result = pd_lib.build_manifest(files, paths, outputs, vocab, options, total, time.time() - started, 0, 0)
  result["run"]["driver"] = "beam"
  manifest_lib.write_manifest(result, outputs.manifest_path())
  return result
