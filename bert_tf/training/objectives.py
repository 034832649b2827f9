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
  train_flops    the training FLOPs of one step (`bert_tf/models/flops.py`),
                 which `compare_objectives --budget=flops` equalizes

`OBJECTIVES` maps each name to its object; `resolve` picks one from
`--objective` and the records' sentence task. The training loop, the
evaluation, the export and the checkpoint call only these methods, so a new
objective is a new class and a new entry here (plus its head in `models/`
and, if it has a new kind of text signature, that signature in `serving/`).

The BERT family so far:

  mlm_nsp  BERT: masked LM + next-sentence prediction (the original)
  mlm_sop  ALBERT: masked LM + sentence-order prediction
  mlm      RoBERTa: masked LM alone

and DistilBERT (family "distill", `bert_tf.distill`): a student trained
against a frozen teacher, named after the student's heads (distill_mlm, or
distill_mlm_nsp / distill_mlm_sop with a sentence task). It takes options
(`resolve(..., options)`), and its model holds the student at
`checkpoint_root` (model/student), which export reads.

And ELECTRA (`ElectraObjective`, family and name "electra"): a generator
masked LM and a replaced-token discriminator. It has options (generator
size, discriminator weight, mask rule), which `resolve` takes from the
training config, and a [MASK] id it reads from the records; the checkpoint
saves them (`checkpoint_variable`), so export rebuilds the same networks.
"""

import dataclasses
import json

import tensorflow as tf
from absl import logging

from bert_tf.models import distillation
from bert_tf.models import electra
from bert_tf.models import flops
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
  tokens equal to the original, over masked positions), replaced_share (of
  real tokens; its binary entropy is the loss of a discriminator that
  learned only that share), and loss.

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
                 "sampled_masked_lm_accuracy", "replaced_share")
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

  def train_flops(self, bert_config, batch_size, seq_length, predictions_per_seq):
    """Training FLOPs of one step, generator included (int; see
    `models/flops.py`)."""
    return flops.electra_step_flops(bert_config, self.generator_config(bert_config),
                                    batch_size, seq_length, predictions_per_seq,
                                    electra.embedding_size(bert_config))

  def trainable_variables(self, model):
    """Generator, discriminator and the shared embeddings (the
    discriminator's pooler is frozen by the model: ELECTRA has none)."""
    return model.trainable_variables

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
        "replaced_share": share(sums["disc_replaced"], sums["disc_token_count"]),
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
    options: the run's settings (its TrainConfig), for a family that takes
      options (distill: the teacher, the loss weights; electra: the
      generator, discriminator weight, mask rule); BERT's take none.
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
  base = getattr(OBJECTIVES.get(family), "FAMILY", family)
  if base in _FAMILY_RESOLVERS:
    objective = _FAMILY_RESOLVERS[base](task, options)
    if family != base and objective.name != family:
      raise ValueError(f"--objective={family}: these records and settings train "
                       f"{objective.name}")
    return objective
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


def check_objective(directory, objective):
  """Raises ValueError when the latest checkpoint in `directory` was trained
  for another objective than `objective` (a run would resume into other
  heads); nothing without a checkpoint."""
  latest = tf.train.latest_checkpoint(directory) if directory else None
  if latest:
    saved = from_checkpoint(latest)
    if saved.name != objective.name:
      raise ValueError(f"{directory} holds a checkpoint trained for objective {saved.name} "
                       f"({latest}); this run's objective is {objective.name}: use another "
                       "--output_dir or records of the same objective")
    if getattr(saved, "networks", None) != getattr(objective, "networks", None):
      raise ValueError(f"{directory} holds a checkpoint trained for objective {saved.name} "
                       f"with another generator {saved.networks} ({latest}); this run's is "
                       f"{objective.networks}: use another --output_dir or the same settings")


def from_checkpoint(prefix):
  """The objective a checkpoint was trained for; "mlm_nsp" (the original's)
  for a checkpoint that does not say (TF1 originals, older bert_tf runs)."""
  try:
    name = tf.train.load_variable(prefix, f"{CHECKPOINT_KEY}/.ATTRIBUTES/VARIABLE_VALUE")
  except (tf.errors.NotFoundError, ValueError):
    return OBJECTIVES["mlm_nsp"]
  return _from_value(name.decode() if isinstance(name, bytes) else str(name))


# --------------------------------------------------------------------------
# DistilBERT: a student BERT trained to reproduce a frozen teacher
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DistillOptions:
  """What a distillation run is told besides the student's BertConfig (the
  `TrainConfig` fields of the same names; `from_config` reads them).

  teacher_config: the teacher's BertConfig (None in the registered objects,
    which serve checkpoints and export, not training).
  teacher_checkpoint: a training output dir, a checkpoint prefix (ours or an
    original TF1 BERT's), or a keras-hub BertMaskedLM preset directory (then
    the teacher config may come from the preset).
  student_init: "teacher" (every other teacher layer) or "scratch".
  alpha_ce, alpha_mlm, alpha_cos: weights of the soft-target KL, the
    masked-LM cross-entropy on the true tokens and the cosine loss between
    the last hidden states (DistilBERT's 5.0, 2.0, 1.0).
  alpha_sentence: weight of the student's sentence-pair loss (the records'
    NSP or SOP, on the true labels); 0 (DistilBERT) builds no such head.
  temperature: softens both MLM distributions in the KL term.
  """
  teacher_config: object = None
  teacher_checkpoint: str = ""
  student_init: str = "teacher"
  alpha_ce: float = 5.0
  alpha_mlm: float = 2.0
  alpha_cos: float = 1.0
  alpha_sentence: float = 0.0
  temperature: float = 2.0

  @classmethod
  def from_config(cls, config):
    """From a TrainConfig (or anything with its distillation fields)."""
    from bert_tf.models.config import BertConfig  # pylint: disable=g-import-not-at-top
    path = getattr(config, "teacher_config_file", "")
    checkpoint = getattr(config, "teacher_checkpoint", "")
    if path:
      try:
        teacher_config = BertConfig.from_json_file(path)
      except (ValueError, OSError) as e:
        raise ValueError(f"--teacher_config_file={path}: {e}") from None
    elif checkpoint and distillation.is_keras_hub_preset(checkpoint):
      teacher_config = distillation.preset_bert_config(checkpoint)
    else:
      raise ValueError("objective distill needs --teacher_config_file and "
                       "--teacher_checkpoint (python -m bert_tf.distill)")
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(cls)
              if f.name != "teacher_config" and hasattr(config, f.name)}
    return cls(teacher_config=teacher_config, **fields)


# Additive sums a distillation batch adds to its student's (`loss_sums`).
def check_teacher_vocab(config):
  """A one-line ValueError when the records' manifest says another vocab
  size than the teacher's config (records without a manifest: nothing)."""
  from bert_tf.data import manifest as manifest_lib  # pylint: disable=g-import-not-at-top
  teacher_config = DistillOptions.from_config(config).teacher_config
  source = config.teacher_config_file or config.teacher_checkpoint
  teacher_flag = "--teacher_config_file" if config.teacher_config_file else "--teacher_checkpoint"
  for records_flag, pattern in (("--input_file", config.input_file),
                                ("--eval_input_file", config.eval_input_file)):
    manifest = manifest_lib.Manifest.find(pattern) if pattern else None
    if manifest is not None and manifest.vocab_size is not None and (
        manifest.vocab_size != teacher_config.vocab_size):
      raise ValueError(
          f"{teacher_flag}={source}: the teacher has vocab_size="
          f"{teacher_config.vocab_size} but the records of {records_flag} ({manifest.source}) were "
          f"written with a vocab of {manifest.vocab_size} tokens: the teacher must have been "
          "trained with the records' vocab")


DISTILL_SUM_KEYS = ("kl_sum", "cos_sum", "token_count", "teacher_mlm_ce_sum",
                    "teacher_mlm_correct")


def soft_target_kl(student_logits, teacher_logits, temperature):
  """KL(teacher || student) of the temperature-softened distributions,
  scaled by T^2 (Hinton et al.: keeps the soft-target gradients' size as T
  changes). float32 [...] from float [..., vocab] logits."""
  t = tf.cast(temperature, tf.float32)
  student_log_p = tf.nn.log_softmax(tf.cast(student_logits, tf.float32) / t, axis=-1)
  teacher_log_p = tf.nn.log_softmax(tf.cast(teacher_logits, tf.float32) / t, axis=-1)
  kl = tf.reduce_sum(tf.exp(teacher_log_p) * (teacher_log_p - student_log_p), axis=-1)
  return kl * t * t


def cosine_distance(a, b):
  """1 - cos(a, b) along the last axis, float32 [...] (0 for equal
  directions; a zero vector counts as orthogonal)."""
  a = tf.math.l2_normalize(tf.cast(a, tf.float32), axis=-1, epsilon=1e-12)
  b = tf.math.l2_normalize(tf.cast(b, tf.float32), axis=-1, epsilon=1e-12)
  return 1.0 - tf.reduce_sum(a * b, axis=-1)


class DistillationObjective:
  """DistilBERT: the student learns the teacher's masked-LM distribution.

  loss = alpha_ce  * T^2 KL(p_teacher^T || p_student^T)  mean over masked positions
       + alpha_mlm * CE(student, true token)            mean over masked positions
       + alpha_cos * (1 - cos(h_student, h_teacher))    mean over real tokens
       (+ alpha_sentence * the student's NSP/SOP loss, mean over examples)

  with p^T = softmax(logits / T) and h the last hidden states. Every term is
  an additive sum over a global normalizer (masked-LM weight sum, real-token
  count, batch size) all-reduced before the forward pass, like BERT's, so
  every strategy and micro-batching gives the single-device loss.

  Where we differ from Hugging Face's distiller (examples/research_projects/
  distillation) and why:
  - the KL is at the records' masked positions only (their
    --restrict_ce_to_mask); their default takes it on every real token. Our
    MLM head computes logits at the masked positions only, so all-token
    soft targets would cost a [batch, seq, vocab] softmax per step for both
    models; the issue asks for the masked positions.
  - masking comes from the records (static, or dynamic when the writer
    wrote several duplicates), with the original 80/10/10 rule; theirs
    re-masks each batch with frequency-smoothed token sampling.
  - the student keeps token types (and the pooler): it is a plain
    BertPretrainer; no NSP unless alpha_sentence > 0.

  Attributes beyond BertObjective's: student_objective (the BertObjective of
  the student's heads: "mlm", or the records' with alpha_sentence > 0),
  options (DistillOptions), checkpoint_root (where the student lies in a
  training checkpoint, for export).
  """

  FAMILY = "distill"
  checkpoint_root = ("model", "student")

  def __init__(self, student_objective, options=None):
    self.student_objective = student_objective
    self.options = options if options is not None else DistillOptions()
    self.name = f"distill_{student_objective.name}"
    self.sentence_task = student_objective.sentence_task
    self.sentence_name = student_objective.sentence_name
    self.features = student_objective.features
    self.sum_keys = student_objective.sum_keys + DISTILL_SUM_KEYS
    student_keys = student_objective.metric_keys[1:]  # "loss" is the total here
    self.metric_keys = (("loss",) + student_keys
                        + ("kl_loss", "cosine_loss", "teacher_masked_lm_loss",
                           "teacher_masked_lm_accuracy"))
    self.signatures = student_objective.signatures

  def __repr__(self):
    return f"<objective {self.name}>"

  @classmethod
  def resolve(cls, sentence_task, options):
    """The objective of a run on records of `sentence_task` with `options`
    (a TrainConfig or DistillOptions)."""
    if not isinstance(options, DistillOptions):
      options = DistillOptions.from_config(options)
    for name in ("alpha_ce", "alpha_mlm", "alpha_cos", "alpha_sentence"):
      if getattr(options, name) < 0:
        raise ValueError(f"--{name} must be >= 0, got {getattr(options, name)}")
    if options.temperature <= 0:
      raise ValueError(f"--temperature must be positive, got {options.temperature}")
    if options.student_init not in ("teacher", "scratch"):
      raise ValueError(f"--student_init={options.student_init!r} is not one of teacher, scratch")
    if options.alpha_sentence > 0:
      student = resolve("bert", sentence_task)
      if student.sentence_name is None:
        raise ValueError("--alpha_sentence > 0 trains the records' sentence-pair task, but "
                         "these records have none (sentence_task=none)")
    else:
      student = OBJECTIVES["mlm"]
    return cls(student, options)

  def _teacher(self, dtype):
    """The teacher pretrainer, every weight read from its checkpoint."""
    # Imported here: checkpoints imports this module.
    from bert_tf.training import checkpoints  # pylint: disable=g-import-not-at-top
    options = self.options
    if options.teacher_config is None or not options.teacher_checkpoint:
      raise ValueError(f"objective {self.name} trains a student of a teacher: give "
                       "--teacher_config_file and --teacher_checkpoint (bert_tf.distill)")
    if distillation.is_keras_hub_preset(options.teacher_checkpoint):
      teacher = distillation.load_keras_hub_teacher(options.teacher_checkpoint,
                                                    options.teacher_config)
      logging.info("Teacher: %d layers, %.2fM params, from keras-hub preset %s",
                   teacher.config.num_hidden_layers, teacher.count_params() / 1e6,
                   options.teacher_checkpoint)
      return teacher
    prefix = checkpoints.resolve_checkpoint(options.teacher_checkpoint)
    saved = from_checkpoint(prefix)
    model_objective = getattr(saved, "student_objective", saved)
    teacher = model_objective.build_model(options.teacher_config, dtype=dtype)
    try:
      report = checkpoints.read_weights(teacher, prefix, require_all=True,
                                        root=getattr(saved, "checkpoint_root",
                                                     checkpoints.MODEL_ROOT))
    except ValueError as e:
      raise ValueError(f"--teacher_checkpoint={options.teacher_checkpoint} with "
                       f"--teacher_config_file: {e}") from None
    logging.info("Teacher: %d layers, %.2fM params, %d weights from %s checkpoint %s",
                 options.teacher_config.num_hidden_layers, teacher.count_params() / 1e6,
                 len(report.initialized), report.format, report.prefix)
    return teacher

  def build_model(self, bert_config, dtype=None):
    """The Distiller: the student of `bert_config` (initialized from the
    teacher, or from scratch) and the frozen teacher, read from its
    checkpoint."""
    options = self.options
    teacher_config = options.teacher_config
    if teacher_config is not None:
      if teacher_config.vocab_size != bert_config.vocab_size:
        raise ValueError(f"the teacher config has vocab_size={teacher_config.vocab_size} but "
                         f"the student config has vocab_size={bert_config.vocab_size}: "
                         "teacher and student must share the records' vocab")
      if options.alpha_cos > 0 and teacher_config.hidden_size != bert_config.hidden_size:
        raise ValueError(f"--alpha_cos={options.alpha_cos:g} compares hidden states, but the "
                         f"teacher config has hidden_size={teacher_config.hidden_size} and the "
                         f"student config {bert_config.hidden_size}; set --alpha_cos=0")
      if options.student_init == "teacher":
        distillation.check_student_config(teacher_config, bert_config)
    teacher = self._teacher(dtype)
    student = self.student_objective.build_model(bert_config, dtype=dtype)
    if options.student_init == "teacher":
      layers = distillation.init_student_from_teacher(student, teacher)
      logging.info("Student initialized from the teacher's layers %s", layers)
    model = distillation.Distiller(student, teacher)
    model.objective_name = self.name
    return model

  def trainable_variables(self, model):
    """The student's (the teacher is frozen), as its own objective trains
    them (no pooler without a sentence-pair head)."""
    return self.student_objective.trainable_variables(model.student)

  def loss_sums(self, outputs, features):
    """Additive float32 sums of a batch (`sum_keys`): the student's BERT
    sums, then kl_sum = sum(w * T^2 KL), cos_sum = sum(m * (1 - cos)),
    token_count = sum(m) over input_mask m, and the teacher's masked-LM
    cross-entropy and correct counts (for its eval metrics)."""
    sums = self.student_objective.loss_sums(outputs, features)
    weights = tf.cast(features["masked_lm_weights"], tf.float32)
    kl = soft_target_kl(outputs["mlm_logits"], outputs["teacher_mlm_logits"],
                        self.options.temperature)
    mask = tf.cast(features["input_mask"], tf.float32)
    cos = cosine_distance(outputs["sequence_output"], outputs["teacher_sequence_output"])
    teacher = losses.mlm_sums(outputs["teacher_mlm_logits"], features)
    sums.update(kl_sum=tf.reduce_sum(weights * kl), cos_sum=tf.reduce_sum(mask * cos),
                token_count=tf.reduce_sum(mask),
                teacher_mlm_ce_sum=teacher["mlm_ce_sum"],
                teacher_mlm_correct=teacher["mlm_correct"])
    return sums

  def global_counts(self, features):
    """The normalizers over the global batch (inside `strategy.run`): the
    masked-LM weight sum, the example count and the real-token count."""
    context = tf.distribute.get_replica_context()
    local = tf.stack([tf.reduce_sum(tf.cast(features["masked_lm_weights"], tf.float32)),
                      tf.cast(tf.shape(features["masked_lm_weights"])[0], tf.float32),
                      tf.reduce_sum(tf.cast(features["input_mask"], tf.float32))])
    weight_sum, batch_size, token_count = tf.unstack(
        tf.stop_gradient(context.all_reduce(tf.distribute.ReduceOp.SUM, local)))
    return {"weight_sum": weight_sum, "batch_size": batch_size, "token_count": token_count}

  def replica_loss(self, sums, counts):
    """This replica's share of the global batch's weighted loss."""
    o = self.options
    weight_sum = counts["weight_sum"] + losses.MLM_EPSILON
    loss = (o.alpha_ce * sums["kl_sum"] / weight_sum
            + o.alpha_mlm * sums["mlm_ce_sum"] / weight_sum
            + o.alpha_cos * sums["cos_sum"] / tf.maximum(counts["token_count"], 1.0))
    if "nsp_ce_sum" in sums:
      loss += o.alpha_sentence * sums["nsp_ce_sum"] / counts["batch_size"]
    return loss

  def metrics(self, sums, mlm_epsilon=losses.MLM_EPSILON):
    """`metric_keys` -> scalar from summed sums: each term unweighted, the
    weighted total as "loss", and the teacher's masked-LM loss/accuracy."""
    o = self.options
    student_sums = {k: sums[k] for k in self.student_objective.sum_keys}
    metrics = self.student_objective.metrics(student_sums, mlm_epsilon=mlm_epsilon)

    def per_prediction(total):
      if mlm_epsilon:
        return total / (sums["mlm_weight_sum"] + mlm_epsilon)
      return tf.math.divide_no_nan(total, sums["mlm_weight_sum"])

    metrics["kl_loss"] = per_prediction(sums["kl_sum"])
    metrics["cosine_loss"] = tf.math.divide_no_nan(sums["cos_sum"], sums["token_count"])
    metrics["teacher_masked_lm_loss"] = per_prediction(sums["teacher_mlm_ce_sum"])
    metrics["teacher_masked_lm_accuracy"] = tf.math.divide_no_nan(
        sums["teacher_mlm_correct"], sums["mlm_weight_sum"])
    loss = (o.alpha_ce * metrics["kl_loss"] + o.alpha_mlm * metrics["masked_lm_loss"]
            + o.alpha_cos * metrics["cosine_loss"])
    if self.sentence_name:
      loss += o.alpha_sentence * metrics[f"{self.sentence_name}_loss"]
    metrics["loss"] = loss
    return metrics

  def progress_fields(self):
    """(label, metric key) pairs of the progress line."""
    student = self.student_objective.progress_fields()
    fields = [("loss", "loss"), ("kl", "kl_loss"), ("cos", "cosine_loss")]
    fields += [f for f in student if f[0] != "loss" and not f[0].endswith("_acc")]
    fields += [f for f in student if f[0].endswith("_acc")]
    return fields + [("teacher_mlm_acc", "teacher_masked_lm_accuracy")]


for _student in ("mlm", "mlm_nsp", "mlm_sop"):
  _objective = DistillationObjective(OBJECTIVES[_student])
  OBJECTIVES[_objective.name] = _objective
FAMILIES += (DistillationObjective.FAMILY,)
_FAMILY_RESOLVERS = {DistillationObjective.FAMILY: DistillationObjective.resolve}
