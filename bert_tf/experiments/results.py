"""The comparison's results: a table (Markdown and CSV), a plot per metric,
TensorBoard HParams data, and a plain statement of which differences are
beyond noise.

A row is one (arm, metric). With several pretraining runs per arm
(--pretrain_seeds), its mean and sd are over those runs, each run's value
being its own figure (for a fine-tuned metric, the mean over the
fine-tuning seeds nested in it): n is the number of runs, and the spread is
what a user needs to know, how much the result moves when the arm is
pretrained again. With one run, the spread is what that run measured: the
fine-tuning seeds' sd (fine-tuned metrics) or the binomial standard error
of the held-out sample (held-out masked LM, heads, frozen probes), and
none for a loss. A row also carries the compute of its pretraining
(seconds, steps, tokens, training FLOPs; means over runs), the runs behind
it (`pretrain_seeds`), the evaluation examples behind each value
(`eval_examples`) and what its spread measures (`spread`).

Noise rule: the best arm against each other arm on a metric, with the
difference's standard error, is "lower by" when the difference exceeds the
two-sided 95% t quantile times that error, else "within noise".
  - Both arms with the same pretraining seeds (2 or more): PAIRED by seed
    (seed k of every arm uses the same seed: the same initialization, and
    the same data order where the records agree), SE = sd(differences) /
    sqrt(runs), runs - 1 degrees of freedom.
  - Otherwise: SE = sqrt(se_a^2 + se_b^2), Welch's degrees of freedom (a
    normal quantile for binomial errors).
  - A metric without a measured spread (a loss; an sd of 0 from one
    fine-tuning seed; every run equal) is "not compared", never "within
    noise".
With one pretraining run per arm nothing separates the objectives from the
luck of that run: results.md says so above the lines.
"""

import csv
import io
import math
import os

from absl import logging

from bert_tf import file_io as files

COLUMNS = ("objective", "metric", "mean", "sd", "n", "se", "pretrain_seconds",
           "pretrain_steps", "train_tokens", "train_flops", "parameters",
           "examples_per_second", "flops_per_second", "pretrain_seeds", "eval_examples",
           "spread", "chance")

# What a row's spread measures (its `spread`).
SPREAD_RUNS = "pretraining runs"
SPREAD_FINETUNE = "fine-tuning seeds"
SPREAD_SAMPLE = "held-out sample"
SPREAD_NONE = "none"

# Two-sided 95% quantiles of Student's t by degrees of freedom (1..30);
# beyond, the normal's 1.96.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t_quantile(df):
  """The two-sided 95% t quantile for `df` degrees of freedom (inf: 1.96)."""
  if not math.isfinite(df) or df > len(_T975):
    return 1.96
  return _T975[max(1, int(math.floor(df))) - 1]


def row(objective, metric, mean, sd, n, pretrain, se=None, pretrain_seeds=1,
        eval_examples=None, spread=None, values=None):
  """One result row; se defaults to sd / sqrt(n), NaN says none is
  measured (stored as None). `pretrain` is the pretraining summary (its
  train_flops and measured rates may be missing, in summaries written before
  they were kept: an empty cell). values: {pretraining seed: value} behind
  the mean (pairs arms by seed in `noise_lines`; not in the CSV)."""
  if se is None:
    se = sd / math.sqrt(n) if n > 0 else 0.0
  se = float(se) if math.isfinite(se) else None
  if spread is None:
    spread = (SPREAD_RUNS if pretrain_seeds > 1 else
              SPREAD_FINETUNE if n > 1 else SPREAD_SAMPLE if se else SPREAD_NONE)
  return {"objective": objective, "metric": metric, "mean": float(mean), "sd": float(sd),
          "n": int(n), "se": se, "pretrain_seconds": round(pretrain["seconds"], 1),
          "pretrain_steps": pretrain["steps"], "train_tokens": pretrain["train_tokens"],
          "train_flops": pretrain.get("train_flops", ""), "parameters": pretrain["parameters"],
          "examples_per_second": _rounded(pretrain.get("examples_per_second", ""), 1),
          "flops_per_second": pretrain.get("flops_per_second", ""),
          "pretrain_seeds": int(pretrain_seeds),
          "eval_examples": "" if eval_examples is None else int(eval_examples),
          "spread": spread, "values": dict(values or {}), "chance": ""}


def _rounded(value, digits):
  return round(value, digits) if value != "" else ""


def metrics_of(rows):
  """Metric names in first-seen order."""
  seen = []
  for r in rows:
    if r["metric"] not in seen:
      seen.append(r["metric"])
  return seen


def _welch_df(a, b):
  """Welch-Satterthwaite degrees of freedom of two rows' errors (inf for
  binomial ones)."""
  if SPREAD_SAMPLE in (a["spread"], b["spread"]):
    return float("inf")
  va, vb = a["se"] ** 2, b["se"] ** 2
  da, db = max(a["n"] - 1, 1), max(b["n"] - 1, 1)
  denominator = (va * va / da if va else 0.0) + (vb * vb / db if vb else 0.0)
  return (va + vb) ** 2 / denominator if denominator else float("inf")


def compare_rows(best, other):
  """The noise statement of `other` against `best` on one metric (str)."""
  diff = best["mean"] - other["mean"]
  name = other["objective"]
  seeds = sorted(set(best.get("values", {})) & set(other.get("values", {})))
  paired = (best["pretrain_seeds"] > 1 and other["pretrain_seeds"] > 1
            and len(seeds) == best["pretrain_seeds"] == other["pretrain_seeds"])
  if paired:
    diffs = [best["values"][k] - other["values"][k] for k in seeds]
    mean = sum(diffs) / len(diffs)
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1))
    se, df, how = sd / math.sqrt(len(diffs)), len(diffs) - 1, (
        f"paired over {len(diffs)} pretraining runs")
    if se == 0:
      if diff == 0:
        return f"{name} not compared (the same in every pretraining run)"
      return (f"{name} not compared (lower by exactly {diff:.4f} in each of {len(diffs)} "
              "pretraining runs: no spread to measure it against)")
  else:
    if not best["se"] or not other["se"]:
      return f"{name} not compared (no spread measured)"
    se = math.sqrt(best["se"] ** 2 + other["se"] ** 2)
    df = _welch_df(best, other)
    what = {best["spread"], other["spread"]}
    how = " and ".join(sorted(what)) + (" only" if SPREAD_RUNS not in what else "")
  t = t_quantile(df)
  if diff > t * se:
    return f"{name} lower by {diff:.4f} ({diff / se:.1f} SE; {how})"
  return f"{name} within noise ({diff:+.4f}, SE {se:.4f}; {how})"


def noise_lines(rows):
  """One line per metric: the best arm, and each other one "within noise",
  "lower by d (k SE)" or "not compared" (see the module docstring); with
  the share of its dev set's majority class where known (a row's
  "chance": what always answering one class scores)."""
  lines = []
  for metric in metrics_of(rows):
    group = sorted((r for r in rows if r["metric"] == metric), key=lambda r: -r["mean"])
    if len(group) < 2:
      continue
    best = group[0]
    parts = [compare_rows(best, other) for other in group[1:]]
    chance = best.get("chance", "")
    chance_text = f" (majority class {chance:.4f})" if chance != "" else ""
    lines.append(f"- **{metric}**{chance_text}: best {best['objective']} ({best['mean']:.4f}); "
                 + "; ".join(parts))
  return lines


def noise_preamble(rows):
  """What the noise lines can and cannot show, from the runs behind them."""
  runs = {r["pretrain_seeds"] for r in rows}
  if runs == {1}:
    return ("One pretraining run per arm: every spread below is fine-tuning seeds or the "
            "held-out sample only, so NO difference here is evidence about the objectives "
            "(a second pretraining run could move it as much). Use --pretrain_seeds=3 or "
            "more for that.")
  return (f"Spreads are over {', '.join(str(k) for k in sorted(runs))} pretraining runs "
          "per arm (fine-tuning seeds nested inside each); a difference is 'lower by' when "
          "it exceeds the 95% t quantile times its standard error (paired by pretraining "
          "seed where both arms share the seeds). With 3 runs that asks for 4.3 standard "
          "errors: few runs detect only large differences.")


def _cell(r):
  if r is None:
    return ""
  examples = f", {r['eval_examples']:,} ex" if r.get("eval_examples") not in ("", None) else ""
  if r["pretrain_seeds"] > 1:
    return f"{r['mean']:.4f} ± {r['sd']:.4f} ({r['pretrain_seeds']} runs{examples})"
  if r["n"] > 1:
    return f"{r['mean']:.4f} ± {r['sd']:.4f} (n={r['n']}{examples})"
  if r["se"] is None:
    return f"{r['mean']:.4f}"
  return f"{r['mean']:.4f} (se {r['se']:.4f}{examples})"


def _flops(value):
  return f"{value:.3g}" if value != "" else ""


def _rate(value):
  return f"{float(value):.1f}" if value not in ("", None) else ""


def markdown(rows, title, notes=()):
  """results.md: objective x metric table (mean ± sd, n), compute (seconds,
  steps, tokens, training FLOPs, parameters, and the measured training
  examples/s and FLOP/s: whether each ran at its expected cost), noise."""
  metrics = metrics_of(rows)
  names = []
  for r in rows:
    if r["objective"] not in names:
      names.append(r["objective"])
  cells = {(r["objective"], r["metric"]): r for r in rows}
  out = [f"# {title}", "", "| arm | pretraining (s) | steps | tokens | train FLOPs | "
         "params | ex/s | FLOP/s | " + " | ".join(metrics) + " |",
         "|---" * (8 + len(metrics)) + "|"]
  for name in names:
    first = next(r for r in rows if r["objective"] == name)
    values = [_cell(cells.get((name, metric))) for metric in metrics]
    out.append(f"| {name} | {first['pretrain_seconds']:.0f} | {first['pretrain_steps']} | "
               f"{first['train_tokens']:,} | {_flops(first['train_flops'])} | "
               f"{first['parameters']:,} | {_rate(first.get('examples_per_second', ''))} | "
               f"{_flops(first.get('flops_per_second', ''))} | " + " | ".join(values)
               + " |")
  out += ["", "Which differences are beyond noise:", "", noise_preamble(rows), ""]
  out += noise_lines(rows)
  if notes:
    out += ["", "Notes:", ""] + [f"- {n}" for n in notes]
  return "\n".join(out) + "\n"


def to_csv(rows):
  buffer = io.StringIO()
  writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n",
                          extrasaction="ignore")
  writer.writeheader()
  writer.writerows(rows)
  return buffer.getvalue()


def write_plots(rows, directory):
  """One PNG bar chart per metric (mean, error bar = sd) in `directory`;
  returns the paths. Without matplotlib: logs why and returns []."""
  try:
    import matplotlib  # pylint: disable=g-import-not-at-top
    matplotlib.use("Agg")
    from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
  except ImportError:
    logging.warning("matplotlib is not installed: no plots (pip install matplotlib)")
    return []
  paths = []
  for metric in metrics_of(rows):
    group = [r for r in rows if r["metric"] == metric]
    figure, axes = pyplot.subplots(figsize=(1.6 + 1.2 * len(group), 3.2))
    axes.bar([r["objective"] for r in group], [r["mean"] for r in group],
             yerr=[r["sd"] if r["n"] > 1 else (r["se"] or 0.0)
                   for r in group], capsize=4,
             color="#4c72b0")
    for i, r in enumerate(group):  # each pretraining run's value
      runs = list(r.get("values", {}).values())
      if len(runs) > 1:
        axes.plot([i] * len(runs), runs, "o", color="#222222", markersize=3)
    axes.set_title(metric)
    axes.set_ylabel("mean ± sd over pretraining runs" if group[0]["pretrain_seeds"] > 1
                    else "mean ± sd over fine-tuning seeds" if group[0]["n"] > 1
                    else "value ± se")
    figure.tight_layout()
    path = os.path.join(directory, f"{metric}.png")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    pyplot.close(figure)
    files.atomic_write(path, buffer.getvalue())
    paths.append(path)
  return paths


def write_hparams(rows, directory):
  """TensorBoard HParams data: one run per objective under `directory`,
  hparam "objective" and every metric's mean, so TensorBoard's HPARAMS tab
  compares them."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorboard.plugins.hparams import api as hp  # pylint: disable=g-import-not-at-top
  names = sorted({r["objective"] for r in rows})
  metrics = metrics_of(rows)
  objective = hp.HParam("objective", hp.Discrete(names))
  with tf.summary.create_file_writer(directory).as_default():
    hp.hparams_config(hparams=[objective], metrics=[hp.Metric(m) for m in metrics])
  for name in names:
    with tf.summary.create_file_writer(os.path.join(directory, name)).as_default():
      hp.hparams({objective: name})
      for r in rows:
        if r["objective"] == name:
          tf.summary.scalar(r["metric"], r["mean"], step=0)
