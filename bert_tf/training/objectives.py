"""Pretraining objectives: the one place an objective is registered.

An objective is everything that changes when the pretraining task changes:

  features       the record features its batches must carry (the records'
                 manifest says which the data holds: `sentence_task`)
  build_model    the Keras model and its heads (in `bert_tf/models/`)
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

and ELECTRA (`ElectraObjective`, family and name "electra"): a generator
masked LM and a replaced-token discriminator. It has options (generator
size, discriminator weight, mask rule), which `resolve` takes from the
training config, and a [MASK] id it reads from the records; the checkpoint
saves them (`checkpoint_variable`), so export rebuilds the same networks.
"""

import json

from absl import logging
import tensorflow as tf

from bert_tf.models import electra
from bert_tf.models import modeling
from bert_tf.models.config import BertConfig
from bert_tf.training import losses

# --objective values: a family of objectives; the records' sentence task
# picks the BERT member (BERT's sentence tasks are properties of the data).
FAMILIES = ("bert", "electra")
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


class ElectraObjective:
  """ELECTRA: generator masked LM + 50 x replaced-token detection.

  The loss is the original's (google-research/electra run_pretraining.py):

    gen_mlm  = sum(w * CE) / (sum(w) + 1e-6)        masked positions, weights w
    disc     = sum(m * BCE) / (sum(m) + 1e-6)       every real token, input_mask m
    total    = gen_mlm + discriminator_weight * disc   (weight 50 by default)

  As for BERT, `loss_sums` are additive and `global_counts` all-reduces the
  normalizers (sum(w), sum(m)), so every strategy gives the single-device
  loss. The records' sentence labels are not used (ELECTRA has no sentence
  task); `resolve` logs that.

  Metrics (TensorBoard and eval_results.txt, the original's meanings):
  masked_lm_loss/accuracy (the generator's argmax at the masked positions),
  discriminator_loss, discriminator_accuracy (over real tokens),
  discriminator_precision and _recall (of "replaced" over real tokens),
  sampled_masked_lm_accuracy (the original's name for the share of sampled
  tokens equal to the original, over masked positions), and loss.

  Attributes:
    options: dict of generator_hidden_size, generator_layers,
      generator_config (a bert_config dict or None), discriminator_weight,
      mask_rule, mask_token_id, seed.
  """

  name = "electra"
  sentence_task = None
  sentence_name = None
  features = _INPUT_FEATURES + _MLM_FEATURES
  sum_keys = ("mlm_ce_sum", "mlm_weight_sum", "mlm_correct", "sampled_original",
              "disc_ce_sum", "disc_token_count", "disc_correct", "disc_true_positive",
              "disc_predicted_replaced", "disc_replaced", "num_examples")
  metric_keys = ("loss", "masked_lm_loss", "masked_lm_accuracy", "discriminator_loss",
                 "discriminator_accuracy", "discriminator_precision", "discriminator_recall",
                 "sampled_masked_lm_accuracy")
  signatures = ("fill_mask", "replaced_token_detection")
  EPSILON = 1e-6  # the original's, for both losses
  DEFAULTS = {"generator_hidden_size": 0.25, "generator_layers": 1.0,
              "generator_config": None, "discriminator_weight": 50.0,
              "mask_rule": electra.DEFAULT_MASK_RULE, "mask_token_id": None, "seed": 0}

  def __init__(self, **options):
    unknown = sorted(set(options) - set(self.DEFAULTS))
    if unknown:
      raise ValueError(f"unknown ELECTRA option(s) {unknown}")
    self.options = dict(self.DEFAULTS, **options)
    if self.options["mask_rule"] not in electra.MASK_RULES:
      raise ValueError(f"electra_mask_rule={self.options['mask_rule']!r} is not one of "
                       f"{', '.join(electra.MASK_RULES)}")
    self.discriminator_weight = float(self.options["discriminator_weight"])

  def __repr__(self):
    return f"<objective electra {self.options}>"

  @property
  def networks(self):
    """What fixes the model's weights (not the seed or [MASK] id): a resumed
    run must agree."""
    o = self.options
    return (o["generator_hidden_size"], o["generator_layers"],
            json.dumps(o["generator_config"], sort_keys=True))

  @property
  def checkpoint_value(self):
    return "electra " + json.dumps(self.options, sort_keys=True)

  def generator_config(self, bert_config):
    """The generator's BertConfig for this discriminator config."""
    if self.options["generator_config"]:
      return BertConfig.from_dict(self.options["generator_config"], source="generator config")
    return electra.generator_config(bert_config, self.options["generator_hidden_size"],
                                    self.options["generator_layers"])

  def build_model(self, bert_config, dtype=None):
    """The ElectraPretrainer (generator, discriminator, shared embeddings)."""
    model = electra.ElectraPretrainer(
        bert_config, self.generator_config(bert_config), mask_rule=self.options["mask_rule"],
        mask_token_id=self.options["mask_token_id"], seed=self.options["seed"], dtype=dtype)
    model.objective_name = self.name
    model.objective_value = self.checkpoint_value  # read back by `of_model`
    return model

  def loss_sums(self, outputs, features):
    """Additive float32 sums of a batch (`sum_keys`)."""
    sums = losses.mlm_sums(outputs["mlm_logits"], features)
    weights = tf.cast(features["masked_lm_weights"], tf.float32)
    originals = tf.cast(features["masked_lm_ids"], tf.int32)
    sums["sampled_original"] = tf.reduce_sum(
        weights * tf.cast(tf.equal(outputs["sampled_ids"], originals), tf.float32))
    logits = tf.cast(outputs["discriminator_logits"], tf.float32)
    labels = tf.cast(outputs["replaced_labels"], tf.float32)
    mask = tf.cast(features["input_mask"], tf.float32)
    bce = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
    predicted = tf.cast(logits > 0, tf.float32)
    sums.update(
        disc_ce_sum=tf.reduce_sum(mask * bce),
        disc_token_count=tf.reduce_sum(mask),
        disc_correct=tf.reduce_sum(mask * tf.cast(tf.equal(predicted, labels), tf.float32)),
        disc_true_positive=tf.reduce_sum(mask * predicted * labels),
        disc_predicted_replaced=tf.reduce_sum(mask * predicted),
        disc_replaced=tf.reduce_sum(mask * labels),
        num_examples=tf.cast(tf.shape(labels)[0], tf.float32))
    return sums

  def global_counts(self, features):
    """The normalizers over the global batch (inside `strategy.run`): the
    masked-LM weight sum and the real-token count, no gradient."""
    context = tf.distribute.get_replica_context()
    local = tf.stack([tf.reduce_sum(tf.cast(features["masked_lm_weights"], tf.float32)),
                      tf.reduce_sum(tf.cast(features["input_mask"], tf.float32))])
    weight_sum, token_count = tf.unstack(
        tf.stop_gradient(context.all_reduce(tf.distribute.ReduceOp.SUM, local)))
    return {"weight_sum": weight_sum, "token_count": token_count}

  def replica_loss(self, sums, counts):
    """This replica's share of the global batch's loss (float32 scalar)."""
    return (sums["mlm_ce_sum"] / (counts["weight_sum"] + self.EPSILON)
            + self.discriminator_weight * sums["disc_ce_sum"]
            / (counts["token_count"] + self.EPSILON))

  def metrics(self, sums, mlm_epsilon=EPSILON):
    """`metric_keys` -> scalar from summed sums (mlm_epsilon 0 for eval:
    plain means)."""
    def ratio(num, den):
      if mlm_epsilon:
        return sums[num] / (sums[den] + mlm_epsilon)
      return tf.math.divide_no_nan(sums[num], sums[den])
    mlm_loss, disc_loss = ratio("mlm_ce_sum", "mlm_weight_sum"), ratio("disc_ce_sum",
                                                                       "disc_token_count")
    share = tf.math.divide_no_nan
    return {
        "loss": mlm_loss + tf.cast(self.discriminator_weight, mlm_loss.dtype) * disc_loss,
        "masked_lm_loss": mlm_loss,
        "masked_lm_accuracy": share(sums["mlm_correct"], sums["mlm_weight_sum"]),
        "discriminator_loss": disc_loss,
        "discriminator_accuracy": share(sums["disc_correct"], sums["disc_token_count"]),
        "discriminator_precision": share(sums["disc_true_positive"],
                                         sums["disc_predicted_replaced"]),
        "discriminator_recall": share(sums["disc_true_positive"], sums["disc_replaced"]),
        "sampled_masked_lm_accuracy": share(sums["sampled_original"], sums["mlm_weight_sum"]),
    }

  def progress_fields(self):
    return [("loss", "loss"), ("mlm", "masked_lm_loss"), ("disc", "discriminator_loss"),
            ("mlm_acc", "masked_lm_accuracy"), ("disc_acc", "discriminator_accuracy"),
            ("disc_recall", "discriminator_recall")]

  @classmethod
  def from_options(cls, options=None, data=None):
    """The objective for a training config (`TrainConfig`'s electra_*,
    generator_* and discriminator_weight fields, and seed) on records `data`
    (a pipeline.DataInfo, whose [MASK] id is read from the records).

    Raises:
      ValueError: bad options or records without masks.
    """
    get = lambda name, default: getattr(options, name, default)  # noqa: E731
    gen_config = None
    path = get("generator_config_file", "")
    if path:
      gen_config = BertConfig.from_json_file(path).to_dict()
    rule = get("electra_mask_rule", electra.DEFAULT_MASK_RULE)
    mask_id = None
    if data is not None and rule != "records":
      mask_id = electra.mask_token_id_from_records(
          data.files, data.max_seq_length, data.max_predictions_per_seq, data.compression)
    return cls(generator_hidden_size=get("generator_hidden_size", 0.25),
               generator_layers=get("generator_layers", 1.0), generator_config=gen_config,
               discriminator_weight=get("discriminator_weight", 50.0), mask_rule=rule,
               mask_token_id=mask_id, seed=get("seed", 0))


OBJECTIVES = {o.name: o for o in (BertObjective("nsp"), BertObjective("sop"),
                                  BertObjective("none"), ElectraObjective())}


def get(name):
  """The objective registered as `name`; ValueError naming the choices."""
  if name not in OBJECTIVES:
    raise ValueError(f"objective {name!r} is not one of {', '.join(OBJECTIVES)}")
  return OBJECTIVES[name]


def resolve(family="bert", sentence_task=None, options=None, data=None):
  """The objective for `--objective=family` on records of `sentence_task`.

  Args:
    family: one of FAMILIES (or an OBJECTIVES name, which must agree with
      the records).
    sentence_task: the records' sentence task ("nsp", "sop", "none"), None
      for records that do not say (the original's: NSP).
    options: the TrainConfig, for objectives with options (ELECTRA's).
    data: the training (or eval) records' pipeline.DataInfo, for
      objectives that read something from the records (ELECTRA's [MASK] id).
  Raises:
    ValueError: an unknown family, or a name the records contradict.
  """
  if family == ElectraObjective.name:
    if sentence_task not in (None, "none"):
      logging.info("objective electra: the records' sentence labels (sentence_task=%s) "
                   "are not used", sentence_task)
    return ElectraObjective.from_options(options, data)
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
    if objective.sentence_task == task and objective.name != ElectraObjective.name:
      return objective
  raise ValueError(f"records have sentence_task={task!r}, which no objective of "
                   f"--objective={family} trains")


def of_model(model):
  """The objective `model` was built for (`build_model` records it); a
  pretrainer built directly is MLM + NSP, or MLM alone without the
  sentence-pair head."""
  value = getattr(model, "objective_value", None)
  if value:
    return _from_value(value)
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
    return tf.Variable(getattr(objective, "checkpoint_value", objective.name),
                       trainable=False, dtype=tf.string, name="objective")


def _from_value(value):
  """The objective of a `checkpoint_variable` value: a name, or "electra"
  and its options as JSON."""
  name, _, options = value.partition(" ")
  if name == ElectraObjective.name and options:
    return ElectraObjective(**json.loads(options))
  return get(name)


def from_checkpoint(prefix):
  """The objective a checkpoint was trained for; "mlm_nsp" (the original's)
  for a checkpoint that does not say (TF1 originals, older bert_tf runs)."""
  try:
    name = tf.train.load_variable(prefix, f"{CHECKPOINT_KEY}/.ATTRIBUTES/VARIABLE_VALUE")
  except (tf.errors.NotFoundError, ValueError):
    return OBJECTIVES["mlm_nsp"]
  return _from_value(name.decode() if isinstance(name, bytes) else str(name))
