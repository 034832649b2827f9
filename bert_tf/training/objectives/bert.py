"""The BERT family: masked LM with the records' sentence-pair task.

  mlm_nsp  BERT: masked LM + next-sentence prediction (the original)
  mlm_sop  ALBERT: masked LM + sentence-order prediction
  mlm      RoBERTa: masked LM alone

The records' sentence task (data/records/manifest.py) picks the member: BERT's
sentence tasks are properties of the data.
"""

from bert_tf.models import flops
from bert_tf.models import modeling
from bert_tf.training import losses
from bert_tf.training import objective_names as names
from bert_tf.training.objectives import base


class BertObjective(base.Objective):
  """Masked LM with an optional sentence-pair task (NSP or SOP) on one encoder.

  The loss is the original's: sum(w * CE) / (sum(w) + 1e-5) over the masked
  positions, plus the mean cross-entropy of the 2-way sentence-pair head;
  see `losses`. No options.

  Attributes (beyond `base.Objective`'s):
    sentence_task: "nsp", "sop" or "none" (the records' `sentence_task`).
  """

  family = names.BERT
  # How compare_objectives writes each member's records (DataOptions
  # fields), after the papers: BERT's segment pairs with NSP; RoBERTa's
  # FULL-SENTENCES with dynamic masking and no sentence task; ALBERT's
  # segment pairs with sentence order.
  _RECORD_OPTIONS = {
      "nsp": {},
      "none": {"sentence_task": "none", "packing": "full_sentences", "dynamic_masking": True},
      "sop": {"sentence_task": "sop"},
  }
  # Short labels of the progress line, as the original's log prints them.
  _SHORT = {"next_sentence": "nsp", "sentence_order": "sop"}

  def __init__(self, sentence_task):
    if sentence_task not in names.BERT_NAMES:
      raise ValueError(f"sentence_task={sentence_task!r} is not one of "
                       f"{', '.join(names.BERT_NAMES)}")
    self.sentence_task = sentence_task
    self.name = names.BERT_NAMES[sentence_task]
    self.sentence_name = names.SENTENCE_NAMES[sentence_task]
    self.record_options = self._RECORD_OPTIONS[sentence_task]
    has_sentence = self.sentence_name is not None
    self.features = (base.INPUT_FEATURES + base.MLM_FEATURES
                     + (("next_sentence_labels",) if has_sentence else ()))
    self.sum_keys = losses.SUM_KEYS if has_sentence else losses.MLM_SUM_KEYS
    self.metric_keys = ("loss", "masked_lm_loss", "masked_lm_accuracy")
    if has_sentence:
      self.metric_keys += (f"{self.sentence_name}_loss", f"{self.sentence_name}_accuracy")

  @classmethod
  def resolve(cls, sentence_task, config=None, data=None):
    """The member for records of `sentence_task` (None: the original's NSP).

    Raises:
      ValueError: a sentence task no member trains.
    """
    del config, data  # BERT's objectives take no options
    task = sentence_task or names.DEFAULT_SENTENCE_TASK
    if task not in BY_TASK:
      raise ValueError(f"records have sentence_task={task!r}, which no objective of "
                       f"--objective={names.BERT} trains")
    return BY_TASK[task]

  @classmethod
  def members(cls):
    """One member per sentence task."""
    return BY_NAME

  def contradiction(self, resolved, sentence_task):
    """The error when --objective names this member but the records train
    `resolved`."""
    task = sentence_task or names.DEFAULT_SENTENCE_TASK
    return ValueError(f"--objective={self.name} needs records written with "
                      f"--sentence_task={self.sentence_task}; these records have "
                      f"sentence_task={task}")

  def ignores_sentence_labels(self, sentence_task):
    """MLM alone (`mlm`) trains on NSP or SOP records too, their labels
    unused: BERT's "No NSP" (Devlin et al. 2019, Table 5), the masked LM on
    BERT's own segment pairs without the NSP loss. The members with a
    sentence head need their own task's labels."""
    task = sentence_task or names.DEFAULT_SENTENCE_TASK
    return self.sentence_name is None and task != self.sentence_task

  def build_model(self, bert_config, dtype=None):
    """The pretrainer: encoder, MLM head and (unless MLM alone) the 2-way
    sentence-pair head, all weights created."""
    model = modeling.BertPretrainer(bert_config, dtype=dtype,
                                    sentence_head=self.sentence_name is not None)
    model.objective = self
    return model

  def train_flops(self, bert_config, batch_size, seq_length, predictions_per_seq):
    """Training FLOPs of one step (int; see `models/flops.py`)."""
    return flops.bert_step_flops(bert_config, batch_size, seq_length, predictions_per_seq,
                                 sentence_head=self.sentence_name is not None)

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


# The three members, one object each: the registry and the distillation
# students share them.
BY_TASK = {task: BertObjective(task) for task in names.SENTENCE_TASKS}
BY_NAME = {o.name: o for o in BY_TASK.values()}
