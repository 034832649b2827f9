"""The multi-bootstrap: how far a comparison's figures move when both the
pretraining runs and the dev examples are drawn again.

After Sellam et al., "The MultiBERTs: BERT Reproductions for Robustness
Analysis" (ICLR 2022), section 3 and appendix: a figure of an arm is the
mean over its pretraining runs of each run's figure (itself the mean over
the fine-tuning seeds nested in the run), each computed on the dev
examples. One bootstrap sample draws the runs with replacement AND the dev
examples with replacement, and recomputes the figure; two arms compared are
drawn with the SAME examples (they read the same dev set) and, where they
share their pretraining seeds (seed k of every arm is the same seed), the
same runs: the paired design.

A metric that is not a mean over examples (an F1 over entities, a
correlation) is recomputed on each sample from per-example PIECES whose
sums make it (`KINDS`): an example's 0/1 correctness ("mean"), its
(numerator, denominator) ("ratio"), its (true positives, false positives,
false negatives) ("f1"), its (prediction, target) ("pearson"). Resampling
examples is then a matrix product of draw counts with the pieces, so
thousands of samples take milliseconds (numpy, vectorised).

Few pretraining runs. With R runs the bootstrap's spread of a mean over
runs is (R - 1) / R of the unbiased one, and its percentile tails are a
normal's where the truth over 3 runs is a t's with 2 degrees of freedom:
the plain percentile p-value calls about a quarter of null differences
significant when run-to-run noise dominates (every paired run differs the
same way with probability 1/4, and then no sample crosses zero).
tests/util/test_bootstrap.py measures it. So a contrast's standard error
is the joint bootstrap's sd with that shrinkage undone (its run share
s^2/R added back: s^2 the sample variance of the per-run differences), and
its p-value and 95% interval read it against Student's t with the
Welch-Satterthwaite degrees of freedom of its two parts (runs: R - 1;
examples: the examples-only bootstrap's variance, N - 1). With many runs
this is the plain multi-bootstrap; with one the example noise alone (and
the report says then that nothing is shown about the objectives). The
paper's own percentile p-value is kept beside it (`p_percentile`).

Every draw is seeded by (seed, the figure's key, the runs' seeds), so a
rerun gives the same numbers, and every arm of a metric is drawn with the
same examples whatever order they are asked in.

Holm's step-down correction (`holm`) makes a family of p-values control
the chance of any false "beyond noise" at 5%.
"""

import dataclasses
import functools
import math
import zlib

import numpy as np

# The pieces per example each kind of metric is made from.
KINDS = {"mean": 1, "ratio": 2, "f1": 3, "pearson": 2}
DEFAULT_SAMPLES = 1000
LEVEL = 0.05
TINY = 1e-18


@dataclasses.dataclass(frozen=True, eq=False)
class Outcomes:
  """One arm's per-example pieces of one metric.

  kind: a key of KINDS. runs: the pretraining seed indices, one per entry
  of the pieces' first axis. ids: the dev examples' ids (str), one per
  entry of the third axis. pieces: float [runs, fine-tuning seeds,
  examples, KINDS[kind]] (a run without fine-tuning: 1 seed).
  """
  kind: str
  runs: tuple
  ids: tuple
  pieces: np.ndarray

  def __post_init__(self):
    if self.kind not in KINDS:
      raise ValueError(f"unknown outcome kind {self.kind!r} (one of {', '.join(KINDS)})")
    shape = np.shape(self.pieces)
    if len(shape) != 4 or shape[0] != len(self.runs) or shape[2] != len(self.ids) \
        or shape[3] != KINDS[self.kind]:
      raise ValueError(f"pieces of shape {shape} do not match {len(self.runs)} runs, "
                       f"{len(self.ids)} examples and kind {self.kind}")

  def __eq__(self, other):
    return (isinstance(other, Outcomes) and (self.kind, self.runs, self.ids)
            == (other.kind, other.runs, other.ids)
            and np.array_equal(np.asarray(self.pieces), np.asarray(other.pieces)))

  __hash__ = None

  def restricted(self, ids):
    """These outcomes on the examples `ids` (in that order)."""
    where = {e: i for i, e in enumerate(self.ids)}
    missing = [e for e in ids if e not in where]
    if missing:
      raise ValueError(f"{len(missing)} examples not in the outcomes (first {missing[0]!r})")
    index = np.array([where[e] for e in ids], np.int64)
    return Outcomes(self.kind, self.runs, tuple(ids), np.asarray(self.pieces)[:, :, index])


def outcomes_from_runs(kind, per_run):
  """Outcomes of [(pretraining seed index, ids, pieces: [fine-tuning seeds,
  examples, k], or [seeds, examples] for k = 1)]; every run is restricted
  to the ids all runs have (a dev set's are the same) and to the fewest
  seeds any run has."""
  shared = None
  for _, ids, _ in per_run:
    names = [str(e) for e in ids]
    if shared is None:
      shared = names
    else:
      present = set(names)
      shared = [e for e in shared if e in present]
  blocks = []
  for _, ids, pieces in per_run:
    p = np.asarray(pieces, np.float64)
    p = p[:, :, None] if p.ndim == 2 else p
    run = Outcomes(kind, (0,), tuple(str(e) for e in ids), p[None])
    blocks.append(run.restricted(shared).pieces[0])
  seeds = min(b.shape[0] for b in blocks)
  return Outcomes(kind, tuple(k for k, _, _ in per_run), tuple(shared),
                  np.stack([b[:seeds] for b in blocks]))


def _moments(pieces, kind):
  """What the metric sums over examples: [..., examples, m]."""
  if kind == "pearson":
    x, y = pieces[..., 0], pieces[..., 1]
    return np.stack([x, y, x * x, y * y, x * y], axis=-1)
  return pieces


def _metric(sums, n, kind):
  """The metric from its moments' sums over n (weighted) examples."""
  with np.errstate(divide="ignore", invalid="ignore"):
    if kind == "mean":
      return sums[..., 0] / n
    if kind == "ratio":
      return np.where(sums[..., 1] > 0, sums[..., 0] / sums[..., 1], 0.0)
    if kind == "f1":
      tp, fp, fn = sums[..., 0], sums[..., 1], sums[..., 2]
      denominator = 2 * tp + fp + fn
      return np.where(denominator > 0, 2 * tp / denominator, 0.0)
    mx, my = sums[..., 0] / n, sums[..., 1] / n
    vx, vy = sums[..., 2] / n - mx * mx, sums[..., 3] / n - my * my
    cov = sums[..., 4] / n - mx * my
    ok = (vx > 1e-12) & (vy > 1e-12)
    return np.where(ok, cov / np.sqrt(np.where(ok, vx * vy, 1.0)), 0.0)


def run_values(outcomes):
  """Each run's figure on all its examples (the mean over its fine-tuning
  seeds of each seed's metric): float [runs]."""
  moments = _moments(np.asarray(outcomes.pieces, np.float64), outcomes.kind)
  per_seed = _metric(moments.sum(axis=2), len(outcomes.ids), outcomes.kind)
  return per_seed.mean(axis=1)


def _rng(seed, *parts):
  return np.random.default_rng([int(seed) & 0xFFFFFFFF]
                               + [zlib.crc32(repr(p).encode()) for p in parts])


# Draw counts are made this many cells ([samples, examples] entries) at a
# time: at a dev set of a million examples a whole [1000, n] int64 matrix
# would be 8 GB; a chunk of 2^22 cells is 32 MB, and a metric's sums are
# accumulated chunk by chunk.
CHUNK_CELLS = 1 << 22


def _chunk_rows(n):
  """Samples per chunk of draw counts over n examples (a function of n
  alone, so every arm of a metric cuts its samples the same way)."""
  return max(1, CHUNK_CELLS // max(int(n), 1))


@functools.lru_cache(maxsize=8)  # every arm of a metric draws the same examples
def _counts_chunk(n, samples, seed, key, start):
  """Rows start.. of the draw counts (one chunk; the first seeded as a
  whole matrix was before chunking, so small designs draw as they did)."""
  rows = min(_chunk_rows(n), samples - start)
  parts = ("examples", key, n) + ((start,) if start else ())
  drawn = _rng(seed, *parts).integers(0, n, size=(rows, n))
  offsets = (np.arange(rows) * n)[:, None]
  counts = np.bincount((drawn + offsets).ravel(), minlength=rows * n).reshape(rows, n)
  counts.setflags(write=False)  # cached: shared by every caller
  return counts


def example_count_chunks(n, samples, seed, key):
  """(first sample, counts: int [rows, n]) chunks of the draw counts of n
  examples in `samples` samples (each row sums to n; seeded by seed, key,
  n and the chunk), each at most CHUNK_CELLS cells (or one sample)."""
  for start in range(0, samples, _chunk_rows(n)):
    yield start, _counts_chunk(n, samples, seed, key, start)


def run_counts(runs, samples, seed, key):
  """How often each run is drawn in each sample: int [samples, len(runs)]
  (seeded by seed, key and the runs' seed indices: arms of the same seeds
  draw the same runs, the paired design)."""
  r = len(runs)
  drawn = _rng(seed, "runs", key, tuple(runs)).integers(0, r, size=(samples, r))
  offsets = (np.arange(samples) * r)[:, None]
  return np.bincount((drawn + offsets).ravel(), minlength=samples * r).reshape(samples, r)


@dataclasses.dataclass(frozen=True)
class Draws:
  """One arm's bootstrap of one metric: `value` on all the data, `runs`
  each run's value on all examples [R], `joint` the samples drawing runs
  and examples [B], `examples_only` the samples drawing examples only (every
  run once) [B]."""
  value: float
  runs: np.ndarray
  joint: np.ndarray
  examples_only: np.ndarray
  run_ids: tuple
  examples: int
  sample_variance: float = 0.0
  by_example: bool = True


def run_draws(values, samples=DEFAULT_SAMPLES, seed=0, key="", sample_variance=0.0,
              examples=0):
  """Draws of a figure whose per-example outcomes were not kept: {pretraining
  seed index: value}, the runs alone resampled; `sample_variance`: the
  figure's own sampling variance where known (one run's binomial standard
  error squared), read beside the runs' (never resampled, never paired)."""
  runs = tuple(sorted(values))
  v = np.array([float(values[k]) for k in runs])
  counts = run_counts(runs, samples, seed, key)
  return Draws(float(v.mean()), v, counts @ v / len(v), np.full(samples, v.mean()), runs,
               int(examples or 0), float(sample_variance), False)


def draws(outcomes, samples=DEFAULT_SAMPLES, seed=0, key=""):
  """The Draws of `outcomes`, every sample seeded by (seed, key)."""
  pieces = np.asarray(outcomes.pieces, np.float64)
  r, s, n, _ = pieces.shape
  moments = _moments(pieces, outcomes.kind)
  m = moments.shape[-1]
  flat = np.moveaxis(moments, 2, 0).reshape(n, r * s * m)
  sums = np.empty((samples, r * s * m))
  for start, counts in example_count_chunks(n, samples, seed, key):
    sums[start:start + len(counts)] = counts.astype(np.float64) @ flat
  sums = sums.reshape(samples, r, s, m)
  per_run = _metric(sums, float(n), outcomes.kind).mean(axis=2)  # [B, R]
  counts = run_counts(outcomes.runs, samples, seed, key)
  values = run_values(outcomes)
  return Draws(float(values.mean()), values, (per_run * counts).sum(axis=1) / r,
               per_run.mean(axis=1), tuple(outcomes.runs), n)


# ------------------------------------------------------------------------------
# Student's t, for the few-runs reading
# ------------------------------------------------------------------------------


def _beta_fraction(a, b, x):
  """The continued fraction of the regularized incomplete beta (modified
  Lentz's method)."""
  tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
  d = 1.0 / (d if abs(d) > tiny else tiny)
  result = d
  for k in range(1, 300):
    for numerator in (k * (b - k) * x / ((a + 2 * k - 1) * (a + 2 * k)),
                      -(a + k) * (a + b + k) * x / ((a + 2 * k) * (a + 2 * k + 1))):
      d = 1.0 + numerator * d
      d = 1.0 / (d if abs(d) > tiny else tiny)
      c = 1.0 + numerator / c
      c = c if abs(c) > tiny else tiny
      result *= c * d
    if abs(c * d - 1.0) < 1e-14:
      break
  return result


def _incomplete_beta(a, b, x):
  if x <= 0.0:
    return 0.0
  if x >= 1.0:
    return 1.0
  front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                   + a * math.log(x) + b * math.log1p(-x))
  if x < (a + 1.0) / (a + b + 2.0):
    return front * _beta_fraction(a, b, x) / a
  return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_two_sided_p(t, df):
  """P(|T| >= |t|) for Student's t with df (> 0, may be fractional or
  inf: the normal's)."""
  t = abs(float(t))
  if not math.isfinite(df) or df > 1e7:
    return math.erfc(t / math.sqrt(2.0))
  return _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


@functools.lru_cache(maxsize=4096)
def t_quantile(df, level=LEVEL):
  """The two-sided (1 - level) quantile of Student's t with df."""
  low, high = 0.0, 1.0
  while t_two_sided_p(high, df) > level:
    low, high = high, 2 * high
  for _ in range(60):
    mid = (low + high) / 2
    if t_two_sided_p(mid, df) > level:
      low = mid
    else:
      high = mid
  return (low + high) / 2


# The levels at which a Reading's critical half-width is tabled (for its
# p-value): log-spaced from 1e-9 to 1.
_LEVELS = np.concatenate([np.logspace(-9, 0, 361)[:-1], [1.0]])
_QUANTILES = {}


def _quantiles(df):
  """t_quantile(df, level) at each of _LEVELS (cached by df to 0.01)."""
  key = round(df, 2) if math.isfinite(df) and df < 1e6 else float("inf")
  if key not in _QUANTILES:
    # The two-sided p on a dense log grid of t, inverted by interpolation in
    # log-log (a tenth of the work of a bisection per level).
    ts = np.logspace(-4, 10, 2801)
    ps = np.array([t_two_sided_p(t, key) for t in ts])
    keep = ps > 0
    logs = np.log(np.maximum(_LEVELS, 1e-300))
    quantiles = np.exp(np.interp(-logs, -np.log(ps[keep]), np.log(ts[keep])))
    quantiles[_LEVELS >= 1.0] = 0.0
    _QUANTILES[key] = quantiles
  return _QUANTILES[key]


def banerjee(value, parts, level=None):
  """Banerjee's conservative reading of a value whose variance is a sum of
  independently estimated parts [(variance, degrees of freedom)]: the
  critical half-width at `level` is sqrt(sum(t_df(level)^2 * variance));
  returns the two-sided p-value (the smallest level whose half-width
  |value| reaches), or with `level` that half-width."""
  parts = [(v, df) for v, df in parts if v > 0]
  if level is not None:
    return math.sqrt(sum(t_quantile(df, level) ** 2 * v for v, df in parts))
  if not parts:
    return 1.0 if value == 0 else 0.0
  widths = np.sqrt(sum(_quantiles(df) ** 2 * v for v, df in parts))  # falls with the level
  reached = np.nonzero(widths <= abs(value))[0]
  if not len(reached):
    return float(_LEVELS[0])
  i = reached[0]
  if i == 0 or widths[i] == widths[i - 1]:
    return float(_LEVELS[i])
  # Between two tabled levels: linear in log level.
  f = (widths[i - 1] - abs(value)) / (widths[i - 1] - widths[i])
  return float(math.exp(math.log(_LEVELS[i - 1]) + f * (math.log(_LEVELS[i])
                                                          - math.log(_LEVELS[i - 1]))))


# ------------------------------------------------------------------------------
# Estimates, contrasts, Holm
# ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Reading:
  """A figure or a difference of two: `value` on all the data; its
  standard error `se` and degrees of freedom `df` (above); the 95%
  interval `low`..`high`; `p`: two-sided p-value of "the true value is 0"
  (for a figure: of "is at the constant it was set against"); `p_percentile`:
  the paper's percentile p-value of the same; `runs`, `examples`: what was
  resampled; `run_sd`: the sample sd over runs (of the paired per-run
  differences for a paired contrast; 0.0 for one run)."""
  value: float
  se: float
  df: float
  low: float
  high: float
  p: float
  p_percentile: float
  runs: int
  examples: int
  paired: bool
  run_sd: float


def _run_parts(a, b):
  """[(variance of the mean over runs, its degrees of freedom)] (none for
  an arm of one run), the run sd, and whether a and b are paired by run."""
  if b is not None and a.run_ids == b.run_ids:
    diffs, paired = [a.runs - b.runs], True
  else:
    diffs, paired = [a.runs] + ([] if b is None else [b.runs]), b is None
  parts = [(float(np.var(d, ddof=1)) / len(d), len(d) - 1) for d in diffs if len(d) > 1]
  sd = float(np.std(diffs[0], ddof=1)) if len(diffs[0]) > 1 else 0.0
  return parts, sd, paired


def _reading(value, joint, examples_only, parts, examples, runs, paired, run_sd, null=0.0,
             sample_variance=0.0):
  var_examples = float(np.var(examples_only, ddof=1)) if len(examples_only) > 1 else 0.0
  parts = list(parts) + [(var_examples, max(examples - 1, 1)),
                         (sample_variance, float("inf"))]
  # Below TINY a variance is the float rounding of a constant: none.
  parts = [(v if v > TINY else 0.0, d) for v, d in parts]
  se = math.sqrt(sum(v for v, _ in parts))
  shift = value - null
  half = banerjee(shift, parts, LEVEL)
  centred = joint - null
  b = len(joint)
  below = (np.sum(centred <= 0) + 1) / (b + 1)
  above = (np.sum(centred >= 0) + 1) / (b + 1)
  df = min(d for v, d in parts if v > 0) if se > 0 else float("inf")
  return Reading(value, se, float(df), value - half, value + half, banerjee(shift, parts),
                 float(min(1.0, 2 * min(below, above))), runs, examples, paired, run_sd)


def estimate(a, null=0.0):
  """The Reading of one arm's Draws (p: of the value being `null`, e.g.
  a task's majority share; one-sided readings halve it on the right side)."""
  parts, sd, _ = _run_parts(a, None)
  return _reading(a.value, a.joint, a.examples_only, parts, a.examples,
                  len(a.runs), False, sd, null, a.sample_variance)


def contrast(a, b):
  """The Reading of a - b (Draws of the same metric: drawn with the same
  examples; paired by run when they share their runs' seeds)."""
  if (a.by_example and b.by_example and a.examples != b.examples) or len(a.joint) != len(
      b.joint):
    raise ValueError(f"contrast of draws over {a.examples} and {b.examples} examples, "
                     f"{len(a.joint)} and {len(b.joint)} samples: not one design")
  parts, sd, paired = _run_parts(a, b)
  return _reading(a.value - b.value, a.joint - b.joint, a.examples_only - b.examples_only,
                  parts, a.examples, min(len(a.runs), len(b.runs)), paired, sd,
                  sample_variance=a.sample_variance + b.sample_variance)


def holm(pvalues):
  """Holm's step-down adjusted p-values, in the given order: a family in
  which every adjusted p < 0.05 is called beyond noise has at most a 5%
  chance of any false call, however the tests depend on each other."""
  order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
  adjusted, running = [0.0] * len(pvalues), 0.0
  for rank, i in enumerate(order):
    running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[i]))
    adjusted[i] = running
  return adjusted


# ------------------------------------------------------------------------------
# The JSON form of per-example outcomes (in a run's stage results)
# ------------------------------------------------------------------------------


def record(kind, ids, per_seed):
  """One metric's per-example pieces as its stage result keeps them:
  {"kind", "ids" (str), "seeds": [each fine-tuning seed's pieces, one per
  example (a number, or a list of KINDS[kind])]}."""
  if kind not in KINDS:
    raise ValueError(f"unknown outcome kind {kind!r} (one of {', '.join(KINDS)})")
  seeds = [np.asarray(p).tolist() for p in per_seed]
  for s in seeds:
    if len(s) != len(ids):
      raise ValueError(f"{len(s)} pieces for {len(ids)} examples")
  return {"kind": kind, "ids": [str(i) for i in ids], "seeds": seeds}


def from_records(per_run):
  """Outcomes of [(pretraining seed index, record())] of one metric."""
  kinds = {r["kind"] for _, r in per_run}
  if len(kinds) != 1:
    raise ValueError(f"one metric's outcomes of several kinds: {sorted(kinds)}")
  return outcomes_from_runs(kinds.pop(), [(k, r["ids"], r["seeds"]) for k, r in per_run])
