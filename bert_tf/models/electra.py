"""ELECTRA (Clark et al. 2020): a small masked-LM generator and a
discriminator that tells which tokens the generator replaced.

What google-research/electra's pretraining does, and what we do:

- Generator: a BERT-style encoder sized by fractions of the discriminator
  (`generator_config`: hidden size 0.25, layers 1.0), with the masked-LM
  head of BERT (dense to the embedding width + activation, LayerNorm, logits
  against the tied word embeddings + bias). The original sets the
  generator's heads to hidden // 64 and its intermediate size to 4 x hidden;
  we scale heads and intermediate size by the same fraction as the hidden
  size, which gives the same numbers for every released shape (BERT/ELECTRA
  base and large keep hidden / heads = 64 and intermediate = 4 x hidden)
  and also fits small configs like BERT-tiny (head size 64, 2 heads).
- Shared embeddings: the generator reads the discriminator's embedding
  layers (word, position and token-type embeddings and their LayerNorm, the
  original's whole `electra/embeddings` scope), one variable each. The
  original's embeddings are `embedding_size` wide and each network projects
  them to its hidden size (`embeddings_project`). Ours are the
  discriminator's width (keras-hub's ElectraBackbone, which has the same
  optional projection when a config's `embedding_size` differs) and the
  generator projects them down to its own hidden size, as the original's
  base and large models do (embedding_size = discriminator hidden size).
- Masking: the records carry BERT's masked positions and the original ids
  (`masked_lm_ids`). Each step we undo the records' corruption and re-mask
  those positions by ELECTRA's rule, 85% [MASK] and 15% kept, no random
  token (`MASK_RULES`: "bert" redraws BERT's 80/10/10, "records" keeps the
  records' input as written). The original chooses the positions
  dynamically each step (15% of the tokens). On records written with
  --dynamic_masking so do we: the input pipeline draws each example's
  positions (at the same 15% rate) every time it reads it, and the [MASK]
  id comes from their manifest. On masked records the positions are the
  records' (a fixed set per record, like BERT's static masking with
  --dupe_factor).
- Sampling: one token per masked position from the generator's softmax
  (temperature 1), by inverting its CDF with one uniform per position
  (`sample_tokens`; the original adds Gumbel noise to every logit, the same
  distribution at twice the cost), with no gradient through the sample.
  The sample goes into every masked position of the original text (the
  kept 15% too, as in the original); a position is labelled "replaced"
  only where the sample differs from the original token.
- Discriminator: the encoder plus the original's per-token head, dense(H)
  + activation, then dense(1). keras-hub's ElectraBackbone also builds a
  pooler (`pooled_dense`), which ELECTRA does not have (its pooled output
  is the [CLS] vector); it is frozen here and `pooled_output` is
  sequence_output[:, 0], as the original's.
- Randomness: stateless TF random ops, one seed per example from (seed,
  the example's ids) and, in training, a count of training calls saved with
  the checkpoint. A run reproduces, resumes with fresh noise, and draws the
  same on one device as on several replicas (the loss of a global batch is
  the single-device one); every evaluation masks and samples a held-out
  example the same way whatever the batch size or strategy. (Gradient
  accumulation counts each micro-batch as a call, so it draws other noise
  than one step on the whole batch.)
"""

import keras
import keras_hub
import numpy as np
import tensorflow as tf

from bert_tf.data.records import schema
from bert_tf.models import activations
from bert_tf.models import modeling
from bert_tf.models import precision
from bert_tf.models import softmax
from bert_tf.models.config import BertConfig

# How masked positions are corrupted for the generator: (share [MASK],
# share random token); the rest keep the original token.
MASK_RULES = {"electra": (0.85, 0.0), "bert": (0.8, 0.1), "records": None}
DEFAULT_MASK_RULE = "electra"
_KERAS_HUB_INITIALIZER_RANGE = 0.02
_SEED_STREAMS = {"mask": 0, "random_token": 1, "sample": 2}
# Entries of the vocab per block of `sample_tokens`' two-level CDF.
SAMPLE_BLOCK = 128


def generator_config(config: BertConfig, hidden_fraction=0.25, layers_fraction=1.0):
  """The generator's config: the discriminator's scaled by fractions.

  hidden size, attention heads and intermediate size are scaled by
  `hidden_fraction` (heads lowered until they divide the hidden size), the
  layers by `layers_fraction`; everything else (vocab, positions, dropout)
  is the discriminator's. See the module docstring for the original's rule.

  Raises:
    ValueError: a fraction outside (0, 1] (a generator larger than the
      discriminator).
  """
  for name, value in (("generator_hidden_size", hidden_fraction),
                      ("generator_layers", layers_fraction)):
    if not 0 < value <= 1:
      raise ValueError(f"--{name}={value:g} makes the generator larger than the "
                       f"discriminator (or empty): give a fraction in (0, 1]")
  hidden = max(1, int(round(config.hidden_size * hidden_fraction)))
  heads = max(1, int(round(config.num_attention_heads * hidden_fraction)))
  while hidden % heads:
    heads -= 1
  return config.replace(
      hidden_size=hidden, num_attention_heads=heads,
      intermediate_size=max(1, int(round(config.intermediate_size * hidden_fraction))),
      num_hidden_layers=max(1, int(round(config.num_hidden_layers * layers_fraction))))


def check_generator(config: BertConfig, gen_config: BertConfig):
  """Raises ValueError (one line) when the generator is larger than the
  discriminator or cannot share its embeddings."""
  if (gen_config.hidden_size > config.hidden_size
      or gen_config.num_hidden_layers > config.num_hidden_layers):
    raise ValueError(
        f"the generator (hidden {gen_config.hidden_size}, {gen_config.num_hidden_layers} "
        f"layers) is larger than the discriminator (hidden {config.hidden_size}, "
        f"{config.num_hidden_layers} layers): ELECTRA's generator must be at most the "
        f"discriminator's size (1/4 of its hidden size works best)")
  for key in ("vocab_size", "max_position_embeddings", "type_vocab_size"):
    if getattr(gen_config, key) != getattr(config, key):
      raise ValueError(f"the generator's {key}={getattr(gen_config, key)} differs from the "
                       f"discriminator's {getattr(config, key)}; they share embeddings")


def embedding_size(config: BertConfig):
  """Width of the shared embeddings: the config's `embedding_size` key
  (ELECTRA-small uses 128) or the hidden size.

  Raises:
    ValueError: a config with ALBERT's layer sharing (the discriminator is
      ELECTRA's unshared encoder).
  """
  if config.is_albert:
    for key in ("num_hidden_groups", "inner_group_num"):
      if config.albert_value(key) != 1:
        raise ValueError(f"{key}={config.albert_value(key)}: ELECTRA's discriminator does "
                         "not share layers (ALBERT); of ALBERT's keys it reads only "
                         "embedding_size")
    return int(config.embedding_size)
  return config.hidden_size


def _initializer(config):
  return keras.initializers.TruncatedNormal(stddev=config.initializer_range)


def _set_attention_dropout(layers, config):
  # keras-hub takes one dropout rate; see modeling.build_encoder. The
  # softmax keeps float32 statistics under mixed precision (`precision`).
  precision.float32_attention_softmax(layers)
  activations.set_feedforward_activation(layers, config.hidden_act)
  if config.attention_probs_dropout_prob != config.hidden_dropout_prob:
    for layer in layers:
      attention = layer._self_attention_layer  # pylint: disable=protected-access
      attention._dropout = config.attention_probs_dropout_prob  # pylint: disable=protected-access
      attention._dropout_layer.rate = config.attention_probs_dropout_prob  # pylint: disable=protected-access


def _reinitialize(weights, config):
  if config.initializer_range != _KERAS_HUB_INITIALIZER_RANGE:
    init = _initializer(config)
    for v in weights:
      if v.path.endswith("/kernel") or v.path.endswith("/embeddings"):
        v.assign(init(v.shape, dtype=v.dtype))


def build_discriminator_encoder(config: BertConfig, dtype=None):
  """The discriminator's encoder: a built keras_hub ElectraBackbone (inputs
  and outputs as modeling.build_encoder's), its unused pooler frozen."""
  activations.check(config.hidden_act, "ELECTRA models")
  encoder = keras_hub.models.ElectraBackbone(
      vocab_size=config.vocab_size, num_layers=config.num_hidden_layers,
      num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
      embedding_dim=embedding_size(config), intermediate_dim=config.intermediate_size,
      dropout=config.hidden_dropout_prob, max_sequence_length=config.max_position_embeddings,
      num_segments=config.type_vocab_size, dtype=dtype, name="electra_encoder")
  _set_attention_dropout(encoder.transformer_layers, config)
  _reinitialize(encoder.weights, config)
  # ELECTRA has no pooler: no loss reaches it, so it takes no update.
  encoder.pooled_dense.trainable = False
  return encoder


def scatter_at_positions(ids, positions, values, real):
  """ids with values written at positions where `real`.

  Integer ops only: ids never pass through a float matmul, which GPUs run
  in TF32 (10 mantissa bits: 5001 -> 5000) and mixed precision in 16 bits.
  Shapes are static ([b, p, s] one-hot comparison), so it compiles with
  XLA. A position written twice (the data writer never does) keeps the
  larger value.

  Args:
    ids: int32 [b, s]; positions, values: int32 [b, p]; real: bool [b, p]
      (False for the records' padding predictions, whose position is 0).
  Returns:
    (int32 [b, s] updated ids, bool [b, s] the positions written).
  """
  seq = tf.shape(ids)[1]
  hits = tf.equal(positions[:, :, None], tf.range(seq, dtype=positions.dtype)) & real[..., None]
  written = tf.reduce_any(hits, axis=1)  # [b, s]
  values = tf.cast(values, ids.dtype)
  new = tf.reduce_max(tf.where(hits, values[:, :, None], values.dtype.min), axis=1)
  return tf.where(written, new, ids), written


def stateless_uniform(shape, seed, minval=0.0, maxval=1.0, dtype=tf.float32):
  """tf.random.stateless_uniform with one seed for the batch (int [2]) or
  one per example (int [b, 2]: row i of the result from seed i, so an
  example draws the same numbers in any batch)."""
  seed = tf.convert_to_tensor(seed)
  if seed.shape.rank == 1:
    return tf.random.stateless_uniform(shape, seed, minval=minval, maxval=maxval, dtype=dtype)
  return tf.map_fn(
      lambda s: tf.random.stateless_uniform(shape[1:], s, minval=minval, maxval=maxval,
                                            dtype=dtype),
      seed, fn_output_signature=dtype)


def sample_tokens(logits, seed):
  """One sample per row of softmax(logits) (temperature 1), by inverting its
  CDF with one uniform per row.

  exp(logits - max) is summed in blocks of `SAMPLE_BLOCK` entries; the
  uniform picks a block from the blocks' cumulative sums, then an entry
  from that block's own cumulative sum, so the one pass over the vocab is
  an exp and a sum (a Gumbel-max draw needs a uniform and two logs per
  entry: 2x the time of this at BERT's vocab), and in a training step the
  exp is the masked-LM loss's own (`softmax`: the graph computes it once).
  An entry of probability 0 (exp underflow, the block padding) is never
  drawn.

  Args:
    logits: float [b, ..., vocab].
    seed: int [2] or [b, 2] stateless seed(s) (see `stateless_uniform`).
  Returns:
    int32 [b, ...], no gradient.
  """
  rows_shape = tf.shape(logits)[:-1]
  vocab = logits.shape[-1]
  blocks = -(-vocab // SAMPLE_BLOCK)
  uniform = tf.reshape(stateless_uniform(rows_shape, seed), [-1])
  # The masked-LM loss's own exp(logits - max): computed once (`softmax`).
  probs = tf.stop_gradient(softmax.shifted_exp(softmax.rows(logits))[1])
  if blocks * SAMPLE_BLOCK != vocab:
    probs = tf.pad(probs, [[0, 0], [0, blocks * SAMPLE_BLOCK - vocab]])
  probs = tf.reshape(probs, [-1, blocks, SAMPLE_BLOCK])
  block_sums = tf.reduce_sum(probs, axis=-1)  # [rows, blocks]
  starts = tf.cumsum(block_sums, axis=-1, exclusive=True)
  target = uniform * (starts[:, -1] + block_sums[:, -1])
  # The last block of positive mass starting at or below the target (block
  # 0's start is 0, so one always exists).
  block = tf.reduce_max(tf.where((starts <= target[:, None]) & (block_sums > 0),
                                 tf.range(blocks), 0), axis=-1)
  within = tf.gather(probs, block, batch_dims=1)  # [rows, SAMPLE_BLOCK]
  rest = target - tf.gather(starts, block, batch_dims=1)
  entry = tf.reduce_sum(tf.cast(tf.cumsum(within, axis=-1) <= rest[:, None], tf.int32), axis=-1)
  # Rounding can leave `rest` at or past the block's sum: take its last
  # entry of positive mass.
  last = tf.reduce_max(tf.where(within > 0, tf.range(SAMPLE_BLOCK), 0), axis=-1)
  return tf.reshape(block * SAMPLE_BLOCK + tf.minimum(entry, last), rows_shape)


def remask(original_ids, positions, originals, real, rule, mask_token_id, vocab_size,
           seed_fn):
  """The generator's input: `rule`'s corruption at the masked positions.

  Args:
    original_ids: int32 [b, s] the text with the records' masks undone.
    positions, originals: int32 [b, p]; real: bool [b, p].
    rule: a MASK_RULES key other than "records".
    mask_token_id: the vocab's [MASK] id.
    seed_fn: stream name -> int [2] stateless seed.
  Returns:
    int32 [b, s].
  """
  mask_share, random_share = MASK_RULES[rule]
  u = stateless_uniform(tf.shape(positions), seed_fn("mask"))
  values = tf.where(u < mask_share, mask_token_id, originals)
  if random_share:
    random_ids = stateless_uniform(tf.shape(positions), seed_fn("random_token"),
                                   minval=0, maxval=vocab_size, dtype=tf.int32)
    values = tf.where((u >= mask_share) & (u < mask_share + random_share), random_ids, values)
  return scatter_at_positions(original_ids, positions, values, real)[0]


@keras.saving.register_keras_serializable(package="bert_tf")
class ElectraPretrainer(keras.Model):
  """ELECTRA's generator and discriminator with shared embeddings.

  Attributes:
    config: the discriminator's BertConfig (the model an export serves).
    generator_config: the generator's.
    encoder: the discriminator's keras_hub ElectraBackbone; it owns the
      shared embedding layers.
    generator_projection: Dense(generator hidden) from the embeddings, or
      None when the widths agree.
    generator_layers: the generator's keras-hub TransformerEncoder layers.
    mlm_head: the generator's keras_hub MaskedLMHead (tied word embeddings).
    discriminator_dense, discriminator_output: the per-token head.
    sample_step: int64 counter of training calls (seeds the noise).
    has_pooler: False: ELECTRA has no pooler (the encoder's is frozen, see
      `build_discriminator_encoder`); an export's pooled_output is the [CLS]
      token's sequence output.
  """

  has_pooler = False

  def __init__(self, config, gen_config=None, mask_rule=DEFAULT_MASK_RULE,
               mask_token_id=None, seed=0, dtype=None, **kwargs):
    """Makes the model, all weights created.

    Args:
      config: the discriminator's BertConfig (or dict).
      gen_config: the generator's BertConfig (or dict); None: the default
        fractions of `generator_config`.
      mask_rule: a MASK_RULES key.
      mask_token_id: the vocab's [MASK] id (needed for training with rules
        "electra" and "bert"; not for serving).
      seed: int seed of masking and sampling.
      dtype: dtype policy of the encoders; heads run in float32.
    Raises:
      ValueError: a generator larger than the discriminator, an unknown rule.
    """
    if isinstance(config, dict):
      config = BertConfig.from_dict(config)
    if isinstance(gen_config, dict):
      gen_config = BertConfig.from_dict(gen_config)
    gen_config = gen_config or generator_config(config)
    check_generator(config, gen_config)
    if mask_rule not in MASK_RULES:
      raise ValueError(f"electra_mask_rule={mask_rule!r} is not one of {', '.join(MASK_RULES)}")
    kwargs.setdefault("name", "electra_pretrainer")
    super().__init__(**kwargs)
    self.config, self.generator_config = config, gen_config
    self.mask_rule, self.mask_token_id, self.seed = mask_rule, mask_token_id, int(seed)
    self.encoder = build_discriminator_encoder(config, dtype=dtype)
    width = embedding_size(config)
    init = _initializer(config)
    self.generator_projection = keras.layers.Dense(
        gen_config.hidden_size, kernel_initializer=init, dtype=dtype,
        name="generator_embeddings_project") if width != gen_config.hidden_size else None
    # One attribute per layer: tf.train.Checkpoint saves a Keras model's
    # layers held in attributes, not those in a list attribute.
    self._num_generator_layers = gen_config.num_hidden_layers
    for i in range(gen_config.num_hidden_layers):
      setattr(self, f"generator_layer_{i}", keras_hub.layers.TransformerEncoder(
            num_heads=gen_config.num_attention_heads,
            intermediate_dim=gen_config.intermediate_size,
            activation=activations.function(gen_config.hidden_act),
            dropout=gen_config.hidden_dropout_prob,
            layer_norm_epsilon=modeling.LAYER_NORM_EPSILON, kernel_initializer=init,
            dtype=dtype, name=f"generator_layer_{i}"))
    token_embedding = self.encoder.token_embedding
    token_embedding.reverse_dtype = "float32"  # float32 logits (see BertPretrainer)
    self.mlm_head = keras_hub.layers.MaskedLMHead(
        token_embedding=token_embedding,
        intermediate_activation=activations.function(config.hidden_act),
        layer_norm_epsilon=modeling.LAYER_NORM_EPSILON, kernel_initializer=init,
        bias_initializer="zeros", dtype="float32", name="generator_mlm_head")
    self._make_main_heads(config, init, dtype)
    self.sample_step = self.add_weight(
        name="sample_step", shape=(), dtype="int64", initializer="zeros", trainable=False,
        aggregation="only_first_replica")
    # === Build every weight now ===
    if self.generator_projection is not None:
      self.generator_projection.build((None, None, width))
    for layer in self.generator_layers:
      layer.build((None, None, gen_config.hidden_size))
    _set_attention_dropout(self.generator_layers, gen_config)
    self.mlm_head.build((None, None, gen_config.hidden_size))
    _reinitialize([w for layer in self.generator_layers for w in layer.weights]
                  + ([] if self.generator_projection is None
                     else self.generator_projection.weights), config)
    self.built = True

  def _make_main_heads(self, config, init, dtype):
    """The heads of the network the generator's samples go to, built: the
    discriminator's per-token head (`electra_mlm` makes others)."""
    del dtype  # the heads run in float32
    self.discriminator_dense = keras.layers.Dense(
        config.hidden_size, activation=activations.function(config.hidden_act),
        kernel_initializer=init,
        dtype="float32", name="discriminator_dense")
    # The original's second dense takes tf.layers.dense's default initializer.
    self.discriminator_output = keras.layers.Dense(
        1, kernel_initializer="glorot_uniform", dtype="float32", name="discriminator_output")
    self.discriminator_dense.build((None, None, config.hidden_size))
    self.discriminator_output.build((None, None, config.hidden_size))

  @property
  def generator_layers(self):
    """The generator's TransformerEncoder layers, in order."""
    return [getattr(self, f"generator_layer_{i}") for i in range(self._num_generator_layers)]

  # -- the two networks --------------------------------------------------------

  def generator_logits(self, input_ids, segment_ids, input_mask, positions, training=False):
    """The generator's masked-LM logits, float32 [b, p, vocab], reading the
    discriminator's embedding layers."""
    enc = self.encoder
    tokens = enc.token_embedding(input_ids)
    x = enc.embeddings_add((tokens, enc.position_embedding(tokens),
                            enc.segment_embedding(segment_ids)))
    x = enc.embeddings_dropout(enc.embeddings_layer_norm(x), training=training)
    if self.generator_projection is not None:
      x = self.generator_projection(x)
    for layer in self.generator_layers:
      x = layer(x, padding_mask=input_mask, training=training)
    return tf.cast(self.mlm_head(x, mask_positions=positions), tf.float32)

  def discriminate(self, input_ids, segment_ids, input_mask, training=False):
    """(float32 [b, s] replaced-token logits, sequence_output [b, s, H])."""
    sequence = self.encoder({"token_ids": input_ids, "segment_ids": segment_ids,
                             "padding_mask": input_mask}, training=training)["sequence_output"]
    hidden = self.discriminator_dense(tf.cast(sequence, tf.float32))
    return tf.squeeze(self.discriminator_output(hidden), -1), sequence

  # -- the forward -------------------------------------------------------------

  def _seed_fn(self, input_ids, training):
    """stream name -> stateless seed; see the module docstring."""
    # One seed per example, from its ids, so the draws do not depend on how
    # a batch is split across replicas. Training adds the count of training
    # calls (the same on every replica), so each step draws afresh;
    # evaluation does not, so it draws the same for an example every time.
    base = tf.constant(self.seed, tf.int64) * 8 + (0 if training else 4)
    seq = tf.shape(input_ids)[1]
    weights = tf.cast(tf.range(1, seq + 1), tf.int64) * 7919
    example = tf.reduce_sum(tf.cast(input_ids, tf.int64) * weights, axis=1) % (2 ** 31)
    if training:
      example += self.sample_step.assign_add(1) * (2 ** 31)
    return lambda stream: tf.stack(
        [tf.fill(tf.shape(example), base + _SEED_STREAMS[stream]), example], axis=1)

  def call(self, inputs, training=False):
    """Training/eval forward (features with `masked_lm_ids`) or serving.

    Args:
      inputs: dict of int [b, s] `input_ids`, `input_mask`, `segment_ids`;
        int [b, p] `masked_lm_positions` (serving: optional); for
        pretraining also int [b, p] `masked_lm_ids` (the original tokens)
        and float [b, p] `masked_lm_weights`.
    Returns:
      dict with float32 `discriminator_logits` [b, s], `sequence_output`
      [b, s, H] and `pooled_output` [b, H] (the discriminator's, on the
      corrupted text when pretraining), float32 `mlm_logits` [b, p, vocab]
      (the generator's, with positions); pretraining adds int32
      `replaced_labels` [b, s] (1: the token differs from the original),
      `sampled_ids` [b, p], `original_ids` and `corrupted_ids` [b, s].
    """
    input_ids = tf.cast(inputs["input_ids"], tf.int32)
    segment_ids = tf.cast(inputs["segment_ids"], tf.int32)
    input_mask = tf.cast(inputs["input_mask"], tf.int32)
    outputs = {}
    if "masked_lm_ids" not in inputs:
      # Serving: the generator fills the given positions, the discriminator
      # reads the given text.
      if "masked_lm_positions" in inputs:
        outputs["mlm_logits"] = self.generator_logits(
            input_ids, segment_ids, input_mask,
            tf.cast(inputs["masked_lm_positions"], tf.int32), training=training)
      logits, sequence = self.discriminate(input_ids, segment_ids, input_mask, training)
      return dict(outputs, discriminator_logits=logits, sequence_output=sequence,
                  pooled_output=sequence[:, 0])
    outputs = self.corrupt(inputs, training)
    logits, sequence = self.discriminate(outputs["corrupted_ids"], segment_ids, input_mask,
                                         training)
    labels = tf.cast(tf.not_equal(outputs["corrupted_ids"], outputs["original_ids"]), tf.int32)
    return dict(outputs, discriminator_logits=logits, replaced_labels=labels,
                sequence_output=sequence, pooled_output=sequence[:, 0])

  def corrupt(self, inputs, training=False):
    """The generator's pass over a pretraining batch (features as `call`'s).

    Returns:
      dict of float32 `mlm_logits` [b, p, vocab] (the generator's), int32
      `sampled_ids` [b, p], `original_ids` [b, s] (the records' masks
      undone), `corrupted_ids` [b, s] (the samples written at the masked
      positions).
    """
    input_ids = tf.cast(inputs["input_ids"], tf.int32)
    segment_ids = tf.cast(inputs["segment_ids"], tf.int32)
    input_mask = tf.cast(inputs["input_mask"], tf.int32)
    positions = tf.cast(inputs["masked_lm_positions"], tf.int32)
    originals = tf.cast(inputs["masked_lm_ids"], tf.int32)
    real = tf.cast(inputs["masked_lm_weights"], tf.float32) > 0
    seed = self._seed_fn(input_ids, training)
    original_ids, _ = scatter_at_positions(input_ids, positions, originals, real)
    if self.mask_rule == "records":
      generator_input = input_ids
    else:
      if self.mask_token_id is None:
        raise ValueError("ElectraPretrainer needs mask_token_id to re-mask by rule "
                         f"{self.mask_rule!r}")
      generator_input = remask(original_ids, positions, originals, real, self.mask_rule,
                               self.mask_token_id, self.config.vocab_size, seed)
    mlm_logits = self.generator_logits(generator_input, segment_ids, input_mask, positions,
                                       training=training)
    sampled = sample_tokens(mlm_logits, seed("sample"))
    corrupted, _ = scatter_at_positions(original_ids, positions, sampled, real)
    return {"mlm_logits": mlm_logits, "sampled_ids": sampled, "original_ids": original_ids,
            "corrupted_ids": corrupted}

  def get_config(self):
    return {"name": self.name, "config": self.config.to_dict(),
            "gen_config": self.generator_config.to_dict(), "mask_rule": self.mask_rule,
            "mask_token_id": self.mask_token_id, "seed": self.seed,
            "dtype": keras.dtype_policies.serialize(self.encoder.dtype_policy)}

  @classmethod
  def from_config(cls, config):
    config = dict(config)
    dtype = modeling.pop_dtype(config)
    return cls(config.pop("config"), dtype=dtype, **config)


def mask_token_id_from_records(files, max_seq_length, max_predictions_per_seq,
                               compression="", num_records=512):
  """The [MASK] id of the records' vocab, read from the records.

  The data writer replaces 80% of the masked positions by [MASK], so among
  the positions whose input differs from the original (masked_lm_ids), the
  most frequent input id is [MASK].

  Raises:
    ValueError: the first records have no such position.
  """
  dataset = tf.data.TFRecordDataset(list(files), compression_type=compression or None)
  counts = {}
  for batch in dataset.take(num_records).batch(num_records):
    f = schema.parse_examples(batch, max_seq_length, max_predictions_per_seq)
    at = tf.gather(f["input_ids"], f["masked_lm_positions"], batch_dims=1).numpy()
    changed = (f["masked_lm_weights"].numpy() > 0) & (at != f["masked_lm_ids"].numpy())
    ids, n = np.unique(at[changed], return_counts=True)
    counts = dict(zip(ids.tolist(), n.tolist()))
  if not counts:
    raise ValueError(f"records {files[0]} have no masked token whose input differs from "
                     "its original, so their [MASK] id is unknown; ELECTRA needs records "
                     "written with masking (or --electra_mask_rule=records)")
  return int(max(counts, key=counts.get))
