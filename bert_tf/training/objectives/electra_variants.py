"""The ELECTRA family's variants of Clark et al. 2020, section 3.5 and
Table 5 ("efficiency analysis"), each beside `electra` with its options
(`ElectraOptions`: generator size, mask rule) and records (BERT's):

  electra_15      ELECTRA 15%: the discriminator loss only over the masked
                  (15%) positions, not every token
  replace_mlm     Replace MLM: the masked positions hold the generator's
                  samples instead of [MASK], and the main network learns
                  them by masked LM (no discriminator)
  all_tokens_mlm  All-Tokens MLM: Replace MLM predicting every token, with
                  the paper's copy mechanism (`models/electra_mlm.py`)

The generator is ELECTRA's in each, trained by its masked-LM loss. For
replace_mlm and all_tokens_mlm the loss is gen_mlm + main_mlm (both
weight 1: two cross-entropies over the vocab); they have no discriminator,
so --discriminator_weight does not apply and a value other than its default
is refused. The main network (the discriminator's shape) is what export
and fine-tuning take.
"""

import tensorflow as tf

from bert_tf.models import electra as electra_model
from bert_tf.models import electra_mlm
from bert_tf.models import flops
from bert_tf.training import losses
from bert_tf.training import objective_names as names
from bert_tf.training.objectives import base
from bert_tf.training.objectives import electra
from bert_tf.training.objectives import electra_options
from bert_tf.training.objectives import heldout


def masked_positions(features):
  """float32 [b, s]: 1 at the records' real masked positions (integer ops,
  `scatter_at_positions`)."""
  ids = tf.cast(features["input_ids"], tf.int32)
  positions = tf.cast(features["masked_lm_positions"], tf.int32)
  real = tf.cast(features["masked_lm_weights"], tf.float32) > 0
  _, written = electra_model.scatter_at_positions(ids, positions, tf.ones_like(positions), real)
  return tf.cast(written, tf.float32)


class Electra15Objective(electra.ElectraObjective):
  """ELECTRA 15%: ELECTRA whose discriminator loss (and its figures:
  accuracy, precision, recall, replaced_share) is over the masked positions
  only; the discriminator still reads every token."""

  name = names.ELECTRA_15
  # Its figures are over the masked positions, most of them replaced: its
  # prior is not ELECTRA's, so they get columns of their own.
  heldout_reading = heldout.DISCRIMINATOR.on_masked_positions()

  def discriminated(self, features):
    return masked_positions(features)


def log_add_exp(a, b):
  """log(exp(a) + exp(b)), stable (float32)."""
  top = tf.maximum(a, b)
  return top + tf.math.log1p(tf.exp(-tf.abs(a - b)))


def copy_mixture(mlm_logits, copy_logits, input_ids, target_ids):
  """All-Tokens MLM's output distribution at each token, D on the input
  token plus (1 - D) x softmax(mlm_logits), with D = sigmoid(copy_logits).

  Args:
    mlm_logits: float [b, s, vocab]; copy_logits: float [b, s].
    input_ids, target_ids: int32 [b, s] (the corrupted and the original
      text).
  Returns:
    (float32 [b, s] log-probability of target_ids, int32 [b, s] the
    mixture's argmax, float32 [b, s] D). Statistics in float32; ids only
    compared and gathered.
  """
  logits = tf.cast(mlm_logits, tf.float32)
  copy = tf.cast(copy_logits, tf.float32)
  log_norm = tf.reduce_logsumexp(logits, axis=-1)
  log_copy, log_rest = tf.math.log_sigmoid(copy), tf.math.log_sigmoid(-copy)
  log_q_target = tf.gather(logits, target_ids, batch_dims=2) - log_norm
  is_input = tf.equal(target_ids, input_ids)
  log_p = tf.where(is_input, log_add_exp(log_copy, log_rest + log_q_target),
                   log_rest + log_q_target)
  # The argmax: the input token (D + (1 - D) q(input)) or the softmax's.
  best = tf.argmax(logits, axis=-1, output_type=tf.int32)
  log_q_best = tf.reduce_max(logits, axis=-1) - log_norm
  log_q_input = tf.gather(logits, input_ids, batch_dims=2) - log_norm
  input_wins = (tf.equal(best, input_ids)
                | (log_add_exp(log_copy, log_rest + log_q_input) >= log_rest + log_q_best))
  return log_p, tf.where(input_wins, input_ids, best), tf.exp(log_copy)


class ReplaceMlmObjective(electra.ElectraObjective):
  """Replace MLM: gen_mlm + main_mlm, the main network's masked LM at the
  masked positions of the generator-corrupted text.

  Metrics: loss, masked_lm_loss/accuracy and sampled_masked_lm_accuracy
  (the generator's, as ELECTRA's), main_mlm_loss and main_mlm_accuracy
  (the main network's, at the masked positions).
  """

  name = names.REPLACE_MLM
  sum_keys = ("mlm_ce_sum", "mlm_weight_sum", "mlm_correct", "sampled_original",
              "main_ce_sum", "main_weight_sum", "main_correct", "num_examples")
  metric_keys = ("loss", "masked_lm_loss", "masked_lm_accuracy", "main_mlm_loss",
                 "main_mlm_accuracy", "sampled_masked_lm_accuracy")
  all_tokens = False

  has_discriminator = False  # the main network is a masked LM
  # Its main_mlm_* figures are over the masked positions, All-Tokens MLM's
  # over every token: the columns say which (main_masked_accuracy is the
  # one both measure).
  heldout_reading = heldout.HeldoutReading(
      mlm_metric="generator_masked_lm_accuracy",
      rows=(("main_mlm_accuracy", "main_predictions"), ("main_mlm_loss", None)),
      columns=(("main_mlm_accuracy", "main_masked_accuracy"),
               ("main_mlm_loss", "main_masked_loss")),
      note=heldout.GENERATOR_AND_MAIN_NOTE
      + "main_masked_accuracy and main_masked_loss at the masked positions")

  def __init__(self, options=None):
    super().__init__(options)
    default = electra_options.ElectraOptions().discriminator_weight
    if self.discriminator_weight != default:
      raise ValueError(f"discriminator_weight={self.discriminator_weight:g}: {self.name} has "
                       "no discriminator (its loss is generator MLM + main MLM, weight 1 "
                       "each); leave --discriminator_weight at its default")

  def build_model(self, bert_config, dtype=None):
    """The ElectraMlmPretrainer (generator, main masked LM, shared
    embeddings)."""
    model = electra_mlm.ElectraMlmPretrainer(
        bert_config, self.generator_config(bert_config), all_tokens=self.all_tokens,
        mask_rule=self.options.mask_rule, mask_token_id=self.options.mask_token_id,
        seed=self.options.seed, dtype=dtype)
    model.objective = self
    return model

  def train_flops(self, bert_config, batch_size, seq_length, predictions_per_seq):
    """Training FLOPs of one step, generator included (int)."""
    return flops.electra_mlm_step_flops(
        bert_config, self.generator_config(bert_config), batch_size, seq_length,
        predictions_per_seq, electra_model.embedding_size(bert_config), self.all_tokens)

  def main_sums(self, outputs, features):
    """The main network's main_ce_sum, main_weight_sum, main_correct."""
    sums = losses.mlm_sums(outputs["main_mlm_logits"], features)
    return {"main_ce_sum": sums["mlm_ce_sum"], "main_weight_sum": sums["mlm_weight_sum"],
            "main_correct": sums["mlm_correct"]}

  def loss_sums(self, outputs, features):
    """Additive float32 sums of a batch (`sum_keys`)."""
    sums = dict(self.generator_sums(outputs, features), **self.main_sums(outputs, features),
                num_examples=tf.cast(tf.shape(features["input_ids"])[0], tf.float32))
    return {k: sums[k] for k in self.sum_keys}

  def main_weights(self, features):
    """float32 [b, s] or [b, p]: the main loss's weights."""
    return tf.cast(features["masked_lm_weights"], tf.float32)

  def global_counts(self, features):
    """The generator's and the main loss's weight sums over the global
    batch (`paired_counts`)."""
    return self.paired_counts(features, self.main_weights(features), "main_weight_sum")

  def replica_loss(self, sums, counts):
    return self.paired_loss(sums, counts, "main_ce_sum", "main_weight_sum", 1.0)

  def metrics(self, sums, mlm_epsilon=electra.ElectraObjective.EPSILON):
    mlm_loss = base.ratio(sums, "mlm_ce_sum", "mlm_weight_sum", mlm_epsilon)
    main_loss = base.ratio(sums, "main_ce_sum", "main_weight_sum", mlm_epsilon)
    share = tf.math.divide_no_nan
    return {"loss": mlm_loss + main_loss, "masked_lm_loss": mlm_loss,
            "masked_lm_accuracy": share(sums["mlm_correct"], sums["mlm_weight_sum"]),
            "main_mlm_loss": main_loss,
            "main_mlm_accuracy": share(sums["main_correct"], sums["main_weight_sum"]),
            "sampled_masked_lm_accuracy": share(sums["sampled_original"],
                                                sums["mlm_weight_sum"])}

  def progress_fields(self):
    return [("loss", "loss"), ("mlm", "masked_lm_loss"), ("main", "main_mlm_loss"),
            ("mlm_acc", "masked_lm_accuracy"), ("main_acc", "main_mlm_accuracy")]

  def heldout_figures(self, totals):
    """The main network's held-out figures (`metric_keys` but the
    generator's, which the comparison reports already) and the counts."""
    metrics = self.plain_metrics(totals)
    generator = ("loss", "masked_lm_loss", "masked_lm_accuracy", "sampled_masked_lm_accuracy")
    figures = {k: metrics[k] for k in self.metric_keys if k not in generator}
    return dict(figures, main_predictions=totals["main_weight_sum"])


class AllTokensMlmObjective(ReplaceMlmObjective):
  """All-Tokens MLM: gen_mlm + main_mlm over every real token, the main
  network's output the copy mixture (`copy_mixture`).

  Metrics: Replace MLM's (main_mlm_loss and main_mlm_accuracy over every
  real token), main_masked_accuracy (the mixture's argmax at the masked
  positions) and copy_probability (mean D over real tokens).
  """

  name = names.ALL_TOKENS_MLM
  sum_keys = ReplaceMlmObjective.sum_keys + ("main_masked_correct", "main_masked_count",
                                             "copy_sum")
  metric_keys = ReplaceMlmObjective.metric_keys + ("main_masked_accuracy", "copy_probability")
  all_tokens = True
  heldout_reading = heldout.HeldoutReading(
      mlm_metric="generator_masked_lm_accuracy",
      rows=(("main_masked_accuracy", "predictions"), ("main_mlm_accuracy", "main_predictions"),
            ("copy_probability", None), ("main_mlm_loss", None)),
      columns=(("main_mlm_accuracy", "main_all_tokens_accuracy"),
               ("main_mlm_loss", "main_all_tokens_loss")),
      note=heldout.GENERATOR_AND_MAIN_NOTE + (
          "main_masked_accuracy at the masked positions, main_all_tokens_accuracy and _loss "
          "over every real token (most of them copied: copy_probability is the mean weight "
          "of the copy mechanism)"))

  def main_weights(self, features):
    return tf.cast(features["input_mask"], tf.float32)

  def main_sums(self, outputs, features):
    log_p, predicted, copy = copy_mixture(outputs["main_mlm_logits"], outputs["copy_logits"],
                                          outputs["corrupted_ids"], outputs["original_ids"])
    weights = self.main_weights(features)
    masked = masked_positions(features)
    correct = tf.cast(tf.equal(predicted, outputs["original_ids"]), tf.float32)
    return {"main_ce_sum": -tf.reduce_sum(weights * log_p),
            "main_weight_sum": tf.reduce_sum(weights),
            "main_correct": tf.reduce_sum(weights * correct),
            "main_masked_correct": tf.reduce_sum(masked * correct),
            "main_masked_count": tf.reduce_sum(masked),
            "copy_sum": tf.reduce_sum(weights * copy)}

  def metrics(self, sums, mlm_epsilon=electra.ElectraObjective.EPSILON):
    share = tf.math.divide_no_nan
    return dict(super().metrics(sums, mlm_epsilon),
                main_masked_accuracy=share(sums["main_masked_correct"],
                                           sums["main_masked_count"]),
                copy_probability=share(sums["copy_sum"], sums["main_weight_sum"]))


VARIANTS = (Electra15Objective, ReplaceMlmObjective, AllTokensMlmObjective)
