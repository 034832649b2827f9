"""Raw text -> masked, NSP-paired TFRecords in the original BERT schema.

The original `create_pretraining_data.py` holds the whole corpus and every
instance in RAM and uses one core. Here memory is bounded by a few blocks
whatever the corpus size, and the records are still a global mix of it:

- A cheap scan cuts the input into *chunks*: runs of whole documents of
  about block_bytes / CHUNKS_PER_BLOCK bytes. The chunks are dealt into
  *blocks* of about `block_bytes` in a seeded random order (corpus_scan),
  so a block is a uniform sample of the whole input: of every file and
  every region of each. A block is the unit of tokenizing.
- Within a block the original algorithm runs unchanged: tokenize every
  line, drop empty documents, and for each of `dupe_factor` passes shuffle
  documents, cut each into pairs and mask each pair (passes). A pass handles all its
  instances at once: pairs are token ranges of the block's flat token array
  (instances.pair_spans_from_document), laid out, masked and serialized as
  padded arrays with numpy (masking.choose_masks_padded,
  schema.ExampleEncoder.encode_batch); the records are those of the
  per-instance functions (tests/data/pretraining/test_passes.py).
- Random next-sentence Bs: the original draws B's document uniformly from
  all documents of the input. A block that is the whole input does exactly
  that. Otherwise B's document is uniform over the block's documents of
  *other chunks* than A's (block_sentences): blocks are uniform samples, so
  over the run every document of the input serves as B as often as in the
  original, and none comes from A's neighbourhood in the input. Blocks of a
  single chunk (documents longer than a chunk) draw from the *negative
  pool*, a seeded uniform sample of up to NEGATIVE_POOL_DOCUMENTS documents
  of the whole input drawn during the scan (negative_pool).
- Output order: a *unit* is one pass over one block, its instances
  shuffled. Units are written pass-major (stream_units): every block's pass
  0, then every block's pass 1 in another random order, and so on. So any
  stretch of the output is a uniform sample of the input, and a document's
  dupe_factor copies lie a pass apart. The later passes read the blocks'
  tokens from a scratch cache beside the output (token_cache), removed at
  the end.
- Each unit gets its own seeded `random.Random`, derived from `random_seed`,
  the block and the pass (seeds), so what it produces does not depend on which
  process ran it: the output is byte-identical for any number of workers
  and for either driver (this local one with processes, or
  `bert_tf.data.pretraining.beam`).

Output: with `output_dir`, `num_output_shards` files, shard k holding a
contiguous stretch of the units, each file written under a temporary name
and renamed when complete together with a small stats file; a run started
again after a kill reuses the complete shards. With `output_files` (the
original flag), instances are dealt round-robin to the files, which are
renamed into place at the end.

This module is the local driver: the options, the plan (plan_run,
stream_units), the writing and the manifest; the shard files and their
reuse are in shards, the worker processes in worker_pool, the data tool's
flag checks in writer_cli.
"""

import collections
import contextlib
import dataclasses
import hashlib
import json
import os
import time
import typing

from absl import logging

from bert_tf.io import file_io as files_lib
from bert_tf.data.pretraining import corpus_scan
from bert_tf.data.pretraining import masking
from bert_tf.data.pretraining import negative_pool as negative_pool_lib
from bert_tf.data.pretraining import passes
from bert_tf.data.records import schema
from bert_tf.data.pretraining import seeds
from bert_tf.data.pretraining import shards
from bert_tf.data.pretraining import token_cache
from bert_tf.data.pretraining import worker_pool

SENTENCE_TASKS = ("nsp", "sop", "none")
PACKINGS = ("segment_pair", "full_sentences", "doc_sentences", "sentence_pair")


@dataclasses.dataclass(frozen=True)
class DataOptions:
  """What the records contain; the original script's flags, same defaults."""
  max_seq_length: int = 128
  max_predictions_per_seq: int = 20
  masked_lm_prob: float = 0.15
  short_seq_prob: float = 0.1
  dupe_factor: int = 10
  random_seed: int = 12345
  do_lower_case: bool = True
  do_whole_word_mask: bool = False
  block_bytes: int = 1 << 20
  # Input bytes that are not UTF-8: "ignore" drops and counts them; "strict"
  # stops with an error naming the file and offset, as the original does
  # under Python 3 (its text-mode GFile decodes strictly).
  decode_errors: str = "ignore"
  # RoBERTa / ALBERT variants; the defaults are the original's records.
  # sentence_task: "nsp" (the original), "sop" (ALBERT's sentence order:
  # next_sentence_labels = 1 when A and B are swapped), "none" (no label).
  sentence_task: str = "nsp"
  # packing: "segment_pair" ([CLS] A [SEP] B [SEP], the original),
  # "full_sentences" / "doc_sentences" (RoBERTa's: one segment of whole
  # sentences, across / within documents; see instances.pack_sentences),
  # "sentence_pair" (RoBERTa's SENTENCE-PAIR: A and B one natural sentence
  # each, with NSP; instances.sentence_pairs_from_document).
  packing: str = "segment_pair"
  # Masked spans of 1..max_ngram units, n with probability ~ 1/n (ALBERT's).
  max_ngram: int = 1
  # Write the real tokens and no masked_lm_* features: the input pipeline
  # masks each example anew (bert_tf.data.input.dynamic_masking).
  dynamic_masking: bool = False
  # What a chosen position becomes (masking.Replacement.of_shares): [MASK],
  # a random id, or itself. None: half of what the others leave (0.1 / 0.1
  # by default, the original's rule and bytes).
  masked_token_share: float = 0.8
  random_token_share: typing.Optional[float] = None
  kept_token_share: typing.Optional[float] = None

  @property
  def replacement(self):
    """The masking.Replacement of the three shares."""
    return masking.Replacement.of_shares(self.masked_token_share, self.random_token_share,
                                         self.kept_token_share)

  def validate(self):
    """Raises ValueError naming the flag and value of an impossible option."""
    if self.max_seq_length < 5:
      raise ValueError(f"--max_seq_length={self.max_seq_length}: must be at least 5 "
                       "([CLS] A [SEP] B [SEP] with non-empty A and B)")
    if self.max_predictions_per_seq < 1:
      raise ValueError(f"--max_predictions_per_seq={self.max_predictions_per_seq}: must be at least 1")
    if not 0.0 < self.masked_lm_prob <= 1.0:
      raise ValueError(f"--masked_lm_prob={self.masked_lm_prob}: must be in (0, 1]")
    if not 0.0 <= self.short_seq_prob <= 1.0:
      raise ValueError(f"--short_seq_prob={self.short_seq_prob}: must be in [0, 1]")
    if self.dupe_factor < 1:
      raise ValueError(f"--dupe_factor={self.dupe_factor}: must be at least 1")
    if self.block_bytes < 1:
      raise ValueError(f"--block_bytes={self.block_bytes}: must be positive")
    if self.decode_errors not in ("ignore", "strict"):
      raise ValueError(f"--decode_errors={self.decode_errors}: must be ignore or strict")
    if self.sentence_task not in SENTENCE_TASKS:
      raise ValueError(f"--sentence_task={self.sentence_task}: must be one of "
                       f"{', '.join(SENTENCE_TASKS)}")
    if self.packing not in PACKINGS:
      raise ValueError(f"--packing={self.packing}: must be one of {', '.join(PACKINGS)}")
    if self.packing == "sentence_pair" and self.sentence_task != "nsp":
      raise ValueError(f"--packing=sentence_pair needs --sentence_task=nsp (a pair of "
                       f"sentences, B next or from another document), not "
                       f"--sentence_task={self.sentence_task}")
    if self.sentence_task != "none" and self.packing not in ("segment_pair", "sentence_pair"):
      raise ValueError(f"--sentence_task={self.sentence_task} needs --packing=segment_pair "
                       f"(a sentence pair), not --packing={self.packing}; use "
                       "--sentence_task=none with it")
    if self.sentence_task == "none" and self.packing == "segment_pair":
      raise ValueError("--sentence_task=none needs --packing=full_sentences or doc_sentences "
                       "(--packing=segment_pair makes sentence pairs for nsp or sop)")
    if self.max_ngram < 1:
      raise ValueError(f"--max_ngram={self.max_ngram}: must be at least 1")
    _ = self.replacement  # ValueError naming the share of an impossible rule


@dataclasses.dataclass(frozen=True)
class Outputs:
  """Where records go: `files` (dealt round-robin, the original's
  --output_file) or `directory` with `num_shards` files (resumable)."""
  files: tuple = ()
  directory: str = ""
  num_shards: int = 1
  gzip: bool = False

  def folders(self):
    """The folders the outputs go to."""
    return [self.directory] if self.directory else [os.path.dirname(p) for p in self.files]

  def paths(self):
    if self.files:
      return list(self.files)
    ext = ".tfrecord.gz" if self.gzip else ".tfrecord"
    return [f"{self.directory.rstrip('/')}/pretrain-{k:05d}-of-{self.num_shards:05d}{ext}"
            for k in range(self.num_shards)]

  def manifest_path(self):
    from bert_tf.data.records import manifest
    if self.files:
      return manifest.manifest_path_for_file(self.files[0])
    return manifest.manifest_path_for_dir(self.directory)


class _Progress:
  """Logs documents/s, instances/s and an ETA by input bytes."""

  def __init__(self, total_bytes, every_seconds=5.0):
    self.total = max(total_bytes, 1)
    self.done = 0
    self.docs = 0
    self.instances = 0
    self.start = time.time()
    self.last = self.start
    self.every = every_seconds

  def update(self, nbytes, stats, force=False):
    self.done += nbytes
    self.docs += stats.documents
    self.instances += stats.instances
    now = time.time()
    if force or now - self.last >= self.every:
      self.last = now
      elapsed = max(now - self.start, 1e-9)
      eta = elapsed * (self.total - self.done) / max(self.done, 1)
      logging.info("%5.1f%% of input | %d documents (%.0f/s) | %d instances (%.0f/s) | ETA %s",
                   100.0 * self.done / self.total, self.docs, self.docs / elapsed,
                   self.instances, self.instances / elapsed, _hms(eta))


def _hms(seconds):
  seconds = int(seconds)
  return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _fingerprint(files, options, vocab):
  """What must match for a complete shard of an earlier run to be reused."""
  inputs = [(p, files_lib.size(p)) for p in files]
  fields = dataclasses.asdict(options)
  # Options added since shards recorded fingerprints count only when set, so
  # an earlier run's shards stay reusable.
  for name in ("masked_token_share", "random_token_share", "kept_token_share"):
    if fields[name] == getattr(DataOptions, name):
      del fields[name]
  payload = json.dumps({"inputs": inputs, "options": fields,
                        "vocab": vocab.sha256, "schema": schema.SCHEMA_VERSION,
                        "negative_pool": [negative_pool_lib.NEGATIVE_POOL_DOCUMENTS,
                                          negative_pool_lib.NEGATIVE_POOL_WORDS],
                        "layout": ["chunks", corpus_scan.CHUNKS_PER_BLOCK, "pass-major"]},
                       sort_keys=True)
  return hashlib.sha256(payload.encode()).hexdigest()


def _check_writable(paths):
  for path in paths:
    parent = path.rsplit("/", 1)[0] if "/" in path else "."
    try:
      files_lib.makedirs(parent)
      probe = f"{path}.probe-{os.getpid()}"
      with files_lib.open_file(probe, "w") as f:
        f.write("")
      files_lib.remove(probe)
    except Exception as e:  # noqa: BLE001 - any failure means "cannot write here"
      raise PermissionError(f"cannot write output {path}: {type(e).__name__}: "
                            f"{str(e).splitlines()[0] if str(e) else ''}") from None


@dataclasses.dataclass(frozen=True)
class RunPlan:
  """What both drivers work from, decided before any record is written.

  files: input paths; paths: output paths; blocks: list of Block;
  negative_pool: NegativePool, or None where no block needs it;
  whole_input: bool, the input is one block; num_documents: documents of
  the input; fingerprint: str, what a reusable shard of an earlier run must
  match; units: list of (pass, block), the output's order (stream_units);
  shard_of_unit: list of int, unit position -> shard (with --output_dir:
  shard k holds a contiguous stretch of the units).
  """
  files: list
  paths: list
  blocks: list
  negative_pool: object
  whole_input: bool
  num_documents: int
  fingerprint: str
  units: list
  shard_of_unit: list

  def scratch_folder(self, outputs):
    """Where the token cache of this run goes (beside the output)."""
    if outputs.directory:
      return f"{outputs.directory.rstrip('/')}/.tokens-{self.fingerprint[:16]}"
    parent, name = files_lib.parent_of(self.paths[0]), os.path.basename(self.paths[0])
    return f"{parent.rstrip('/')}/.{name}.tokens-{self.fingerprint[:16]}"


def plan_run(input_patterns, outputs, tokenizer, options):
  """Expands the inputs, checks the outputs can be written, scans the input
  into chunks (sampling the negative pool), deals them into blocks, orders
  the output, and tokenizes the pool if a block needs it.

  Raises:
    ValueError / FileNotFoundError / PermissionError naming the bad input
    or output.
  """
  files = files_lib.expand_patterns(input_patterns)
  paths = outputs.paths()
  _check_writable(paths)
  sampler = negative_pool_lib.NegativeSampler(options.random_seed,
                                              tail_words=options.max_seq_length - 3)
  started = time.time()
  chunks = corpus_scan.scan_chunks(files, corpus_scan.chunk_bytes_of(options.block_bytes), sampler)
  blocks = corpus_scan.group_blocks(chunks, options.block_bytes, options.random_seed)
  whole_input = len(blocks) == 1
  # A block of one chunk (documents longer than a chunk) has no document of
  # another chunk to take a random B from: the pool serves it.
  needs_pool = (not whole_input and options.sentence_task == "nsp"
                and any(sum(c.documents > 0 for c in b.chunks) < 2 for b in blocks))
  pool = (negative_pool_lib.tokenize_negative_pool(sampler, blocks, tokenizer) if needs_pool
          else None)
  logging.info("input: %d files, %.1f MB, %d documents, %d chunks in %d blocks of ~%.2f MB "
               "drawn from all of the input%s (%.1f s)",
               len(files), sum(c.end - c.start for c in chunks) / 1e6, sampler.documents_seen,
               len(chunks), len(blocks), options.block_bytes / 1e6,
               f"; negative pool for single-chunk blocks: {len(pool.entry_block)} documents"
               if pool is not None else "", time.time() - started)
  units = stream_units(len(blocks), options.dupe_factor, options.random_seed)
  num_shards = len(paths)
  return RunPlan(files=files, paths=paths, blocks=blocks, negative_pool=pool,
                 whole_input=whole_input, num_documents=sampler.documents_seen,
                 fingerprint=_fingerprint(files, options, tokenizer.vocab), units=units,
                 shard_of_unit=[u * num_shards // len(units) for u in range(len(units))])


def stream_units(num_blocks, dupe_factor, random_seed):
  """The order of the output: (pass, block) units, pass-major.

  Pass 0 visits the blocks in index order (the order they are tokenized
  in); every later pass in its own seeded random order. A block is a uniform
  sample of the input, so any stretch of the stream is one, and the
  dupe_factor copies of a document lie one pass apart and at unrelated
  places within their passes: spread over the whole run, as the original's
  global shuffle spreads them.
  """
  import numpy as np
  units = [(0, b) for b in range(num_blocks)]
  for p in range(1, dupe_factor):
    order = np.random.default_rng(seeds.derived_seed(random_seed, "pass_order", p)).permutation(
        num_blocks)
    units += [(p, int(b)) for b in order]
  return units


class SourceCounts:
  """How often each document of the input served as a random B."""

  def __init__(self, num_documents):
    import numpy as np
    # 4 bytes a document: 24 MB for Wikipedia's ~6 M articles.
    self.counts = np.zeros(max(num_documents, 1), np.int32)

  def add(self, ids):
    import numpy as np
    if len(ids):
      ids = np.asarray(ids, np.int64)
      np.add.at(self.counts, ids[ids >= 0], 1)

  def totals(self):
    """The manifest's counts: distinct documents, and the most one served."""
    import numpy as np
    return {"nsp_random_documents": int(np.count_nonzero(self.counts)),
            "nsp_random_most_per_document": int(self.counts.max())}


def finish_run(plan, outputs, vocab, options, total, started, num_workers, reused, driver,
               sources=None):
  """Checks the run wrote something, warns about what the data lacks, and
  writes the manifest; returns it. Both drivers end here.

  Args:
    sources: SourceCounts of the run's random Bs (NSP runs), or None.
  Raises:
    ValueError, leaving no output under a final name, when no instance
    could be made.
  """
  if total.instances == 0:
    # An error leaves nothing under a final name: not even empty files that
    # look like a result, or stats that a rerun would take as complete shards.
    for path in plan.paths:
      for leftover in (path, path + ".stats.json"):
        if files_lib.exists(leftover):
          files_lib.remove(leftover)
    if options.sentence_task == "sop" and total.sentences > 0:
      raise ValueError(f"--sentence_task=sop: no instance could be made from "
                       f"{len(plan.files)} file(s): no document has two sentences (a sentence "
                       "order pair needs two consecutive segments of one document)")
    raise ValueError(f"--input_file: no instance could be made from {len(plan.files)} file(s) "
                     "(no line has a token in this vocab)")
  if total.nsp_random_from_same_document:
    logging.warning("the whole input holds a single document: %d random next-sentence B "
                    "segments (of %d) came from A's own document", total.nsp_random_from_same_document,
                    total.sentence_negatives)
  if sources is not None and options.sentence_task == "nsp":
    total.extra = sources.totals()
  manifest = manifest_of_run(plan.files, plan.paths, outputs, vocab, options, total,
                             time.time() - started, num_workers, reused,
                             driver=None if driver == "local" else driver)
  return manifest.write(outputs.manifest_path()).to_dict()


def create_pretraining_data(input_patterns, outputs, vocab_file, options,
                            num_workers=1, spm_model_file=None):
  """Writes pretraining records and their manifest; the library entry.

  Args:
    input_patterns: comma-separated globs or a list of them; text with one
      sentence a line and a blank line between documents.
    outputs: Outputs.
    vocab_file: WordPiece vocab, one token a line.
    options: DataOptions.
    num_workers: processes; 1 runs in this process.
    spm_model_file: a SentencePiece model instead of vocab_file (ALBERT's
      tokenization; sentencepiece_vocab).
  Returns:
    The manifest dict (also written beside the records).
  """
  started = time.time()
  options.validate()
  pool = worker_pool.WorkerPool(num_workers, options) if num_workers > 1 else None
  cache = None
  try:
    from bert_tf.data.tokenizers import tokenization  # TensorFlow's import, while the workers start
    # Names missing special tokens.
    tokenizer = tokenization.tokenizer_for(vocab_file, options.do_lower_case, spm_model_file)
    vocab = tokenizer.vocab
    plan = plan_run(input_patterns, outputs, tokenizer, options)
    if pool is not None:
      pool.share(passes.masking_vocab_of(vocab), plan.negative_pool, plan.whole_input)
    cache = token_cache.TokenCache(plan.scratch_folder(outputs),
                       use_files=len(plan.blocks) > 1 and options.dupe_factor > 1)
    total, reused, sources = _write(plan, outputs, tokenizer, options, pool, cache)
  finally:
    if pool is not None:
      pool.close()
    if cache is not None:
      cache.remove()
  return finish_run(plan, outputs, vocab, options, total, started, num_workers, reused, "local",
                    sources)


def _write(plan, outputs, tokenizer, options, pool, cache):
  """Writes the records of `plan`; returns (BlockStats of all, reused
  shards, SourceCounts)."""
  import tensorflow as tf
  blocks, paths, units = plan.blocks, plan.paths, plan.units
  total = passes.BlockStats.for_options(options)
  sources = SourceCounts(plan.num_documents)
  progress = _Progress(sum(b.nbytes for b in blocks))
  reused = 0

  def unit_bytes(u):  # progress: a block's bytes, spread over its passes
    return blocks[units[u][1]].nbytes / options.dupe_factor

  def count(stats):
    sources.add(stats.b_documents)
    total.merge(stats, with_documents=False)

  if outputs.files:
    # The original's --output_file: deal instances round-robin.
    compression = "GZIP" if outputs.gzip else None
    with files_lib.atomic_paths(paths, [f"{p}.tmp-bert_tf" for p in paths]) as tmp_paths, \
        contextlib.ExitStack() as opened:  # closed (all records flushed) before the renames
      writers = [opened.enter_context(tf.io.TFRecordWriter(p, options=compression))
                 for p in tmp_paths]
      n = 0
      for u, records, stats in worker_pool.map_units(plan, range(len(units)), tokenizer, options, pool,
                                          cache):
        for record in records:
          writers[n % len(writers)].write(record)
          n += 1
        count(stats)
        progress.update(unit_bytes(u), stats)
    progress.update(0, passes.BlockStats.for_options(options), force=True)
    return total, reused, sources

  num_shards = outputs.num_shards
  if len(units) < num_shards:
    logging.warning("%d blocks x %d passes for %d shards: %d shards will be empty; lower "
                    "--block_bytes or --num_output_shards", len(blocks), options.dupe_factor,
                    num_shards, num_shards - len(units))
  shard_of_unit = plan.shard_of_unit
  shard_bytes = collections.Counter()
  for u, k in enumerate(shard_of_unit):
    shard_bytes[k] += unit_bytes(u)
  shards.remove_temporaries(paths)  # of a killed run
  pending, damaged = [], []
  for k, path in enumerate(paths):
    stats = shards.read_complete_shard(path, plan.fingerprint, outputs.gzip, damaged=damaged)
    if stats is None:
      pending.append(k)
      continue
    count(stats)
    reused += 1
    progress.update(shard_bytes[k], stats)
  if reused or damaged:
    logging.info("reusing %d complete shards of an earlier run (each checked against its "
                 "stats)%s", reused, f"; rewriting {len(damaged)} that failed the check: "
                 + ", ".join(os.path.basename(p) for p, _ in damaged) if damaged else "")
  pending_set = set(pending)
  todo = [u for u in range(len(units)) if shard_of_unit[u] in pending_set]
  remaining = collections.Counter(shard_of_unit[u] for u in todo)
  writers = {}
  shard_stats = {k: passes.BlockStats.for_options(options) for k in pending}

  def finish(k):
    # A shard without units is an empty, valid file.
    writer = writers.pop(k, None) or shards.ShardWriter(paths[k], plan.fingerprint, outputs.gzip)
    writer.close(shard_stats[k])

  for k in [k for k in pending if remaining[k] == 0]:
    finish(k)
  for u, records, stats in worker_pool.map_units(plan, todo, tokenizer, options, pool, cache):
    k = shard_of_unit[u]
    if k not in writers:
      writers[k] = shards.ShardWriter(paths[k], plan.fingerprint, outputs.gzip)
    writers[k].write(records)
    shard_stats[k].merge(stats)
    count(stats)
    progress.update(unit_bytes(u), stats)
    remaining[k] -= 1
    if remaining[k] == 0:
      finish(k)
  progress.update(0, passes.BlockStats.for_options(options), force=True)
  return total, reused, sources


def manifest_of_run(files, paths, outputs, vocab, options, total, elapsed, num_workers,
                    reused, driver=None):
  """The run's manifest.Manifest: options, vocab, counts, shares, histogram."""
  from bert_tf.data.records import manifest as manifest_lib
  return manifest_lib.Manifest.from_totals(
      input_files=files, output_files=paths, vocab=vocab, options=options,
      gzip=outputs.gzip, totals=total.to_dict(), bucket_tokens=passes.HISTOGRAM_BUCKET,
      seconds=elapsed, num_workers=num_workers, reused_shards=reused,
      schema_version=schema.SCHEMA_VERSION, driver=driver)


def default_num_workers():
  return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else (os.cpu_count() or 1))
