"""`Objective`: what every pretraining objective is, and its defaults.

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
  train_flops    the training FLOPs of one step (`bert_tf/models/flops.py`),
                 which `compare_objectives --budget=flops` equalizes
  options        a frozen dataclass of its settings (None: it has none;
                 an `options.Options` subclass), saved in the checkpoint
                 as JSON (`checkpoint_tag`)

and where its network lies for the code after training: `checkpoint_root`
(the object path of the exported network in a training checkpoint),
`export_objective` / `export_model` (the encoder-bearing pretrainer that
export, fine-tuning and a distillation teacher take), `record_options` (how
compare_objectives writes its records). The defaults below are those of an
objective whose model is its own export.
"""

import json

import tensorflow as tf

from bert_tf.training import checkpoints
from bert_tf.training import losses
from bert_tf.training.objectives import heldout

INPUT_FEATURES = ("input_ids", "input_mask", "segment_ids")
MLM_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")


class Objective:
  """The base of every objective; subclasses set the class attributes and
  implement the methods that raise NotImplementedError.

  Attributes:
    name: the objective's name (objective_names.OBJECTIVE_NAMES).
    family: its family (objective_names.FAMILIES).
    sentence_task: the records' sentence task it trains ("nsp", "sop",
      "none"), None when it reads no sentence labels.
    sentence_name: metric and signature prefix of its sentence-pair head
      ("next_sentence", "sentence_order") or None.
    features, sum_keys, metric_keys: see the module docstring.
    options: an instance of `options_type`, or None.
    record_options: data.pretraining.writer.DataOptions fields of the records it
      trains on (compare_objectives writes them; {}: the original's).
    builds_own_encoder: fine-tuning rebuilds this objective's whole model
      to take its encoder (ELECTRA's discriminator, whose embeddings the
      generator shares), instead of reading a BertBackbone's weights.
    train_flops: None when it has no FLOPs model, else a method (see
      `bert_tf/models/flops.py`).
  """

  name = None
  family = None
  sentence_task = None
  sentence_name = None
  features = INPUT_FEATURES + MLM_FEATURES
  sum_keys = ()
  metric_keys = ()
  options = None
  options_type = None  # the dataclass of `options`; None: no options
  record_options = {}
  checkpoint_root = checkpoints.MODEL_ROOT
  builds_own_encoder = False
  train_flops = None

  def __repr__(self):
    return f"<objective {self.name}>"

  @classmethod
  def resolve(cls, sentence_task, config=None, data=None):
    """The family's objective for records of `sentence_task` (None: they do
    not say) and a run's `config` (its TrainConfig: the options) on records
    `data` (a pipeline.DataInfo, for what an objective reads from them)."""
    raise NotImplementedError

  @classmethod
  def members(cls):
    """{name: objective} of the family's registered members, with default
    options (what checkpoints, export and compare_objectives look names up
    in): one, `cls()`, unless the family has several."""
    return {cls.name: cls()}

  def contradiction(self, resolved, sentence_task):
    """The error when --objective names this objective but the records and
    settings train `resolved` (another member of its family)."""
    del sentence_task
    return ValueError(f"--objective={self.name}: these records and settings train "
                      f"{resolved.name}")

  def ignores_sentence_labels(self, sentence_task):
    """True when --objective naming this objective trains on records of
    `sentence_task` (None: they do not say) that another member of its
    family would train, and leaves their sentence labels unused; False by
    default: the records' sentence task must be its own."""
    del sentence_task
    return False

  # -- where the exported network lies ----------------------------------------

  @property
  def export_objective(self):
    """The objective whose `build_model` gives the network export,
    fine-tuning and a distillation teacher read (at `checkpoint_root`)."""
    return self

  def export_model(self, model):
    """The encoder-bearing pretrainer of a model `build_model` built."""
    return model

  # What an export of the network serves (serving/saved_model.py asks these).
  # has_discriminator: a per-token replaced-token detector (ELECTRA's):
  #   the replaced_token_detection signature and `replaced_probability`.
  # has_pooler: the encoder's pooled_output is the [CLS] vector `encode`
  #   serves; False: its [CLS] hidden state is (ELECTRA has no pooler).
  has_discriminator = False
  has_pooler = True

  # How the code after pretraining reads its encoder (fine-tuning, probes,
  # features, exports: downstream.finetune.read_as_trained).
  # causal_encoder: with the causal attention mask it was trained under (a
  #   left-to-right LM's); False: bidirectional, as keras-hub runs it.
  # pooled_position: the token whose vector the pooler reads for a sentence
  #   ("first": [CLS]; "last": the last real token, the one a causal
  #   encoder lets see the whole text).
  causal_encoder = False
  pooled_position = "first"

  @property
  def text_signatures(self):
    """The text signatures of an export: fill_mask (every masked-LM head),
    the sentence-pair head's (`sentence_name`), replaced_token_detection."""
    return (("fill_mask",) + ((self.sentence_name,) if self.sentence_name else ())
            + (("replaced_token_detection",) if self.has_discriminator else ()))

  @property
  def networks(self):
    """What fixes the model's weights besides the BertConfig: a resumed run
    must agree (`registry.check_objective`)."""
    return ()

  # -- options as checkpoint data ---------------------------------------------

  def options_json(self):
    """The options as JSON of the dataclass's fields (sorted keys), or None
    without options."""
    if self.options is None:
      return None
    return json.dumps(self.options.to_dict(), sort_keys=True)

  def with_options_json(self, text):
    """This objective with the options `options_json` wrote (itself when it
    has none or text is None)."""
    if self.options_type is None or text is None:
      return self
    return self.with_options(self.options_type.from_dict(json.loads(text)))

  def with_options(self, options):
    """This objective's family member with `options` (an `options_type`)."""
    raise NotImplementedError(f"objective {self.name} takes no options")

  # -- the model and its loss -------------------------------------------------

  def build_model(self, bert_config, dtype=None):
    """The Keras model, every weight created; it records the objective as
    `model.objective` (read back by `registry.of_model`)."""
    raise NotImplementedError

  def trainable_variables(self, model):
    """The variables the loss trains (all of the model's trainable ones)."""
    return model.trainable_variables

  def loss_sums(self, outputs, features):
    """Additive float32 sums of a batch (`sum_keys`)."""
    raise NotImplementedError

  def global_counts(self, features):
    """The loss normalizers over the global batch (inside `strategy.run`)."""
    raise NotImplementedError

  def replica_loss(self, sums, counts):
    """This replica's share of the global batch's loss (float32 scalar)."""
    raise NotImplementedError

  def metrics(self, sums, mlm_epsilon=losses.MLM_EPSILON):
    """`metric_keys` -> scalar from summed sums (mlm_epsilon 0 for eval)."""
    raise NotImplementedError

  def progress_fields(self):
    """(label, metric key) pairs of the progress line, losses then accuracies."""
    raise NotImplementedError

  # -- held-out figures of compare_objectives ---------------------------------

  # How `heldout_figures` read in the comparison's table (a
  # heldout.HeldoutReading: the masked-LM accuracy's column, the rows, a
  # note); the default is BERT's, masked_lm_accuracy split by input kind.
  heldout_reading = heldout.HeldoutReading()

  def heldout_sums(self, outputs, features):
    """Additive sums of a held-out batch: the masked-LM ones (mlm_ce_sum,
    mlm_weight_sum, mlm_correct)."""
    return losses.mlm_sums(outputs["mlm_logits"], features)

  def heldout_figures(self, totals):
    """Figures beside the masked-LM accuracy from summed `heldout_sums`
    (dict of float; none by default)."""
    del totals
    return {}


def ratio(sums, num, den, epsilon):
  """sums[num] / (sums[den] + epsilon), or the plain mean (0 for 0 / 0)
  when epsilon is 0 (eval)."""
  if epsilon:
    return sums[num] / (sums[den] + epsilon)
  return tf.math.divide_no_nan(sums[num], sums[den])
