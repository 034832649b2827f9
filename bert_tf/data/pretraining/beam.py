"""The data writer as an Apache Beam pipeline, for corpora of any size.

The same plan (`writer.plan_run`: blocks drawn from all over the input,
the output's order of units, the negative pool; made on the launcher),
per-block processor (`passes.BlockProcessor`) and shard writer
(`shards.ShardWriter`) as the local driver run in Beam, so a
Wikipedia+Books-sized corpus runs on an existing distributed engine
(Dataflow, Flink, Spark) instead of a home-made one, and the shards are
byte-identical to the local driver's.

  Blocks (planned on the launcher) -> [tokenize + all passes, per block] ->
  one temporary TFRecord file per unit (a pass over a block) ->
  GroupByKey(shard) -> [shard: concatenate its units' files in the plan's
  order, rename] -> manifest.

Needs the `beam` extra: `pip install 'bert_tf[beam]'`. Only `--output_dir`
output is supported (round-robin dealing needs the global record order).
"""

import contextlib
import time

from absl import logging

from bert_tf.io import file_io as files_lib
from bert_tf.data.pretraining import passes
from bert_tf.data.pretraining import shards
from bert_tf.data.pretraining import writer


def _import_beam():
  try:
    import apache_beam as beam  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ImportError("the Beam driver needs apache-beam: pip install 'bert_tf[beam]'") from None
  return beam


def run_beam(input_patterns, outputs, vocab_file, options, beam_args=(), spm_model_file=None):
  """Runs the writer as a Beam pipeline; returns the manifest dict.

  Args:
    input_patterns, vocab_file, options, spm_model_file: as
      writer.create_pretraining_data.
    outputs: writer.Outputs with a directory (not files).
    beam_args: Beam pipeline options, e.g. ["--runner=DirectRunner"].
  """
  beam = _import_beam()
  import tensorflow as tf
  from apache_beam.options.pipeline_options import PipelineOptions
  from bert_tf.data.tokenizers import tokenization

  started = time.time()
  if outputs.files:
    raise ValueError("the Beam driver writes --output_dir shards; --output_file is local-only")
  options.validate()
  tokenizer = tokenization.tokenizer_for(vocab_file, options.do_lower_case, spm_model_file)
  vocab = tokenizer.vocab
  plan = writer.plan_run(input_patterns, outputs, tokenizer, options)
  tmp_dir = outputs.directory.rstrip("/") + "/.blocks"
  files_lib.makedirs(tmp_dir)
  compression = "GZIP" if outputs.gzip else None
  position = {unit: u for u, unit in enumerate(plan.units)}
  logging.info("beam: %d files, %d blocks, %d shards", len(plan.files), len(plan.blocks),
               len(plan.paths))

  class BlockFn(beam.DoFn):
    """Tokenizes one block, runs all its passes, writes a temporary file."""

    def setup(self):
      tokenizer = tokenization.tokenizer_for(vocab_file, options.do_lower_case, spm_model_file)
      self.processor = passes.BlockProcessor(tokenizer, options, plan.negative_pool,
                                             plan.whole_input)

    def process(self, block):
      for pass_index, records, stats in self.processor(block):
        u = position[pass_index, block.index]
        path = f"{tmp_dir}/unit-{u:09d}.tfrecord"
        # A temporary of this attempt's own (two attempts at one block may
        # run at once); the unit's bytes are the plan's, so either rename
        # leaves the same file. Leftovers go with .blocks at the end.
        with files_lib.atomic_path(path) as tmp, \
            tf.io.TFRecordWriter(tmp, options=compression) as unit_writer:
          for record in records:
            unit_writer.write(record)
        yield plan.shard_of_unit[u], (u, path, stats.to_dict(), stats.b_documents)

  class ShardFn(beam.DoFn):
    """Concatenates a shard's unit files in the plan's order."""

    def process(self, element):
      shard, parts = element
      write_shard(plan, outputs, options, shard, parts)
      yield shard

  runner = None
  if not any(a.startswith("--runner") for a in beam_args):
    # Beam's in-process engine; "DirectRunner" would first try to download
    # the Prism runner binary.
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    runner = FnApiRunner()
  with beam.Pipeline(runner=runner, options=PipelineOptions(list(beam_args))) as pipeline:
    _ = (pipeline
         | "Blocks" >> beam.Create(plan.blocks)
         | "Reshuffle" >> beam.Reshuffle()
         | "Block" >> beam.ParDo(BlockFn())
         | "ByShard" >> beam.GroupByKey()
         | "Shard" >> beam.ParDo(ShardFn()))

  # The shards wrote their counts beside them; shards that got no block are
  # empty, valid files.
  total = passes.BlockStats.for_options(options)
  sources = writer.SourceCounts(plan.num_documents)
  with_units = set(plan.shard_of_unit)
  for k, path in enumerate(plan.paths):
    stats = shards.read_complete_shard(path, plan.fingerprint, outputs.gzip)
    if stats is None and k in with_units:
      raise RuntimeError(f"{path}: the pipeline ended without this shard complete")
    if stats is None:
      stats = passes.BlockStats.for_options(options)
      shards.ShardWriter(path, plan.fingerprint, outputs.gzip).close(stats)
    sources.add(stats.b_documents)
    total.merge(stats, with_documents=False)
  # No attempt runs now: what killed or duplicate attempts left goes.
  shards.remove_temporaries(plan.paths)
  if files_lib.exists(tmp_dir):
    files_lib.rmtree(tmp_dir)
  return writer.finish_run(plan, outputs, vocab, options, total, started, 0, 0, "beam",
                           sources)


def write_shard(plan, outputs, options, shard, parts):
  """The Beam driver's shard step: writes shard `shard` of `plan` from its
  units' files `parts` ((unit position, path, stats dict, random-B
  documents), any order), then removes those files.

  Safe when a runner runs it again (a retry after a worker died) or twice
  at once (speculative or backup execution): a shard found complete and
  whole is kept; each attempt writes its own temporary; the publish is
  idempotent (the bytes and stats are the plan's, whoever renames last);
  an attempt that finds its unit files gone because another attempt
  published the shard and removed them stands down.
  """
  import tensorflow as tf
  compression = "GZIP" if outputs.gzip else ""
  path = plan.paths[shard]
  parts = sorted(parts, key=lambda part: part[0])
  # A retry after the shard was published may find some unit files gone
  # already: the complete shard stands.
  if shards.read_complete_shard(path, plan.fingerprint, outputs.gzip) is None:
    shard_writer = shards.ShardWriter(path, plan.fingerprint, outputs.gzip)
    stats = passes.BlockStats.for_options(options)
    try:
      for _, unit_path, unit_stats, b_documents in parts:
        dataset = tf.data.TFRecordDataset(unit_path, compression_type=compression)
        shard_writer.write(record.numpy() for record in dataset)
        unit = passes.BlockStats.from_dict(unit_stats)
        unit.b_documents = b_documents
        stats.merge(unit)
    except tf.errors.NotFoundError:
      shard_writer.abort()
      if shards.read_complete_shard(path, plan.fingerprint, outputs.gzip) is None:
        raise
      logging.info("%s: published by another attempt", path)
    else:
      shard_writer.close(stats)
  for part in parts:
    with contextlib.suppress(tf.errors.NotFoundError):  # another attempt's removal
      files_lib.remove(part[1])
