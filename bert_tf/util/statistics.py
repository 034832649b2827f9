"""The few statistics the project reports: means, medians, sample standard
deviations, standard errors, the two-sided 95% t quantile, and the
difference of two measured values with its standard error (paired by seed,
or Welch's for independent ones).

Pure Python, no import of ours: fine-tuning's seed summaries
(downstream/finetune.py), the comparison's rows over pretraining runs
(experiments/run_rows.py) and its noise statements (experiments/report.py)
all use these, so a figure means the same wherever it is printed.
"""

import math

# Two-sided 95% quantiles of Student's t by degrees of freedom (1..30);
# beyond, the normal's 1.96.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def mean(values):
  """The mean of a non-empty sequence of numbers (float)."""
  values = [float(v) for v in values]
  return sum(values) / len(values)


def median(values):
  """The median of a non-empty sequence of numbers (the mean of the middle
  two for an even count)."""
  values = sorted(float(v) for v in values)
  middle = len(values) // 2
  return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def sample_sd(values):
  """The sample standard deviation (n - 1 in the denominator); 0.0 for a
  single value, which has no spread to measure."""
  values = [float(v) for v in values]
  if len(values) < 2:
    return 0.0
  m = mean(values)
  return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def t_quantile(df):
  """The two-sided 95% t quantile for `df` degrees of freedom (inf, or
  more than 30: the normal's 1.96)."""
  if not math.isfinite(df) or df > len(_T975):
    return 1.96
  return _T975[max(1, int(math.floor(df))) - 1]


def binomial_se(p, n):
  """The standard error of a share p measured over n trials (0.0 for none)."""
  return math.sqrt(p * (1 - p) / n) if n else 0.0


def correlation_se(r, n):
  """The large-sample standard error of a correlation r over n pairs."""
  return (1 - r ** 2) / math.sqrt(max(n - 1, 1))


def welch_df(se_a, df_a, se_b, df_b):
  """Welch-Satterthwaite degrees of freedom of a difference of two
  independent estimates with standard errors se_a, se_b on df_a, df_b
  degrees of freedom each (inf when neither has a variance)."""
  va, vb = se_a ** 2, se_b ** 2
  denominator = (va * va / max(df_a, 1) if va else 0.0) + (vb * vb / max(df_b, 1) if vb else 0.0)
  return (va + vb) ** 2 / denominator if denominator else float("inf")


def paired_difference(a, b):
  """(mean difference a - b, its standard error, degrees of freedom) of two
  equally long sequences paired by position (the same pretraining seed)."""
  diffs = [x - y for x, y in zip(a, b)]
  return mean(diffs), sample_sd(diffs) / math.sqrt(len(diffs)), len(diffs) - 1


def independent_difference(mean_a, se_a, df_a, mean_b, se_b, df_b):
  """(difference a - b, its standard error, Welch's degrees of freedom) of
  two independent estimates."""
  return (mean_a - mean_b, math.sqrt(se_a ** 2 + se_b ** 2),
          welch_df(se_a, df_a, se_b, df_b))
