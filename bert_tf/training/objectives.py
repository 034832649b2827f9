"""Pretraining objectives: the one place an objective is registered.

An objective is everything that changes when the pretraining task changes:

  features       the record features its batches must carry (the records'
                 manifest says which the data holds: `sentence_task`)
  build_model    the Keras model and its heads (in `bert_tf/models/`);
                 `trainable_variables` the ones its loss trains
  loss           additive sums of a batch (`loss_sums`), the normalizers
                 all-reduced across replicas (`global_counts`), this
                 replica's share of the loss (`replica_loss`), metrics from
                 summed sums (`metrics`); train and eval share all four
  metric_keys    what TensorBoard and eval_results.txt report, in order
  signatures     the text signatures the SavedModel export adds beside
                 `pretraining`/`encode` (built in `bert_tf/serving/export.py`)

`OBJECTIVES` maps each name to its object; `resolve` picks one from
`--objective` and the records' sentence task. The training loop, the
evaluation, the export and the checkpoint call only these methods, so a new
objective is a new class and a new entry here (plus its head in `models/`
and, if it has a new kind of text signature, that signature in `serving/`).

The BERT family so far:

  mlm_nsp  BERT: masked LM + next-sentence prediction (the original)
  mlm_sop  ALBERT: masked LM + sentence-order prediction
  mlm      RoBERTa: masked LM alone
"""

import tensorflow as tf

from bert_tf.models import modeling
from bert_tf.training import losses

# --objective values: a family of objectives; the records' sentence task
# picks the member (BERT's sentence tasks are properties of the data).
FAMILIES = ("bert",)
# Records written before sentence tasks existed, and the original's, are NSP.
DEFAULT_SENTENCE_TASK = "nsp"
_INPUT_FEATURES = ("input_ids", "input_mask", "segment_ids")
_MLM_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")


class BertObjective:
  """Masked LM with an optional sentence-pair task (NSP or SOP) on one encoder.

  The loss is the original's: sum(w * CE) / (sum(w) + 1e-5) over the masked
  positions, plus the mean cross-entropy of the 2-way sentence-pair head;
  see `losses`.

  Attributes:
    name: "mlm_nsp", "mlm_sop" or "mlm".
    sentence_task: "nsp", "sop" or "none" (the records' `sentence_task`).
    sentence_name: metric prefix of the sentence task ("next_sentence",
      "sentence_order") or None.
    features: the record features a batch must carry.
    sum_keys: keys of `loss_sums`.
    metric_keys: keys of `metrics`, "loss" first.
    signatures: text signatures of an export ("fill_mask", and
      "next_sentence" or "sentence_order").
  """

  _NAMES = {"nsp": "mlm_nsp", "sop": "mlm_sop", "none": "mlm"}
  _SENTENCE_NAMES = {"nsp": "next_sentence", "sop": "sentence_order", "none": None}
  # Short labels of the progress line, as the original's log prints them.
  _SHORT = {"next_sentence": "nsp", "sentence_order": "sop"}

  def __init__(self, sentence_task):
    if sentence_task not in self._NAMES:
      raise ValueError(f"sentence_task={sentence_task!r} is not one of "
                       f"{', '.join(self._NAMES)}")
    self.sentence_task = sentence_task
    self.name = self._NAMES[sentence_task]
    self.sentence_name = self._SENTENCE_NAMES[sentence_task]
    has_sentence = self.sentence_name is not None
    self.features = (_INPUT_FEATURES + _MLM_FEATURES
                     + (("next_sentence_labels",) if has_sentence else ()))
    self.sum_keys = losses.SUM_KEYS if has_sentence else losses.MLM_SUM_KEYS
    self.metric_keys = ("loss", "masked_lm_loss", "masked_lm_accuracy")
    if has_sentence:
      self.metric_keys += (f"{self.sentence_name}_loss", f"{self.sentence_name}_accuracy")
    self.signatures = ("fill_mask",) + ((self.sentence_name,) if has_sentence else ())

  def __repr__(self):
    return f"<objective {self.name}>"

  def build_model(self, bert_config, dtype=None):
    """The pretrainer: encoder, MLM head and (unless MLM alone) the 2-way
    sentence-pair head, all weights created."""
    model = modeling.BertPretrainer(bert_config, dtype=dtype,
                                    sentence_head=self.sentence_name is not None)
    model.objective_name = self.name  # read back by `of_model` (export)
    return model

  def trainable_variables(self, model):
    """The variables the loss trains: all of the model's trainable ones,
    less the encoder's pooler when no sentence-pair head reads it (MLM
    alone, as RoBERTa, whose pretraining has no pooler): it gets no
    gradient, and weight decay alone would shrink it."""
    variables = model.trainable_variables
    if self.sentence_name is not None:
      return variables
    try:
      pooler = model.encoder.get_layer("pooled_dense")
    except ValueError:
      return variables
    unused = {id(v) for v in pooler.trainable_variables}
    return [v for v in variables if id(v) not in unused]

  def loss_sums(self, outputs, features):
    """Additive float32 sums of a batch (`sum_keys`)."""
    return losses.loss_sums(outputs, features, sentence_task=self.sentence_name is not None)

  def global_counts(self, features):
    """The loss normalizers over the global batch (inside `strategy.run`):
    the masked-LM weight sum and the example count, no gradient."""
    weight_sum, batch_size = losses.global_counts(features)
    return {"weight_sum": weight_sum, "batch_size": batch_size}

  def replica_loss(self, sums, counts):
    """This replica's share of the global batch's loss (float32 scalar)."""
    return losses.replica_loss(sums, counts["weight_sum"], counts["batch_size"])

  def metrics(self, sums, mlm_epsilon=losses.MLM_EPSILON):
    """`metric_keys` -> scalar from summed sums (mlm_epsilon 0 for eval)."""
    return losses.metrics_from_sums(sums, mlm_epsilon=mlm_epsilon,
                                    sentence_name=self.sentence_name or "next_sentence")

  def progress_fields(self):
    """(label, metric key) pairs of the progress line, losses then accuracies."""
    fields = [("loss", "loss"), ("mlm", "masked_lm_loss")]
    accuracies = [("mlm_acc", "masked_lm_accuracy")]
    if self.sentence_name:
      short = self._SHORT[self.sentence_name]
      fields.append((short, f"{self.sentence_name}_loss"))
      accuracies.append((f"{short}_acc", f"{self.sentence_name}_accuracy"))
    return fields + accuracies


OBJECTIVES = {o.name: o for o in (BertObjective("nsp"), BertObjective("sop"),
                                  BertObjective("none"))}


def get(name):
  """The objective registered as `name`; ValueError naming the choices."""
  if name not in OBJECTIVES:
    raise ValueError(f"objective {name!r} is not one of {', '.join(OBJECTIVES)}")
  return OBJECTIVES[name]


def resolve(family="bert", sentence_task=None):
  """The objective for `--objective=family` on records of `sentence_task`.

  Args:
    family: one of FAMILIES (or an OBJECTIVES name, which must agree with
      the records).
    sentence_task: the records' sentence task ("nsp", "sop", "none"), None
      for records that do not say (the original's: NSP).
  Raises:
    ValueError: an unknown family, or a name the records contradict.
  """
  task = sentence_task or DEFAULT_SENTENCE_TASK
  if family in OBJECTIVES:
    objective = OBJECTIVES[family]
    if objective.sentence_task != task:
      raise ValueError(f"--objective={family} needs records written with "
                       f"--sentence_task={objective.sentence_task}; these records have "
                       f"sentence_task={task}")
    return objective
  if family not in FAMILIES:
    raise ValueError(f"--objective={family!r} is not one of "
                     f"{', '.join(FAMILIES + tuple(OBJECTIVES))}")
  for objective in OBJECTIVES.values():
    if objective.sentence_task == task:
      return objective
  raise ValueError(f"records have sentence_task={task!r}, which no objective of "
                   f"--objective={family} trains")


def of_model(model):
  """The objective `model` was built for (`build_model` records it); a
  pretrainer built directly is MLM + NSP, or MLM alone without the
  sentence-pair head."""
  name = getattr(model, "objective_name", None)
  if name:
    return get(name)
  return OBJECTIVES["mlm_nsp" if getattr(model, "nsp_head", None) is not None else "mlm"]


# What a checkpoint says it was trained for: a string variable saved with it,
# so a checkpoint prefix copied anywhere still tells export which heads and
# signatures it has.
CHECKPOINT_KEY = "objective"


def checkpoint_variable(objective):
  """A string tf.Variable holding the objective's name, for the checkpoint.

  Kept on the host CPU, outside any strategy scope: it is metadata, not a
  model weight.
  """
  with tf.device("/cpu:0"):
    return tf.Variable(objective.name, trainable=False, dtype=tf.string, name="objective")


def from_checkpoint(prefix):
  """The objective a checkpoint was trained for; "mlm_nsp" (the original's)
  for a checkpoint that does not say (TF1 originals, older bert_tf runs)."""
  try:
    name = tf.train.load_variable(prefix, f"{CHECKPOINT_KEY}/.ATTRIBUTES/VARIABLE_VALUE")
  except (tf.errors.NotFoundError, ValueError):
    return OBJECTIVES["mlm_nsp"]
  return get(name.decode() if isinstance(name, bytes) else str(name))
