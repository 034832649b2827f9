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

A row's `arm` is the arm's name, `objective` the objective it pretrains
(several arms may share one). `chance` is the share of the dev set's
majority class, where the metric has one: what always answering that class
scores. experiments.report reads the rows into results.md. In the CSV too:
the multi-bootstrap's 95% interval (`ci_low`, `ci_high`), the p-value
against the metric's best arm and its Holm-corrected one (`p_vs_best`,
`p_vs_best_holm`), the Holm-corrected p of being above `chance`
(`p_above_chance_holm`), and how the table was made (commit, versions,
corpus bytes and sha256, machine, command: experiments.provenance). A
row's per-example outcomes (`outcomes`, util.bootstrap.Outcomes) stay out
of the CSV: they are in each run's folder.
"""

import csv
import io
import math
import os

from absl import logging

from bert_tf.io import file_io as files

COLUMNS = ("arm", "objective", "metric", "mean", "sd", "n", "se", "pretrain_seconds",
           "pretrain_steps", "train_tokens", "train_flops", "parameters",
           "examples_per_second", "flops_per_second", "pretrain_seeds", "eval_examples",
           "spread", "chance", "ci_low", "ci_high", "p_vs_best", "p_vs_best_holm",
           "p_above_chance_holm", "commit", "python", "tensorflow", "keras", "corpus_bytes",
           "corpus_sha256", "machine", "command")

# What a row's spread measures (its `spread`).
SPREAD_RUNS = "pretraining runs"
SPREAD_FINETUNE = "fine-tuning seeds"
SPREAD_SAMPLE = "held-out sample"
SPREAD_NONE = "none"

def row(arm, metric, mean, sd, n, pretrain, se=None, pretrain_seeds=1,
        eval_examples=None, spread=None, values=None, objective=None):
  """One result row; se defaults to sd / sqrt(n), NaN says none is
  measured (stored as None). `pretrain` is the pretraining summary (its
  train_flops and measured rates may be missing, in summaries written before
  they were kept: an empty cell). values: {pretraining seed: value} behind
  the mean (pairs arms by seed in report's noise lines; not in the CSV).
  objective: the objective the arm pretrains (default: `arm`, an arm of
  --objectives being named after its objective)."""
  if se is None:
    se = sd / math.sqrt(n) if n > 0 else 0.0
  se = float(se) if math.isfinite(se) else None
  if spread is None:
    spread = (SPREAD_RUNS if pretrain_seeds > 1 else
              SPREAD_FINETUNE if n > 1 else SPREAD_SAMPLE if se else SPREAD_NONE)
  return {"arm": arm, "objective": objective or arm, "metric": metric, "mean": float(mean),
          "sd": float(sd), "n": int(n), "se": se, "pretrain_seconds": round(pretrain["seconds"], 1),
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
  return list(dict.fromkeys(r["metric"] for r in rows))


def arms_of(rows):
  """Arm names in first-seen order."""
  return list(dict.fromkeys(r["arm"] for r in rows))


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
    axes.bar([r["arm"] for r in group], [r["mean"] for r in group],
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
  """TensorBoard HParams data: one run per arm under `directory`, hparam
  "arm" and every metric's mean, so TensorBoard's HPARAMS tab compares
  them."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorboard.plugins.hparams import api as hp  # pylint: disable=g-import-not-at-top
  names = sorted({r["arm"] for r in rows})
  metrics = metrics_of(rows)
  arm = hp.HParam("arm", hp.Discrete(names))
  with tf.summary.create_file_writer(directory).as_default():
    hp.hparams_config(hparams=[arm], metrics=[hp.Metric(m) for m in metrics])
  for name in names:
    with tf.summary.create_file_writer(os.path.join(directory, name)).as_default():
      hp.hparams({arm: name})
      for r in rows:
        if r["arm"] == name:
          tf.summary.scalar(r["metric"], r["mean"], step=0)
