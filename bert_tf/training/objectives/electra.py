"""ELECTRA (family and name "electra"): a generator masked LM and a
replaced-token discriminator (the model: `bert_tf/models/electra.py`).

Its options (`electra_options.ElectraOptions`: generator size,
discriminator weight, mask rule) come from the training config; with the
records' [MASK] id and the noise seed they are its `ElectraSettings`, which
the checkpoint saves (`checkpoint_tag`), so export rebuilds the same
networks.
"""

import dataclasses
import json
import math

import tensorflow as tf
from absl import logging

from bert_tf.models import electra
from bert_tf.models import flops
from bert_tf.models.config import BertConfig
from bert_tf.training import losses
from bert_tf.training import objective_names as names
from bert_tf.training.objectives import base
from bert_tf.training.objectives import electra_options
from bert_tf.training.objectives import heldout


@dataclasses.dataclass(frozen=True)
class ElectraSettings(electra_options.ElectraOptions):
  """An ELECTRA run's options as resolved for its records: what the
  checkpoint saves (`checkpoint_tag`), so export rebuilds the same networks.

  Beyond `ElectraOptions`' fields (generator_config_file is read into
  generator_config, and kept empty here):
  generator_config: a bert_config dict for the generator (None: the
    fractions).
  mask_token_id: the records' [MASK] id (None: the records are not read,
    mask rule "records").
  seed: the generator's sampling noise.
  """
  generator_config: dict | None = None
  mask_token_id: int | None = None
  seed: int = 0

  def to_dict(self):
    """The fields as JSON-able data (generator_config_file left out: its
    content is generator_config)."""
    d = dataclasses.asdict(self)
    del d["generator_config_file"]
    return d

  @classmethod
  def from_config(cls, config=None, data=None):
    """From a TrainConfig (its ElectraOptions and seed; None: the defaults)
    on records `data` (a pipeline.DataInfo, whose [MASK] id is read unless
    the rule is "records").

    Raises:
      ValueError: bad options or records without masks.
    """
    settings = cls()
    if config is not None:
      options = config.objective_options or electra_options.ElectraOptions()
      fields = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
      path = fields.pop("generator_config_file")
      settings = cls(**fields, seed=config.seed, generator_config=(
          BertConfig.from_json_file(path).to_dict() if path else None))
    if data is not None and settings.mask_rule != "records":
      if data.masking is not None:
        # Dynamically masked records: the pipeline draws each example's
        # positions every time it is read (ELECTRA's per-step positions);
        # the [MASK] id is the manifest's.
        mask_token_id = int(data.masking.vocab.mask_id)
      else:
        mask_token_id = electra.mask_token_id_from_records(
            data.files, data.max_seq_length, data.max_predictions_per_seq, data.compression)
      settings = dataclasses.replace(settings, mask_token_id=mask_token_id)
    return settings


def binary_entropy(q):
  """H(q) in nats: the cross-entropy of the best constant guess of a 0/1
  label that is 1 with probability q."""
  return -sum(p * math.log(p) for p in (q, 1.0 - q) if p > 0)


class ElectraObjective(base.Objective):
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
  """

  name = names.ELECTRA
  family = names.ELECTRA
  sum_keys = ("mlm_ce_sum", "mlm_weight_sum", "mlm_correct", "sampled_original",
              "disc_ce_sum", "disc_token_count", "disc_correct", "disc_true_positive",
              "disc_predicted_replaced", "disc_replaced", "num_examples")
  metric_keys = ("loss", "masked_lm_loss", "masked_lm_accuracy", "discriminator_loss",
                 "discriminator_accuracy", "discriminator_precision", "discriminator_recall",
                 "sampled_masked_lm_accuracy", "replaced_share")
  options_type = ElectraSettings
  # ELECTRA reads BERT's records (it re-masks from their positions and
  # ignores the sentence labels), so compare_objectives shares mlm_nsp's.
  record_options = {}
  builds_own_encoder = True
  has_discriminator = True
  has_pooler = False
  heldout_reading = heldout.DISCRIMINATOR
  EPSILON = 1e-6  # the original's, for both losses

  def __init__(self, options=None):
    self.options = options if options is not None else ElectraSettings()
    self.discriminator_weight = float(self.options.discriminator_weight)

  def __repr__(self):
    return f"<objective {self.name} {self.options}>"

  @classmethod
  def resolve(cls, sentence_task, config=None, data=None):
    """The objective of a run's `config` on records `data`."""
    if sentence_task not in (None, "none"):
      logging.info("objective electra: the records' sentence labels (sentence_task=%s) "
                   "are not used", sentence_task)
    return cls(ElectraSettings.from_config(config, data))

  def with_options(self, options):
    return type(self)(options)

  @property
  def networks(self):
    """What fixes the model's weights (not the seed or [MASK] id): a resumed
    run must agree."""
    o = self.options
    return (o.generator_hidden_size, o.generator_layers,
            json.dumps(o.generator_config, sort_keys=True))

  def generator_config(self, bert_config):
    """The generator's BertConfig for this discriminator config."""
    if self.options.generator_config:
      return BertConfig.from_dict(self.options.generator_config, source="generator config")
    return electra.generator_config(bert_config, self.options.generator_hidden_size,
                                    self.options.generator_layers)

  def build_model(self, bert_config, dtype=None):
    """The ElectraPretrainer (generator, discriminator, shared embeddings)."""
    model = electra.ElectraPretrainer(
        bert_config, self.generator_config(bert_config), mask_rule=self.options.mask_rule,
        mask_token_id=self.options.mask_token_id, seed=self.options.seed, dtype=dtype)
    model.objective = self
    return model

  def train_flops(self, bert_config, batch_size, seq_length, predictions_per_seq):
    """Training FLOPs of one step, generator included (int; see
    `models/flops.py`)."""
    return flops.electra_step_flops(bert_config, self.generator_config(bert_config),
                                    batch_size, seq_length, predictions_per_seq,
                                    electra.embedding_size(bert_config))

  # The base's trainable_variables: generator, discriminator and the shared
  # embeddings (the discriminator's pooler is frozen by the model: ELECTRA
  # has none).

  def generator_sums(self, outputs, features):
    """The generator's masked-LM sums and `sampled_original` (float32)."""
    sums = losses.mlm_sums(outputs["mlm_logits"], features)
    weights = tf.cast(features["masked_lm_weights"], tf.float32)
    originals = tf.cast(features["masked_lm_ids"], tf.int32)
    sums["sampled_original"] = tf.reduce_sum(
        weights * tf.cast(tf.equal(outputs["sampled_ids"], originals), tf.float32))
    return sums

  def discriminated(self, features):
    """float32 [b, s]: the tokens the discriminator loss is over (every
    real token: input_mask)."""
    return tf.cast(features["input_mask"], tf.float32)

  def loss_sums(self, outputs, features):
    """Additive float32 sums of a batch (`sum_keys`)."""
    sums = self.generator_sums(outputs, features)
    logits = tf.cast(outputs["discriminator_logits"], tf.float32)
    labels = tf.cast(outputs["replaced_labels"], tf.float32)
    mask = self.discriminated(features)
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

  # -- the generator's masked LM plus one more loss (this family's bookkeeping)

  def paired_counts(self, features, weights, key):
    """The normalizers over the global batch (inside `strategy.run`), no
    gradient: the masked-LM weight sum ("weight_sum") and, under `key`, the
    sum of `weights` (float32 [b, s] or [b, p]), the other loss's."""
    context = tf.distribute.get_replica_context()
    local = tf.stack([tf.reduce_sum(tf.cast(features["masked_lm_weights"], tf.float32)),
                      tf.reduce_sum(weights)])
    weight_sum, other = tf.unstack(
        tf.stop_gradient(context.all_reduce(tf.distribute.ReduceOp.SUM, local)))
    return {"weight_sum": weight_sum, key: other}

  def paired_loss(self, sums, counts, sum_key, count_key, weight):
    """The generator's masked LM over the global batch plus `weight` times
    the other loss (sums[sum_key] over counts[count_key]): this replica's
    share (float32 scalar)."""
    return (sums["mlm_ce_sum"] / (counts["weight_sum"] + self.EPSILON)
            + weight * sums[sum_key] / (counts[count_key] + self.EPSILON))

  def plain_metrics(self, totals):
    """`metrics` of summed held-out totals as plain means (dict of float)."""
    return {k: float(v) for k, v in self.metrics(
        {k: tf.constant(v) for k, v in totals.items()}, mlm_epsilon=0).items()}

  def global_counts(self, features):
    """The masked-LM weight sum and the count of `discriminated` tokens over
    the global batch (`paired_counts`)."""
    return self.paired_counts(features, self.discriminated(features), "token_count")

  def replica_loss(self, sums, counts):
    """This replica's share of the global batch's loss (float32 scalar)."""
    return self.paired_loss(sums, counts, "disc_ce_sum", "token_count",
                            self.discriminator_weight)

  def metrics(self, sums, mlm_epsilon=EPSILON):
    """`metric_keys` -> scalar from summed sums (mlm_epsilon 0 for eval:
    plain means)."""
    mlm_loss = base.ratio(sums, "mlm_ce_sum", "mlm_weight_sum", mlm_epsilon)
    disc_loss = base.ratio(sums, "disc_ce_sum", "disc_token_count", mlm_epsilon)
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

  def heldout_sums(self, outputs, features):
    """Every loss sum: the generator's masked-LM ones and the
    discriminator's, on the generator's corrupted text."""
    return self.loss_sums(outputs, features)

  def heldout_figures(self, totals):
    """The discriminator's held-out figures from summed `heldout_sums`:
    loss, accuracy, precision, recall, replaced_share, the loss less the
    binary entropy of the replaced share (discriminator_loss_vs_prior:
    below 0 it learned beyond the prior), and the token counts each share
    is over."""
    metrics = self.plain_metrics(totals)
    keys = ("discriminator_loss", "discriminator_accuracy", "discriminator_precision",
            "discriminator_recall", "replaced_share")
    return {**{k: metrics[k] for k in keys},
            "discriminator_loss_vs_prior": (metrics["discriminator_loss"]
                                            - binary_entropy(metrics["replaced_share"])),
            "tokens": totals["disc_token_count"], "replaced": totals["disc_replaced"],
            "predicted_replaced": totals["disc_predicted_replaced"]}
