"""A paper's own figures beside a comparison's: whether its direction
reproduces here.

`--paper_figure=ARM:METRIC=VALUE` (repeated; configs/experiments/*.flags
carry them for each reproduction) states what the paper reports for the
setting an arm stands for, in the units of our metric (a fraction for an
accuracy: the paper's 90.5 is 0.905). results.md then shows, per metric,
the paper's figure beside ours, and for each pair of arms the paper tells
apart, whether our runs order them the same way:

  reproduced      ours in the paper's direction, beyond noise
  same direction  ours in the paper's direction, within noise
  reversed        ours in the other direction, within noise
  contradicted    ours in the other direction, beyond noise
  at chance       one of the two arms not shown above chance here: the
                  metric says nothing about it
  not measured    a figure this comparison does not have

Noise is the table's multi-bootstrap (experiments.report_noise: paired by
example, and by pretraining seed where both arms share them; "beyond" is a
Holm-corrected p below 0.05 over the table's tests). The absolute values are not compared: a paper's model, corpus
and budget are not ours, only the direction of a difference can carry over.
"""

import dataclasses

from bert_tf.experiments import report
from bert_tf.experiments import report_noise


@dataclasses.dataclass(frozen=True)
class PaperFigure:
  arm: str
  metric: str
  value: float

  @classmethod
  def parse(cls, spec):
    """ARM:METRIC=VALUE -> PaperFigure; ValueError naming the spec."""
    arm, sep, rest = spec.partition(":")
    metric, eq, value = rest.partition("=")
    try:
      number = float(value)
    except ValueError:
      number = None
    if not sep or not eq or not arm or not metric or number is None:
      raise ValueError(f"--paper_figure={spec!r}: expected ARM:METRIC=VALUE, e.g. "
                       "bert:head_nsp_random_accuracy=0.905")
    return cls(arm.strip(), metric.strip(), number)


def check(figures, arm_names):
  """ValueError when a figure names no arm of the comparison, or two name
  the same arm and metric."""
  seen = set()
  for f in figures:
    if f.arm not in arm_names:
      raise ValueError(f"--paper_figure={f.arm}:{f.metric}={f.value:g}: no arm {f.arm!r} "
                       f"(arms: {', '.join(arm_names)})")
    if (f.arm, f.metric) in seen:
      raise ValueError(f"--paper_figure: {f.arm}:{f.metric} is given twice")
    seen.add((f.arm, f.metric))


def _ours(rows, arm, metric):
  for r in rows:
    if r["arm"] == arm and r["metric"] == metric:
      return r
  return None


def direction_reading(paper_high, paper_low, rows, metric):
  """How our runs order two arms the paper tells apart (`paper_high`
  reported better than `paper_low`): one of the words of the module's
  docstring, with the difference."""
  high, low = _ours(rows, paper_high, metric), _ours(rows, paper_low, metric)
  if high is None or low is None:
    return "not measured"
  chance = [r["arm"] for r in (high, low) if report.at_chance(r)]
  if chance:
    return f"at chance ({', '.join(chance)} not shown above chance here)"
  sign = -1 if report.direction(metric) < 0 else 1
  ahead = sign * (high["mean"] - low["mean"]) >= 0
  leader, other = (high, low) if ahead else (low, high)
  gap = report.compare_rows(leader, other, sign)
  if gap.status in ("same", "steady", "unmeasured"):
    return f"not compared ({gap.text('behind')})"
  word = {(True, "beyond"): "reproduced", (True, "within"): "same direction",
          (False, "within"): "reversed", (False, "beyond"): "contradicted"}[(ahead,
                                                                             gap.status)]
  return (f"{word}: {leader['arm']} ahead by {gap.gap:.4f} ({gap.status} noise, "
          f"Holm-corrected p {gap.holm:.3g})")


def _better(metric, a, b):
  """Whether paper value a is better than b on `metric`."""
  return a < b if report.direction(metric) < 0 else a > b


def lines(figures, rows):
  """results.md's section "The paper beside ours" (no lines without
  figures)."""
  if not figures:
    return []
  report_noise.of(rows)  # one analysis for the whole table
  out = ["The paper beside ours (only a direction can carry over: the paper's model, "
         "corpus and budget are not these):", "",
         "| metric | arm | paper | ours |", "|---|---|---|---|"]
  metrics = list(dict.fromkeys(f.metric for f in figures))
  for metric in metrics:
    for f in (f for f in figures if f.metric == metric):
      ours = _ours(rows, f.arm, metric)
      cell = (f"{ours['mean']:.4f} ± {ours['sd']:.4f}" if ours is not None
              else "not measured")
      out.append(f"| {metric} | {f.arm} | {f.value:g} | {cell} |")
  out.append("")
  for metric in metrics:
    group = [f for f in figures if f.metric == metric]
    for i, a in enumerate(group):
      for b in group[i + 1:]:
        if a.value == b.value or report.direction(metric) == 0:
          continue
        high, low = (a, b) if _better(metric, a.value, b.value) else (b, a)
        out.append(f"- {metric}: the paper has {high.arm} ({high.value:g}) above {low.arm} "
                   f"({low.value:g}); here {direction_reading(high.arm, low.arm, rows, metric)}")
  return out
