"""Tests of bert_tf.experiments.results: the table, the CSV, the noise
statement, the plots and the HParams data a user reads."""

import csv
import io
import os

import tensorflow as tf

from bert_tf.experiments import results

PRETRAIN = {"seconds": 61.24, "steps": 100, "train_tokens": 204800, "train_flops": 1.5e12,
            "parameters": 1234, "examples_per_second": 52.345, "flops_per_second": 2.4e10}


def _rows():
  return [
      results.row("mlm_nsp", "masked_lm_accuracy", 0.20, 0.0, 1, PRETRAIN, se=0.004),
      results.row("mlm", "masked_lm_accuracy", 0.25, 0.0, 1, PRETRAIN, se=0.004),
      results.row("mlm_nsp", "probe_sop_accuracy", 0.60, 0.02, 3, PRETRAIN),
      results.row("mlm", "probe_sop_accuracy", 0.62, 0.03, 3, PRETRAIN),
  ]


def test_noise_statement_separates_real_differences_from_seed_noise():
  lines = results.noise_lines(_rows())
  # 0.05 apart with SE 0.0057: 8.8 standard errors.
  assert lines[0] == ("- **masked_lm_accuracy**: best mlm (0.2500); mlm_nsp lower by "
                      "0.0500 (8.8 SE; held-out sample only)")
  # 0.02 apart with SE sqrt(0.02^2/3 + 0.03^2/3) = 0.0208: noise.
  assert lines[1] == ("- **probe_sop_accuracy**: best mlm (0.6200); mlm_nsp within "
                      "noise (+0.0200, SE 0.0208; fine-tuning seeds only)")
  # One pretraining run each: said plainly above the lines.
  assert "NO difference here is evidence about the objectives" in results.noise_preamble(
      _rows())


def _runs(arm, values, metric="head_nsp_random_accuracy"):
  """A row over pretraining runs {seed: value}."""
  mean = sum(values.values()) / len(values)
  sd = (sum((v - mean) ** 2 for v in values.values()) / (len(values) - 1)) ** 0.5
  return results.row(arm, metric, mean, sd, len(values), PRETRAIN, pretrain_seeds=len(values),
                     eval_examples=500, values=values)


def test_arms_over_pretraining_seeds_are_compared_paired_by_seed():
  # Seed effects shared by both arms (0.70 / 0.80 / 0.90) hide a steady gap
  # of 0.05 from an unpaired test; paired by seed it is clear.
  bert = _runs("bert", {0: 0.75, 1: 0.85, 2: 0.96})
  mlm = _runs("mlm", {0: 0.70, 1: 0.80, 2: 0.90})
  line = results.noise_lines([bert, mlm])[0]
  assert line.startswith("- **head_nsp_random_accuracy**: best bert (0.8533); mlm lower by "
                         "0.0533 (")
  assert line.endswith("SE; paired over 3 pretraining runs)")
  assert bert["spread"] == results.SPREAD_RUNS and bert["pretrain_seeds"] == 3
  # Without the pairing (other seeds), the same numbers are within noise.
  other = _runs("mlm", {3: 0.70, 4: 0.80, 5: 0.90})
  assert "within noise" in results.noise_lines([bert, other])[0]
  # The t quantile of 2 degrees of freedom asks for 4.3 standard errors.
  assert results.t_quantile(2) == 4.303 and results.t_quantile(float("inf")) == 1.96
  assert "Spreads are over 3 pretraining runs" in results.noise_preamble([bert, mlm])


def test_a_metric_without_spread_is_not_compared():
  same = [_runs("a", {0: 0.5, 1: 0.5}), _runs("b", {0: 0.5, 1: 0.5})]
  assert "b not compared (the same in every pretraining run)" in results.noise_lines(same)[0]
  steady = [_runs("a", {0: 0.6, 1: 0.6}), _runs("b", {0: 0.5, 1: 0.5})]
  assert "b not compared (lower by exactly 0.1000 in each of 2" in results.noise_lines(
      steady)[0]
  # One pretraining run and one fine-tuning seed: an sd of 0 is no spread.
  one = [results.row("a", "task_accuracy", 0.625, 0.0, 1, PRETRAIN, se=float("nan")),
         results.row("b", "task_accuracy", 0.5, 0.0, 1, PRETRAIN, se=float("nan"))]
  assert results.noise_lines(one) == ["- **task_accuracy**: best a (0.6250); b not compared "
                                      "(no spread measured)"]
  # The cells say how many runs and evaluation examples stand behind them.
  table = results.markdown(same, "t")
  assert "0.5000 ± 0.0000 (2 runs, 500 ex)" in table


def test_markdown_table_has_one_row_per_objective_and_the_compute():
  text = results.markdown(_rows(), "Objectives", notes=["one run each"])
  lines = text.splitlines()
  header = next(line for line in lines if line.startswith("| arm"))
  assert header.endswith("| masked_lm_accuracy | probe_sop_accuracy |")
  body = [line for line in lines if line.startswith("| mlm")]
  assert len(body) == 2
  # Beside the budget, the rate it ran at: examples/s and training FLOP/s.
  assert header.startswith("| arm | pretraining (s) | steps | tokens | train FLOPs | "
                           "params | ex/s | FLOP/s |")
  assert body[0].startswith("| mlm_nsp | 61 | 100 | 204,800 | 1.5e+12 | 1,234 | 52.3 | "
                            "2.4e+10 | 0.2000 (se 0.0040) | 0.6000 ± 0.0200 (n=3) |")
  assert "- one run each" in lines and "within noise" in text


def test_a_metric_one_objective_lacks_is_an_empty_cell_and_no_csv_row():
  # ELECTRA's discriminator figures: BERT has none; a loss has no standard error.
  electra = dict(PRETRAIN, train_flops=1.0e12, steps=150)
  rows = _rows() + [
      results.row("electra", "masked_lm_accuracy", 0.30, 0.0, 1, electra, se=0.004),
      results.row("electra", "discriminator_loss_vs_prior", -0.05, 0.0, 1, electra,
                  se=float("nan")),
      results.row("electra", "discriminator_accuracy", 0.91, 0.0, 1, electra, se=0.002)]
  lines = results.markdown(rows, "Objectives").splitlines()
  assert next(line for line in lines if line.startswith("| arm")).endswith(
      "| discriminator_loss_vs_prior | discriminator_accuracy |")
  assert next(line for line in lines if line.startswith("| mlm_nsp |")).endswith(
      "| 0.6000 ± 0.0200 (n=3) |  |  |")
  assert next(line for line in lines if line.startswith("| electra |")) == (
      "| electra | 61 | 150 | 204,800 | 1e+12 | 1,234 | 52.3 | 2.4e+10 | 0.3000 (se 0.0040) |  "
      "| -0.0500 | "
      "0.9100 (se 0.0020) |")
  parsed = list(csv.DictReader(io.StringIO(results.to_csv(rows))))
  assert [r["metric"] for r in parsed if r["objective"] == "electra"] == [
      "masked_lm_accuracy", "discriminator_loss_vs_prior", "discriminator_accuracy"]
  assert parsed[-1]["train_flops"] == "1000000000000.0"
  assert parsed[-2]["se"] == ""  # not measured
  two = [rows[-2], results.row("other", "discriminator_loss_vs_prior", -0.01, 0.0, 1, electra,
                               se=float("nan"))]
  assert results.noise_lines(two) == ["- **discriminator_loss_vs_prior**: best other (-0.0100); "
                                      "electra not compared (no spread measured)"]
  # Pretraining summaries from before FLOPs were counted: an empty cell.
  old = {k: v for k, v in PRETRAIN.items()
         if k not in ("train_flops", "examples_per_second", "flops_per_second")}
  row = results.row("mlm", "masked_lm_accuracy", 0.2, 0.0, 1, old, se=0.01)
  assert "| 204,800 |  | 1,234 |  |  |" in results.markdown([row], "Old")


def test_csv_round_trips(tmp_path):
  rows = list(csv.DictReader(io.StringIO(results.to_csv(_rows()))))
  assert len(rows) == 4 and set(rows[0]) == set(results.COLUMNS)
  assert float(rows[3]["mean"]) == 0.62 and rows[3]["objective"] == "mlm"


def test_plots_and_hparams_are_written(tmp_path):
  paths = results.write_plots(_rows(), str(tmp_path / "plots"))
  assert sorted(os.path.basename(p) for p in paths) == ["masked_lm_accuracy.png",
                                                        "probe_sop_accuracy.png"]
  for path in paths:
    with open(path, "rb") as f:
      assert f.read(8) == b"\x89PNG\r\n\x1a\n"
  results.write_hparams(_rows(), str(tmp_path / "hparams"))
  runs = sorted(os.listdir(tmp_path / "hparams"))
  assert [r for r in runs if not r.startswith("events")] == ["mlm", "mlm_nsp"]
  # The per-run event file holds the hparams plugin data and each metric.
  tags = set()
  for event_file in tf.io.gfile.glob(str(tmp_path / "hparams" / "mlm" / "events*")):
    for event in tf.compat.v1.train.summary_iterator(event_file):
      tags.update(v.tag for v in event.summary.value)
  assert {"masked_lm_accuracy", "probe_sop_accuracy", "_hparams_/session_start_info"} <= tags
