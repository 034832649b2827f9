"""How an objective's held-out figures read in a comparison's table: the
experiments' own small interface to what `Objective.heldout_figures`
returns (training/objectives), so the comparison names no objective.

A reading says under which column the masked-LM accuracy goes (a
generator's is not the same quantity as BERT's, so it gets a column of its
own), which of the objective's extra figures become rows and the count
each one's binomial standard error is over (None: a loss, no spread
measured), and a note for results.md. An objective without an entry reads
as BERT's: masked_lm_accuracy and its split by input kind (MLM_KINDS).
"""

import dataclasses

from bert_tf.training import objective_names as names


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

# ELECTRA 15%: the same figures over the masked positions only (where its
# loss is), in columns of their own (`_masked`): most of those positions
# are replaced, so its prior is not ELECTRA's.
_DISCRIMINATOR_15 = dataclasses.replace(
    _DISCRIMINATOR, columns=tuple((m, m + "_masked") for m, _ in _DISCRIMINATOR.rows),
    note=_DISCRIMINATOR.note.replace(
        "scored on every real token", "scored on the masked positions only (its loss's; "
        "the columns ending _masked)"))

_MAIN_NOTE = ("generator_masked_lm_accuracy is a generator's (the smaller network that "
              "fills the masked positions with its samples) on the same held-out positions, "
              "re-masked by its own rule: not the same quantity as masked_lm_accuracy. The "
              "main network (what fine-tuning starts from) reads the generator's text, no "
              "[MASK] in it, and predicts the original tokens: ")

# Replace MLM and All-Tokens MLM: a generator's masked LM and the main
# network's, on the generator's text. Replace MLM's main_mlm_* are over the
# masked positions, All-Tokens MLM's over every token: the columns say which
# (main_masked_accuracy is the one both measure).
_REPLACE_MLM = HeldoutReading(
    mlm_metric="generator_masked_lm_accuracy",
    rows=(("main_mlm_accuracy", "main_predictions"), ("main_mlm_loss", None)),
    columns=(("main_mlm_accuracy", "main_masked_accuracy"),
             ("main_mlm_loss", "main_masked_loss")),
    note=_MAIN_NOTE + "main_masked_accuracy and main_masked_loss at the masked positions")
_ALL_TOKENS_MLM = HeldoutReading(
    mlm_metric="generator_masked_lm_accuracy",
    rows=(("main_masked_accuracy", "predictions"), ("main_mlm_accuracy", "main_predictions"),
          ("copy_probability", None), ("main_mlm_loss", None)),
    columns=(("main_mlm_accuracy", "main_all_tokens_accuracy"),
             ("main_mlm_loss", "main_all_tokens_loss")),
    note=_MAIN_NOTE + ("main_masked_accuracy at the masked positions, "
                       "main_all_tokens_accuracy and _loss over every real token (most of "
                       "them copied: copy_probability is the mean weight of the copy "
                       "mechanism)"))

# Objectives whose held-out figures are a generator's and another network's.
READINGS = {names.ELECTRA: _DISCRIMINATOR, names.ELECTRA_15: _DISCRIMINATOR_15,
            names.REPLACE_MLM: _REPLACE_MLM, names.ALL_TOKENS_MLM: _ALL_TOKENS_MLM}


def reading(objective_name):
  """The HeldoutReading of an objective (by its name)."""
  return READINGS.get(objective_name, HeldoutReading())
