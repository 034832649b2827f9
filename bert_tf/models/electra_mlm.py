"""ELECTRA's generator feeding a masked LM instead of a discriminator: the
"Replace MLM" and "All-Tokens MLM" objectives of Clark et al. 2020,
section 3.5 (their Table 5, "efficiency analysis").

Both corrupt the text as ELECTRA does (`ElectraPretrainer.corrupt`: the
generator, trained by its own masked-LM loss, samples a token at every
masked position) and give the corrupted text to the main network, an
encoder of the discriminator's shape sharing the generator's embeddings:

- Replace MLM: the main network predicts the original token at the masked
  positions with a masked-LM head (BERT's: dense to the embedding width +
  activation, LayerNorm, logits against the tied word embeddings + bias).
  It is BERT's masked LM whose masked positions hold the generator's
  samples instead of [MASK].
- All-Tokens MLM: the main network predicts the original token at every
  position, with the paper's explicit copy mechanism: a sigmoid layer
  gives each token a copy probability D, and the output distribution puts
  D on the input token plus (1 - D) times the masked-LM softmax. The
  masked-LM head is Replace MLM's, run at every position; the copy layer
  is one dense(1) on the sequence output.

google-research/electra does not release these objectives; the paper's
text above is what they follow. The main network is what export and
fine-tuning take (its encoder; the `fill_mask` signature reads its
masked-LM head, without the copy term).
"""

import keras
import keras_hub
import tensorflow as tf

from bert_tf.models import activations
from bert_tf.models import electra
from bert_tf.models import modeling


@keras.saving.register_keras_serializable(package="bert_tf")
class ElectraMlmPretrainer(electra.ElectraPretrainer):
  """The generator of `ElectraPretrainer` and a masked-LM main network.

  Attributes (beyond ElectraPretrainer's, whose discriminator head this
  model does not have):
    all_tokens: False: Replace MLM (predictions at the masked positions);
      True: All-Tokens MLM (every position, with the copy probability).
    main_mlm_head: the main network's keras_hub MaskedLMHead (the shared
      word embeddings tied).
    copy_output: Dense(1), the copy probability's logit (All-Tokens MLM;
      None for Replace MLM).
  """

  def __init__(self, config, gen_config=None, all_tokens=False, **kwargs):
    self.all_tokens = bool(all_tokens)
    kwargs.setdefault("name", "electra_mlm_pretrainer")
    super().__init__(config, gen_config, **kwargs)

  def _make_main_heads(self, config, init, dtype):
    del dtype  # the heads run in float32
    self.main_mlm_head = keras_hub.layers.MaskedLMHead(
        token_embedding=self.encoder.token_embedding,
        intermediate_activation=activations.function(config.hidden_act),
        layer_norm_epsilon=modeling.LAYER_NORM_EPSILON, kernel_initializer=init,
        bias_initializer="zeros", dtype="float32", name="main_mlm_head")
    self.main_mlm_head.build((None, None, config.hidden_size))
    self.copy_output = None
    if self.all_tokens:
      self.copy_output = keras.layers.Dense(1, kernel_initializer=init, dtype="float32",
                                            name="copy_output")
      self.copy_output.build((None, None, config.hidden_size))

  def main_outputs(self, input_ids, segment_ids, input_mask, positions, training=False):
    """The main network on `input_ids`: its sequence output, float32
    masked-LM logits at `positions` (int32 [b, q]; None: no head) and, for All-Tokens MLM,
    the float32 copy logits [b, s]."""
    sequence = self.encoder({"token_ids": input_ids, "segment_ids": segment_ids,
                             "padding_mask": input_mask}, training=training)["sequence_output"]
    hidden = tf.cast(sequence, tf.float32)
    outputs = {"sequence_output": sequence, "pooled_output": sequence[:, 0]}
    if positions is not None:
      outputs["main_mlm_logits"] = tf.cast(
          self.main_mlm_head(hidden, mask_positions=positions), tf.float32)
    if self.copy_output is not None:
      outputs["copy_logits"] = tf.squeeze(self.copy_output(hidden), -1)
    return outputs

  def call(self, inputs, training=False):
    """Training/eval forward (features with `masked_lm_ids`) or serving.

    Returns:
      serving: `sequence_output`, `pooled_output` and, with
      `masked_lm_positions`, the main network's float32 `mlm_logits`
      [b, p, vocab].
      pretraining: the generator's `mlm_logits` [b, p, vocab],
      `sampled_ids`, `original_ids`, `corrupted_ids` (`corrupt`), the main
      network's `main_mlm_logits` ([b, p, vocab] at the masked positions;
      All-Tokens MLM: [b, s, vocab] at every position) and, for All-Tokens
      MLM, `copy_logits` [b, s]; `sequence_output`, `pooled_output`.
    """
    input_ids = tf.cast(inputs["input_ids"], tf.int32)
    segment_ids = tf.cast(inputs["segment_ids"], tf.int32)
    input_mask = tf.cast(inputs["input_mask"], tf.int32)
    if "masked_lm_ids" not in inputs:
      positions = inputs.get("masked_lm_positions")
      outputs = self.main_outputs(input_ids, segment_ids, input_mask,
                                  None if positions is None else tf.cast(positions, tf.int32),
                                  training)
      outputs.pop("copy_logits", None)
      if positions is not None:
        outputs["mlm_logits"] = outputs.pop("main_mlm_logits")
      return outputs
    outputs = self.corrupt(inputs, training)
    if self.all_tokens:
      positions = tf.broadcast_to(tf.range(tf.shape(input_ids)[1]), tf.shape(input_ids))
    else:
      positions = tf.cast(inputs["masked_lm_positions"], tf.int32)
    return dict(outputs, **self.main_outputs(outputs["corrupted_ids"], segment_ids, input_mask,
                                             positions, training))

  def get_config(self):
    return dict(super().get_config(), all_tokens=self.all_tokens)
