"""DistilBERT (family "distill", `bert_tf.distill`): a student BERT trained
against a frozen teacher, named after the student's heads (distill_mlm, or
distill_mlm_nsp / distill_mlm_sop with a sentence-pair loss).

Its options (`distill_options.DistillOptions`: the teacher, the loss
weights, the temperature) come from the training config and, with the
teacher's config read, are its `DistillSettings`; its model (models.distillation
.Distiller) holds the student at `checkpoint_root` (model/student), which
export, fine-tuning and a later distillation read.
"""

import dataclasses

import tensorflow as tf
from absl import logging

from bert_tf.data.records import manifest as manifest_lib
from bert_tf.models import distillation
from bert_tf.models import hf_checkpoint
from bert_tf.models import softmax
from bert_tf.models.config import BertConfig
from bert_tf.training import checkpoints
from bert_tf.training import losses
from bert_tf.training import objective_names as names
from bert_tf.training.objectives import base
from bert_tf.training.objectives import bert
from bert_tf.training.objectives import checkpoint_tag
from bert_tf.training.objectives import distill_options


@dataclasses.dataclass(frozen=True)
class DistillSettings(distill_options.DistillOptions):
  """A distillation run's options with the teacher's config read: what the
  checkpoint saves (`checkpoint_tag`).

  Beyond `DistillOptions`' fields (teacher_config_file is read into
  teacher_config, and kept empty here):
  teacher_config: the teacher's BertConfig (None in the registered objects,
    which serve checkpoints and export, not training).
  """
  teacher_config: BertConfig | None = None

  def to_dict(self):
    """The fields as JSON-able data (the teacher config as its dict;
    teacher_config_file left out: its content is teacher_config)."""
    d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
    del d["teacher_config_file"]
    d["teacher_config"] = self.teacher_config.to_dict() if self.teacher_config else None
    return d

  @classmethod
  def from_dict(cls, d):
    d = dict(d)
    if d.get("teacher_config") is not None:
      d["teacher_config"] = BertConfig.from_dict(d["teacher_config"], source="teacher config")
    return super().from_dict(d)

  @classmethod
  def from_options(cls, options):
    """From DistillOptions (None: the defaults), the teacher config read
    from its teacher_config_file, or from a keras-hub preset or
    transformers folder teacher."""
    options = options or distill_options.DistillOptions()
    fields = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
    fields.pop("teacher_config_file")
    return cls(**fields, teacher_config=teacher_config_of(options.teacher_config_file,
                                                          options.teacher_checkpoint))


def teacher_config_of(teacher_config_file, teacher_checkpoint):
  """The teacher's BertConfig: --teacher_config_file's, or the one a
  keras-hub preset or a transformers folder teacher holds (a given file must
  then agree with a folder's).

  Raises:
    ValueError: one line, naming the flag: neither, or a bad config.
  """
  path, checkpoint = teacher_config_file, teacher_checkpoint
  if checkpoint and hf_checkpoint.is_hf_folder(checkpoint):
    return hf_checkpoint.config_for(path, checkpoint, "teacher_config_file")
  if path:
    try:
      return BertConfig.from_json_file(path)
    except (ValueError, OSError) as e:
      raise ValueError(f"--teacher_config_file={path}: {e}") from None
  if checkpoint and distillation.is_keras_hub_preset(checkpoint):
    try:
      return distillation.preset_bert_config(checkpoint)
    except (ValueError, OSError, KeyError) as e:
      raise ValueError(f"--teacher_checkpoint={checkpoint}: {e}") from None
  raise ValueError("objective distill needs --teacher_config_file and --teacher_checkpoint "
                   "(python -m bert_tf.distill; a keras-hub preset or transformers folder "
                   "teacher holds its own config)")


def default_student_config(options):
  """The student's BertConfig when the distill tool is given none: the
  teacher's with half its layers (DistilBERT's). ValueError naming the
  flag: no --teacher_checkpoint, or a bad teacher config.

  Args:
    options: the run's DistillOptions.
  """
  if not options.teacher_checkpoint:
    raise ValueError("--teacher_checkpoint is required")
  return distillation.default_student_config(
      teacher_config_of(options.teacher_config_file, options.teacher_checkpoint))


def check_teacher_vocab(config):
  """A one-line ValueError when the records' manifest says another vocab
  size than the teacher's config (records without a manifest: nothing)."""
  options = config.objective_options or distill_options.DistillOptions()
  teacher_config = teacher_config_of(options.teacher_config_file, options.teacher_checkpoint)
  source = options.teacher_config_file or options.teacher_checkpoint
  teacher_flag = "--teacher_config_file" if options.teacher_config_file else "--teacher_checkpoint"
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


# Additive sums a distillation batch adds to its student's (`loss_sums`).
DISTILL_SUM_KEYS = ("kl_sum", "cos_sum", "token_count", "teacher_mlm_ce_sum",
                    "teacher_mlm_correct")


def soft_target_kl(student_logits, teacher_logits, temperature):
  """KL(teacher || student) of the temperature-softened distributions,
  scaled by T^2 (Hinton et al.: keeps the soft-target gradients' size as T
  changes). float32 [...] from float [..., vocab] logits; a gradient to
  the student's logits only.

  With p = softmax(teacher / T), q = softmax(student / T) (the fused
  softmax op) and lse their log-normalizers (`models.softmax`):

    KL = sum p (log p - log q) = sum p (teacher - student) / T
         + lse_student - lse_teacher,    d KL / d student = (q - p) / T

  written out so the vocab is passed over 9 times forward and twice
  backward instead of two log-softmaxes, their gradients and the product's.
  """
  inv_t = 1.0 / tf.cast(temperature, tf.float32)
  shape = tf.shape(student_logits)[:-1]
  teacher = tf.stop_gradient(softmax.rows(teacher_logits))
  teacher_p = tf.nn.softmax(teacher * inv_t, axis=-1)
  teacher_lse = softmax.log_normalizer(teacher, teacher_p, inv_t)

  @tf.custom_gradient
  def per_row(student):
    student_q = tf.nn.softmax(student * inv_t, axis=-1)
    kl = (inv_t * tf.reduce_sum(teacher_p * (teacher - student), axis=-1)
          + softmax.log_normalizer(student, student_q, inv_t) - teacher_lse)

    def grad(upstream):
      return (student_q - teacher_p) * (upstream * inv_t)[:, None]

    return kl, grad

  return tf.reshape(per_row(softmax.rows(student_logits)), shape) / (inv_t * inv_t)


def cosine_distance(a, b):
  """1 - cos(a, b) along the last axis, float32 [...] (0 for equal
  directions; a zero vector counts as orthogonal)."""
  a = tf.math.l2_normalize(tf.cast(a, tf.float32), axis=-1, epsilon=1e-12)
  b = tf.math.l2_normalize(tf.cast(b, tf.float32), axis=-1, epsilon=1e-12)
  return 1.0 - tf.reduce_sum(a * b, axis=-1)


class DistillationObjective(base.Objective):
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
  - the KL is at the records' masked positions by default (their
    --restrict_ce_to_mask); their default takes it on every real token,
    which `kl_tokens="all"` does: both MLM heads then score every position,
    a [batch, seq, vocab] softmax per step for each model.
  - masking comes from the records (static, or dynamic when the writer
    wrote several duplicates), with the original 80/10/10 rule; theirs
    re-masks each batch with frequency-smoothed token sampling.
  - the student keeps token types (and the pooler): it is a plain
    BertPretrainer; no NSP unless alpha_sentence > 0.

  Attributes beyond `base.Objective`'s: student_objective (the
  BertObjective of the student's heads: "mlm", or the records' with
  alpha_sentence > 0; the `export_objective`), options (DistillSettings).
  """

  family = names.DISTILL
  options_type = DistillSettings
  checkpoint_root = checkpoints.MODEL_ROOT + ("student",)

  def __init__(self, student_objective, options=None):
    self.student_objective = student_objective
    self.options = options if options is not None else DistillSettings()
    self.name = names.DISTILL_PREFIX + student_objective.name
    self.record_options = student_objective.record_options
    self.sentence_task = student_objective.sentence_task
    self.sentence_name = student_objective.sentence_name
    self.features = student_objective.features
    self.sum_keys = student_objective.sum_keys + DISTILL_SUM_KEYS
    student_keys = student_objective.metric_keys[1:]  # "loss" is the total here
    self.metric_keys = (("loss",) + student_keys
                        + ("kl_loss", "cosine_loss", "teacher_masked_lm_loss",
                           "teacher_masked_lm_accuracy"))

  @classmethod
  def members(cls):
    """One member per student (default options: they serve checkpoints and
    export, not training)."""
    return REGISTERED

  @property
  def export_objective(self):
    """The student's objective: export and fine-tuning take the student."""
    return self.student_objective

  def export_model(self, model):
    """The student of a Distiller."""
    return model.student

  def with_options(self, options):
    return DistillationObjective(self.student_objective, options)

  @classmethod
  def resolve(cls, sentence_task, config=None, data=None):
    """The objective of a run on records of `sentence_task` with `config`
    (a TrainConfig, or DistillSettings)."""
    del data
    options = (config if isinstance(config, DistillSettings)
               else DistillSettings.from_options(config and config.objective_options))
    if options.alpha_sentence > 0:
      student = bert.BertObjective.resolve(sentence_task)
      if student.sentence_name is None:
        raise ValueError("--alpha_sentence > 0 trains the records' sentence-pair task, but "
                         "these records have none (sentence_task=none)")
    else:
      student = bert.BY_TASK["none"]
    return cls(student, options)

  def _teacher(self, dtype):
    """The teacher pretrainer, every weight read from its checkpoint."""
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
    saved = teacher_objective(prefix)
    teacher = saved.export_objective.build_model(options.teacher_config, dtype=dtype)
    try:
      report = checkpoints.read_weights(teacher, prefix, require_all=True,
                                        root=saved.checkpoint_root)
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
    model = distillation.Distiller(student, teacher,
                                   all_token_logits=options.kl_tokens == "all")
    model.objective = self
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
    mask = tf.cast(features["input_mask"], tf.float32)
    if self.options.kl_tokens == "all":
      weights = mask
      kl = soft_target_kl(outputs["mlm_logits_all"], outputs["teacher_mlm_logits_all"],
                          self.options.temperature)
    else:
      weights = tf.cast(features["masked_lm_weights"], tf.float32)
      kl = soft_target_kl(outputs["mlm_logits"], outputs["teacher_mlm_logits"],
                          self.options.temperature)
    cos = cosine_distance(outputs["sequence_output"], outputs["teacher_sequence_output"])
    teacher = losses.frozen_mlm_sums(outputs["teacher_mlm_logits"], features)
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
    kl_count = (tf.maximum(counts["token_count"], 1.0) if o.kl_tokens == "all"
                else weight_sum)
    loss = (o.alpha_ce * sums["kl_sum"] / kl_count
            + o.alpha_mlm * sums["mlm_ce_sum"] / weight_sum
            + o.alpha_cos * sums["cos_sum"] / tf.maximum(counts["token_count"], 1.0))
    if "sentence_ce_sum" in sums:
      loss += o.alpha_sentence * sums["sentence_ce_sum"] / counts["batch_size"]
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

    metrics["kl_loss"] = (tf.math.divide_no_nan(sums["kl_sum"], sums["token_count"])
                          if o.kl_tokens == "all" else per_prediction(sums["kl_sum"]))
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


# The registered members, one per student (options: the defaults; they
# serve checkpoints and export, not training).
REGISTERED = {o.name: o for o in (DistillationObjective(bert.BY_NAME[s])
                                  for s in names.DISTILL_STUDENTS)}
# What a teacher checkpoint may have been trained for: a BertPretrainer
# (BERT's objectives), or a distilled student (its model/student).
_TEACHERS = {**bert.BY_NAME, **REGISTERED}


def teacher_objective(prefix):
  """The objective of the teacher checkpoint `prefix` (mlm_nsp for one that
  does not say: the original's).

  Raises:
    ValueError: a checkpoint of another objective (ELECTRA's): its model is
      no BertPretrainer to distil.
  """
  name, _ = checkpoint_tag.read_tag(prefix)
  if name not in _TEACHERS:
    raise ValueError(f"--teacher_checkpoint={prefix} was trained for objective {name}; a "
                     f"teacher is a checkpoint of {', '.join(_TEACHERS)}")
  return _TEACHERS[name]
