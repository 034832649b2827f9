"""Tests of bert_tf.data.pretraining.passes.pass_records, the workers' unit: the whole
pass at once (token offsets, padded arrays, batch serialization) gives the
bytes and counts of the rules applied instance by instance with the list
functions of bert_tf.data.pretraining.instances / masking, serialized one record at a
time (tests/helpers/reference_records.py).

No TensorFlow: workers never import it.
"""

import dataclasses
import random
import subprocess
import sys

import numpy as np
import pytest

from bert_tf.data.pretraining import block_sentences
from bert_tf.data.pretraining import instances
from bert_tf.data.pretraining import masking
from bert_tf.data.pretraining import passes
from bert_tf.data.records import schema
from bert_tf.data.pretraining import writer

from helpers import batch_masking
from helpers import list_pairs
from helpers import reference_records
from helpers.token_blocks import VOCAB_SIZE, flat_block, random_documents, random_pool

# ids 10..199 start a word, 200..299 are '##' pieces.
VOCAB = masking.MaskingVocab(size=VOCAB_SIZE, cls_id=2, sep_id=3, mask_id=4,
                             is_subword=tuple(i >= 200 for i in range(VOCAB_SIZE)))


def reference_pass(documents, negatives, seed, options, encoder):
  """One pass, instance by instance: the rules' list functions, one record
  at a time (encoder: reference_records.RecordEncoder), count_outcomes (what pass_records did before it worked on whole passes)."""
  rng = random.Random(seed)
  stats = passes.BlockStats.for_options(options)
  documents = list(documents)
  rng.shuffle(documents)
  cls_id, sep_id = VOCAB.cls_id, VOCAB.sep_id
  sequences, num_as, labels = [], [], []
  if options.packing != "segment_pair":
    for tokens in instances.pack_sentences(documents, options.max_seq_length, rng,
                                           options.packing == "full_sentences", sep_id):
      ids, num_a = instances.build_single(tokens, cls_id, sep_id)
      sequences.append(ids)
      num_as.append(num_a)
      labels.append(None)
  for d in range(len(documents) if options.packing == "segment_pair" else 0):
    if options.sentence_task == "sop":
      pairs = instances.create_sop_pairs_from_document(
          documents[d], options.max_seq_length, options.short_seq_prob, rng)
    else:
      pairs = list_pairs.create_pairs_from_document(
          documents, d, options.max_seq_length, options.short_seq_prob, rng, negatives)
    for pair in pairs:
      ids, num_a = instances.build_instance(pair.tokens_a, pair.tokens_b, cls_id, sep_id)
      sequences.append(ids)
      num_as.append(num_a)
      labels.append(int(pair.is_random_next))
      stats.nsp_random_from_same_document += pair.random_from_same_document
  if options.dynamic_masking:
    masked = [(ids, None, None) for ids in sequences]
  elif options.max_ngram > 1:
    masked = [masking.mask_tokens_ngram(
        ids, options.masked_lm_prob, options.max_predictions_per_seq, VOCAB, rng,
        options.do_whole_word_mask, options.max_ngram)[:3] for ids in sequences]
  elif options.do_whole_word_mask:
    masked = [masking.mask_tokens(ids, options.masked_lm_prob, options.max_predictions_per_seq,
                                  VOCAB, rng, True) for ids in sequences]
  else:
    masked = batch_masking.mask_sequences(sequences, options.masked_lm_prob,
                                          options.max_predictions_per_seq, VOCAB,
                                          np.random.default_rng(seed))
  records = []
  for (output, positions, lm_ids), num_a, label in zip(masked, num_as, labels):
    records.append(encoder.encode_pair(output, num_a, positions, lm_ids, label))
    stats.length_histogram[len(output) // passes.HISTOGRAM_BUCKET] += 1
    if positions is not None:
      outcomes = masking.count_outcomes(output, positions, lm_ids, VOCAB.mask_id)
      stats.masked += outcomes[0]
      stats.kept += outcomes[1]
      stats.random += outcomes[2]
      stats.predictions += len(positions)
  stats.instances = len(records)
  stats.tokens = sum(map(len, sequences))
  stats.sentence_negatives = sum(label or 0 for label in labels)
  return records, stats


@pytest.mark.parametrize("changes", [
    {},
    {"max_seq_length": 5, "max_predictions_per_seq": 1},
    {"max_seq_length": 512, "max_predictions_per_seq": 76, "short_seq_prob": 0.5},
    {"do_whole_word_mask": True},
    {"max_ngram": 3},
    {"dynamic_masking": True},
    {"sentence_task": "sop"},
    {"sentence_task": "none", "packing": "full_sentences"},
    {"sentence_task": "none", "packing": "doc_sentences", "dynamic_masking": True},
])
def test_pass_records_is_the_rules_applied_instance_by_instance(changes):
  options = dataclasses.replace(writer.DataOptions(max_seq_length=48, max_predictions_per_seq=6),
                                **changes)
  encoder = schema.ExampleEncoder(options.max_seq_length, options.max_predictions_per_seq,
                                  VOCAB_SIZE)
  one_at_a_time = reference_records.RecordEncoder(options.max_seq_length,
                                                  options.max_predictions_per_seq)
  rng = random.Random(str(changes))
  pool, entries = random_pool(rng, num_blocks=3)
  for block_index, num_docs in ((0, 9), (1, 1), (2, 4)):
    documents = random_documents(rng, num_docs)
    outside = pool.num_documents - int(pool.block_documents[block_index])
    negatives = instances.Negatives(
        [(sentences, int(pool.entry_starts[i]))
         for i, (b, sentences) in enumerate(entries) if b != block_index], outside)
    for with_pool in (True, False):
      sentences = block_sentences.BlockSentences(flat_block(block_index, documents),
                                                 pool if with_pool else None)
      for seed in range(3):
        got = passes.pass_records(sentences, seed, options, VOCAB, encoder)
        expected = reference_pass(documents, negatives if with_pool else instances.NO_NEGATIVES,
                                  seed, options, one_at_a_time)
        assert got[0] == expected[0]
        assert got[1].to_dict() == expected[1].to_dict()
        assert got[0]


def test_workers_modules_import_without_tensorflow():
  code = ("import sys; import bert_tf.data.pretraining.writer, bert_tf.data.pretraining.passes, bert_tf.data.pretraining.instances, "
          "bert_tf.data.pretraining.masking, bert_tf.data.records.schema; "
          "assert 'tensorflow' not in sys.modules, 'tensorflow imported'")
  result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
  assert result.returncode == 0, result.stderr
