"""Masking inside tf.data, for records written with --dynamic_masking.

Records written with `DataOptions.dynamic_masking` hold the real tokens and
no masked_lm_* features; the input pipeline (bert_tf.data.input.pipeline) masks
every example as it reads it, so each epoch sees new masks (RoBERTa's
dynamic masking). The rules are the writer's, stated in
bert_tf.data.pretraining.masking: num_to_predict positions (15% of the tokens, at most
max_predictions_per_seq), never [CLS] or [SEP]; units of single WordPieces
or, with whole-word masking, of a word and its '##' pieces; spans of 1..N
units with n ~ 1/n (`choose_ngram_spans`); 80% [MASK], 10% kept, 10% a
uniform random id (`masking.Replacement`: the
writer's shares). The output is the static records' feature dict, so the
model and losses cannot tell the two apart.

Determinism: every random number of an example comes from
`tf.random.stateless_uniform` seeded by (seed, global example index), the
index counted by `enumerate()` over the example stream after the shuffle
and repeat, so a run is reproducible for a seed, a second epoch (a later
index) gets new masks, and a restored iterator resumes the same stream.

Why not tensorflow-text's `MaskValuesChooser` / keras-hub's
`MaskedLMMaskGenerator`: they choose a share of items per row with their
own (stateful) random ops, and neither has the original's budget rule
(skip a word that does not fit, stop at num_to_predict) nor ALBERT's
n-gram spans; the selection is a short loop of vector ops over the batch
instead (`mask_batch`), seeded per example.
"""

import dataclasses

import tensorflow as tf

from bert_tf.data.pretraining import masking

# Per position: the unit's sort key, the n-gram draw, the 80% draw, the 50%
# draw, the random id (a uniform float64 scaled to the vocab).
_NUM_DRAWS = 5


@dataclasses.dataclass(frozen=True)
class DynamicMasking:
  """How the pipeline masks records written with --dynamic_masking.

  Attributes:
    masked_lm_prob, max_predictions_per_seq, do_whole_word_mask, max_ngram:
      the writer's options (the manifest's flags).
    vocab: masking.MaskingVocab (size, [CLS]/[SEP]/[MASK] ids, '##' flags),
      from the manifest's vocab section.
  """
  masked_lm_prob: float
  max_predictions_per_seq: int
  vocab: masking.MaskingVocab
  do_whole_word_mask: bool = False
  max_ngram: int = 1
  replacement: masking.Replacement = masking.ORIGINAL

  @classmethod
  def from_manifest(cls, manifest):
    """The masking of records whose manifest says dynamic_masking, else None."""
    if not manifest.dynamic_masking:
      return None
    return cls(masked_lm_prob=manifest.option("masked_lm_prob", float, 0.15),
               max_predictions_per_seq=manifest.max_predictions_per_seq,
               vocab=manifest.masking_vocab(),
               do_whole_word_mask=manifest.option("do_whole_word_mask", bool, False),
               max_ngram=manifest.max_ngram,
               replacement=masking.Replacement.of_shares(
                   manifest.option("masked_token_share", float, 0.8),
                   manifest.option("random_token_share", float, None),
                   manifest.option("kept_token_share", float, None)))


def example_draws(seed, index, max_seq_length):
  """The random numbers of one example: float64 [max_seq_length, 5].

  Args:
    seed: int64 scalar; index: int64 scalar, the global example index.
  """
  return tf.random.stateless_uniform(
      [max_seq_length, _NUM_DRAWS], seed=tf.stack([tf.cast(seed, tf.int64),
                                                   tf.cast(index, tf.int64)]),
      dtype=tf.float64)


def mask_batch(features, draws, config):
  """Masks a batch of parsed dynamic records.

  Args:
    features: dict with int32 input_ids, input_mask [B, L] (and any others,
      passed through).
    draws: float64 [B, L, 5], `example_draws` of each example.
    config: DynamicMasking.
  Returns:
    the features with input_ids masked and int32 masked_lm_positions,
    masked_lm_ids, float32 masked_lm_weights [B, max_predictions_per_seq]
    added: sorted positions first, zero padding after, as the writer's.
  """
  vocab = config.vocab
  ids = features["input_ids"]
  length = tf.shape(ids)[1]
  real = features["input_mask"] > 0
  valid = real & (ids != vocab.cls_id) & (ids != vocab.sep_id)
  num_tokens = tf.reduce_sum(tf.cast(real, tf.float64), axis=1)
  want = tf.cast(tf.minimum(
      tf.cast(config.max_predictions_per_seq, tf.float64),
      tf.maximum(tf.constant(1.0, tf.float64),
                 tf.round(num_tokens * config.masked_lm_prob))), tf.int32)

  # Units: a position starts one unless whole-word masking joins its '##'
  # piece to the unit before (any earlier valid position, as the original).
  valid_i = tf.cast(valid, tf.int32)
  starts = valid
  if config.do_whole_word_mask:
    table = tf.constant(list(vocab.is_subword) or [False], tf.bool)
    is_sub = tf.gather(table, tf.clip_by_value(ids, 0, vocab.size - 1))
    first = tf.cumsum(valid_i, axis=1) == 1
    starts = valid & (~is_sub | first)
  unit_of = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1  # [B, L], valid positions
  num_units = tf.reduce_sum(tf.cast(starts, tf.int32), axis=1)  # [B]
  # Positions of each unit: a segment sum per row (invalid positions to a
  # spare last bucket).
  batch = tf.shape(ids)[0]
  segments = tf.range(batch)[:, None] * (length + 1) + tf.where(valid, unit_of, length)
  unit_len = tf.reshape(tf.math.unsorted_segment_sum(
      valid_i, segments, batch * (length + 1)), [batch, length + 1])[:, :length]  # [B, L]
  cum = tf.pad(tf.cumsum(unit_len, axis=1), [[0, 0], [1, 0]])  # [B, L + 1]

  unit_index = tf.range(length)[None, :]
  keys = tf.where(unit_index < num_units[:, None], draws[:, :, 0],
                  tf.constant(2.0, tf.float64))
  order = tf.argsort(keys, axis=1, stable=True)  # int32: the visiting order
  if config.max_ngram == 1 and not config.do_whole_word_mask:
    covered = _first_units(order, num_units, want, length)
  else:
    covered, _ = _choose_spans(order, draws[:, :, 1], cum, num_units, want, length,
                               config.max_ngram)

  chosen = valid & tf.gather(covered, tf.maximum(unit_of, 0), batch_dims=1)
  random_ids = tf.cast(tf.minimum(draws[:, :, 4] * vocab.size, vocab.size - 1), ids.dtype)
  rule = config.replacement
  new_ids = tf.where(draws[:, :, 2] < rule.mask, tf.cast(vocab.mask_id, ids.dtype),
                     tf.where(draws[:, :, 3] < rule.keep_of_rest, ids, random_ids))
  out = dict(features)
  out["input_ids"] = tf.where(chosen, new_ids, ids)

  preds = config.max_predictions_per_seq
  position_keys = tf.where(chosen, unit_index, length)
  position_keys = tf.pad(position_keys, [[0, 0], [0, tf.maximum(preds - length, 0)]],
                         constant_values=length)
  positions = tf.sort(position_keys, axis=1)[:, :preds]
  weights = positions < length
  positions = tf.where(weights, positions, 0)
  out["masked_lm_positions"] = positions
  out["masked_lm_ids"] = tf.where(weights, tf.gather(ids, positions, batch_dims=1), 0)
  out["masked_lm_weights"] = tf.cast(weights, tf.float32)
  return out


def _first_units(order, num_units, want, length):
  """`_choose_spans` when every unit is one position and every span one
  unit (no whole words, no n-grams: the original BERT's rule): the loop
  then takes each visited unit until `want` are taken, so the chosen units
  are the first `want` of the visiting order. One rank per unit instead of
  a step per unit (the loop's small ops were the input pipeline's cost).

  Returns:
    covered bool [B, L] by unit.
  """
  rank = tf.argsort(order, axis=1, stable=True)  # the step at which each unit is visited
  unit_index = tf.range(length)[None, :]
  return (rank < want[:, None]) & (unit_index < num_units[:, None])


def _choose_spans(order, ngram_draws, cum, num_units, want, length, max_ngram):
  """`masking.choose_ngram_spans`, one visited unit of every row per step.

  Args:
    order: int32 [B, L], unit indices in visiting order (those >= num_units
      last); ngram_draws: float64 [B, L], the n draw of each step;
    cum: int32 [B, L + 1], positions in units [0, u); num_units, want [B].
  Returns:
    (covered bool [B, L] by unit, count int32 [B]).
  """
  batch = tf.shape(order)[0]
  weights = masking.ngram_weights(max_ngram)
  cum_weights = tf.constant([sum(weights[:k + 1]) for k in range(max_ngram)], tf.float64)
  sizes_n = tf.range(1, max_ngram + 1)  # [N]
  unit_index = tf.range(length)[None, :]

  def body(j, covered, count):
    start = order[:, j]
    active = (start < num_units) & (count < want)
    longest = tf.clip_by_value(tf.minimum(max_ngram, num_units - start), 1, max_ngram)
    # n ~ 1/n over 1..longest.
    u = ngram_draws[:, j] * tf.gather(cum_weights, longest - 1)
    n = 1 + tf.reduce_sum(tf.cast(
        (sizes_n[None, :-1] < longest[:, None]) & (u[:, None] >= cum_weights[None, :-1]),
        tf.int32), axis=1)
    # Positions of the spans of 1..N units from `start`; the longest <= n that fits.
    ends = tf.minimum(start[:, None] + sizes_n[None, :], num_units[:, None])
    size = (tf.gather(cum, ends, batch_dims=1)
            - tf.gather(cum, tf.minimum(start, length)[:, None], batch_dims=1))  # [B, N]
    fits = (sizes_n[None, :] <= n[:, None]) & (count[:, None] + size <= want[:, None])
    n_fit = tf.reduce_max(tf.where(fits, sizes_n[None, :], 0), axis=1)
    in_span = (unit_index >= start[:, None]) & (unit_index < (start + n_fit)[:, None])
    take = active & (n_fit > 0) & ~tf.reduce_any(in_span & covered, axis=1)
    covered = covered | (in_span & take[:, None])
    taken = tf.gather(size, tf.maximum(n_fit - 1, 0), batch_dims=1)
    count = count + tf.where(take, taken, 0)
    return j + 1, covered, count

  def cond(j, covered, count):
    del covered
    return (j < length) & tf.reduce_any((count < want) & (j < num_units))

  _, covered, count = tf.while_loop(
      cond, body, (tf.constant(0), tf.zeros([batch, length], tf.bool),
                   tf.zeros([batch], tf.int32)))
  return covered, count
