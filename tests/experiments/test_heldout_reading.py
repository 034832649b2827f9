"""How each objective's held-out figures read in a comparison's table: the
reading's rows are figures its objective returns, and a generator's
masked-LM accuracy never lands in BERT's column."""

import pytest

from bert_tf.experiments import heldout_reading
from bert_tf.experiments import run_rows
from bert_tf.training import objective_names as names
from bert_tf.training import objectives
from bert_tf.training.objectives import heldout

GENERATOR_FAMILY = (names.ELECTRA, names.ELECTRA_15, names.REPLACE_MLM, names.ALL_TOKENS_MLM)


def heldout_of(name):
  """What the stage writes for objective `name` on made-up sums: the
  masked-LM accuracy and count, then the objective's own figures."""
  objective = objectives.get(name)
  totals = {k: 30.0 for k in objective.sum_keys}
  totals.update(mlm_weight_sum=40.0, main_weight_sum=40.0, main_masked_count=40.0,
                disc_token_count=200.0)
  return {"masked_lm_accuracy": 0.75, "predictions": 40.0,
          **objective.heldout_figures(totals)}


@pytest.mark.parametrize("name", GENERATOR_FAMILY)
def test_a_generators_accuracy_has_its_own_column_and_every_row_is_measured(name):
  reading = heldout_reading.reading(name)
  assert reading.mlm_metric == "generator_masked_lm_accuracy"
  assert "not the same quantity as masked_lm_accuracy" in reading.note
  heldout = heldout_of(name)
  # No BERT split by input kind: the generator re-masks the positions by
  # its own rule, so the records' [MASK] / kept labels do not apply.
  assert not any(metric.startswith("masked_lm_accuracy") for metric, _ in reading.rows)
  for metric, count in reading.rows:
    assert metric in heldout, f"{name}: {metric} is not a held-out figure of the objective"
    assert count is None or count in heldout
  measures = run_rows.run_measures(name, heldout, {}, [])
  assert [m[0] for m in measures] == ["generator_masked_lm_accuracy"] + [
      reading.column(metric) for metric, _ in reading.rows]


def test_electra_15s_discriminator_reads_on_the_masked_positions_in_columns_of_its_own():
  # Over the masked positions most tokens are replaced: its accuracy, recall
  # and prior are not ELECTRA's over every token, so no column is shared.
  electra_15, electra = (heldout_reading.reading(n) for n in (names.ELECTRA_15, names.ELECTRA))
  assert "masked positions only" in electra_15.note and "every real token" in electra.note
  columns = {name: [m[0] for m in run_rows.run_measures(name, heldout_of(name), {}, [])][1:]
             for name in (names.ELECTRA_15, names.ELECTRA)}
  assert columns[names.ELECTRA_15] == [c + "_masked" for c in columns[names.ELECTRA]]
  assert electra_15.progress_text(heldout_of(names.ELECTRA_15)).startswith(
      ", discriminator_loss_masked ")


def test_the_mlm_variants_share_a_column_only_for_the_same_quantity():
  # Replace MLM's main network predicts the masked positions, All-Tokens
  # MLM's every token: only their accuracy at the masked positions is
  # one column.
  columns = {name: [m[0] for m in run_rows.run_measures(name, heldout_of(name), {}, [])][1:]
             for name in (names.REPLACE_MLM, names.ALL_TOKENS_MLM)}
  assert columns[names.REPLACE_MLM] == ["main_masked_accuracy", "main_masked_loss"]
  assert columns[names.ALL_TOKENS_MLM] == ["main_masked_accuracy", "main_all_tokens_accuracy",
                                           "copy_probability", "main_all_tokens_loss"]


def test_bert_reads_its_accuracy_split_by_input_kind():
  reading = heldout_reading.reading(names.BERT_NAMES["nsp"])
  assert reading.mlm_metric == "masked_lm_accuracy"
  assert reading.rows == heldout.MLM_KINDS
