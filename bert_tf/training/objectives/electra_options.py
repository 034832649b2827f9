"""ELECTRA's options (no TensorFlow): the generator's size, the
discriminator loss's weight and the mask rule, with google-research/electra's
defaults (configure_pretraining.py, ELECTRA-small). Its flags are
run_pretraining's (and compare_objectives' arm flags); the objective is
`electra.py`.
"""

import dataclasses

from bert_tf.training.objectives import options

# How the records' masked positions are corrupted for the generator:
# electra (85% [MASK], 15% kept), bert (80/10/10 redrawn), records (the
# records' input as written). models/electra.py implements each
# (`MASK_RULES`, its shares).
MASK_RULES = ("electra", "bert", "records")


@dataclasses.dataclass(frozen=True)
class ElectraOptions(options.Options):
  """What an ELECTRA run is told besides the discriminator's BertConfig.

  The generator's hidden size (with its heads and intermediate size) and
  layers are fractions of the discriminator's, or a bert_config.json of its
  own; the loss is gen_mlm + discriminator_weight * disc.
  """
  generator_hidden_size: float = options.option(
      0.25, "ELECTRA: the generator's hidden size, heads and intermediate size as a "
      "fraction of the discriminator's (the original's 0.25).")
  generator_layers: float = options.option(
      1.0, "ELECTRA: the generator's layers as a fraction of the discriminator's.")
  generator_config_file: str = options.option(
      "", "ELECTRA: a bert_config.json for the generator (instead of the fractions); at "
      "most the discriminator's size.")
  discriminator_weight: float = options.option(
      50.0, "ELECTRA: weight of the discriminator loss (the original's 50).")
  mask_rule: str = options.option(
      "electra", "ELECTRA: how the records' masked positions are corrupted for the "
      "generator: electra (85% [MASK], 15% kept, the original's), bert (80/10/10 redrawn "
      "each step), records (the records' input as written).",
      flag="electra_mask_rule", choices=MASK_RULES)

  # The original's learning rate for ELECTRA-small (its base and large used
  # 2e-4); its warmup (10000) and weight decay (0.01) are our defaults
  # already.
  training_defaults = {"learning_rate": 5e-4}

  def validate(self):
    super().validate()
    for name in ("generator_hidden_size", "generator_layers"):
      if not 0 < getattr(self, name) <= 1:
        raise ValueError(f"{name}={getattr(self, name):g} must lie in (0, 1]: ELECTRA's "
                         "generator is a fraction of the discriminator, never larger")
    if self.discriminator_weight < 0:
      raise ValueError(f"discriminator_weight must be >= 0, got {self.discriminator_weight}")
