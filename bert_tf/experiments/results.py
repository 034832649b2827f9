"""The comparison's results: a table (Markdown and CSV), a plot per metric,
TensorBoard HParams data, and a plain statement of which differences are
within noise.

A row is one (objective, metric): its mean, standard deviation and count
over fine-tuning seeds (or, for held-out masked-LM accuracy, one pretraining
run and its binomial standard error over the predictions; None, an empty
CSV cell, where no standard error is measured), with the compute spent pretraining it (seconds,
steps, tokens, training FLOPs). An objective without a metric (BERT has no
discriminator) has no row for it: its cell is empty.

Noise rule: two objectives differ on a metric when their means are more
than two standard errors of the difference apart, SE = sqrt(se_a^2 + se_b^2)
with se = sd / sqrt(n) (fine-tuning seeds) or the binomial se (masked-LM
accuracy). It is a rough rule, stated as such: with 3 seeds a t-test would
ask for about 2.8 standard errors, so differences near the line are not
evidence either way.
"""

import csv
import io
import math
import os

from absl import logging

from bert_tf import file_io as files

COLUMNS = ("objective", "metric", "mean", "sd", "n", "se", "pretrain_seconds",
           "pretrain_steps", "train_tokens", "train_flops", "parameters",
           "examples_per_second", "flops_per_second")


def row(objective, metric, mean, sd, n, pretrain, se=None):
  """One result row; se defaults to sd / sqrt(n), NaN says none is
  measured (stored as None). `pretrain` is the pretraining summary (its
  train_flops and measured rates may be missing, in summaries written before
  they were kept: an empty cell)."""
  if se is None:
    se = sd / math.sqrt(n) if n > 0 else 0.0
  se = float(se) if math.isfinite(se) else None
  return {"objective": objective, "metric": metric, "mean": float(mean), "sd": float(sd),
          "n": int(n), "se": se, "pretrain_seconds": round(pretrain["seconds"], 1),
          "pretrain_steps": pretrain["steps"], "train_tokens": pretrain["train_tokens"],
          "train_flops": pretrain.get("train_flops", ""), "parameters": pretrain["parameters"],
          "examples_per_second": _rounded(pretrain.get("examples_per_second", ""), 1),
          "flops_per_second": pretrain.get("flops_per_second", "")}


def _rounded(value, digits):
  return round(value, digits) if value != "" else ""


def metrics_of(rows):
  """Metric names in first-seen order."""
  seen = []
  for r in rows:
    if r["metric"] not in seen:
      seen.append(r["metric"])
  return seen


def noise_lines(rows):
  """One line per metric: the best objective, and each other one either
  'within noise' or 'below by d (k SE)'."""
  lines = []
  for metric in metrics_of(rows):
    group = sorted((r for r in rows if r["metric"] == metric), key=lambda r: -r["mean"])
    if len(group) < 2:
      continue
    best = group[0]
    parts = []
    for other in group[1:]:
      diff = best["mean"] - other["mean"]
      se = math.sqrt((best["se"] or 0.0) ** 2 + (other["se"] or 0.0) ** 2)
      if best["se"] is None or other["se"] is None:
        parts.append(f"{other['objective']} not compared (no standard error)")
      elif se == 0 or diff <= 2 * se:
        parts.append(f"{other['objective']} within noise ({diff:+.4f}, SE {se:.4f})")
      else:
        parts.append(f"{other['objective']} lower by {diff:.4f} ({diff / se:.1f} SE)")
    lines.append(f"- **{metric}**: best {best['objective']} ({best['mean']:.4f}); "
                 + "; ".join(parts))
  return lines


def _cell(r):
  if r is None:
    return ""
  if r["n"] > 1:
    return f"{r['mean']:.4f} ± {r['sd']:.4f} (n={r['n']})"
  if r["se"] is None:
    return f"{r['mean']:.4f}"
  return f"{r['mean']:.4f} (se {r['se']:.4f})"


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
  out = [f"# {title}", "", "| objective | pretraining (s) | steps | tokens | train FLOPs | "
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
  out += ["", "Which differences are noise (two standard errors of the difference; a rough "
          "rule):", ""] + noise_lines(rows)
  if notes:
    out += ["", "Notes:", ""] + [f"- {n}" for n in notes]
  return "\n".join(out) + "\n"


def to_csv(rows):
  buffer = io.StringIO()
  writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
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
    axes.set_title(metric)
    axes.set_ylabel("mean ± sd over seeds" if group[0]["n"] > 1 else "value ± se")
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
