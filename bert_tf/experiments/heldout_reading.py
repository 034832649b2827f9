"""How an objective's held-out figures read in a comparison's table: the
experiments' own small interface to what `Objective.heldout_figures`
returns (training/objectives), so the comparison names no objective.

A reading says under which column the masked-LM accuracy goes (a
generator's is not the same quantity as BERT's, so it gets a column of its
own), which of the objective's extra figures become rows and the count
each one's binomial standard error is over (None: a loss, no spread
measured), and a note for results.md. An objective without an entry reads
as BERT's: masked_lm_accuracy and no other row.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class HeldoutReading:
  """See the module docstring. rows: ((metric, count key or None), ...)."""
  mlm_metric: str = "masked_lm_accuracy"
  rows: tuple = ()
  note: str = ""

  def progress_text(self, figures):
    """The progress line's extra figures of a held-out result (str)."""
    return "".join(f", {metric} {figures[metric]:.4f}" for metric, _ in self.rows[:2]
                   if metric in figures)


_DISCRIMINATOR = HeldoutReading(
    mlm_metric="generator_masked_lm_accuracy",
    rows=(("discriminator_loss", None), ("discriminator_loss_vs_prior", None),
          ("discriminator_accuracy", "tokens"),
          ("discriminator_precision", "predicted_replaced"),
          ("discriminator_recall", "replaced"), ("replaced_share", "tokens")),
    note=("generator_masked_lm_accuracy is a generator's (the smaller network that "
          "corrupts the text) on the same held-out positions, re-masked by its own rule: not "
          "the same quantity as masked_lm_accuracy. The discriminator (what fine-tuning "
          "starts from) is scored on every real token of the generator's corrupted text: "
          "replaced_share is the share replaced, discriminator_loss_vs_prior its loss "
          "(nats) minus the binary entropy of that share, the loss of always guessing the "
          "share: below 0 it learned beyond the prior. Always answering \"original\" scores "
          "accuracy 1 - replaced_share and precision and recall 0. The losses carry no "
          "standard error"))

# Objectives whose held-out figures are a generator's and a discriminator's.
READINGS = {"electra": _DISCRIMINATOR}


def reading(objective_name):
  """The HeldoutReading of an objective (by its name)."""
  return READINGS.get(objective_name, HeldoutReading())
