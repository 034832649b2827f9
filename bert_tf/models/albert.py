"""The ALBERT encoder (google-research/albert), for an ALBERT BertConfig.

`keras_hub.models.AlbertBackbone` computes the original ALBERT forward pass:
token + position + segment embeddings of width E (`embedding_size`), summed,
LayerNorm (eps 1e-12), one dense E -> H (`embedding_hidden_mapping_in`), then
`num_hidden_layers` post-LN transformer layers whose weights are shared
within each of `num_hidden_groups` groups (layer l uses group
l * groups // layers, as the original's `int(l / layers * groups)` when
groups divide layers), each running `inner_group_num` distinct blocks; a tanh
pooler on [CLS]. Every released ALBERT has one group and one inner block: a
single layer's weights used 12 (base) or 24 (large) times.

`modeling.build_encoder` calls `build_encoder` here for an ALBERT config, so
`modeling.BertPretrainer` runs unchanged on top: its MLM head, tied to the
backbone's E-wide token embedding, is dense(H -> E, tanh GELU) ->
LayerNorm -> logits against the word embeddings + bias, which is ALBERT's
`cls/predictions` head; its Dense(2) on the pooled output is ALBERT's SOP
head (`cls/seq_relationship`, same shape and names as BERT's NSP).
"""

from absl import logging
import keras
import keras_hub

from bert_tf.models import activations
from bert_tf.models import precision
from bert_tf.models.config import BertConfig

# What keras-hub's backbones hard-code; `configure_encoder` re-initializes
# when the config asks for another stddev.
_KERAS_HUB_INITIALIZER_RANGE = 0.02
# ALBERT keys that no released ALBERT code reads, with the value meaning "off".
_UNREAD_KEYS = {"down_scale_factor": 1, "net_structure_type": 0, "gap_size": 0,
                "num_memory_blocks": 0, "layers_to_keep": ()}


def check_buildable(config: BertConfig):
  """Raises ValueError (one line) for an ALBERT config AlbertBackbone cannot
  build as the original would; logs a warning for keys no code reads."""
  if not config.is_albert:
    raise ValueError("not an ALBERT config: it has no embedding_size")
  activations.check(config.hidden_act, "ALBERT models")
  groups = config.albert_value("num_hidden_groups")
  if config.num_hidden_layers % groups:
    # The original then gives groups unequal numbers of layers; AlbertBackbone
    # only divides them evenly.
    raise ValueError(
        f"num_hidden_layers={config.num_hidden_layers} is not a multiple of "
        f"num_hidden_groups={groups}: keras-hub's AlbertBackbone shares layers "
        f"only in equal groups")
  if config.embedding_size == config.hidden_size:
    # The original then has no embedding_hidden_mapping_in at all;
    # AlbertBackbone always projects.
    raise ValueError(
        f"embedding_size={config.embedding_size} equals hidden_size: the original "
        f"ALBERT then has no embedding projection but keras-hub's AlbertBackbone "
        f"always has one; use an embedding_size other than hidden_size")
  for name, off in _UNREAD_KEYS.items():
    value = config.albert_value(name)
    if value != off:
      logging.warning("ALBERT config key %s=%r has no effect: google-research/"
                      "albert's model does not read it either", name, value)


def build_encoder(config: BertConfig, dtype=None):
  """Builds the ALBERT encoder for an ALBERT `config`.

  Args:
    config: a BertConfig with `is_albert`.
    dtype: a Keras dtype policy or its name; None uses the global policy.

  Returns:
    A built `keras_hub.models.AlbertBackbone` named "albert_encoder": inputs
    int32 [batch, seq] `token_ids`, `segment_ids`, `padding_mask`; outputs
    `sequence_output` [batch, seq, H] and `pooled_output` [batch, H]. Its
    `token_embedding` is [vocab_size, embedding_size].

  Raises:
    ValueError: see `check_buildable`.

  As for BERT, the one dropout rate AlbertBackbone takes is
  `hidden_dropout_prob` and the attention-probability rate is set on the
  layers afterwards; rebuild encoders from the BertConfig, not from a
  serialized Keras config.
  """
  check_buildable(config)
  encoder = keras_hub.models.AlbertBackbone(
      vocabulary_size=config.vocab_size,
      num_layers=config.num_hidden_layers,
      num_heads=config.num_attention_heads,
      embedding_dim=config.embedding_size,
      hidden_dim=config.hidden_size,
      intermediate_dim=config.intermediate_size,
      num_groups=config.albert_value("num_hidden_groups"),
      num_inner_repetitions=config.albert_value("inner_group_num"),
      dropout=config.hidden_dropout_prob,
      max_sequence_length=config.max_position_embeddings,
      num_segments=config.type_vocab_size,
      dtype=dtype,
      name="albert_encoder")
  configure_encoder(encoder, shared_layers(encoder), config)
  return encoder


def configure_encoder(encoder, layers, config: BertConfig):
  """Sets on a built keras-hub backbone what its constructor cannot take from
  `config`, for the BERT (`modeling.build_encoder`) and ALBERT encoders.

  Args:
    encoder: the backbone, changed in place.
    layers: its distinct TransformerEncoder layers.
    config: the BertConfig. When attention_probs_dropout_prob differs from
      hidden_dropout_prob (the one rate the backbone takes), each layer's
      attention-probability dropout gets it; when initializer_range is not
      keras-hub's 0.02, every kernel and embedding is drawn again from
      TruncatedNormal(initializer_range). `hidden_act` "gelu_exact" sets the
      exact GELU (the backbones hard-code the tanh one). Every layer's attention softmax
      keeps float32 statistics under mixed precision (`precision`).
  """
  precision.float32_attention_softmax(layers)
  activations.set_feedforward_activation(layers, config.hidden_act)
  if config.attention_probs_dropout_prob != config.hidden_dropout_prob:
    rate = config.attention_probs_dropout_prob
    for layer in layers:
      attention = layer._self_attention_layer  # pylint: disable=protected-access
      # MultiHeadAttention reads `_dropout` to decide whether to drop at
      # all, and its Dropout layer's `rate` for how much.
      attention._dropout = rate  # pylint: disable=protected-access
      attention._dropout_layer.rate = rate  # pylint: disable=protected-access
  if config.initializer_range != _KERAS_HUB_INITIALIZER_RANGE:
    init = keras.initializers.TruncatedNormal(stddev=config.initializer_range)
    for v in encoder.weights:
      if v.path.endswith("/kernel") or v.path.endswith("/embeddings"):
        v.assign(init(v.shape, dtype=v.dtype))


def is_albert_encoder(encoder):
  """True for an AlbertBackbone (what `build_encoder` returns)."""
  return isinstance(encoder, keras_hub.models.AlbertBackbone)


def shared_layers(encoder):
  """The distinct TransformerEncoder layers of an AlbertBackbone, in the
  original's order: group 0's inner blocks 0, 1, ..., then group 1's, ..."""
  return [layer for _, _, layer in named_shared_layers(encoder)]


def named_shared_layers(encoder):
  """[(group index, inner index, TransformerEncoder)] of an AlbertBackbone."""
  return [(g, i, layer) for g, group in enumerate(encoder.transformer_layers)
          for i, layer in enumerate(group)]
