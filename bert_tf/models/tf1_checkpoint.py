"""Reading and writing checkpoints of the original TF1 BERT and ALBERT, by name.

The original stores each weight under a fixed name, e.g.
`bert/encoder/layer_3/attention/self/query/kernel` [H, H]. Our model holds the
same numbers in keras-hub layers, some in other shapes:

  original                                   ours
  attention/self/{query,key,value}/kernel    [H, heads, head_size]  (reshape)
  attention/self/{query,key,value}/bias      [heads, head_size]     (reshape)
  attention/output/dense/kernel [H, H]       [heads, head_size, H]  (reshape)
  cls/seq_relationship/output_weights [2, H] Dense kernel [H, 2]    (transpose)
  bert/embeddings/position_embeddings [P, H] first max_position_embeddings rows

Every other variable is the same array. Reshapes are row-major splits of the
hidden axis into (heads, head_size), which is how the original splits heads,
so a round trip original -> bert_tf -> original returns every array bit for bit.

The same for the original ALBERT (google-research/albert): its names are
BERT's for the embeddings (of width E), pooler and heads, plus
`bert/encoder/embedding_hidden_mapping_in/{kernel,bias}` and one set of layer
weights per shared layer, `bert/encoder/transformer/group_<g>/inner_group_<i>/`
+ `attention_1/self/query/kernel`, ..., `attention_1/output/dense/...`,
`LayerNorm/...`, `ffn_1/intermediate/dense/...`,
`ffn_1/intermediate/output/dense/...`, `LayerNorm_1/...`. An ALBERT model
with a BERT checkpoint (or the reverse) is refused with one line.

Optimizer slots (`.../adam_m`, `.../adam_v`) and `global_step` in an original
checkpoint are ignored: loading one starts a fresh optimizer.
"""

import numpy as np
import tensorflow as tf

from bert_tf.io import file_io
from bert_tf.models import albert
from bert_tf.models import hf_config

# Names in original checkpoints that hold no model weight.
_IGNORED_SUFFIXES = ("/adam_m", "/adam_v", "/Momentum", "/ExponentialMovingAverage")
_IGNORED_NAMES = ("global_step", "good_steps", "loss_scale")
# Names of pretraining heads, which a checkpoint saved from a fine-tuning
# model lacks: BERT's cls/...; ELECTRA's generator (all of it, as its
# released discriminators) and discriminator head.
HEAD_PREFIXES = ("cls/", "generator/", "generator_predictions/", "discriminator_predictions/")


# The names of one transformer layer's weights under its prefix: BERT's
# `bert/encoder/layer_<n>/`, ALBERT's
# `bert/encoder/transformer/group_<g>/inner_group_<i>/` (google-research/albert
# modeling.py's attention_ffn_block; its two LayerNorms are unnamed, so TF1
# called them LayerNorm and LayerNorm_1).
_BERT_LAYER_NAMES = {
    "query": "attention/self/query", "key": "attention/self/key",
    "value": "attention/self/value", "attention_output": "attention/output/dense",
    "attention_layer_norm": "attention/output/LayerNorm",
    "intermediate": "intermediate/dense", "output": "output/dense",
    "output_layer_norm": "output/LayerNorm"}
_ALBERT_LAYER_NAMES = {
    "query": "attention_1/self/query", "key": "attention_1/self/key",
    "value": "attention_1/self/value", "attention_output": "attention_1/output/dense",
    "attention_layer_norm": "LayerNorm",
    "intermediate": "ffn_1/intermediate/dense",
    "output": "ffn_1/intermediate/output/dense",
    "output_layer_norm": "LayerNorm_1"}


class _Entry:
  """One original variable: where it lives in our model and how it is shaped.

  Attributes:
    name: the original TF1 variable name.
    variable: our Keras variable.
    kind: "same", "split_heads" (original [..., H] -> ours [..., heads, d]),
      "merge_heads_in" (original [H, H] -> ours [heads, d, H]), "transpose",
      or "rows" (original [P', H], ours its first P rows).
    heads: number of attention heads (for the reshapes).
  """

  def __init__(self, name, variable, kind="same", heads=None):
    self.name = name
    self.variable = variable
    self.kind = kind
    self.heads = heads

  def tf1_shape(self, ours_shape):
    shape = tuple(ours_shape)
    if self.kind == "split_heads":
      return shape[:-2] + (shape[-2] * shape[-1],)
    if self.kind == "merge_heads_in":
      return (shape[0] * shape[1], shape[2])
    if self.kind == "transpose":
      return shape[::-1]
    return shape

  def to_ours(self, value):
    """Original array -> the array to assign to our variable."""
    ours_shape = tuple(self.variable.shape)
    if self.kind == "rows":
      return value[:ours_shape[0]]
    if self.kind == "transpose":
      return value.T
    return value.reshape(ours_shape)

  def to_tf1(self, value):
    """Our variable's value -> the original array."""
    if self.kind == "transpose":
      return np.ascontiguousarray(value.T)
    return value.reshape(self.tf1_shape(value.shape))


def _dense_entries(prefix, layer, kind="same", heads=None, bias_kind=None):
  return [_Entry(prefix + "/kernel", layer.kernel, kind, heads),
          _Entry(prefix + "/bias", layer.bias, bias_kind or kind, heads)]


def _layer_norm_entries(prefix, layer):
  return [_Entry(prefix + "/gamma", layer.gamma), _Entry(prefix + "/beta", layer.beta)]


def _embedding_entries(scope, encoder):
  """word, token-type and position embeddings and their LayerNorm under
  `scope`/embeddings."""
  return ([_Entry(f"{scope}/embeddings/word_embeddings", encoder.token_embedding.embeddings),
           _Entry(f"{scope}/embeddings/token_type_embeddings",
                  encoder.segment_embedding.embeddings),
           _Entry(f"{scope}/embeddings/position_embeddings",
                  encoder.position_embedding.position_embeddings, "rows")]
          + _layer_norm_entries(f"{scope}/embeddings/LayerNorm", encoder.embeddings_layer_norm))


def _layer_entries(prefix, layer, names):
  """The original's names (`names`: _BERT_LAYER_NAMES or _ALBERT_LAYER_NAMES,
  under `prefix`) of one keras-hub TransformerEncoder layer."""
  # pylint: disable=protected-access
  attention = layer._self_attention_layer
  heads = attention.num_heads
  return (_dense_entries(prefix + names["query"], attention._query_dense, "split_heads", heads)
          + _dense_entries(prefix + names["key"], attention._key_dense, "split_heads", heads)
          + _dense_entries(prefix + names["value"], attention._value_dense, "split_heads",
                           heads)
          + _dense_entries(prefix + names["attention_output"], attention._output_dense,
                           "merge_heads_in", heads, bias_kind="same")
          + _layer_norm_entries(prefix + names["attention_layer_norm"],
                                layer._self_attention_layer_norm)
          + _dense_entries(prefix + names["intermediate"], layer._feedforward_intermediate_dense)
          + _dense_entries(prefix + names["output"], layer._feedforward_output_dense)
          + _layer_norm_entries(prefix + names["output_layer_norm"],
                                layer._feedforward_layer_norm))
  # pylint: enable=protected-access


def _transformer_entries(scope, layers):
  """The original's `scope`/encoder/layer_N/... names of keras-hub
  TransformerEncoder layers."""
  entries = []
  for n, layer in enumerate(layers):
    entries += _layer_entries(f"{scope}/encoder/layer_{n}/", layer, _BERT_LAYER_NAMES)
  return entries


def _electra_name_map(model):
  """google-research/electra's names for a models.electra.ElectraPretrainer.

  The shared embeddings are the original's `electra/embeddings/...` (read by
  both networks there too); `embeddings_project` exists where a network's
  hidden size differs from the embedding width; the heads are
  `generator_predictions/...` (dense, LayerNorm, output_bias) and
  `discriminator_predictions/dense` and `/dense_1`. keras-hub's pooler,
  which ELECTRA does not have, and our sample counter have no names.

  Raises:
    ValueError: a model without the discriminator's head (Replace MLM,
      All-Tokens MLM: `electra_mlm`), which the original's names lack.
  """
  if getattr(model, "discriminator_dense", None) is None:
    raise ValueError(f"{model.name}: google-research/electra's checkpoint names have no "
                     "place for a main masked-LM network (replace_mlm, all_tokens_mlm); "
                     "export it as a SavedModel or keras-hub preset")
  encoder = model.encoder
  entries = _embedding_entries("electra", encoder)
  if getattr(encoder, "embeddings_projection", None) is not None:
    entries += _dense_entries("electra/embeddings_project", encoder.embeddings_projection)
  entries += _transformer_entries("electra", encoder.transformer_layers)
  if model.generator_projection is not None:
    entries += _dense_entries("generator/embeddings_project", model.generator_projection)
  entries += _transformer_entries("generator", model.generator_layers)
  head = model.mlm_head
  # pylint: disable=protected-access
  entries += _dense_entries("generator_predictions/dense", head._intermediate_dense)
  entries += _layer_norm_entries("generator_predictions/LayerNorm",
                                 head._intermediate_layer_norm)
  entries.append(_Entry("generator_predictions/output_bias", head._bias))
  # pylint: enable=protected-access
  entries += _dense_entries("discriminator_predictions/dense", model.discriminator_dense)
  entries += _dense_entries("discriminator_predictions/dense_1", model.discriminator_output)
  return entries


def _name_map(model):
  """Lists an _Entry for every weight of a BertPretrainer (or bare encoder).

  Args:
    model: a `modeling.BertPretrainer`, or a `BertBackbone` or
      `AlbertBackbone` (only `bert/` names then), or an
      `electra.ElectraPretrainer` (ELECTRA's names).
  """
  if model_type(model) == hf_config.ELECTRA_MODEL_TYPE:
    return _electra_name_map(model)
  encoder = getattr(model, "encoder", model)
  entries = _embedding_entries("bert", encoder)
  if not albert.is_albert_encoder(encoder):
    entries += _transformer_entries("bert", encoder.transformer_layers)

  def add_dense(prefix, layer, kind="same", heads=None, bias_kind=None):
    entries.extend(_dense_entries(prefix, layer, kind, heads, bias_kind))

  def add_layer_norm(prefix, layer):
    entries.extend(_layer_norm_entries(prefix, layer))

  # pylint: disable=protected-access
  if albert.is_albert_encoder(encoder):
    # ALBERT: the E -> H projection, then one set of names per shared layer
    # (not per use), as google-research/albert's transformer_model scopes them.
    add_dense("bert/encoder/embedding_hidden_mapping_in", encoder.embeddings_projection)
    for g, i, layer in albert.named_shared_layers(encoder):
      entries.extend(_layer_entries(f"bert/encoder/transformer/group_{g}/inner_group_{i}/",
                                    layer, _ALBERT_LAYER_NAMES))
  add_dense("bert/pooler/dense", encoder.pooled_dense)
  mlm_head = getattr(model, "mlm_head", None)
  if mlm_head is not None:
    add_dense("cls/predictions/transform/dense", mlm_head._intermediate_dense)
    add_layer_norm("cls/predictions/transform/LayerNorm",
                   mlm_head._intermediate_layer_norm)
    entries.append(_Entry("cls/predictions/output_bias", mlm_head._bias))
  nsp_head = getattr(model, "nsp_head", None)
  if nsp_head is not None:
    entries.append(_Entry("cls/seq_relationship/output_weights",
                          nsp_head.kernel, "transpose"))
    entries.append(_Entry("cls/seq_relationship/output_bias", nsp_head.bias))
  # pylint: enable=protected-access
  return entries


def _is_ignored(name):
  return name in _IGNORED_NAMES or name.endswith(_IGNORED_SUFFIXES)


def is_tf1_checkpoint(prefix):
  """True when `prefix` (or a directory's latest checkpoint) is an original
  name-based BERT or ELECTRA checkpoint, i.e. has
  `bert/embeddings/word_embeddings` or `electra/embeddings/word_embeddings`.

  Finding the checkpoint a user means (a release directory without a
  "checkpoint" file, say) is `bert_tf.training.checkpoints.resolve_checkpoint`'s
  job; this module only reads what tf.train.load_checkpoint opens."""
  try:
    reader = tf.train.load_checkpoint(prefix)
  except (tf.errors.NotFoundError, tf.errors.DataLossError,
          tf.errors.InvalidArgumentError, FileNotFoundError, ValueError):
    return False
  return any(reader.has_tensor(f"{scope}/embeddings/word_embeddings")
             for scope in ("bert", "electra"))


def load_tf1_checkpoint(model, ckpt_prefix, require_heads=True):
  """Loads an original TF1 BERT checkpoint into a BertPretrainer.

  Args:
    model: a `modeling.BertPretrainer` (or a bare BertBackbone).
    ckpt_prefix: checkpoint prefix (`.../bert_model.ckpt`) or a directory
      (its latest checkpoint); local or gs://.
    require_heads: when False, missing head variables (`HEAD_PREFIXES`: a
      checkpoint saved from a fine-tuning model, an ELECTRA discriminator
      alone) leave our heads as initialized.

  Returns:
    dict with "loaded": original names assigned, "missing_heads": `cls/`
    names absent (only when require_heads=False), "unused": names in the
    checkpoint that are neither weights we know nor optimizer slots.

  Raises:
    FileNotFoundError: no checkpoint there.
    ValueError: a weight missing from the checkpoint, or a shape that does
      not fit the model's config (naming the variable and both shapes).
  """
  prefix = ckpt_prefix
  try:
    reader = tf.train.load_checkpoint(prefix)
  except (tf.errors.NotFoundError, ValueError) as e:
    raise FileNotFoundError(f"cannot read checkpoint {prefix}: {e}") from None
  return _assign(model, reader.get_variable_to_shape_map(), reader.get_tensor,
                 f"checkpoint {prefix}", require_heads)


def load_tf1_weights(model, weights, require_heads=True, optional=(), source="weights"):
  """Like `load_tf1_checkpoint`, from a dict original name -> np.ndarray
  (as `tf1_weights_from_model` returns); for conversions (`hf_checkpoint`)
  and tests.

  optional: name prefixes that may be missing whatever require_heads (left
  as initialized, reported under "missing_heads"), e.g. the pooler of a
  transformers masked-LM model, which has none. source: named in errors.
  """
  shapes = {name: list(np.shape(value)) for name, value in weights.items()}
  return _assign(model, shapes, lambda name: np.asarray(weights[name]),
                 source, require_heads, tuple(optional))


def tf1_shapes(model):
  """dict original name -> original shape of every weight of `model`."""
  return {e.name: e.tf1_shape(e.variable.shape) for e in _name_map(model)}


def model_type(model):
  """Which original names `model` has: transformers' model family
  (hf_config.BERT_MODEL_TYPE, ALBERT_MODEL_TYPE or ELECTRA_MODEL_TYPE)."""
  if hasattr(model, "generator_layers"):
    return hf_config.ELECTRA_MODEL_TYPE
  if albert.is_albert_encoder(getattr(model, "encoder", model)):
    return hf_config.ALBERT_MODEL_TYPE
  return hf_config.BERT_MODEL_TYPE


def checkpoint_model_kind(names):
  """"ALBERT", "BERT" or None (neither layout) for a TF1 checkpoint's names."""
  if any(n.startswith(("bert/encoder/transformer/",
                       "bert/encoder/embedding_hidden_mapping_in/")) for n in names):
    return "ALBERT"
  if any(n.startswith("bert/encoder/layer_") for n in names):
    return "BERT"
  return None


def _check_model_kind(model, names, source):
  """Raises ValueError naming both when the checkpoint's layout (BERT or
  ALBERT) is not the model's."""
  encoder = getattr(model, "encoder", model)
  want = "ALBERT" if albert.is_albert_encoder(encoder) else "BERT"
  have = checkpoint_model_kind(names)
  if have and have != want:
    why = "it has embedding_size" if want == "ALBERT" else "it has no embedding_size"
    raise ValueError(
        f"{source} is an original {have} checkpoint but the config is an {want} "
        f"config ({why}): use the {have} config the checkpoint was trained with")


def _assign(model, shapes, get_tensor, source, require_heads, optional=()):
  """Checks every name and shape, then assigns; see load_tf1_checkpoint."""
  entries = _name_map(model)
  _check_model_kind(model, shapes, source)
  # Check everything before assigning anything, so a mismatch leaves the
  # model untouched.
  plan, missing_heads = [], []
  for entry in entries:
    if entry.name not in shapes:
      if ((not require_heads and entry.name.startswith(HEAD_PREFIXES))
          or (optional and entry.name.startswith(optional))):
        missing_heads.append(entry.name)
        continue
      raise ValueError(f"{source} has no variable {entry.name}")
    ckpt_shape = tuple(shapes[entry.name])
    want = entry.tf1_shape(entry.variable.shape)
    ok = ckpt_shape == want
    if entry.kind == "rows":
      # Released checkpoints have 512 position rows; a model for shorter
      # sequences takes the first max_position_embeddings of them.
      ok = len(ckpt_shape) == 2 and ckpt_shape[1] == want[1] and ckpt_shape[0] >= want[0]
    if not ok:
      raise ValueError(
          f"{source}: variable {entry.name} has shape {list(ckpt_shape)} but "
          f"the model (from its bert_config) needs {list(want)}")
    plan.append(entry)
  for entry in plan:
    value = get_tensor(entry.name)
    entry.variable.assign(entry.to_ours(value).astype(entry.variable.dtype))
  known = {e.name for e in entries}
  unused = sorted(n for n in shapes if n not in known and not _is_ignored(n))
  return {"loaded": [e.name for e in plan], "missing_heads": missing_heads,
          "unused": unused}


def tf1_weights_from_model(model):
  """Our weights as numpy arrays under the original names and shapes.

  Args:
    model: a `modeling.BertPretrainer` (or a bare BertBackbone).

  Returns:
    dict original name -> np.ndarray (the variable's dtype, float32).
  """
  return {e.name: e.to_tf1(np.asarray(e.variable.numpy()))
          for e in _name_map(model)}


def encoder_tf1_weights(encoder, electra=False):
  """An encoder's weights alone (a fine-tuned model's) under the original
  names: `bert/...` with the pooler, or with `electra` an ELECTRA
  discriminator's `electra/...` (no pooler)."""
  if not electra:
    entries = _name_map(encoder)
  else:
    entries = _embedding_entries("electra", encoder)
    if getattr(encoder, "embeddings_projection", None) is not None:
      entries += _dense_entries("electra/embeddings_project", encoder.embeddings_projection)
    entries += _transformer_entries("electra", encoder.transformer_layers)
  return {e.name: e.to_tf1(np.asarray(e.variable.numpy())) for e in entries}


def save_tf1_checkpoint(model, prefix, global_step=None):
  """Writes our weights as an original-format, name-based checkpoint.

  The files are `prefix.index` and `prefix.data-00000-of-00001`, as written
  by a TF1 `tf.train.Saver`; `tf.train.load_checkpoint`, the original's
  `init_from_checkpoint` and `load_tf1_checkpoint` read them by name. Each
  file is written under a temporary name and renamed, and the index last, so
  a prefix whose `.index` exists is complete.

  Args:
    model: a `modeling.BertPretrainer` (or a bare BertBackbone).
    prefix: checkpoint prefix, local or gs://.
    global_step: optional int written as the int64 `global_step`.

  Returns:
    The prefix.
  """
  weights = tf1_weights_from_model(model)
  names = sorted(weights)
  tensors = [tf.constant(weights[n]) for n in names]
  if global_step is not None:
    names.append("global_step")
    tensors.append(tf.constant(int(global_step), tf.int64))
  parent = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
  if parent and not file_io.exists(parent):
    file_io.makedirs(parent)
  # SaveV2 (a one-shard bundle) is exactly what a TF1 Saver writes.
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names,
                    shape_and_slices=[""] * len(names), tensors=tensors)
  return prefix
