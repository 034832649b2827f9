"""The local driver's worker processes: they pair, mask and serialize the
units (a pass over a block) while the driver process reads and tokenizes
the blocks (`map_units`)."""

import collections
import multiprocessing

from bert_tf.data.pretraining import block_sentences
from bert_tf.data.pretraining import passes
from bert_tf.data.records import schema

# Worker processes pair, mask and serialize; they never import TensorFlow.
_WORKER = {}


def _init_worker(options, shared):
  _WORKER["options"] = options
  _WORKER["shared"] = shared  # the queue WorkerPool.share fills, one item a worker


def _run_unit(tokenized, pass_index):
  options = _WORKER["options"]
  if "pool" not in _WORKER:  # the first unit of this worker
    masking_vocab, negative_pool, whole_input = _WORKER["shared"].get()
    _WORKER.update(vocab=masking_vocab, pool=negative_pool, whole=whole_input, block=None,
                   encoder=schema.ExampleEncoder(options.max_seq_length,
                                                 options.max_predictions_per_seq,
                                                 masking_vocab.size))
  sentences = _WORKER["block"]  # BlockSentences of the last block seen
  if sentences is None or sentences.tokenized.index != tokenized.index:
    sentences = _WORKER["block"] = block_sentences.BlockSentences(tokenized, _WORKER["pool"],
                                                                  _WORKER["whole"])
  records, stats = passes.unit_records(sentences, pass_index, options, _WORKER["vocab"],
                                       _WORKER["encoder"])
  return records, stats.to_dict(), stats.b_documents


class WorkerPool:
  """Worker processes for the passes (spawned: they never import TensorFlow).

  They start first, so that they come up while this process imports
  TensorFlow and plans the run (spawning them later, with the negative pool
  as an argument, kept this process waiting 0.35 s: a child reads its
  arguments only once its own imports are done). What they all need and
  only the plan knows, the masking vocab and the negative pool, `share`
  puts on a queue, one copy a worker, which each takes at its first pass.
  """

  def __init__(self, num_workers, options):
    self.processes = num_workers
    ctx = multiprocessing.get_context("spawn")
    self._shared = ctx.Queue()
    self._pool = ctx.Pool(num_workers, initializer=_init_worker,
                          initargs=(options, self._shared))

  def share(self, masking_vocab, negative_pool, whole_input):
    for _ in range(self.processes):  # sent by the queue's own thread
      self._shared.put((masking_vocab, negative_pool, whole_input))

  def run_unit(self, tokenized, pass_index):
    """AsyncResult of the pass `pass_index` over `tokenized` (after share)."""
    return self._pool.apply_async(_run_unit, (tokenized, pass_index))

  def close(self):
    self._pool.terminate()
    self._pool.join()
    # Copies no worker took (a run with fewer tasks than workers, or an
    # error) are dropped rather than waited for at exit.
    self._shared.cancel_join_thread()
    self._shared.close()


def map_units(plan, todo, tokenizer, options, pool, cache):
  """Yields (unit position, records, stats) for the unit positions `todo`,
  in order.

  This process reads and tokenizes each block (tf-text, C++) when its first
  unit comes, or takes it from the token cache; each unit is a task for a
  worker process. At most a few units are in flight, so memory does not
  grow with the corpus.
  """
  processor = passes.BlockProcessor(tokenizer, options, plan.negative_pool, plan.whole_input)
  if pool is None:
    for u in todo:
      p, b = plan.units[u]
      tokenized = cache.get(plan.blocks[b], processor.tokenize)
      records, stats = processor.unit(tokenized, p)
      yield u, records, stats
    return
  in_flight = collections.deque()
  max_in_flight = 2 * pool.processes + 2

  def finish_oldest():
    u, future = in_flight.popleft()
    records, stats_dict, b_documents = future.get()
    stats = passes.BlockStats.from_dict(stats_dict)
    stats.b_documents = b_documents
    return u, records, stats

  for u in todo:
    p, b = plan.units[u]
    tokenized = cache.get(plan.blocks[b], processor.tokenize)
    in_flight.append((u, pool.run_unit(tokenized, p)))
    while len(in_flight) > max_in_flight:
      yield finish_oldest()
  while in_flight:
    yield finish_oldest()
