"""The BERT encoder and the two pretraining heads (masked LM and NSP).

The encoder is `keras_hub.models.BertBackbone`, which already computes the
original's forward pass: embeddings summed then LayerNorm (eps 1e-12),
post-LN transformer layers with tanh-approximate GELU (or the exact one,
`activations`), padding masked out of
the attention logits, and a tanh pooler on the [CLS] position. We only map the
`bert_config.json` keys onto it and fix the two settings it hard-codes
(initializer stddev 0.02, one dropout rate for everything).

The heads are the original's, with the original's initializers: the issue
that motivated this module was a keras-hub model whose MLM head used Keras'
default (Glorot) initializer and reached a lower MLM accuracy than the
original under the same data. Here every kernel starts from a truncated
normal with stddev `initializer_range`, every bias from zero, every
LayerNorm from gamma 1, beta 0.
"""

import keras
import keras_hub
import tensorflow as tf

from bert_tf.models import activations
from bert_tf.models import albert
from bert_tf.models.config import BertConfig

LAYER_NORM_EPSILON = 1e-12


def _initializer(config):
  return keras.initializers.TruncatedNormal(stddev=config.initializer_range)


def build_encoder(config: BertConfig, dtype=None):
  """Builds the BERT encoder for `config`.

  Args:
    config: a BertConfig.
    dtype: a Keras dtype policy or its name ("float32", "mixed_bfloat16",
      ...); None uses the global policy.

  Returns:
    A built `keras_hub.models.BertBackbone`. Its inputs are a dict of int32
    [batch, seq] tensors `token_ids`, `segment_ids`, `padding_mask` (1 for real
    tokens); its outputs a dict with `sequence_output` [batch, seq, H] and
    `pooled_output` [batch, H] in the policy's compute dtype.

  An ALBERT config (`config.is_albert`) gives `albert.build_encoder`'s
  AlbertBackbone instead (same inputs and outputs).

  Raises:
    ValueError: `config.hidden_act` is not "gelu" or "gelu_exact"
      (`activations`).

  Note: BertBackbone takes one dropout rate. It is set to
  `hidden_dropout_prob`; when `attention_probs_dropout_prob` differs, the
  rate of each attention layer's probability dropout is then set to it. That
  setting lives on the layer objects, not in `BertBackbone.get_config()`, so
  rebuild encoders with this function (from the BertConfig), not from a
  serialized Keras config.
  """
  if config.is_albert:
    return albert.build_encoder(config, dtype=dtype)
  activations.check(config.hidden_act)
  encoder = keras_hub.models.BertBackbone(
      vocabulary_size=config.vocab_size,
      num_layers=config.num_hidden_layers,
      num_heads=config.num_attention_heads,
      hidden_dim=config.hidden_size,
      intermediate_dim=config.intermediate_size,
      dropout=config.hidden_dropout_prob,
      max_sequence_length=config.max_position_embeddings,
      num_segments=config.type_vocab_size,
      dtype=dtype,
      name="bert_encoder")
  albert.configure_encoder(encoder, encoder.transformer_layers, config)
  return encoder


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPretrainer(keras.Model):
  """BERT encoder plus the original masked-LM and next-sentence heads.

  Attributes:
    config: the BertConfig.
    encoder: the `keras_hub.models.BertBackbone` (exports alone).
    mlm_head: `keras_hub.layers.MaskedLMHead`: dense(H, tanh-GELU) ->
      LayerNorm(1e-12) -> logits against the tied word embeddings + bias.
    nsp_head: the sentence-pair head, `keras.layers.Dense(2)` on the pooled
      output, or None (`sentence_head=False`, MLM alone). For NSP index 0
      means "B follows A" (schema.IS_NEXT), index 1 "B is random"; for
      ALBERT's sentence order (SOP) index 1 means "A and B swapped". The
      original (and ALBERT) store both under cls/seq_relationship, so the
      attribute keeps the NSP name for either task.

  Both heads run in float32 whatever the encoder's dtype policy, so logits and
  losses are float32 under "mixed_bfloat16" too.
  """

  def __init__(self, config: BertConfig, encoder=None, dtype=None, sentence_head=True,
               causal=False, **kwargs):
    """Makes the model, with all weights created.

    Args:
      config: a BertConfig (or a dict of its keys, as `from_config` passes).
      encoder: an encoder made by `build_encoder(config)`; None makes one.
      dtype: dtype policy of the encoder (None: the global policy).
      sentence_head: False builds no sentence-pair head (MLM alone).
      causal: a left-to-right LM (`call`): each position attends to itself
        and those before it; no sentence-pair head. BERT encoders only.
      **kwargs: passed to keras.Model (name, ...).
    """
    if isinstance(config, dict):
      config = BertConfig.from_dict(config)
    kwargs.setdefault("name", "bert_pretrainer")
    super().__init__(**kwargs)
    self.config = config
    self.causal = bool(causal)
    if self.causal and (sentence_head or config.is_albert):
      raise ValueError("causal: a left-to-right LM has no sentence-pair head and needs a BERT "
                       "encoder (ALBERT's shared layers are not run one by one)")
    # === Layers ===
    self.encoder = encoder if encoder is not None else build_encoder(config, dtype=dtype)
    token_embedding = self.encoder.token_embedding
    if token_embedding.input_dim != config.vocab_size:
      raise ValueError(f"encoder vocabulary ({token_embedding.input_dim}) != "
                       f"config.vocab_size ({config.vocab_size})")
    # Under mixed precision the tied-embedding matmul would otherwise return
    # bf16 logits, too coarse for a 30k-way softmax; compute it in float32.
    token_embedding.reverse_dtype = "float32"
    self.mlm_head = keras_hub.layers.MaskedLMHead(
        token_embedding=token_embedding,
        intermediate_activation=activations.function(config.hidden_act),
        layer_norm_epsilon=LAYER_NORM_EPSILON,
        kernel_initializer=_initializer(config),
        bias_initializer="zeros",
        dtype="float32",
        name="mlm_head")
    self.nsp_head = keras.layers.Dense(
        2,
        kernel_initializer=_initializer(config),
        bias_initializer="zeros",
        dtype="float32",
        name="nsp_head") if sentence_head else None
    # Create every weight now, so checkpoints restore and optimizers build
    # before the first batch.
    hidden = config.hidden_size
    self.mlm_head.build((None, None, hidden))
    if self.nsp_head is not None:
      self.nsp_head.build((None, hidden))
    self.built = True

  def call(self, inputs, training=False):
    """Runs encoder and heads.

    Args:
      inputs: dict with int [batch, seq] `input_ids`, `input_mask` (1 real,
        0 padding), `segment_ids`, and int [batch, preds]
        `masked_lm_positions` (optional: without it there are no
        `mlm_logits`). Other keys (labels, weights) are ignored.
      training: enables dropout.

    Returns:
      dict with
        mlm_logits: float32 [batch, preds, vocab_size] (if positions given),
        nsp_logits: float32 [batch, 2] (with a sentence-pair head),
        sequence_output: [batch, seq, H] (encoder compute dtype),
        pooled_output: [batch, H] (encoder compute dtype).

    With `causal` (a left-to-right LM) the text is read as written: where
    the inputs carry `masked_lm_ids` and `masked_lm_weights`, the records'
    masking is undone first (`original_ids`, int32 [batch, seq]); the
    encoder runs with the causal mask; `lm_logits` (float32 [batch, seq,
    vocab_size]) at position t predict the token at t + 1, and
    `mlm_logits` at a given position predict the token there from the
    positions before it (the logits of the position before).
    """
    if self.causal:
      return self._call_causal(inputs, training)
    encoded = self.encoder(
        {
            "token_ids": tf.cast(inputs["input_ids"], tf.int32),
            "segment_ids": tf.cast(inputs["segment_ids"], tf.int32),
            "padding_mask": tf.cast(inputs["input_mask"], tf.int32),
        },
        training=training)
    sequence_output = encoded["sequence_output"]
    pooled_output = encoded["pooled_output"]
    outputs = {"sequence_output": sequence_output, "pooled_output": pooled_output}
    if self.nsp_head is not None:
      outputs["nsp_logits"] = tf.cast(self.nsp_head(pooled_output), tf.float32)
    if "masked_lm_positions" in inputs:
      positions = tf.cast(inputs["masked_lm_positions"], tf.int32)
      outputs["mlm_logits"] = tf.cast(
          self.mlm_head(sequence_output, mask_positions=positions), tf.float32)
    return outputs

  def _call_causal(self, inputs, training):
    """`call` for a left-to-right LM (see there)."""
    ids = tf.cast(inputs["input_ids"], tf.int32)
    if "masked_lm_ids" in inputs and "masked_lm_weights" in inputs:
      # Integer ops only (models.electra.scatter_at_positions' rule).
      positions = tf.cast(inputs["masked_lm_positions"], tf.int32)
      real = tf.cast(inputs["masked_lm_weights"], tf.float32) > 0
      hits = tf.equal(positions[:, :, None], tf.range(tf.shape(ids)[1])) & real[..., None]
      labels = tf.cast(inputs["masked_lm_ids"], tf.int32)
      restored = tf.reduce_max(tf.where(hits, labels[:, :, None], labels.dtype.min), axis=1)
      ids = tf.where(tf.reduce_any(hits, axis=1), restored, ids)
    sequence_output = causal_sequence_output(
        self.encoder, ids, tf.cast(inputs["segment_ids"], tf.int32),
        tf.cast(inputs["input_mask"], tf.int32), training=training)
    every = tf.broadcast_to(tf.range(tf.shape(ids)[1])[None], tf.shape(ids))
    outputs = {"sequence_output": sequence_output, "original_ids": ids,
               "lm_logits": tf.cast(self.mlm_head(sequence_output, mask_positions=every),
                                    tf.float32)}
    if "masked_lm_positions" in inputs:
      before = tf.maximum(tf.cast(inputs["masked_lm_positions"], tf.int32) - 1, 0)
      outputs["mlm_logits"] = tf.gather(outputs["lm_logits"], before, batch_dims=1)
    return outputs

  def get_config(self):
    # The whole model is a function of the BertConfig; layer configs are not
    # serialized (the MLM head would otherwise lose its tie to the encoder).
    return {"name": self.name, "config": self.config.to_dict(),
            "dtype": keras.dtype_policies.serialize(self.encoder.dtype_policy),
            "sentence_head": self.nsp_head is not None, "causal": self.causal}

  @classmethod
  def from_config(cls, config):
    config = dict(config)
    dtype = pop_dtype(config)
    return cls(BertConfig.from_dict(config.pop("config")), dtype=dtype, **config)


def causal_sequence_output(encoder, token_ids, segment_ids, padding_mask, training=False,
                           every_layer=False):
  """The sequence output of a BertBackbone `encoder` with each position
  attending only to itself and the positions before it (a left-to-right
  LM's encoder): the backbone's own layers and weights, run in its order
  with a lower-triangular attention mask beside the padding mask. int32
  [b, s] inputs; [b, s, H] in the encoder's compute dtype (every_layer:
  the list of each layer's output, in order)."""
  tokens = encoder.token_embedding(token_ids)
  x = encoder.embeddings_add((tokens, encoder.position_embedding(tokens),
                              encoder.segment_embedding(segment_ids)))
  x = encoder.embeddings_dropout(encoder.embeddings_layer_norm(x), training=training)
  seq = tf.shape(token_ids)[1]
  causal = tf.linalg.band_part(tf.ones([seq, seq], tf.int32), -1, 0)  # [query, key]: key <= query
  causal = tf.broadcast_to(causal[None], [tf.shape(token_ids)[0], seq, seq])
  outputs = []
  for layer in encoder.transformer_layers:
    x = layer(x, padding_mask=padding_mask, attention_mask=causal, training=training)
    outputs.append(x)
  return outputs if every_layer else x


# -- the encoder as an objective means it to be read ---------------------------
# A left-to-right LM's encoder is read with its causal mask after pretraining
# too (fine-tuning, probes, features, exports: Devlin et al. 2019, section
# 5.1), and its sentence vector is the pooler on the last real token, the
# one position that sees the whole text (OpenAI GPT classified from its last
# token). `read_causally` marks an encoder so; `encoder_outputs` honours it.
POOLED_FIRST = "first"
POOLED_LAST = "last"


def read_causally(encoder, pooled_position=POOLED_LAST):
  """Marks the BertBackbone `encoder` to be read with the causal mask
  (`encoder_outputs`), its pooled output from the token at
  `pooled_position` ("first": [CLS]; "last": the last real token).
  Returns the encoder."""
  if pooled_position not in (POOLED_FIRST, POOLED_LAST):
    raise ValueError(f"pooled_position={pooled_position!r}: one of {POOLED_FIRST}, {POOLED_LAST}")
  if not hasattr(encoder, "transformer_layers") or (
      encoder.transformer_layers and isinstance(encoder.transformer_layers[0], (list, tuple))):
    raise ValueError("a causal encoder must be a BERT encoder (ALBERT's shared layers are not "
                     "run one by one)")
  encoder.causal_pooled_position = pooled_position
  return encoder


def is_causal(encoder):
  """Whether `read_causally` marked `encoder`."""
  return getattr(encoder, "causal_pooled_position", None) is not None


def encoder_outputs(encoder, token_ids, segment_ids, padding_mask, training=False):
  """{"sequence_output", "pooled_output"} of a keras-hub backbone `encoder`
  on int [b, s] inputs: the backbone's own call, or, for an encoder
  `read_causally` marked, its layers under the causal mask and its pooler
  on the token it names."""
  if not is_causal(encoder):
    return encoder({"token_ids": token_ids, "segment_ids": segment_ids,
                    "padding_mask": padding_mask}, training=training)
  padding_mask = tf.cast(padding_mask, tf.int32)
  sequence = causal_sequence_output(encoder, tf.cast(token_ids, tf.int32),
                                    tf.cast(segment_ids, tf.int32), padding_mask,
                                    training=training)
  if encoder.causal_pooled_position == POOLED_LAST:
    # Integer positions: the last real token of each row (0 for an empty one).
    last = tf.maximum(tf.reduce_sum(padding_mask, axis=1) - 1, 0)
    token = tf.gather(sequence, last, batch_dims=1)
  else:
    token = sequence[:, 0]
  return {"sequence_output": sequence, "pooled_output": encoder.get_layer("pooled_dense")(token)}


def pop_dtype(config):
  """Removes "dtype" from a pretrainer's get_config dict `config` and
  returns it as the constructor takes it (a serialized DTypePolicy
  deserialized; a name or None as it is)."""
  dtype = config.pop("dtype", None)
  if isinstance(dtype, dict):
    dtype = keras.dtype_policies.deserialize(dtype)
  return dtype
