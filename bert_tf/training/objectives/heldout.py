"""`HeldoutReading`: how an objective's held-out figures read in a
comparison's table (no TensorFlow). Each objective declares its own as
`Objective.heldout_reading`; the comparison asks the objective
(experiments.heldout_reading), so it names none.

A reading says under which column the masked-LM accuracy goes (a
generator's is not the same quantity as BERT's, so it gets a column of its
own), which of the objective's `heldout_figures` become rows and the count
each one's binomial standard error is over (None: a loss, no spread
measured), and a note for results.md. The default reads as BERT's:
masked_lm_accuracy and its split by input kind (MLM_KINDS).
"""

import dataclasses

# A masked-LM model's accuracy split by what its input held: [MASK] (context
# alone predicts it: the figure that leaves the unigram plateau or not) and
# the label itself (the 80/10/10 rule's kept 10%, predictable by copying).
MLM_KINDS = (("masked_lm_accuracy_at_mask", "predictions_at_mask"),
             ("masked_lm_accuracy_kept", "predictions_kept"))


@dataclasses.dataclass(frozen=True)
class HeldoutReading:
  """See the module docstring. rows: ((metric, count key or None), ...);
  columns: ((metric, column), ...), the table's column of a row whose
  figure shares another objective's key but not its meaning (by default a
  row's column is its metric)."""
  mlm_metric: str = "masked_lm_accuracy"
  rows: tuple = MLM_KINDS
  note: str = ""
  columns: tuple = ()

  def column(self, metric):
    """The table's column of row `metric`."""
    return dict(self.columns).get(metric, metric)

  def progress_text(self, figures):
    """The progress line's extra figures of a held-out result (str)."""
    return "".join(f", {self.column(metric)} {figures[metric]:.4f}"
                   for metric, _ in self.rows[:2] if metric in figures)

  def on_masked_positions(self):
    """This reading with every row in a column of its own (`<metric>_masked`)
    and the note saying so: the same figures over the masked positions only
    (ELECTRA 15%'s discriminator, whose loss is there)."""
    return dataclasses.replace(
        self, columns=tuple((m, m + "_masked") for m, _ in self.rows),
        note=self.note.replace("scored on every real token",
                               "scored on the masked positions only (its loss's; "
                               "the columns ending _masked)"))


# A generator's masked LM and a replaced-token discriminator (ELECTRA).
DISCRIMINATOR = HeldoutReading(
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

# The start of the note of a generator's masked LM and a main network's on
# its text (Replace MLM, All-Tokens MLM).
GENERATOR_AND_MAIN_NOTE = (
    "generator_masked_lm_accuracy is a generator's (the smaller network that "
    "fills the masked positions with its samples) on the same held-out positions, "
    "re-masked by its own rule: not the same quantity as masked_lm_accuracy. The "
    "main network (what fine-tuning starts from) reads the generator's text, no "
    "[MASK] in it, and predicts the original tokens: ")
