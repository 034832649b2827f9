"""Tests of bert_tf.util.statistics against figures worked by hand."""

import math

import pytest

from bert_tf.util import statistics


def test_mean_and_sample_sd():
  assert statistics.mean([1, 2, 3, 4]) == 2.5
  # sum of squares 5 over n - 1 = 3
  assert statistics.sample_sd([1, 2, 3, 4]) == pytest.approx(math.sqrt(5 / 3))
  assert statistics.sample_sd([0.7]) == 0.0  # one value: no spread measured


def test_t_quantiles():
  assert statistics.t_quantile(1) == 12.706 and statistics.t_quantile(2) == 4.303
  assert statistics.t_quantile(2.7) == 4.303  # fractional Welch df: rounded down
  assert statistics.t_quantile(31) == statistics.t_quantile(float("inf")) == 1.96


def test_differences_paired_and_independent():
  # Differences 0.05, 0.05, 0.06: mean 0.0533, sd 0.00577, se 0.00333, df 2.
  mean, se, df = statistics.paired_difference([0.75, 0.85, 0.96], [0.70, 0.80, 0.90])
  assert mean == pytest.approx(0.16 / 3) and se == pytest.approx(0.0057735 / math.sqrt(3),
                                                                  rel=1e-4)
  assert df == 2
  diff, se, df = statistics.independent_difference(0.62, 0.03 / math.sqrt(3), 2,
                                                   0.60, 0.02 / math.sqrt(3), 2)
  assert diff == pytest.approx(0.02) and se == pytest.approx(0.0208, abs=1e-4)
  # Welch: (va + vb)^2 / (va^2 / 2 + vb^2 / 2) with va = 3e-4, vb = 1.333e-4
  va, vb = 0.03 ** 2 / 3, 0.02 ** 2 / 3
  assert df == pytest.approx((va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 2))
  assert statistics.binomial_se(0.5, 100) == 0.05 and statistics.binomial_se(0.5, 0) == 0.0


def test_median_odd_and_even_counts():
  assert statistics.median([3, 1, 2]) == 2.0
  assert statistics.median([4, 1, 3, 2]) == 2.5
  assert statistics.median([0.7]) == 0.7
