"""The names of transformers' BERT, ALBERT and ELECTRA tensors, as a
renaming of the original TF1 names (`tf1_checkpoint`'s map to our variables):

  original TF1                                   transformers
  bert/encoder/layer_3/attention/self/query/kernel [H, H]
                                                 bert.encoder.layer.3.attention.self.query.weight (transposed)
  .../LayerNorm/gamma, beta                      .../LayerNorm.weight, bias
  bert/embeddings/word_embeddings                bert.embeddings.word_embeddings.weight
  cls/predictions/output_bias                    cls.predictions.bias
  cls/seq_relationship/output_weights [2, H]     cls.seq_relationship.weight (as it is)

ALBERT (`albert.`, `predictions.`, `sop_classifier.`) and ELECTRA (the
discriminator, `ElectraForPreTraining`, in the folder; the generator,
`ElectraForMaskedLM`, in its `generator/` subfolder, each with a copy of the
shared embeddings) have their own module names. Dense kernels are stored
[out, in] there, [in, out] in TF1; everything else is the same array. The
tied output embeddings (`cls.predictions.decoder.weight`, ...) are not
stored: transformers ties them on load, as it does for its own files.
"""

import re

import numpy as np

from bert_tf.models import hf_config

GENERATOR_DIR = "generator"
# The sentence-pair head's weight, by model_type: a folder whose
# architecture says masked LM may still hold it (bert-base-uncased's does).
SENTENCE_HEAD = {"bert": "cls.seq_relationship.weight",
                 "albert": "sop_classifier.classifier.weight"}

# ALBERT's layer names under `.../inner_group_<i>/` (tf1_checkpoint's) ->
# transformers' under `albert_layers.<i>.`.
_ALBERT_LAYER = {"attention_1/self/query": "attention.query",
                 "attention_1/self/key": "attention.key",
                 "attention_1/self/value": "attention.value",
                 "attention_1/output/dense": "attention.dense",
                 "LayerNorm": "attention.LayerNorm",
                 "ffn_1/intermediate/dense": "ffn",
                 "ffn_1/intermediate/output/dense": "ffn_output",
                 "LayerNorm_1": "full_layer_layer_norm"}
_ALBERT_LAYER_RE = re.compile(
    r"^bert/encoder/transformer/group_(\d+)/inner_group_(\d+)/(.+)/([a-z]+)$")


def _leaf(module, var):
  """(transformers name, transposed?) of a module path and a TF1 variable name."""
  if var == "kernel":
    return module + ".weight", True
  return module + "." + {"gamma": "weight", "beta": "bias"}.get(var, var), False


def _bert_like(name, scope, hf_scope):
  """BERT's and ELECTRA's encoder names: `scope`/... -> `hf_scope`...."""
  rest = name[len(scope) + 1:]
  if rest.startswith("embeddings/") and rest.endswith("_embeddings"):
    return f"{hf_scope}.{rest.replace('/', '.')}.weight", False
  module, var = rest.rsplit("/", 1)
  module = re.sub(r"layer_(\d+)", r"layer.\1", module).replace("/", ".")
  return _leaf(f"{hf_scope}.{module}", var)


def _bert_name(name):
  if name == "cls/predictions/output_bias":
    return "cls.predictions.bias", False
  if name == "cls/seq_relationship/output_weights":
    return "cls.seq_relationship.weight", False
  if name == "cls/seq_relationship/output_bias":
    return "cls.seq_relationship.bias", False
  if name.startswith("cls/"):
    module, var = name.rsplit("/", 1)
    return _leaf(module.replace("/", "."), var)
  return _bert_like(name, "bert", "bert")


def _albert_name(name):
  fixed = {"cls/predictions/output_bias": ("predictions.bias", False),
           "cls/seq_relationship/output_weights": ("sop_classifier.classifier.weight", False),
           "cls/seq_relationship/output_bias": ("sop_classifier.classifier.bias", False)}
  if name in fixed:
    return fixed[name]
  match = _ALBERT_LAYER_RE.match(name)
  if match:
    group, inner, module, var = match.groups()
    return _leaf(f"albert.encoder.albert_layer_groups.{group}.albert_layers.{inner}."
                 f"{_ALBERT_LAYER[module]}", var)
  module, var = name.rsplit("/", 1)
  if module == "bert/embeddings" and var.endswith("_embeddings"):
    return f"albert.embeddings.{var}.weight", False
  for tf1, hf in (("cls/predictions/transform/", "predictions."),
                  ("bert/pooler/dense", "albert.pooler"), ("bert/", "albert.")):
    if module.startswith(tf1):
      return _leaf(hf + module[len(tf1):].replace("/", "."), var)
  raise ValueError(f"no transformers name for ALBERT weight {name}")


def _electra_names(name):
  """[(folder, transformers name, transposed?)] of one ELECTRA TF1 name: the
  shared embeddings go to both folders."""
  if name.startswith("electra/embeddings/"):
    hf, t = _bert_like(name, "electra", "electra")
    return [("", hf, t), (GENERATOR_DIR, hf, t)]
  if name.startswith("electra/"):
    return [("", *_bert_like(name, "electra", "electra"))]
  if name.startswith("generator/"):
    return [(GENERATOR_DIR, *_bert_like(name, "generator", "electra"))]
  if name == "generator_predictions/output_bias":
    return [(GENERATOR_DIR, "generator_lm_head.bias", False)]
  module, var = name.rsplit("/", 1)
  if module == "discriminator_predictions/dense_1":
    module = "discriminator_predictions/dense_prediction"
  folder = GENERATOR_DIR if module.startswith("generator_predictions/") else ""
  return [(folder, *_leaf(module.replace("/", "."), var))]


def transformers_names(tf1_names, model_type):
  """dict TF1 name -> [(folder, transformers name, transposed?)] for the
  TF1 names of a model of `model_type` ("bert", "albert", "electra");
  folder is "" or GENERATOR_DIR (ELECTRA's generator)."""
  if model_type == "electra":
    return {n: _electra_names(n) for n in tf1_names}
  fn = _albert_name if model_type == "albert" else _bert_name
  return {n: [("", *fn(n))] for n in tf1_names}


def to_hf(tf1_weights, model_type, architecture):
  """{folder: {transformers name: array}} of TF1-named weights (as
  `tf1_checkpoint.tf1_weights_from_model` gives), for `architecture` (a
  masked-LM architecture drops the pooler and any sentence head)."""
  out = {}
  for name, places in transformers_names(tf1_weights, model_type).items():
    if architecture in hf_config.NO_POOLER and (name.startswith(("bert/pooler/", "cls/seq_relationship/"))):
      continue
    for folder, hf_name, transposed in places:
      value = tf1_weights[name]
      out.setdefault(folder, {})[hf_name] = value.T if transposed else value
  return out


def from_hf(tf1_shapes, model_type, weights):
  """The TF1-named arrays for the names in `tf1_shapes` (name -> shape),
  read from `weights` ({folder: {transformers name: array}}); a name whose
  tensor is absent is left out (the caller decides what may be missing).

  Raises:
    ValueError: a tensor whose shape is not the one the name needs.
  """
  out = {}
  for name, places in transformers_names(tf1_shapes, model_type).items():
    folder, hf_name, transposed = places[0]
    value = weights.get(folder, {}).get(hf_name)
    if value is None:
      continue
    value = value.T if transposed else value
    want = tuple(tf1_shapes[name])
    rows_ok = (name.endswith("position_embeddings") and value.ndim == 2
               and value.shape[1] == want[1] and value.shape[0] >= want[0])
    if value.shape != want and not rows_ok:
      where = f"{folder}/model.safetensors" if folder else "model.safetensors"
      raise ValueError(f"{where}: tensor {hf_name} has shape {list(np.shape(weights[folder][hf_name]))}"
                       f" but the model (from its config) needs {list(want[::-1] if transposed else want)}")
    out[name] = value
  return out
