"""Raw text -> masked, NSP-paired TFRecords in the original BERT schema.

The original `create_pretraining_data.py` holds the whole corpus and every
instance in RAM and uses one core. Here the corpus is cut into *blocks*:
runs of whole documents of about `block_bytes` of text, found by a cheap scan
of the input. A block is the unit of work and the window that random
next-sentence B segments are drawn from; the original's window is the whole
corpus, which its users shard into files anyway. Each block gets its own
seeded `random.Random`, derived from `random_seed` and the block's index, so
what a block produces does not depend on which process ran it: the output is
byte-identical for any number of workers and for either driver (this local
one with processes, or `bert_tf.data.beam`).

Within a block the original algorithm runs unchanged: tokenize every line,
drop empty documents, shuffle documents, make `dupe_factor` passes cutting
each document into pairs, mask each pair, shuffle the block's instances.

Output: with `output_dir`, `num_output_shards` files, shard k holding a
contiguous range of blocks, each file written under a temporary name and
renamed when complete together with a small stats file; a run started again
after a kill reuses the complete shards. With `output_files` (the original
flag), instances are dealt round-robin to the files, which are renamed into
place at the end.
"""

import codecs
import collections
import dataclasses
import hashlib
import json
import multiprocessing
import os
import random
import re
import time

from absl import logging

from bert_tf.data import instances
from bert_tf.data import masking
from bert_tf.data import schema

_BLANK_LINE = re.compile(rb"\n[ \t\r\f\v]*\n")
_NON_SPACE = re.compile(rb"\S")
_READ_CHUNK = 8 << 20
HISTOGRAM_BUCKET = 16  # tokens per bucket of the length histogram


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


@dataclasses.dataclass(frozen=True)
class Block:
  """A run of whole documents: bytes [start, end) of one input file."""
  index: int
  path: str
  start: int
  end: int


# ---------------------------------------------------------------------------
# Input: globs -> files -> blocks
# ---------------------------------------------------------------------------

def expand_inputs(input_patterns):
  """Comma-separated globs -> sorted, de-duplicated file list (per pattern order)."""
  import tensorflow as tf
  if isinstance(input_patterns, str):
    input_patterns = [p for p in input_patterns.split(",") if p.strip()]
  if not input_patterns:
    raise ValueError("--input_file: no input given")
  files = []
  for pattern in input_patterns:
    matched = sorted(tf.io.gfile.glob(pattern.strip()))
    if not matched:
      raise FileNotFoundError(f"--input_file: {pattern!r} matches no file")
    for path in matched:
      if path not in files:
        files.append(path)
  return files


def scan_blocks(files, block_bytes):
  """Cuts the input files into blocks of whole documents.

  Reads each file once, in large chunks, looking only for blank lines after
  every `block_bytes`: memory stays constant whatever the corpus size. A file
  ends a document (the original ran the last document of one file into the
  first of the next).

  Raises:
    ValueError naming a file that is empty or holds only blank lines.
  """
  import tensorflow as tf
  blocks = []
  for path in files:
    size = tf.io.gfile.stat(path).length
    if size == 0:
      raise ValueError(f"{path}: input file is empty")
    has_text = False
    start = 0
    with tf.io.gfile.GFile(path, "rb") as f:
      buf = b""
      buf_offset = 0  # file offset of buf[0]
      while True:
        chunk = f.read(_READ_CHUNK)
        if not has_text and chunk and _NON_SPACE.search(chunk):
          has_text = True
        buf += chunk
        # Cut at the first blank line at least block_bytes after `start`.
        while True:
          target = start + block_bytes - buf_offset
          if target >= len(buf):
            break
          m = _BLANK_LINE.search(buf, max(target - 1, 0))
          if not m:
            break
          cut = buf_offset + m.end()
          blocks.append(Block(len(blocks), path, start, cut))
          start = cut
        if not chunk:
          break
        # Keep only what a future cut may need.
        keep_from = max(0, min(start - buf_offset, len(buf) - 4096))
        buf = buf[keep_from:]
        buf_offset += keep_from
    if not has_text:
      raise ValueError(f"{path}: input file has no text (only blank lines)")
    if start < size:
      blocks.append(Block(len(blocks), path, start, size))
  return blocks


class _ByteCounter:
  """Counts bytes that are not UTF-8, replaced by U+FFFD while decoding."""
  count = 0

  @classmethod
  def handler(cls, err):
    cls.count += err.end - err.start
    return ("\ufffd", err.end)


codecs.register_error("bert_tf_count", _ByteCounter.handler)


def read_block_documents(block, decode_errors="ignore"):
  """Returns (documents, undecodable_bytes): documents as lists of lines.

  Raises ValueError naming the file and byte offset of the first byte that
  is not UTF-8 when decode_errors is "strict".
  """
  import tensorflow as tf
  with tf.io.gfile.GFile(block.path, "rb") as f:
    f.seek(block.start)
    raw = f.read(block.end - block.start)
  if decode_errors == "strict":
    try:
      raw.decode("utf-8")
    except UnicodeDecodeError as e:
      raise ValueError(f"{block.path}: byte {block.start + e.start} is not UTF-8 ({e.reason}); "
                       "--decode_errors=ignore drops and counts such bytes") from None
  before = _ByteCounter.count
  text = raw.decode("utf-8", errors="bert_tf_count")
  bad = _ByteCounter.count - before
  # The original's readline() (TensorFlow's GFile) drops every carriage
  # return, mid-line ones too: "ab\rcd" is the word "abcd" there.
  text = text.replace("\r", "")
  documents = [[]]
  # Lines end at "\n" only, as with the original's readline(): str.splitlines
  # would also cut at form feeds, vertical tabs, U+2028 etc., making two
  # sentences of what the original reads as one.
  for line in text.split("\n"):
    line = line.strip()
    if not line:
      if documents[-1]:
        documents.append([])
    else:
      documents[-1].append(line)
  if not documents[-1]:
    documents.pop()
  return documents, bad


# ---------------------------------------------------------------------------
# One block: tokenize (driver), pair + mask + serialize each pass (workers)
# ---------------------------------------------------------------------------

def _seed(*parts):
  digest = hashlib.sha256(":".join(["bert_tf"] + [str(p) for p in parts]).encode()).digest()
  return int.from_bytes(digest[:8], "little")


def block_seed(random_seed, block_index):
  """Seed of the shuffle of one block's instances."""
  return _seed(random_seed, block_index)


def pass_seed(random_seed, block_index, pass_index):
  """Seed of one pass over one block: independent of worker and driver."""
  return _seed(random_seed, block_index, pass_index)


@dataclasses.dataclass
class TokenizedBlock:
  """A block's documents as flat arrays (cheap to send to a worker).

  values: int32 [tokens]; sentence_splits: int64 [sentences + 1] into values;
  document_splits: int64 [documents + 1] into sentences. No empty sentence or
  document.
  """
  index: int
  values: "np.ndarray"
  sentence_splits: "np.ndarray"
  document_splits: "np.ndarray"
  undecodable_bytes: int = 0
  nbytes: int = 0

  def documents(self):
    """list of documents, each a list of sentences (lists of int ids)."""
    values = self.values.tolist()
    splits = self.sentence_splits.tolist()
    sentences = [values[a:b] for a, b in zip(splits[:-1], splits[1:])]
    doc_splits = self.document_splits.tolist()
    return [sentences[a:b] for a, b in zip(doc_splits[:-1], doc_splits[1:])]


def tokenize_block(block, tokenizer, decode_errors="ignore"):
  """Reads and tokenizes one block; drops token-less lines and empty documents."""
  import numpy as np
  texts, bad = read_block_documents(block, decode_errors)
  lines = [line for doc in texts for line in doc]
  if lines:
    values, splits = tokenizer.tokenize_to_ids(lines)
  else:
    values, splits = np.zeros([0], np.int64), np.zeros([1], np.int64)
  lengths = np.diff(splits)
  keep = lengths > 0
  doc_of_line = np.repeat(np.arange(len(texts)), [len(d) for d in texts])
  kept_docs = doc_of_line[keep]
  sentence_splits = np.concatenate([[0], np.cumsum(lengths[keep])])
  # A document starts at each sentence whose document differs from the previous one's.
  starts = np.flatnonzero(np.diff(kept_docs, prepend=-1) != 0) if len(kept_docs) else np.zeros([0], np.int64)
  document_splits = np.concatenate([starts, [len(kept_docs)]]).astype(np.int64)
  return TokenizedBlock(block.index, values.astype(np.int32), sentence_splits.astype(np.int64),
                        document_splits, bad, block.end - block.start)


class BlockStats:
  """What a block wrote: counts for the manifest."""

  FIELDS = ("documents", "sentences", "instances", "tokens", "predictions",
            "masked", "kept", "random", "nsp_random", "undecodable_bytes")

  def __init__(self, num_buckets):
    for name in self.FIELDS:
      setattr(self, name, 0)
    self.length_histogram = [0] * num_buckets

  def merge(self, other):
    for name in self.FIELDS:
      setattr(self, name, getattr(self, name) + getattr(other, name))
    self.length_histogram = [a + b for a, b in zip(self.length_histogram, other.length_histogram)]

  def to_dict(self):
    d = {name: getattr(self, name) for name in self.FIELDS}
    d["length_histogram"] = list(self.length_histogram)
    return d

  @classmethod
  def from_dict(cls, d):
    stats = cls(len(d["length_histogram"]))
    for name in cls.FIELDS:
      setattr(stats, name, d[name])
    stats.length_histogram = list(d["length_histogram"])
    return stats


def pass_records(documents, seed, options, masking_vocab, encoder):
  """One pass of the original algorithm over a block's documents.

  Args:
    documents: list of documents (lists of non-empty lists of int ids).
    seed: int, this pass's seed (pass_seed).
    options: DataOptions.
    masking_vocab: masking.MaskingVocab.
    encoder: schema.ExampleEncoder.
  Returns:
    (records, stats): serialized tf.train.Examples, and BlockStats (documents
    and sentences not counted: a block counts them once).
  """
  import numpy as np
  rng = random.Random(seed)
  stats = BlockStats(options.max_seq_length // HISTOGRAM_BUCKET + 1)
  documents = list(documents)
  rng.shuffle(documents)
  cls_id, sep_id, mask_id = masking_vocab.cls_id, masking_vocab.sep_id, masking_vocab.mask_id
  sequences, num_as, labels_nsp = [], [], []
  for doc_index in range(len(documents)):
    for tokens_a, tokens_b, is_random in instances.create_pairs_from_document(
        documents, doc_index, options.max_seq_length, options.short_seq_prob, rng):
      tokens, num_a = instances.build_instance(tokens_a, tokens_b, cls_id, sep_id)
      sequences.append(tokens)
      num_as.append(num_a)
      labels_nsp.append(schema.IS_RANDOM if is_random else schema.IS_NEXT)
  if not sequences:
    return [], stats
  records = []
  encode = encoder.encode_pair
  if options.do_whole_word_mask:
    outputs, all_positions, all_labels = [], [], []
    for tokens in sequences:
      output, positions, labels = masking.mask_tokens(
          tokens, options.masked_lm_prob, options.max_predictions_per_seq,
          masking_vocab, rng, do_whole_word_mask=True)
      outputs.append(output)
      all_positions.append(positions)
      all_labels.append(labels)
    counts = [len(p) for p in all_positions]
  else:
    gen = np.random.default_rng(seed)
    _, positions_arr, labels_arr, new_arr, counts_arr = masking.choose_masks(
        sequences, options.masked_lm_prob, options.max_predictions_per_seq, masking_vocab, gen)
    counts = counts_arr.tolist()
    all_positions = positions_arr.tolist()
    all_labels = labels_arr.tolist()
    outputs = []
    for tokens, positions, new_ids, c in zip(sequences, all_positions, new_arr.tolist(), counts):
      output = list(tokens)
      for pos, new_id in zip(positions[:c], new_ids):
        output[pos] = new_id
      outputs.append(output)
  masked = kept = 0
  hist = stats.length_histogram
  for i, tokens in enumerate(sequences):
    n = len(tokens)
    c = counts[i]
    output = outputs[i]
    positions = all_positions[i][:c]
    labels = all_labels[i][:c]
    records.append(encode(output[:n], num_as[i], positions, labels, labels_nsp[i]))
    for pos, label in zip(positions, labels):
      new = output[pos]
      if new == mask_id:
        masked += 1
      elif new == label:
        kept += 1
    hist[n // HISTOGRAM_BUCKET] += 1
  stats.instances = len(records)
  stats.tokens = sum(map(len, sequences))
  stats.predictions = sum(counts)
  stats.masked = masked
  stats.kept = kept
  stats.random = stats.predictions - masked - kept
  stats.nsp_random = sum(labels_nsp)
  return records, stats


def shuffle_block(pass_results, block_index, random_seed):
  """Concatenates a block's passes and shuffles its instances."""
  records = [r for result in pass_results for r in result]
  random.Random(block_seed(random_seed, block_index)).shuffle(records)
  return records


def block_records(tokenized, options, masking_vocab, encoder):
  """All passes over one tokenized block, shuffled: the unit both drivers share.

  Returns:
    (records, stats) for the block.
  """
  documents = tokenized.documents()
  stats = BlockStats(options.max_seq_length // HISTOGRAM_BUCKET + 1)
  results = []
  for p in range(options.dupe_factor):
    records, pass_stats = pass_records(
        documents, pass_seed(options.random_seed, tokenized.index, p), options,
        masking_vocab, encoder)
    results.append(records)
    stats.merge(pass_stats)
  stats.documents = len(documents)
  stats.sentences = sum(len(d) for d in documents)
  stats.undecodable_bytes = tokenized.undecodable_bytes
  return shuffle_block(results, tokenized.index, options.random_seed), stats


def masking_vocab_of(vocab):
  return masking.MaskingVocab(
      size=vocab.size, cls_id=vocab.cls_id, sep_id=vocab.sep_id, mask_id=vocab.mask_id,
      is_subword=tuple(bool(x) for x in vocab.is_subword))


# Worker processes pair, mask and serialize; they never import TensorFlow.
_WORKER = {}


def _init_worker(options, masking_vocab):
  _WORKER["options"] = options
  _WORKER["vocab"] = masking_vocab
  _WORKER["encoder"] = schema.ExampleEncoder(
      options.max_seq_length, options.max_predictions_per_seq, masking_vocab.size)
  _WORKER["docs"] = (None, None)


def _run_pass(tokenized, pass_index):
  options = _WORKER["options"]
  cached_index, documents = _WORKER["docs"]
  if cached_index != tokenized.index:
    documents = tokenized.documents()
    _WORKER["docs"] = (tokenized.index, documents)
  records, stats = pass_records(
      documents, pass_seed(options.random_seed, tokenized.index, pass_index), options,
      _WORKER["vocab"], _WORKER["encoder"])
  return records, stats.to_dict()


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Outputs:
  """Where records go: `files` (dealt round-robin, the original's
  --output_file) or `directory` with `num_shards` files (resumable)."""
  files: tuple = ()
  directory: str = ""
  num_shards: int = 1
  gzip: bool = False

  def paths(self):
    if self.files:
      return list(self.files)
    ext = ".tfrecord.gz" if self.gzip else ".tfrecord"
    return [f"{self.directory.rstrip('/')}/pretrain-{k:05d}-of-{self.num_shards:05d}{ext}"
            for k in range(self.num_shards)]

  def manifest_path(self):
    from bert_tf.data import manifest
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
  import tensorflow as tf
  inputs = [(p, tf.io.gfile.stat(p).length) for p in files]
  payload = json.dumps({"inputs": inputs, "options": dataclasses.asdict(options),
                        "vocab": vocab.sha256, "schema": schema.SCHEMA_VERSION}, sort_keys=True)
  return hashlib.sha256(payload.encode()).hexdigest()


def _check_writable(paths):
  import tensorflow as tf
  for path in paths:
    parent = path.rsplit("/", 1)[0] if "/" in path else "."
    try:
      tf.io.gfile.makedirs(parent)
      probe = f"{path}.probe-{os.getpid()}"
      with tf.io.gfile.GFile(probe, "w") as f:
        f.write("")
      tf.io.gfile.remove(probe)
    except Exception as e:  # noqa: BLE001 - any failure means "cannot write here"
      raise PermissionError(f"cannot write output {path}: {type(e).__name__}: "
                            f"{str(e).splitlines()[0] if str(e) else ''}") from None


def _start_pool(num_workers, options, masking_vocab):
  """Worker processes for the passes; started first, so that their start-up
  overlaps this process's (vocab, input scan, tokenizer)."""
  if num_workers <= 1:
    return None
  ctx = multiprocessing.get_context("spawn")
  return ctx.Pool(num_workers, initializer=_init_worker, initargs=(options, masking_vocab))


def _map_blocks(blocks, tokenizer, options, masking_vocab, pool):
  """Yields (block index, records, stats) for `blocks`, in order.

  This process reads and tokenizes each block (tf-text, C++); each of the
  dupe_factor passes over it is a task for a worker process. At most a few
  blocks are in flight, so memory does not grow with the corpus.
  """
  num_buckets = options.max_seq_length // HISTOGRAM_BUCKET + 1
  if pool is None:
    encoder = schema.ExampleEncoder(options.max_seq_length, options.max_predictions_per_seq,
                                    masking_vocab.size)
    for block in blocks:
      tokenized = tokenize_block(block, tokenizer, options.decode_errors)
      records, stats = block_records(tokenized, options, masking_vocab, encoder)
      yield block.index, records, stats
    return
  in_flight = collections.deque()
  max_in_flight = 2 * pool._processes + options.dupe_factor  # pylint: disable=protected-access

  def finish_oldest():
    tokenized, documents_count, sentences_count, futures = in_flight.popleft()
    stats = BlockStats(num_buckets)
    results = []
    for future in futures:
      records, pass_stats = future.get()
      results.append(records)
      stats.merge(BlockStats.from_dict(pass_stats))
    stats.documents = documents_count
    stats.sentences = sentences_count
    stats.undecodable_bytes = tokenized.undecodable_bytes
    return tokenized.index, shuffle_block(results, tokenized.index, options.random_seed), stats

  for block in blocks:
    tokenized = tokenize_block(block, tokenizer, options.decode_errors)
    futures = [pool.apply_async(_run_pass, (tokenized, p)) for p in range(options.dupe_factor)]
    in_flight.append((tokenized, len(tokenized.document_splits) - 1,
                      len(tokenized.sentence_splits) - 1, futures))
    while sum(len(f[3]) for f in in_flight) > max_in_flight:
      yield finish_oldest()
  while in_flight:
    yield finish_oldest()


def create_pretraining_data(input_patterns, outputs, vocab_file, options,
                            num_workers=1):
  """Writes pretraining records and their manifest; the library entry.

  Args:
    input_patterns: comma-separated globs or a list of them; text with one
      sentence a line and a blank line between documents.
    outputs: Outputs.
    vocab_file: WordPiece vocab, one token a line.
    options: DataOptions.
    num_workers: processes; 1 runs in this process.
  Returns:
    The manifest dict (also written beside the records).
  """
  from bert_tf.data import tokenization
  options.validate()
  vocab = tokenization.load_vocab(vocab_file)  # names missing special tokens
  pool = _start_pool(num_workers, options, masking_vocab_of(vocab))
  try:
    return _create(input_patterns, outputs, vocab, options, num_workers, pool)
  finally:
    if pool is not None:
      pool.terminate()
      pool.join()


def _create(input_patterns, outputs, vocab, options, num_workers, pool):
  """create_pretraining_data, with the vocab loaded and the workers started."""
  import tensorflow as tf
  from bert_tf.data import manifest as manifest_lib
  from bert_tf.data import tokenization

  started = time.time()
  tokenizer = tokenization.Tokenizer(vocab, options.do_lower_case)
  masking_vocab = masking_vocab_of(vocab)
  files = expand_inputs(input_patterns)
  paths = outputs.paths()
  _check_writable(paths)
  blocks = scan_blocks(files, options.block_bytes)
  total_bytes = sum(b.end - b.start for b in blocks)
  logging.info("input: %d files, %.1f MB, %d blocks of ~%.2f MB (the NSP window)",
               len(files), total_bytes / 1e6, len(blocks), options.block_bytes / 1e6)
  fingerprint = _fingerprint(files, options, vocab)
  num_buckets = options.max_seq_length // HISTOGRAM_BUCKET + 1
  total = BlockStats(num_buckets)
  progress = _Progress(total_bytes)
  compression = "GZIP" if outputs.gzip else None
  reused = 0

  if outputs.files:
    # The original's --output_file: deal instances round-robin.
    tmp_paths = [f"{p}.tmp-bert_tf" for p in paths]
    writers = [tf.io.TFRecordWriter(p, options=compression) for p in tmp_paths]
    n = 0
    for index, records, stats in _map_blocks(blocks, tokenizer, options, masking_vocab, pool):
      for record in records:
        writers[n % len(writers)].write(record)
        n += 1
      total.merge(stats)
      progress.update(blocks[index].end - blocks[index].start, stats)
    for writer in writers:
      writer.close()
    for tmp, path in zip(tmp_paths, paths):
      tf.io.gfile.rename(tmp, path, overwrite=True)
  else:
    num_shards = outputs.num_shards
    if len(blocks) < num_shards:
      logging.warning("%d blocks for %d shards: %d shards will be empty; lower "
                      "--block_bytes or --num_output_shards", len(blocks), num_shards,
                      num_shards - len(blocks))
    shard_of_block = [b.index * num_shards // len(blocks) for b in blocks]
    pending = []
    for k, path in enumerate(paths):
      stats_path = path + ".stats.json"
      if tf.io.gfile.exists(path) and tf.io.gfile.exists(stats_path):
        with tf.io.gfile.GFile(stats_path) as f:
          saved = json.load(f)
        if saved.get("fingerprint") == fingerprint:
          stats = BlockStats.from_dict(saved["stats"])
          total.merge(stats)
          reused += 1
          progress.update(sum(b.end - b.start for b in blocks if shard_of_block[b.index] == k), stats)
          continue
      pending.append(k)
    if reused:
      logging.info("reusing %d complete shards of an earlier run", reused)
    todo = [b for b in blocks if shard_of_block[b.index] in pending]
    remaining = {k: sum(1 for b in blocks if shard_of_block[b.index] == k) for k in pending}
    writers = {}
    shard_stats = {k: BlockStats(num_buckets) for k in pending}

    def finish(k):
      path = paths[k]
      if k in writers:
        writers.pop(k).close()
      else:  # a shard without blocks is an empty, valid file
        tf.io.TFRecordWriter(path + ".tmp", options=compression).close()
      # Records first, stats (the proof of completeness) last: killed in
      # between, a stale shard of another run must not get this run's stats.
      tf.io.gfile.rename(path + ".tmp", path, overwrite=True)
      _write_json(path + ".stats.json", {"fingerprint": fingerprint,
                                         "stats": shard_stats[k].to_dict()})

    for k in [k for k in pending if remaining[k] == 0]:
      finish(k)
    for index, records, stats in _map_blocks(todo, tokenizer, options, masking_vocab, pool):
      k = shard_of_block[index]
      if k not in writers:
        writers[k] = tf.io.TFRecordWriter(paths[k] + ".tmp", options=compression)
      writer = writers[k]
      for record in records:
        writer.write(record)
      shard_stats[k].merge(stats)
      total.merge(stats)
      progress.update(blocks[index].end - blocks[index].start, stats)
      remaining[k] -= 1
      if remaining[k] == 0:
        finish(k)

  progress.update(0, BlockStats(num_buckets), force=True)
  if total.instances == 0:
    # An error leaves nothing under a final name: not even empty files that
    # look like a result, or stats that a rerun would take as complete shards.
    for path in paths:
      for leftover in (path, path + ".stats.json"):
        if tf.io.gfile.exists(leftover):
          tf.io.gfile.remove(leftover)
    raise ValueError(f"--input_file: no instance could be made from {len(files)} file(s) "
                     "(no line has a token in this vocab)")
  elapsed = time.time() - started
  result = build_manifest(files, paths, outputs, vocab, options, total, elapsed,
                          num_workers, reused)
  manifest_lib.write_manifest(result, outputs.manifest_path())
  return result


def _write_json(path, obj):
  from bert_tf.data import manifest as manifest_lib
  manifest_lib.write_json(obj, path)


def build_manifest(files, paths, outputs, vocab, options, total, elapsed, num_workers, reused):
  """The manifest dict: flags, vocab, counts, shares, histogram."""
  preds = max(total.predictions, 1)
  instances = max(total.instances, 1)
  return {
      "schema_version": schema.SCHEMA_VERSION,
      "writer": "bert_tf.create_pretraining_data",
      "flags": dict(dataclasses.asdict(options), gzip=outputs.gzip,
                    input_file=",".join(files)),
      "vocab": {"path": vocab.path, "sha256": vocab.sha256, "size": vocab.size},
      "files": paths,
      "compression": "GZIP" if outputs.gzip else "",
      "counts": {
          "input_files": len(files),
          "documents": total.documents,
          "sentences": total.sentences,
          "instances": total.instances,
          "tokens": total.tokens,
          "predictions": total.predictions,
          "undecodable_bytes": total.undecodable_bytes,
      },
      "shares": {
          "mean_tokens": total.tokens / instances,
          "predictions_per_instance": total.predictions / instances,
          "prediction_fraction": total.predictions / max(total.tokens, 1),
          "masked": total.masked / preds,
          "kept": total.kept / preds,
          "random": total.random / preds,
          "nsp_random": total.nsp_random / instances,
          "shorter_than_64": (sum(total.length_histogram[:64 // HISTOGRAM_BUCKET]) / instances
                              if options.max_seq_length >= 64 else None),
      },
      "length_histogram": {"bucket_tokens": HISTOGRAM_BUCKET,
                           "counts": total.length_histogram},
      "run": {"seconds": round(elapsed, 3), "num_workers": num_workers,
              "reused_shards": reused},
  }


def default_num_workers():
  return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else (os.cpu_count() or 1))
