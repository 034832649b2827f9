"""Tests of bert_tf.experiments.paper_figures: a paper's figures beside a
comparison's rows, and whether the paper's direction between two arms
reproduces, on small tables made here (no training)."""

import pytest

from bert_tf.util import statistics
from bert_tf.experiments import paper_figures
from bert_tf.experiments import report
from bert_tf.experiments import results

from helpers.result_rows import PRETRAIN


def _runs(arm, values, metric="frozen_sop_accuracy", chance=0.5):
  row = results.row(arm, metric, statistics.mean(values.values()),
                    statistics.sample_sd(values.values()), len(values), PRETRAIN,
                    pretrain_seeds=len(values), eval_examples=500, values=values)
  row["chance"] = chance
  return row


def _figures(*specs):
  return [paper_figures.PaperFigure.parse(s) for s in specs]


def test_a_spec_parses_and_a_bad_one_is_named():
  assert paper_figures.PaperFigure.parse("albert:frozen_sop_accuracy=0.865") == (
      paper_figures.PaperFigure("albert", "frozen_sop_accuracy", 0.865))
  for bad in ("albert", "albert:frozen_sop_accuracy", "albert:frozen=high", ":m=1"):
    with pytest.raises(ValueError, match=r"^--paper_figure='.*': expected ARM:METRIC=VALUE"):
      paper_figures.PaperFigure.parse(bad)
  with pytest.raises(ValueError, match="no arm 'roberta' \\(arms: bert, albert\\)"):
    paper_figures.check(_figures("roberta:m=1"), ["bert", "albert"])
  with pytest.raises(ValueError, match="bert:m is given twice"):
    paper_figures.check(_figures("bert:m=1", "bert:m=2"), ["bert"])


def test_each_direction_is_named_by_our_runs_and_their_noise():
  # Paired seeds: albert above bert by a steady 0.10 (beyond noise).
  albert = _runs("albert", {0: 0.80, 1: 0.86, 2: 0.90})
  bert = _runs("bert", {0: 0.70, 1: 0.75, 2: 0.81})
  figures = _figures("bert:frozen_sop_accuracy=0.52", "albert:frozen_sop_accuracy=0.865")
  line = paper_figures.lines(figures, [albert, bert])[-1]
  assert line.startswith("- frozen_sop_accuracy: the paper has albert (0.865) above bert "
                         "(0.52); here reproduced: albert ahead by 0.1000 (beyond noise, ")
  # The paper the other way round: the same runs contradict it.
  flipped = _figures("bert:frozen_sop_accuracy=0.9", "albert:frozen_sop_accuracy=0.5")
  assert "here contradicted: albert ahead by 0.1000" in paper_figures.lines(
      flipped, [albert, bert])[-1]
  # A small, noisy gap: same direction or reversed, within noise.
  close = _runs("bert", {0: 0.83, 1: 0.80, 2: 0.88})
  assert "here same direction: albert ahead by" in paper_figures.lines(
      figures, [albert, close])[-1]
  assert "here reversed: albert ahead by" in paper_figures.lines(flipped, [albert, close])[-1]


def test_an_arm_at_chance_or_not_measured_says_nothing():
  albert = _runs("albert", {0: 0.80, 1: 0.86, 2: 0.90})
  at_chance = _runs("bert", {0: 0.49, 1: 0.52, 2: 0.50})
  figures = _figures("bert:frozen_sop_accuracy=0.52", "albert:frozen_sop_accuracy=0.865")
  assert report.at_chance(at_chance)
  assert paper_figures.lines(figures, [albert, at_chance])[-1].endswith(
      "here at chance (bert not shown above chance here)")
  lines = paper_figures.lines(figures, [albert])
  assert "| frozen_sop_accuracy | bert | 0.52 | not measured |" in lines
  assert lines[-1].endswith("here not measured")
  # The table shows the paper's figure beside our mean and sd.
  assert "| frozen_sop_accuracy | albert | 0.865 | 0.8533 ± 0.0503 |" in lines
  assert paper_figures.lines([], [albert]) == []


def test_results_md_carries_the_section_after_the_table():
  rows = [_runs("albert", {0: 0.80, 1: 0.86, 2: 0.90}),
          _runs("bert", {0: 0.70, 1: 0.75, 2: 0.81})]
  figures = _figures("bert:frozen_sop_accuracy=0.52", "albert:frozen_sop_accuracy=0.865")
  text = report.markdown(rows, "t", beside=paper_figures.lines(figures, rows))
  assert text.index("| arm |") < text.index("The paper beside ours") < text.index(
      "Which differences are beyond noise")
