"""Hugging Face transformers' config.json, to and from our BertConfig.

The keys we use have the same names and meanings in transformers' BERT,
ALBERT and ELECTRA configs, but one: `hidden_act`. transformers' "gelu" is
the exact (erf) GELU and "gelu_new" the tanh one; ours (the original's)
"gelu" is the tanh one and "gelu_exact" the erf one (`activations`). The
architecture (`architectures` in config.json) says which heads a folder
holds; `hf_checkpoint` reads and writes the folders.
"""

import numpy as np

from bert_tf.models import activations
from bert_tf.models.config import BertConfig

LAYER_NORM_EPSILON = 1e-12

# transformers' model families (config.json's `model_type`): which original
# weight names and transformers classes a network has
# (tf1_checkpoint.model_type). Data of the transformers format, not
# objective names: ELECTRA_MODEL_TYPE is any network with ELECTRA's
# generator-and-discriminator names, whatever objective trained it.
BERT_MODEL_TYPE = "bert"
ALBERT_MODEL_TYPE = "albert"
ELECTRA_MODEL_TYPE = "electra"

# The architectures we read and write, the model_type of each, and those
# whose encoder has no pooler (the masked-LM ones, ELECTRA's).
BERT_PRETRAINING = "BertForPreTraining"
BERT_MASKED_LM = "BertForMaskedLM"
ALBERT_PRETRAINING = "AlbertForPreTraining"
ALBERT_MASKED_LM = "AlbertForMaskedLM"
ELECTRA_PRETRAINING = "ElectraForPreTraining"
ELECTRA_MASKED_LM = "ElectraForMaskedLM"
# Encoders alone (many published domain models are saved so), read only: their
# tensors lack the prefix the pretraining classes put before the encoder's.
BASE_MODELS = {"BertModel": "bert.", "AlbertModel": "albert.", "ElectraModel": "electra."}
MODEL_TYPES = {BERT_PRETRAINING: BERT_MODEL_TYPE, BERT_MASKED_LM: BERT_MODEL_TYPE,
               ALBERT_PRETRAINING: ALBERT_MODEL_TYPE, ALBERT_MASKED_LM: ALBERT_MODEL_TYPE,
               ELECTRA_PRETRAINING: ELECTRA_MODEL_TYPE, ELECTRA_MASKED_LM: ELECTRA_MODEL_TYPE,
               "BertModel": BERT_MODEL_TYPE, "AlbertModel": ALBERT_MODEL_TYPE,
               "ElectraModel": ELECTRA_MODEL_TYPE}
# Fine-tuned models: the family's class name + the task's suffix; the head's
# module (a Linear: weight [num_labels, hidden], bias) and whether it reads
# the pooled output (sequence classification) or every position's vector.
SEQUENCE_CLASSIFICATION = "ForSequenceClassification"
QUESTION_ANSWERING = "ForQuestionAnswering"
TOKEN_CLASSIFICATION = "ForTokenClassification"
HEAD_MODULES = {SEQUENCE_CLASSIFICATION: "classifier", QUESTION_ANSWERING: "qa_outputs",
                TOKEN_CLASSIFICATION: "classifier"}
_FAMILY = {BERT_MODEL_TYPE: "Bert", ALBERT_MODEL_TYPE: "Albert", ELECTRA_MODEL_TYPE: "Electra"}
HEAD_ARCHITECTURES = {_FAMILY[m] + task: (m, task) for m in _FAMILY for task in HEAD_MODULES}
MODEL_TYPES.update({a: m for a, (m, _) in HEAD_ARCHITECTURES.items()})
NO_POOLER = (BERT_MASKED_LM, ALBERT_MASKED_LM, ELECTRA_PRETRAINING, ELECTRA_MASKED_LM,
             "ElectraModel") + tuple(a for a, (m, task) in HEAD_ARCHITECTURES.items()
                                     if m == ELECTRA_MODEL_TYPE
                                     or task != SEQUENCE_CLASSIFICATION)
# transformers' hidden_act <-> ours. "gelu_pytorch_tanh" and "gelu_fast" are
# other implementations of the tanh GELU.
_ACT_FROM_HF = {"gelu": activations.EXACT, "gelu_new": activations.TANH,
                "gelu_pytorch_tanh": activations.TANH}
_ACT_TO_HF = {activations.TANH: "gelu_new", activations.EXACT: "gelu"}
# BertConfig keys with the same name and meaning in transformers' configs.
_SHARED_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "hidden_dropout_prob", "attention_probs_dropout_prob",
                "max_position_embeddings", "type_vocab_size", "initializer_range")
ALBERT_KEYS = ("embedding_size", "num_hidden_groups", "inner_group_num")



def bert_config_from_hf(d, source="config.json"):
  """Our BertConfig of a transformers config dict (BERT, ALBERT or ELECTRA).

  Raises:
    ValueError: a setting our encoder does not run (naming the key): another
      layer_norm_eps, position_embedding_type, activation, a decoder.
  """
  for key, want in (("layer_norm_eps", LAYER_NORM_EPSILON),):
    if key in d and not np.isclose(float(d[key]), want, rtol=1e-6, atol=0):
      raise ValueError(f"{source}: {key}={d[key]} is not supported (bert_tf's encoder uses "
                       f"{want:g}, as the original BERT)")
  if d.get("position_embedding_type", "absolute") != "absolute":
    raise ValueError(f"{source}: position_embedding_type={d['position_embedding_type']!r} is "
                     f"not supported (only absolute positions, as the original BERT)")
  if d.get("is_decoder") or d.get("add_cross_attention"):
    raise ValueError(f"{source}: is_decoder/add_cross_attention: a decoder is not a BERT "
                     "encoder")
  act = d.get("hidden_act", "gelu")
  if act not in _ACT_FROM_HF:
    raise ValueError(f"{source}: hidden_act={act!r} is not supported (bert_tf runs "
                     f"transformers' {', '.join(sorted(_ACT_FROM_HF))})")
  fields = {k: d[k] for k in _SHARED_KEYS if k in d}
  fields["hidden_act"] = _ACT_FROM_HF[act]
  model_type = d.get("model_type")
  if model_type == ALBERT_MODEL_TYPE:
    fields.update({k: d[k] for k in ALBERT_KEYS if k in d})
  elif model_type == ELECTRA_MODEL_TYPE and d.get("embedding_size", d.get("hidden_size")) != d.get(
      "hidden_size"):
    # ELECTRA-small's factorized embeddings (our configs say so by the key).
    fields["embedding_size"] = d["embedding_size"]
  return BertConfig.from_dict(fields, source=source)


def architecture_for(model_type, sentence_head):
  """The transformers class of our model: BERT/ALBERT pretraining with a
  sentence-pair head, masked LM without; ELECTRA's discriminator."""
  if model_type == ELECTRA_MODEL_TYPE:
    return ELECTRA_PRETRAINING
  if model_type == ALBERT_MODEL_TYPE:
    return ALBERT_PRETRAINING if sentence_head else ALBERT_MASKED_LM
  return BERT_PRETRAINING if sentence_head else BERT_MASKED_LM


def head_architecture(model_type, task):
  """The transformers class of a fine-tuned model: e.g. ("bert",
  SEQUENCE_CLASSIFICATION) -> "BertForSequenceClassification"."""
  return _FAMILY[model_type] + task


def label_fields(labels, regression=False):
  """config.json's num_labels, id2label, label2id and problem_type of a
  classifier's labels (a regression has one output, no labels)."""
  if regression:
    return {"num_labels": 1, "id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0},
            "problem_type": "regression"}
  labels = [str(label) for label in labels]
  return {"num_labels": len(labels), "id2label": {str(i): l for i, l in enumerate(labels)},
          "label2id": {l: i for i, l in enumerate(labels)},
          "problem_type": "single_label_classification"}


def config_json(config: BertConfig, architecture, special_ids):
  """transformers' config.json dict of our BertConfig.

  Args:
    config: the model's BertConfig (ELECTRA: the discriminator's or the
      generator's).
    architecture: a MODEL_TYPES key.
    special_ids: dict of the vocab's "[PAD]", "[CLS]", "[SEP]" ids (those
      present).

  Raises:
    ValueError: an activation transformers does not have under our meaning.
  """
  model_type = MODEL_TYPES[architecture]
  if config.hidden_act not in _ACT_TO_HF:
    raise ValueError(f"hidden_act={config.hidden_act!r} has no transformers equivalent")
  d = {"architectures": [architecture], "model_type": model_type}
  d.update({k: getattr(config, k) for k in _SHARED_KEYS})
  d["hidden_act"] = _ACT_TO_HF[config.hidden_act]
  d["layer_norm_eps"] = LAYER_NORM_EPSILON
  d["position_embedding_type"] = "absolute"
  d["tie_word_embeddings"] = True
  d["dtype"] = "float32"
  d["pad_token_id"] = special_ids.get("[PAD]", 0)
  if model_type == ALBERT_MODEL_TYPE:
    d.update({k: config.albert_value(k) for k in ALBERT_KEYS})
    d["classifier_dropout_prob"] = config.hidden_dropout_prob
    d["bos_token_id"] = special_ids.get("[CLS]")
    d["eos_token_id"] = special_ids.get("[SEP]")
  if model_type == ELECTRA_MODEL_TYPE:
    d["embedding_size"] = config.embedding_size or config.hidden_size
  return d


def tokenizer_config(model_type, do_lower_case, max_length, pad_token="[PAD]",
                     sentencepiece=False):
  """tokenizer_config.json: a WordPiece (BertTokenizer) on vocab.txt for
  every family (an ALBERT trained here on a WordPiece vocab too;
  ElectraTokenizer is BertTokenizer's rules), or with `sentencepiece` an
  ALBERT's AlbertTokenizer on spiece.model."""
  if sentencepiece:
    return {"tokenizer_class": "AlbertTokenizer", "do_lower_case": bool(do_lower_case),
            "remove_space": True, "keep_accents": False, "model_max_length": int(max_length),
            "unk_token": "<unk>", "pad_token": "<pad>", "cls_token": "[CLS]",
            "sep_token": "[SEP]", "mask_token": "[MASK]", "bos_token": "[CLS]",
            "eos_token": "[SEP]"}
  electra = model_type == ELECTRA_MODEL_TYPE
  return {"tokenizer_class": "ElectraTokenizer" if electra else "BertTokenizer",
          "do_lower_case": bool(do_lower_case), "strip_accents": None,
          "tokenize_chinese_chars": True, "model_max_length": int(max_length),
          "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": pad_token,
          "cls_token": "[CLS]", "mask_token": "[MASK]"}


def differing_keys(given: BertConfig, hf: BertConfig):
  """The model-shaping keys on which a given BertConfig and a folder's
  disagree (dropout and initializer_range may differ: they shape training,
  not the weights; a given max_position_embeddings may be smaller: the
  first rows are read)."""
  keys = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
          "intermediate_size", "hidden_act", "type_vocab_size") + ALBERT_KEYS
  def value(config, key):
    return config.albert_value(key) if key in ALBERT_KEYS and config.is_albert else getattr(
        config, key)
  out = [k for k in keys if value(given, k) != value(hf, k)]
  if given.max_position_embeddings > hf.max_position_embeddings:
    out.append("max_position_embeddings")
  return out
