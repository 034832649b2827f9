"""From the stages' results to the table's rows: one run's measures, and an
arm's rows over its pretraining runs (experiments.results says what a
row's mean and spread are).
"""

import math

from bert_tf.util import bootstrap
from bert_tf.util import statistics
from bert_tf.experiments import heldout_reading
from bert_tf.experiments import results as results_lib
from bert_tf.downstream import registry


def figure_order(figures, pair_names, task_names):
  """The instrument metrics of `figures` in table order: heads, then frozen
  probes of the pair sets, then of the user tasks (each in its flag's
  order)."""
  wanted = ([m for n in pair_names for m in (f"head_{n}_accuracy", f"head_{n}_accuracy_seen")]
            + [f"frozen_{n}_accuracy" for n in pair_names]
            + [f"frozen_{n}_{kind}" for n in task_names for kind in ("accuracy", "pearson")])
  return [m for m in wanted if m in figures]


def run_measures(objective, heldout, figures, task_results, order=None):
  """One run's figures: [(metric, value, its spread within the run (a
  standard error; for fine-tuned metrics the fine-tuning seeds' sd; None:
  not measured), the fine-tuning seeds (else 1), what the spread measures,
  evaluation examples, its per-example outcomes (util.bootstrap.record;
  None where not kept: the held-out masked LM's))]. objective: the run's objective name (how its
  held-out figures read: experiments.heldout_reading)."""
  sample, tuned = results_lib.SPREAD_SAMPLE, results_lib.SPREAD_FINETUNE
  reading = heldout_reading.reading(objective)
  p = heldout["masked_lm_accuracy"]
  predictions = int(heldout["predictions"])
  out = [(reading.mlm_metric, p, statistics.binomial_se(p, predictions), 1, sample,
          predictions, heldout.get("outcomes"))]
  for metric, count in reading.rows:
    if metric in heldout:
      if count is None:
        out.append((reading.column(metric), heldout[metric], None, 1, results_lib.SPREAD_NONE,
                    None, None))
      else:
        out.append((reading.column(metric), heldout[metric],
                    statistics.binomial_se(heldout[metric], heldout[count]), 1, sample,
                    int(heldout[count]), None))
  for metric in order if order is not None else sorted(figures):
    value, n = figures[metric]["value"], figures[metric]["examples"]
    se = (statistics.binomial_se(value, n) if metric.endswith("_accuracy")
          else statistics.correlation_se(value, n))
    out.append((metric, value, se, 1, sample, n, figures[metric].get("outcomes")))
  for task_name, res in task_results:
    for key in registry.metric_keys(res):
      out.append((f"{task_name}_{key}", res[key], res[f"{key}_sd"], res["num_seeds"], tuned,
                  res.get("num_dev_examples"), res.get("outcomes", {}).get(key)))
  return out


def _mean_summary(summaries):
  """The first run's pretraining summary with its rates and seconds the
  mean over the runs."""
  summary = dict(summaries[0])
  for key in ("seconds", "examples_per_second", "flops_per_second"):
    values = [s[key] for s in summaries if s.get(key) not in (None, "")]
    if values:
      summary[key] = statistics.mean(values)
  return summary


def arm_rows(arm_name, objective, per_run):
  """Result rows of one arm from [(seed index, summary, measures)] (see
  experiments.results: mean and sd over pretraining runs when there are
  several, else the run's own spread)."""
  summary = _mean_summary([s for _, s, _ in per_run])
  metrics = []
  for _, _, measures in per_run:
    metrics += [m[0] for m in measures if m[0] not in metrics]
  rows = []
  for metric in metrics:
    found = [(k, next(m for m in measures if m[0] == metric)) for k, _, measures in per_run
             if any(m[0] == metric for m in measures)]
    values = {k: m[1] for k, m in found}
    examples = found[0][1][5]
    records = [(k, m[6]) for k, m in found]
    outcomes = (bootstrap.from_records(records)
                if all(r is not None for _, r in records) else None)
    if len(found) > 1:
      rows.append(results_lib.row(arm_name, metric, statistics.mean(values.values()),
                                  statistics.sample_sd(values.values()), len(found), summary,
                                  pretrain_seeds=len(found), eval_examples=examples,
                                  values=values, objective=objective))
      rows[-1]["outcomes"] = outcomes
      continue
    _, (_, value, spread_value, n, spread, _, _) = found[0]
    if spread == results_lib.SPREAD_FINETUNE:
      sd = spread_value
      se = sd / math.sqrt(n) if n > 1 and sd > 0 else float("nan")
    else:
      sd, se = 0.0, float("nan") if spread_value is None else spread_value
    rows.append(results_lib.row(arm_name, metric, value, sd, n, summary, se=se,
                                eval_examples=examples, spread=spread, values=values,
                                objective=objective))
    rows[-1]["outcomes"] = outcomes
  return rows
