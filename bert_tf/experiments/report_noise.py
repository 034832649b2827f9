"""Which differences of a comparison's table are beyond noise: the
multi-bootstrap (util/bootstrap.py) over its rows, with Holm's correction
over every test the table makes.

For each metric, each arm's figure is drawn again from its pretraining
runs and its per-example dev outcomes (`outcomes` of a row: the same
examples for every arm, the same runs for arms of the same pretraining
seeds). The TESTS of a table are every pair of arms on every metric (the
leader of a metric is chosen by the data, so every pair is a comparison
it could have made) and each arm against its metric's majority-class share
(one-sided: above it); their p-values are Holm-corrected together, and
"beyond noise" means a corrected p < 0.05: the chance that ANY line of the
table is a false "beyond noise" is at most 5%.

A row without per-example outcomes (the held-out masked LM's, whose
predictions are not kept; a table of an older run) is drawn over its
pretraining runs alone, with one run's binomial standard error read beside
them (not paired by example): its noise says so.

`analyse(rows)` attaches one Analysis to every row (under "analysis"),
so each function of experiments.report and experiments.paper_figures reads
the same numbers; RANDOM_INIT names the never-pretrained arm a leader must
be beyond (experiments.arms).
"""

import dataclasses

from bert_tf.util import bootstrap

RANDOM_INIT = "random_init"
LEVEL = 0.05


@dataclasses.dataclass
class Analysis:
  """The multi-bootstrap of one table.

  estimates: {(metric, arm): bootstrap.Reading of the figure}.
  contrasts: {(metric, a, b): bootstrap.Reading of a - b}.
  chance_p: {(metric, arm): one-sided p of the figure above its chance}.
  holm: {test key: Holm-corrected p} (keys ("pair", metric, a, b) and
    ("chance", metric, arm)).
  by_example: {metric: whether its arms were drawn by example}.
  """
  samples: int
  seed: int
  estimates: dict
  contrasts: dict
  chance_p: dict
  holm: dict
  by_example: dict

  @property
  def tests(self):
    return len(self.holm)

  def contrast(self, metric, a, b):
    """(Reading of a - b, its Holm-corrected p or None when not tested)."""
    if (metric, a, b) in self.contrasts:
      return self.contrasts[(metric, a, b)], self.holm.get(("pair", metric, a, b))
    reading = self.contrasts[(metric, b, a)]
    flipped = dataclasses.replace(reading, value=-reading.value, low=-reading.high,
                                  high=-reading.low)
    return flipped, self.holm.get(("pair", metric, b, a))

  def above_chance(self, metric, arm):
    """The Holm-corrected p of `arm` above its majority share (None: no
    share)."""
    return self.holm.get(("chance", metric, arm))


def _draws(group, metric, samples, seed):
  """Each row's Draws: by example when every row kept its outcomes (on the
  examples they all have), else over runs alone."""
  outcomes = [r.get("outcomes") for r in group]
  if all(o is not None for o in outcomes):
    others = [set(o.ids) for o in outcomes[1:]]
    ids = [e for e in outcomes[0].ids if all(e in o for o in others)]
    if ids:
      return [bootstrap.draws(o.restricted(ids), samples, seed, metric) for o in outcomes], True
  out = []
  for r in group:
    one_run = r["pretrain_seeds"] <= 1
    variance = (r["se"] or 0.0) ** 2 if one_run else 0.0
    values = r.get("values") or {0: r["mean"]}
    out.append(bootstrap.run_draws(values, samples, seed, metric, variance,
                                   r.get("eval_examples") or 0))
  return out, False


def analyse(rows, samples=bootstrap.DEFAULT_SAMPLES, seed=0, attach=True):
  """The Analysis of `rows` (attached to each row as "analysis", unless
  not `attach`)."""
  estimates, contrasts, chance_p, pvalues, by_example = {}, {}, {}, {}, {}
  metrics = list(dict.fromkeys(r["metric"] for r in rows))
  for metric in metrics:
    group = [r for r in rows if r["metric"] == metric]
    draws, by_example[metric] = _draws(group, metric, samples, seed)
    for r, d in zip(group, draws):
      estimates[(metric, r["arm"])] = bootstrap.estimate(d)
      chance = r.get("chance", "")
      if chance not in ("", None):
        reading = bootstrap.estimate(d, null=float(chance))
        if reading.se > 0 or reading.value <= chance:
          p = reading.p / 2 if reading.value > chance else 1 - reading.p / 2
        else:
          p = 0.0
        chance_p[(metric, r["arm"])] = p
        pvalues[("chance", metric, r["arm"])] = p
    for i, (ri, di) in enumerate(zip(group, draws)):
      for rj, dj in zip(group[i + 1:], draws[i + 1:]):
        reading = bootstrap.contrast(di, dj)
        contrasts[(metric, ri["arm"], rj["arm"])] = reading
        if reading.se > 0:  # no spread: not a test ("same" or "steady")
          pvalues[("pair", metric, ri["arm"], rj["arm"])] = reading.p
  keys = list(pvalues)
  holm = dict(zip(keys, bootstrap.holm([pvalues[k] for k in keys])))
  analysis = Analysis(samples, seed, estimates, contrasts, chance_p, holm, by_example)
  for r in rows if attach else ():
    r["analysis"] = analysis
  return analysis


def of(rows, attach=True):
  """The Analysis attached to `rows` (made with the defaults when none is,
  and attached unless not `attach`)."""
  found = rows[0].get("analysis") if rows else None
  if found is None or any(r.get("analysis") is not found for r in rows):
    return analyse(rows, attach=attach)
  return found
