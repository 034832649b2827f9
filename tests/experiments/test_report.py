"""Tests of bert_tf.experiments.report and report_noise: what results.md
says about a table, on small tables made here (no training): a verdict
first, the multi-bootstrap's noise (paired by example and seed, Holm over
the table, seeded), differences with their direction in words, nothing
called best at or below chance or within noise of random_init, the numbers
of runs as run, and the table itself."""

import numpy as np

from bert_tf.util import bootstrap
from bert_tf.util import statistics
from bert_tf.experiments import report
from bert_tf.experiments import report_noise
from bert_tf.experiments import results

from helpers.result_rows import PRETRAIN, two_arm_rows as _rows


def _runs(arm, values, metric="head_nsp_random_accuracy", chance=""):
  """A row over pretraining runs {seed: value}."""
  row = results.row(arm, metric, statistics.mean(values.values()),
                    statistics.sample_sd(values.values()), len(values), PRETRAIN,
                    pretrain_seeds=len(values), eval_examples=500, values=values)
  row["chance"] = chance
  return row


def _kept(arm, correct, metric="probe_wic_accuracy", chance="", runs=None):
  """A row with per-example outcomes: correct [runs, examples] (0/1)."""
  correct = np.asarray(correct, np.float64)
  runs = tuple(range(correct.shape[0])) if runs is None else runs
  values = {k: float(c.mean()) for k, c in zip(runs, correct)}
  row = _runs(arm, values, metric, chance)
  row["eval_examples"] = correct.shape[1]
  row["outcomes"] = bootstrap.Outcomes("mean", runs,
                                       tuple(str(i) for i in range(correct.shape[1])),
                                       correct[:, None, :, None])
  return row


def test_noise_lines_give_each_difference_its_direction_in_words():
  lines = report.noise_lines(_rows())
  # One run each, no outcomes kept: the binomial standard errors (0.004
  # each) read beside the run; 0.05 apart is far beyond them.
  assert lines[0].startswith("- **masked_lm_accuracy**: best mlm (0.2500); mlm_nsp lower by "
                             "0.0500 [0.0389, 0.0611]: beyond noise (p ")
  assert lines[0].endswith("one pretraining run only (per-example outcomes not kept))")
  # 0.02 apart with the fine-tuning seeds' SE 0.0208: noise; said as
  # "lower by", never as a bare "+0.0200" that reads as a gain.
  assert lines[1].startswith("- **probe_sop_accuracy**: best mlm (0.6200); mlm_nsp lower by "
                             "0.0200 [-0.0208, 0.0608]: within noise (p 0.337, Holm 0.337;")
  assert "+0.0" not in report.markdown(_rows(), "t")
  # One pretraining run each: said plainly above the lines.
  assert "NO difference here is evidence about the objectives" in report.noise_preamble(
      _rows())


def test_a_loss_is_led_by_its_lowest_value_and_a_share_is_never_best():
  loss = [_runs("a", {0: 0.30, 1: 0.32}, "discriminator_loss"),
          _runs("b", {0: 0.40, 1: 0.41}, "discriminator_loss")]
  line = report.noise_lines(loss)[0]
  assert line.startswith("- **discriminator_loss**: best a (0.3100); b higher by 0.0950")
  share = [_runs("a", {0: 0.10, 1: 0.11}, "replaced_share"),
           _runs("b", {0: 0.12, 1: 0.14}, "replaced_share")]
  assert report.noise_lines(share)[0].startswith("- **replaced_share**: highest b (0.1300); "
                                                 "a lower by 0.0250")


def test_arms_over_pretraining_seeds_are_compared_paired_by_seed():
  # Seed effects shared by both arms (0.70 / 0.80 / 0.90) hide a steady gap
  # of 0.05 from an unpaired test; paired by seed it is clear.
  bert = _runs("bert", {0: 0.75, 1: 0.85, 2: 0.96})
  mlm = _runs("mlm", {0: 0.70, 1: 0.80, 2: 0.90})
  line = report.noise_lines([bert, mlm])[0]
  assert line.startswith("- **head_nsp_random_accuracy**: best bert (0.8533); mlm lower by "
                         "0.0533 [")
  assert "beyond noise (p 0.00388, Holm 0.00388;" in line
  assert line.endswith("; paired over 3 pretraining runs only (per-example outcomes not kept))")
  assert bert["spread"] == results.SPREAD_RUNS and bert["pretrain_seeds"] == 3
  # Without the pairing (other seeds), the same numbers are within noise.
  other = _runs("mlm", {3: 0.70, 4: 0.80, 5: 0.90})
  assert "within noise" in report.noise_lines([bert, other])[0]
  preamble = report.noise_preamble([bert, mlm])
  assert "the multi-bootstrap (Sellam et al. 2022) over 3 pretraining run(s)" in preamble
  assert "with 3 runs only large differences can be told apart" in preamble


def test_per_example_outcomes_are_drawn_paired_by_example():
  rng = np.random.default_rng(0)
  # Two arms right on the same hard examples, one a little more often: a
  # difference the examples' pairing shows.
  base = rng.random((3, 400)) < 0.6
  better = base | (rng.random((3, 400)) < 0.15)
  rows = [_kept("bert", better), _kept("mlm", base)]
  line = report.noise_lines(rows)[0]
  assert "paired over 3 pretraining runs and 400 dev examples" in line
  assert "beyond noise" in line
  text = report.markdown(rows, "t")
  assert "over 3 pretraining run(s) per arm and 400 dev examples per metric, 1,000 samples" in (
      text)
  # The bootstrap is seeded: the same table twice is the same text; another
  # seed moves the p-values only in their digits.
  again = [_kept("bert", better), _kept("mlm", base)]
  assert report.markdown(again, "t") == text
  report_noise.analyse(again, 1000, seed=7)
  assert report.markdown(again, "t") != text


def test_holm_counts_every_pair_and_every_chance_test():
  rng = np.random.default_rng(1)
  rows = [_kept(arm, rng.random((3, 200)) < p, chance=0.5)
          for arm, p in (("a", 0.6), ("b", 0.55), ("c", 0.5))]
  analysis = report_noise.analyse(rows, 200, 0)
  assert analysis.tests == 3 + 3  # 3 pairs, 3 arms against the majority share
  assert "Holm-corrected p < 0.05 over the table's 6 tests" in report.verdict(rows)[0]
  annotated = report.annotate(rows)
  assert annotated[0]["p_vs_best"] == "" and annotated[1]["p_vs_best_holm"] != ""
  assert annotated[0]["ci_low"] < annotated[0]["mean"] < annotated[0]["ci_high"]
  assert "p_above_chance_holm" in results.to_csv(rows).splitlines()[0]


def test_a_leader_must_be_beyond_random_init():
  rng = np.random.default_rng(2)
  noise = rng.random((3, 300))
  rows = [_kept("bert", rng.random((3, 300)) < 0.62), _kept("random_init", noise < 0.60)]
  line = report.noise_lines(rows)[0]
  assert "no arm shown above random_init: highest bert" in line
  verdict = "\n".join(report.verdict(rows))
  assert ("No arm shown above random_init (an encoder never pretrained, through the same "
          "fine-tuning and probes), so saying nothing for pretraining: probe_wic_accuracy "
          "(highest bert)") in verdict
  clear = [_kept("bert", noise < 0.95), _kept("random_init", noise < 0.5)]
  assert "best bert" in report.noise_lines(clear)[0]
  assert "No arm shown above random_init" not in "\n".join(report.verdict(clear))


def test_the_numbers_of_runs_are_those_of_the_table():
  two = [_runs("bert", {0: 0.75, 1: 0.85}), _runs("mlm", {0: 0.70, 1: 0.80})]
  text = report.markdown(two, "t")
  assert "over 2 pretraining run(s) per arm" in text
  assert "3 runs" not in text and "3 pretraining" not in text


def test_a_metric_without_spread_is_not_compared():
  same = [_runs("a", {0: 0.5, 1: 0.5}), _runs("b", {0: 0.5, 1: 0.5})]
  assert "b not compared (the same in every pretraining run)" in report.noise_lines(same)[0]
  steady = [_runs("a", {0: 0.6, 1: 0.6}), _runs("b", {0: 0.5, 1: 0.5})]
  assert "b not compared (lower by exactly 0.1000 in each of 2" in report.noise_lines(
      steady)[0]
  # One pretraining run and one fine-tuning seed: an sd of 0 is no spread.
  one = [results.row("a", "task_accuracy", 0.625, 0.0, 1, PRETRAIN, se=float("nan")),
         results.row("b", "task_accuracy", 0.5, 0.0, 1, PRETRAIN, se=float("nan"))]
  assert report.noise_lines(one) == ["- **task_accuracy**: best a (0.6250); b not compared "
                                     "(no spread measured)"]
  # The cells say how many runs and evaluation examples stand behind them.
  table = report.markdown(same, "t")
  assert "0.5000 ± 0.0000 (2 runs, 500 ex)" in table


def test_nothing_at_or_below_chance_is_called_best():
  # The small-corpus table: every arm below the dev set's majority class.
  rows = [_runs("bert", {0: 0.4537, 1: 0.4600}, "head_sop_accuracy", chance=0.5185),
          _runs("mlm", {0: 0.4300, 1: 0.4400}, "head_sop_accuracy", chance=0.5185)]
  line = report.noise_lines(rows)[0]
  assert line.startswith("- **head_sop_accuracy** (majority class 0.5185): no arm shown "
                         "above chance: highest bert (0.4568)")
  assert "best" not in line
  # Above the share but within noise of it is at chance too.
  near = [_runs("bert", {0: 0.52, 1: 0.56}, "head_sop_accuracy", chance=0.5185),
          _runs("mlm", {0: 0.50, 1: 0.51}, "head_sop_accuracy", chance=0.5185)]
  assert "no arm shown above chance" in report.noise_lines(near)[0]
  # Clearly above it: best.
  clear = [_runs("bert", {0: 0.90, 1: 0.91}, "head_sop_accuracy", chance=0.5185),
           _runs("mlm", {0: 0.50, 1: 0.51}, "head_sop_accuracy", chance=0.5185)]
  assert "best bert (0.9050)" in report.noise_lines(clear)[0]
  verdict = "\n".join(report.verdict(clear))
  assert ("Not shown above chance (within noise of the majority class), so saying nothing "
          "about those arms: head_sop_accuracy: mlm (majority class 0.5185)") in verdict
  # The majority share is a row of the table.
  assert "| majority class |  |  |  |  |  |  |  | 0.5185 |" in report.markdown(clear, "t")
  # A metric only one arm has is checked against chance too.
  alone = report.verdict([near[1]])
  assert "saying nothing about those arms: head_sop_accuracy: mlm" in "\n".join(alone)
  # Equal values: said as equal, not as "lower by 0.0000".
  equal = [_runs("a", {0: 0.8, 1: 0.9}), _runs("b", {0: 0.9, 1: 0.8})]
  assert "b equal [" in report.noise_lines(equal)[0]


def test_results_md_opens_with_a_verdict_in_plain_words():
  rows = [_runs("bert", {0: 0.75, 1: 0.85, 2: 0.96}),
          _runs("mlm", {0: 0.70, 1: 0.80, 2: 0.90}),
          _runs("bert", {0: 0.40, 1: 0.45, 2: 0.42}, "head_sop_accuracy", chance=0.55),
          _runs("mlm", {0: 0.41, 1: 0.44, 2: 0.43}, "head_sop_accuracy", chance=0.55),
          _runs("bert", {0: 0.60, 1: 0.70, 2: 0.65}, "probe_sop_accuracy"),
          _runs("mlm", {0: 0.66, 1: 0.61, 2: 0.67}, "probe_sop_accuracy")]
  lines = report.markdown(rows, "Objectives", notes=["n"],
                          provenance=["commit abc"]).splitlines()
  assert lines[:3] == ["# Objectives", "", "Verdict:"]
  verdict = lines[4:lines.index("", 4)]
  assert verdict[0].startswith("- Noise: the multi-bootstrap (Sellam et al. 2022) over 3 "
                               "pretraining run(s) per arm")
  assert "over the table's 5 tests" in verdict[0]
  assert verdict[1:] == [
      "- Beyond noise: head_nsp_random_accuracy: bert higher than mlm by 0.0533.",
      "- Within noise (some arms not told apart): probe_sop_accuracy.",
      "- Not shown above chance (within noise of the majority class), so saying nothing "
      "about those arms: head_sop_accuracy (every arm; majority class 0.5500)."]
  # The table follows the verdict; the noise lines after it; how it was made last.
  assert lines[lines.index("", 4) + 1].startswith("| arm |")
  assert lines[-3:] == ["How this table was made:", "", "- commit abc"]
  # One run each: the verdict says first that nothing is evidence.
  single = report.verdict(_rows())
  assert single[0].startswith("- One pretraining run per arm: no difference below is "
                              "evidence about the objectives")
  assert single[2] == "- Beyond noise: masked_lm_accuracy: mlm higher than mlm_nsp by 0.0500."


def test_markdown_table_has_one_row_per_arm_and_the_compute():
  text = report.markdown(_rows(), "Objectives", notes=["one run each"])
  lines = text.splitlines()
  header = next(line for line in lines if line.startswith("| arm"))
  assert header.endswith("| masked_lm_accuracy | probe_sop_accuracy |")
  body = [line for line in lines if line.startswith("| mlm")]
  assert len(body) == 2
  # Beside the budget, the rate it ran at: examples/s and training FLOP/s.
  assert header.startswith("| arm | pretraining (s) | steps | tokens | train FLOPs | "
                           "params | ex/s | FLOP/s |")
  assert body[0].startswith("| mlm_nsp | 61 | 100 | 204,800 | 1.5e+12 | 1,234 | 52.3 | "
                            "2.4e+10 | 0.2000 [0.1922, 0.2078] (1 run) | 0.6000 [0.5774, "
                            "0.6226] (1 run, 3 fine-tuning seeds) |")
  assert "- one run each" in lines and "within noise" in text


def test_a_metric_one_arm_lacks_is_an_empty_cell():
  # ELECTRA's discriminator figures: BERT has none; a loss has no standard error.
  electra = dict(PRETRAIN, train_flops=1.0e12, steps=150)
  rows = _rows() + [
      results.row("electra", "masked_lm_accuracy", 0.30, 0.0, 1, electra, se=0.004),
      results.row("electra", "discriminator_loss_vs_prior", -0.05, 0.0, 1, electra,
                  se=float("nan")),
      results.row("electra", "discriminator_accuracy", 0.91, 0.0, 1, electra, se=0.002)]
  lines = report.markdown(rows, "Objectives").splitlines()
  assert next(line for line in lines if line.startswith("| arm")).endswith(
      "| discriminator_loss_vs_prior | discriminator_accuracy |")
  assert next(line for line in lines if line.startswith("| mlm_nsp |")).endswith(
      "| 0.6000 [0.5774, 0.6226] (1 run, 3 fine-tuning seeds) |  |  |")
  assert next(line for line in lines if line.startswith("| electra |")) == (
      "| electra | 61 | 150 | 204,800 | 1e+12 | 1,234 | 52.3 | 2.4e+10 | 0.3000 [0.2922, "
      "0.3078] (1 run) |  | -0.0500 (1 run) | 0.9100 [0.9061, 0.9139] (1 run) |")
  assert ("- Measured for one arm only: discriminator_loss_vs_prior, discriminator_accuracy."
          in lines)
  # A loss: the lower one leads; neither has a spread.
  two = [rows[-2], results.row("other", "discriminator_loss_vs_prior", -0.01, 0.0, 1, electra,
                               se=float("nan"))]
  assert report.noise_lines(two) == ["- **discriminator_loss_vs_prior**: best electra "
                                     "(-0.0500); other not compared (no spread measured)"]
  # Pretraining summaries without FLOPs or rates: an empty cell.
  old = {k: v for k, v in PRETRAIN.items()
         if k not in ("train_flops", "examples_per_second", "flops_per_second")}
  row = results.row("mlm", "masked_lm_accuracy", 0.2, 0.0, 1, old, se=0.01)
  assert "| 204,800 |  | 1,234 |  |  |" in report.markdown([row], "Old")
