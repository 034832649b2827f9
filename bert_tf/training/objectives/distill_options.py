"""DistilBERT's options (no TensorFlow): the teacher, how the student
starts, the loss weights and the temperature, with DistilBERT's defaults
(Sanh et al. 2019; Hugging Face's distiller). Its flags are
bert_tf.distill's; the objective is `distillation.py`.
"""

import dataclasses

from bert_tf.training.objectives import options

# teacher: student layer i starts as teacher layer 2i; scratch: random.
STUDENT_INITS = ("teacher", "scratch")
# Where the soft-target KL is taken: at the records' masked positions
# (ours, the distiller's --restrict_ce_to_mask) or at every real token (the
# distiller's default).
KL_TOKENS = ("masked", "all")


@dataclasses.dataclass(frozen=True)
class DistillOptions(options.Options):
  """What a distillation run is told besides the student's BertConfig.

  loss = alpha_ce  x T^2 KL(teacher || student), softened by temperature T
       + alpha_mlm x masked-LM cross-entropy on the true tokens
       + alpha_cos x (1 - cosine) of the last hidden states, on real tokens
       (+ alpha_sentence x the student's NSP/SOP loss)
  """
  own_tool = True  # bert_tf.distill defines these flags

  teacher_config_file: str = options.option(
      "", "bert_config.json of the teacher (optional for a keras-hub preset, which holds "
      "its config).", flag_default=None)
  teacher_checkpoint: str = options.option(
      "", "The trained teacher: a training output dir, a checkpoint prefix, an original TF1 "
      "BERT checkpoint (.../bert_model.ckpt) with its heads, or a keras-hub BertMaskedLM "
      "preset directory (one with the masked-LM head).", flag_default=None)
  student_init: str = options.option(
      "teacher", "teacher: student layer i starts as teacher layer 2i (plus embeddings, "
      "pooler, masked-LM head), as DistilBERT; scratch: random initialization.",
      choices=STUDENT_INITS)
  alpha_ce: float = options.option(
      5.0, "Weight of the KL between the teacher's and student's softened masked-LM "
      "distributions (scaled by temperature^2).")
  alpha_mlm: float = options.option(
      2.0, "Weight of the student's masked-LM loss on the true tokens.")
  alpha_cos: float = options.option(
      1.0, "Weight of the cosine loss between the last hidden states (real tokens).")
  alpha_sentence: float = options.option(
      0.0, "Weight of the student's sentence-pair loss (the records' NSP or SOP); 0, "
      "DistilBERT's choice, trains none and builds no such head.")
  temperature: float = options.option(
      2.0, "Softmax temperature of both distributions in the KL term.")
  kl_tokens: str = options.option(
      "masked", "Where the KL term is taken: masked (the records' masked positions) or all "
      "(every real token, Hugging Face's distiller's default).", choices=KL_TOKENS)

  def validate(self):
    super().validate()
    for name in ("alpha_ce", "alpha_mlm", "alpha_cos", "alpha_sentence"):
      if getattr(self, name) < 0:
        raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
    if self.temperature <= 0:
      raise ValueError(f"temperature must be positive, got {self.temperature}")
