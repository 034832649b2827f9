"""A left-to-right language model: BERT's "LTR & No NSP" (Devlin et al.
2019, section 5.1 and Table 5), a member of the BERT family.

  ltr  the encoder with a causal attention mask (each position attends to
       itself and the positions before it), trained to predict the next
       token at every position; no next-sentence prediction

The model is `models.modeling.BertPretrainer(causal=True)`: BERT's encoder
and masked-LM head (dense, GELU, LayerNorm, tied embeddings), the head
read at every position. It reads the text as written: the records'
masking is undone from their masked-LM labels, so any records train it
(their sentence labels unused); compare_objectives writes it whole
sentences. The loss is the mean cross-entropy of the next token over the
real tokens that have one before them (sum over the global batch divided
by their count, as the masked LM's).

The encoder is read with its causal mask after pretraining too
(`causal_encoder`), as the paper fine-tuned its LTR model (a bidirectional
reading of weights trained left to right would be a mismatch): fine-tuning,
the comparison's frozen probes, extract_features and the exports' `encode`
and task signatures. A sentence's vector is the pooler on its last real
token (`pooled_position`: [CLS] at position 0 sees only itself; OpenAI GPT
classified from its last token). No transformers class runs BERT's encoder
causally under these heads, so --hf_out refuses such a model.

What an export serves: the encoder (`encode`, causal), `pretraining`'s
masked_lm_log_probs at given positions and `fill_mask`, both the
distribution of the token at a position given the tokens before it.
"""

import tensorflow as tf

from bert_tf.models import flops
from bert_tf.models import modeling
from bert_tf.training import losses
from bert_tf.training import objective_names as names
from bert_tf.training.objectives import base


def next_token_sums(lm_logits, original_ids, input_mask):
  """Sums of the next-token loss of a batch: lm_ce_sum (cross-entropy of
  the token at t + 1 from the logits at t), lm_weight_sum (the real tokens
  at t + 1), lm_correct (hits), float32 scalars.

  Args:
    lm_logits: float [b, s, vocab]; original_ids: int [b, s]; input_mask:
      int [b, s] (1 real, 0 padding).
  """
  logits = tf.cast(lm_logits, tf.float32)[:, :-1]
  targets = tf.cast(original_ids, tf.int32)[:, 1:]
  weights = tf.cast(input_mask, tf.float32)[:, 1:]
  ce, hit = losses.sparse_cross_entropy_and_hit(targets, logits)
  return {"lm_ce_sum": tf.reduce_sum(weights * ce), "lm_weight_sum": tf.reduce_sum(weights),
          "lm_correct": tf.reduce_sum(weights * hit)}


class LtrObjective(base.Objective):
  """Left-to-right LM, no NSP (module docstring). No options.

  Members implemented (the BERT objectives' pattern): resolve, members,
  ignores_sentence_labels, build_model, train_flops, trainable_variables,
  loss_sums, global_counts, replica_loss, metrics, progress_fields; the
  held-out sums are base.Objective's (the masked-LM figures, read from the
  model's `mlm_logits`: the token at each masked position from the tokens
  before it); `text_signatures` are base.Objective's (fill_mask and no
  sentence head).
  """

  name = names.LTR
  family = names.BERT
  features = base.INPUT_FEATURES + base.MLM_FEATURES
  sum_keys = ("lm_ce_sum", "lm_weight_sum", "lm_correct")
  metric_keys = ("loss", "lm_loss", "lm_accuracy")
  # Whole sentences, as RoBERTa's masked LM (an arm's writer flags may give
  # it BERT's segment pairs instead: their sentence labels go unused).
  record_options = {"sentence_task": "none", "packing": "full_sentences"}
  causal_encoder = True
  pooled_position = "last"

  @classmethod
  def resolve(cls, sentence_task, config=None, data=None):
    """The objective, on records of any sentence task (their labels unused)."""
    del sentence_task, config, data
    return LTR

  @classmethod
  def members(cls):
    return {names.LTR: LTR}

  def ignores_sentence_labels(self, sentence_task):
    """Any records' sentence labels go unused (no sentence-pair head)."""
    del sentence_task
    return True

  def build_model(self, bert_config, dtype=None):
    """The causal pretrainer: encoder and LM head, no sentence-pair head."""
    model = modeling.BertPretrainer(bert_config, dtype=dtype, sentence_head=False, causal=True)
    model.objective = self
    return model

  def train_flops(self, bert_config, batch_size, seq_length, predictions_per_seq):
    """Training FLOPs of one step (int): BERT's with the LM head at every
    position (`predictions_per_seq` does not apply)."""
    del predictions_per_seq
    return flops.bert_step_flops(bert_config, batch_size, seq_length, seq_length,
                                 sentence_head=False)

  def trainable_variables(self, model):
    """All trainable variables less the encoder's pooler (no head reads it)."""
    unused = {id(v) for v in model.encoder.get_layer("pooled_dense").trainable_variables}
    return [v for v in model.trainable_variables if id(v) not in unused]

  def loss_sums(self, outputs, features):
    """`sum_keys` of a batch (`next_token_sums`)."""
    return next_token_sums(outputs["lm_logits"], outputs["original_ids"],
                           features["input_mask"])

  def global_counts(self, features):
    """The next-token targets over the global batch (inside `strategy.run`),
    no gradient."""
    context = tf.distribute.get_replica_context()
    if context is None:
      raise ValueError("global_counts must run in a replica context")
    local = tf.reduce_sum(tf.cast(features["input_mask"], tf.float32)[:, 1:])
    return {"weight_sum": tf.stop_gradient(context.all_reduce(tf.distribute.ReduceOp.SUM, local))}

  def replica_loss(self, sums, counts):
    """This replica's share of the global mean next-token cross-entropy."""
    return sums["lm_ce_sum"] / tf.maximum(counts["weight_sum"], 1.0)

  def metrics(self, sums, mlm_epsilon=losses.MLM_EPSILON):
    loss = base.ratio(sums, "lm_ce_sum", "lm_weight_sum", mlm_epsilon)
    return {"loss": loss, "lm_loss": loss,
            "lm_accuracy": tf.math.divide_no_nan(sums["lm_correct"], sums["lm_weight_sum"])}

  def progress_fields(self):
    return [("loss", "loss"), ("lm", "lm_loss"), ("lm_acc", "lm_accuracy")]


LTR = LtrObjective()
