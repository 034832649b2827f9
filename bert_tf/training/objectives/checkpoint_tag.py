"""What a checkpoint says it was trained for, saved beside the weights.

A training checkpoint holds two string variables besides model, optimizer
and step, so a checkpoint prefix copied anywhere still tells export,
fine-tuning and a distillation which heads and networks it has:

  objective          the objective's name ("mlm_sop", "electra", ...)
  objective_options  JSON of its options dataclass's fields, sorted keys
                     (only for an objective with options: ELECTRA's
                     `ElectraSettings`, distillation's `DistillSettings`)

Both are metadata, not weights: kept on the host CPU, outside any strategy
scope, never restored into the model (`registry.from_checkpoint` reads them).

A transformers folder says it by its architecture (`HF_OBJECTIVES`; an
ELECTRA discriminator's generator/ folder gives the generator's config).

Read as well: checkpoints without the variables (the original's TF1 ones,
bert_tf runs before objectives existed: MLM + NSP), and those of earlier
bert_tf runs whose one `objective` variable held the name and the options
JSON after a space ("electra {...}").
"""

import json

import tensorflow as tf

from bert_tf.models import hf_checkpoint as hf
from bert_tf.models import hf_names

from bert_tf.training import objective_names as names

CHECKPOINT_KEY = "objective"
OPTIONS_KEY = "objective_options"
# The objective of a checkpoint that does not say: the original's.
UNTAGGED = names.BERT_NAMES[names.DEFAULT_SENTENCE_TASK]


def _string_variable(value, name):
  with tf.device("/cpu:0"):
    return tf.Variable(value, trainable=False, dtype=tf.string, name=name)


def checkpoint_variables(objective):
  """{checkpoint key: string tf.Variable} for tf.train.Checkpoint(**...):
  the name, and the options JSON when the objective has options."""
  variables = {CHECKPOINT_KEY: _string_variable(objective.name, CHECKPOINT_KEY)}
  options = objective.options_json()
  if options is not None:
    variables[OPTIONS_KEY] = _string_variable(options, OPTIONS_KEY)
  return variables


def _load_string(prefix, key):
  try:
    value = tf.train.load_variable(prefix, f"{key}/.ATTRIBUTES/VARIABLE_VALUE")
  except (tf.errors.NotFoundError, ValueError):
    return None
  return value.decode() if isinstance(value, bytes) else str(value)


# The objective of each transformers architecture we read.
HF_OBJECTIVES = {hf.BERT_PRETRAINING: names.BERT_NAMES["nsp"],
                 hf.BERT_MASKED_LM: names.BERT_NAMES["none"],
                 hf.ALBERT_PRETRAINING: names.BERT_NAMES["sop"],
                 hf.ALBERT_MASKED_LM: names.BERT_NAMES["none"],
                 hf.ELECTRA_PRETRAINING: names.ELECTRA,
                 # Encoders alone: the heads of the family's first objective,
                 # which a warm start leaves initialized.
                 "BertModel": names.BERT_NAMES["nsp"], "AlbertModel": names.BERT_NAMES["sop"],
                 "ElectraModel": names.ELECTRA}
# Fine-tuned models (BertForSequenceClassification, ...): their encoders, as
# the family's encoder alone.
HF_OBJECTIVES.update({a: HF_OBJECTIVES[{"bert": "BertModel", "albert": "AlbertModel",
                                        "electra": "ElectraModel"}[m]]
                      for a, (m, _) in hf.HEAD_ARCHITECTURES.items()})
# A masked-LM folder that holds its sentence head after all (bert-base-uncased
# says BertForMaskedLM and keeps its NSP head) trains that head too.
_WITH_SENTENCE_HEAD = {"bert": names.BERT_NAMES["nsp"], "albert": names.BERT_NAMES["sop"]}


def _hf_tag(folder):
  info = hf.read_hf_model(folder)
  if info.architecture not in HF_OBJECTIVES:
    raise ValueError(f"{folder}: an {info.architecture} is not a pretraining model "
                     f"(read one of {', '.join(HF_OBJECTIVES)})")
  options = None
  if info.generator_config is not None:
    gen = info.generator_config.to_dict()
    gen.pop("embedding_size", None)  # the discriminator's, shared
    options = json.dumps({"generator_config": gen}, sort_keys=True)
  name = HF_OBJECTIVES[info.architecture]
  model_type = hf.MODEL_TYPES[info.architecture]
  head = hf_names.SENTENCE_HEAD.get(model_type)
  if name == names.BERT_NAMES["none"] and head in hf.tensor_names(folder):
    name = _WITH_SENTENCE_HEAD[model_type]
  return name, options


def read_tag(prefix):
  """(objective name, its options JSON or None) of the checkpoint `prefix`;
  (UNTAGGED, None) for a checkpoint that does not say."""
  if hf.is_hf_folder(prefix):
    return _hf_tag(prefix)
  name = _load_string(prefix, CHECKPOINT_KEY)
  if name is None:
    return UNTAGGED, None
  name, _, inline_options = name.partition(" ")
  return name, _load_string(prefix, OPTIONS_KEY) or inline_options or None
