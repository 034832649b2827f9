"""results.md: what a user reads from a comparison.

It opens with a VERDICT in plain words: how many pretraining runs stand
behind the table, which differences are beyond noise, which are not, and
which metrics sit at chance and so say nothing about the arms. Then the
table (arm x metric, and the compute each arm spent), one noise line per
metric, and notes on what each figure is.

Noise rule: the leading arm on a metric (the highest; the lowest for a
loss) against each other arm, with the difference's standard error, is
"beyond noise" when the difference exceeds the two-sided 95% t quantile
times that error, else "within noise".
  - Both arms with the same pretraining seeds (2 or more): PAIRED by seed
    (seed k of every arm uses the same seed: the same initialization, and
    the same data order where the records agree), SE = sd(differences) /
    sqrt(runs), runs - 1 degrees of freedom.
  - Otherwise: SE = sqrt(se_a^2 + se_b^2), Welch's degrees of freedom (a
    normal quantile for binomial errors).
  - A metric without a measured spread (a loss; an sd of 0 from one
    fine-tuning seed; every run equal) is "not compared", never "within
    noise".
A metric with a majority-class share (`chance`) is not shown above chance
for an arm whose value is not beyond noise above that share (the same t
rule, one-sided against a constant); nothing at or below chance, or not
shown above it, is called best. Differences are written with their direction in
words ("lower by 0.0161"), never as a bare signed number.
"""

import dataclasses

from bert_tf.util import statistics
from bert_tf.downstream import registry
from bert_tf.experiments import results as results_lib

# Metric-name endings whose lower values are better (losses); accuracies,
# correlations, precision and recall are better higher; anything else
# (a share such as replaced_share) has no better direction.
_LOWER_IS_BETTER = ("_loss", "_loss_vs_prior")
_HIGHER_IS_BETTER = ("_accuracy", "_pearson", "_precision", "_recall", "_f1",
                     "_exact_match")


def direction(metric):
  """+1: higher is better; -1: lower is better; 0: neither."""
  if metric.endswith(_LOWER_IS_BETTER):
    return -1
  return 1 if metric.endswith(_HIGHER_IS_BETTER) else 0


def _df(row):
  """Degrees of freedom of a row's standard error."""
  if row["spread"] == results_lib.SPREAD_SAMPLE:
    return float("inf")
  return max(row["n"] - 1, 1)


@dataclasses.dataclass(frozen=True)
class Gap:
  """One arm against the leading one on a metric. gap: how far it trails
  (>= 0, in the metric's units); status: "beyond", "within", "same"
  (equal in every paired run), "steady" (the same gap in every paired run:
  no spread), "unmeasured" (no spread)."""
  arm: str
  gap: float
  status: str
  se: float = 0.0
  how: str = ""
  runs: int = 0

  def text(self, word):
    """The noise line's words for this arm; `word` is "lower" or "higher"."""
    if self.status == "same":
      return f"{self.arm} not compared (the same in every pretraining run)"
    if self.status == "steady":
      return (f"{self.arm} not compared ({word} by exactly {self.gap:.4f} in each of "
              f"{self.runs} pretraining runs: no spread to measure it against)")
    if self.status == "unmeasured":
      return f"{self.arm} not compared (no spread measured)"
    if self.gap == 0:
      return f"{self.arm} equal: {self.status} noise (SE {self.se:.4f}; {self.how})"
    return (f"{self.arm} {word} by {self.gap:.4f}: {self.status} noise "
            f"({self.gap / self.se:.1f} SE of {self.se:.4f}; {self.how})")


def compare_rows(leader, other, sign):
  """The Gap of `other` behind `leader` on one metric (sign: +1 when the
  leader is the highest, -1 the lowest)."""
  gap = sign * (leader["mean"] - other["mean"])
  seeds = sorted(set(leader.get("values", {})) & set(other.get("values", {})))
  paired = (leader["pretrain_seeds"] > 1 and other["pretrain_seeds"] > 1
            and len(seeds) == leader["pretrain_seeds"] == other["pretrain_seeds"])
  if paired:
    _, se, df = statistics.paired_difference([leader["values"][k] for k in seeds],
                                             [other["values"][k] for k in seeds])
    how = f"paired over {len(seeds)} pretraining runs"
    if se == 0:
      return Gap(other["arm"], gap, "same" if gap == 0 else "steady", runs=len(seeds))
  else:
    if not leader["se"] or not other["se"]:
      return Gap(other["arm"], gap, "unmeasured")
    _, se, df = statistics.independent_difference(leader["mean"], leader["se"], _df(leader),
                                                  other["mean"], other["se"], _df(other))
    if results_lib.SPREAD_SAMPLE in (leader["spread"], other["spread"]):
      df = float("inf")
    what = {leader["spread"], other["spread"]}
    how = " and ".join(sorted(what)) + (" only" if results_lib.SPREAD_RUNS not in what else "")
  beyond = gap > statistics.t_quantile(df) * se
  return Gap(other["arm"], gap, "beyond" if beyond else "within", se, how)


def at_chance(row):
  """Whether a row's value is not beyond noise above its majority-class
  share (False when it has none)."""
  chance = row.get("chance", "")
  if chance == "" or chance is None:
    return False
  if row["mean"] <= chance:
    return True
  return bool(row["se"]) and row["mean"] - chance <= statistics.t_quantile(_df(row)) * row["se"]


@dataclasses.dataclass(frozen=True)
class MetricReading:
  """One metric read across arms: the leading row, the others' gaps, the
  arms at chance, and the word for the trailing direction."""
  metric: str
  leader: dict
  gaps: tuple
  at_chance: tuple
  chance: object
  word: str
  direction: int

  @property
  def all_at_chance(self):
    return self.chance not in ("", None) and len(self.at_chance) == 1 + len(self.gaps)


def read_metric(metric, group):
  """The MetricReading of the rows of one metric (two or more arms)."""
  sign = -1 if direction(metric) < 0 else 1
  ordered = sorted(group, key=lambda r: -sign * r["mean"])
  leader = ordered[0]
  gaps = tuple(compare_rows(leader, other, sign) for other in ordered[1:])
  chance = leader.get("chance", "")
  return MetricReading(metric, leader, gaps, tuple(r["arm"] for r in ordered if at_chance(r)),
                       chance, "higher" if sign < 0 else "lower", direction(metric))


def read_rows(rows):
  """MetricReadings of every metric that two or more arms have."""
  out = []
  for metric in results_lib.metrics_of(rows):
    group = [r for r in rows if r["metric"] == metric]
    if len(group) >= 2:
      out.append(read_metric(metric, group))
  return out


def noise_line(reading):
  """One metric's line: the leader, then each other arm's gap."""
  leader = reading.leader
  chance = reading.chance
  chance_text = f" (majority class {chance:.4f})" if chance not in ("", None) else ""
  value = f"{leader['arm']} ({leader['mean']:.4f})"
  if leader["arm"] in reading.at_chance:
    head = f"no arm shown above chance: highest {value}"
  elif reading.direction == 0:
    head = f"highest {value}"
  else:
    head = f"best {value}"
  parts = [g.text(reading.word) for g in reading.gaps]
  return f"- **{reading.metric}**{chance_text}: {head}; " + "; ".join(parts)


def noise_lines(rows):
  return [noise_line(r) for r in read_rows(rows)]


def _runs_behind(rows):
  return sorted({r["pretrain_seeds"] for r in rows})


def noise_preamble(rows):
  """What the noise lines can and cannot show, from the runs behind them."""
  runs = _runs_behind(rows)
  if runs == [1]:
    return ("One pretraining run per arm: every spread below is fine-tuning seeds or the "
            "held-out sample only, so NO difference here is evidence about the objectives "
            "(a second pretraining run could move it as much). Use --pretrain_seeds=3 or "
            "more for that.")
  asks = "; ".join(f"with {k} runs a paired difference needs {statistics.t_quantile(k - 1):.1f}"
                   " standard errors" for k in runs if k > 1)
  return (f"Spreads are over {', '.join(str(k) for k in runs)} pretraining runs per arm "
          "(fine-tuning seeds nested inside each); a difference is beyond noise when it "
          "exceeds the 95% t quantile times its standard error (paired by pretraining seed "
          f"where both arms share the seeds): {asks}. Few runs detect only large differences.")


def verdict(rows):
  """The opening lines of results.md, in plain words."""
  runs = _runs_behind(rows)
  readings = read_rows(rows)
  if runs == [1]:
    out = ["One pretraining run per arm: no difference below is evidence about the objectives "
           "(a second pretraining run could move it as much); \"beyond noise\" here means "
           "beyond fine-tuning seeds and the held-out sample only."]
  else:
    out = [f"{' or '.join(str(k) for k in runs)} pretraining runs per arm: a paired "
           "difference is beyond noise above "
           + " or ".join(f"{statistics.t_quantile(k - 1):.1f}" for k in runs if k > 1)
           + " standard errors."]
  beyond, within, unmeasured, chance_lines = [], [], [], []
  for r in readings:
    if r.all_at_chance:
      chance_lines.append(f"{r.metric} (every arm; majority class {r.chance:.4f})")
      continue
    if r.at_chance:
      chance_lines.append(f"{r.metric}: {', '.join(r.at_chance)} (majority class "
                          f"{r.chance:.4f})")
    shown = [g for g in r.gaps if g.status == "beyond"]
    if shown:
      above = "lower" if r.word == "higher" else "higher"
      beyond.append(f"{r.metric}: {r.leader['arm']} {above} than "
                    + ", ".join(f"{g.arm} by {g.gap:.4f}" for g in shown))
    if any(g.status == "within" for g in r.gaps):
      within.append(r.metric)
    if any(g.status in ("unmeasured", "steady", "same") for g in r.gaps):
      unmeasured.append(r.metric)
  out.append("Beyond noise: " + ("; ".join(beyond) if beyond else "no difference") + ".")
  if within:
    out.append("Within noise (some arms not told apart): " + ", ".join(within) + ".")
  chance_lines += [f"{r['metric']}: {r['arm']} (majority class {r['chance']:.4f})"
                   for r in rows if _only_arm(rows, r["metric"]) and at_chance(r)]
  if chance_lines:
    out.append("Not shown above chance (within noise of the majority class), so saying "
               "nothing about those arms: " + "; ".join(chance_lines) + ".")
  if unmeasured:
    out.append("Not compared (no spread measured): " + ", ".join(unmeasured) + ".")
  single = [m for m in results_lib.metrics_of(rows) if _only_arm(rows, m)]
  if single:
    out.append("Measured for one arm only: " + ", ".join(single) + ".")
  return [f"- {line}" for line in out]


def _only_arm(rows, metric):
  return sum(r["metric"] == metric for r in rows) == 1


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


def table(rows):
  """The arm x metric table with each arm's compute (seconds, steps,
  tokens, training FLOPs, parameters, and the measured training examples/s
  and FLOP/s: whether each ran at its expected cost)."""
  metrics = results_lib.metrics_of(rows)
  cells = {(r["arm"], r["metric"]): r for r in rows}
  out = ["| arm | pretraining (s) | steps | tokens | train FLOPs | "
         "params | ex/s | FLOP/s | " + " | ".join(metrics) + " |",
         "|---" * (8 + len(metrics)) + "|"]
  for name in results_lib.arms_of(rows):
    first = next(r for r in rows if r["arm"] == name)
    values = [_cell(cells.get((name, metric))) for metric in metrics]
    out.append(f"| {name} | {first['pretrain_seconds']:.0f} | {first['pretrain_steps']} | "
               f"{first['train_tokens']:,} | {_flops(first['train_flops'])} | "
               f"{first['parameters']:,} | {_rate(first.get('examples_per_second', ''))} | "
               f"{_flops(first.get('flops_per_second', ''))} | " + " | ".join(values)
               + " |")
  return out


def markdown(rows, title, notes=(), beside=()):
  """results.md: the verdict, the table, `beside` (lines such as a paper's
  figures beside ours: experiments.paper_figures), the noise lines, the
  notes."""
  out = [f"# {title}", "", "Verdict:", ""] + verdict(rows) + [""] + table(rows)
  if beside:
    out += [""] + list(beside)
  out += ["", "Which differences are beyond noise:", "", noise_preamble(rows), ""]
  out += noise_lines(rows)
  if notes:
    out += ["", "Notes:", ""] + [f"- {n}" for n in notes]
  return "\n".join(out) + "\n"


def notes(options, bert_config, runs, summaries, size_notes):
  """The notes under the table: corpus, model, budget, arms, what each
  figure is (runs: the plan's Runs; summaries: {run key: pretrain.json})."""
  from bert_tf.experiments import heldout_reading  # pylint: disable=g-import-not-at-top
  own_steps = [arm.name for arm in options.arm_list
               if "num_train_steps" in dict(arm.training_flags)]
  budget = {"steps": f"equal steps: {options.num_train_steps} steps per arm"
                     + (f" (but {', '.join(own_steps)} set their own num_train_steps)"
                        if own_steps else ""),
            "flops": f"equal training FLOPs (--budget=flops): {options.arm_list[0].name} "
                     f"pretrained {options.num_train_steps} steps, each other arm the "
                     "steps of the same FLOPs (bert_tf/models/flops.py: matmuls, 3 x forward)"}
  seen, steps = set(), []
  for run in runs:
    if run.arm.name not in seen:
      seen.add(run.arm.name)
      s = summaries[run.key]
      steps.append(f"{run.arm.name} {s['steps']} steps ({s['train_flops']:.3g} FLOPs)")
  out = [f"corpus {options.corpus}; model {options.bert_config_file} "
         f"({bert_config.num_hidden_layers} layers, hidden {bert_config.hidden_size}); "
         f"budget {budget[options.budget]}: {', '.join(steps)}; batch "
         f"{options.train_batch_size} x {options.max_seq_length} tokens, lr "
         f"{options.learning_rate:g}; {options.pretrain_seeds} pretraining run(s) per arm "
         f"(seeds {options.seed}..{options.seed + options.pretrain_seeds - 1})",
         "arms: " + "; ".join(f"`{arm.describe()}`" for arm in options.arm_list)]
  shared = {}
  for run in runs:
    shared.setdefault(run.key, []).append(run.arm.name)
  same = sorted({" = ".join(dict.fromkeys(v)) for v in shared.values() if len(set(v)) > 1})
  if same:
    out.append("identical pretraining (one run shared): " + "; ".join(same))
  spread = ("its ± is the sd over the pretraining runs" if options.pretrain_seeds > 1 else
            "its se is the binomial standard error over the predictions")
  mlm_metrics = sorted({heldout_reading.reading(arm.objective).mlm_metric
                        for arm in options.arm_list})
  out.append(f"{', '.join(mlm_metrics)}: on the same static held-out records for every arm; "
             f"{spread}")
  readings = {}
  for arm in options.arm_list:
    note = heldout_reading.reading(arm.objective).note
    if note:
      readings.setdefault(note, []).append(arm.name)
  out += [f"{', '.join(names)}: {note}" for note, names in readings.items()]
  if options.pair_tasks:
    out.append(
        "head_*: the model's own sentence head as trained (for the arms that have one), on "
        "held-out segment pairs built like pretraining pairs (bert_tf/data/segment_pairs.py; "
        "class 0 = B follows A / in order); head_*_seen: the same head on pairs made the "
        "same way from the pretraining documents (train.txt): well above its held-out "
        "figure, the head learned those documents rather than the task; frozen_*: a linear "
        "probe (logistic regression to convergence, bert_tf/experiments/linear_probe.py) on "
        "the frozen encoder's features "
        "([CLS], the means u, v of A and B, |u - v|, u * v), fitted on the train pairs, "
        "scored on the same dev pairs as the head; no fine-tuning noise in either")
  kinds = {t.kind for t in options.tasks}
  for kind in registry.KINDS.values():
    if kind.name in kinds:
      out += kind.report_lines(options)
  if options.tasks:
    out.append(
        f"probe_* (the pair tasks of bert_tf/data/pair_tasks.py) and task metrics: "
        f"fine-tuned (all weights) for {options.finetune_epochs:g} epochs at lr "
        f"{options.finetune_learning_rate:g} from each pretrained model, {options.seeds} "
        "fine-tuning seed(s) inside each pretraining run")
  out += [f"warning: {n}" for n in size_notes]
  return out
