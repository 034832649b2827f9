"""results.md: what a user reads from a comparison.

It opens with a VERDICT in plain words: the noise it is read against, which
differences are beyond it, which not, which arms are not shown above a
never-pretrained encoder (`random_init`) or above chance, and so say
nothing about pretraining. Then the table (arm x metric: each figure with
its 95% interval and the sd over pretraining runs; the compute each arm
spent; each metric's majority-class share), one noise line per metric, and
notes on what each figure is.

Noise (experiments.report_noise): the multi-bootstrap over pretraining runs
and dev examples together (util/bootstrap.py), paired by example and by
pretraining seed where arms share them, every pair of arms on every metric
and every arm against its majority share tested, the p-values
Holm-corrected over the whole table; "beyond noise" is a corrected p below
0.05. The leading arm of a metric (the highest; the lowest for a loss) is
"best" only when it is beyond noise above the majority share and above
random_init (where the table has them); else the line says which it is not
shown above. A metric without any spread (a loss of one run; every run the
same) is "not compared", never "within noise". Differences are written with
their direction in words ("lower by 0.0161"), never as a bare signed
number.
"""

import dataclasses

from bert_tf.downstream import registry
from bert_tf.experiments import arms as arms_lib
from bert_tf.experiments import provenance
from bert_tf.experiments import report_noise
from bert_tf.experiments import results as results_lib

RANDOM_INIT = report_noise.RANDOM_INIT

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


@dataclasses.dataclass(frozen=True)
class Gap:
  """One arm against the leading one on a metric. gap: how far it trails
  (>= 0, in the metric's units); low, high: the 95% interval of that gap;
  status: "beyond", "within", "same" (equal in every pretraining run,
  example by example), "steady" (the same gap in every run, no spread),
  "unmeasured" (no spread); p, holm: its p-value and Holm-corrected
  p-value."""
  arm: str
  gap: float
  status: str
  low: float = 0.0
  high: float = 0.0
  p: float = 1.0
  holm: float = 1.0
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
    numbers = (f"[{self.low:.4f}, {self.high:.4f}]: {self.status} noise "
               f"(p {self.p:.3g}, Holm {self.holm:.3g}; {self.how})")
    if self.gap == 0:
      return f"{self.arm} equal {numbers}"
    return f"{self.arm} {word} by {self.gap:.4f} {numbers}"


def _how(reading, by_example):
  """What a contrast resampled, in words."""
  runs = (f"paired over {reading.runs} pretraining runs" if reading.paired and reading.runs > 1
          else "unpaired pretraining runs" if reading.runs > 1 else "one pretraining run")
  if by_example:
    return f"{runs} and {reading.examples:,} dev examples"
  return f"{runs} only (per-example outcomes not kept)"


def compare_rows(leader, other, sign):
  """The Gap of `other` behind `leader` on one metric (sign: +1 when the
  leader is the highest, -1 the lowest); both rows of one analysed table."""
  analysis = leader.get("analysis") or report_noise.of([leader, other], attach=False)
  metric = leader["metric"]
  reading, holm = analysis.contrast(metric, leader["arm"], other["arm"])
  gap = sign * reading.value
  low, high = sorted((sign * reading.low, sign * reading.high))
  runs = reading.runs
  if reading.se == 0:
    if gap == 0:
      return Gap(other["arm"], gap, "same", runs=runs)
    return Gap(other["arm"], gap, "steady" if runs > 1 else "unmeasured", runs=runs)
  beyond = holm is not None and holm < report_noise.LEVEL and gap > 0
  return Gap(other["arm"], gap, "beyond" if beyond else "within", low, high, reading.p,
             1.0 if holm is None else holm, _how(reading, analysis.by_example[metric]), runs)


def at_chance(row):
  """Whether a row's value is not beyond noise above its majority-class
  share (False when it has none)."""
  chance = row.get("chance", "")
  if chance == "" or chance is None:
    return False
  if row["mean"] <= chance:
    return True
  analysis = row.get("analysis") or report_noise.of([row], attach=False)
  p = analysis.above_chance(row["metric"], row["arm"])
  return p is None or p >= report_noise.LEVEL


@dataclasses.dataclass(frozen=True)
class MetricReading:
  """One metric read across arms: the leading row, the others' gaps, the
  arms at chance, and the word for the trailing direction; `random_init`:
  the leader's Gap over the random_init arm (None: no such arm, or the
  leader is it)."""
  metric: str
  leader: dict
  gaps: tuple
  at_chance: tuple
  chance: object
  word: str
  direction: int
  random_init: object = None

  @property
  def all_at_chance(self):
    return self.chance not in ("", None) and len(self.at_chance) == 1 + len(self.gaps)

  @property
  def above_random(self):
    """Whether the leader is shown above random_init (True without one)."""
    if self.leader["arm"] == RANDOM_INIT and len(self.gaps):
      return False
    return self.random_init is None or self.random_init.status == "beyond"


def read_metric(metric, group):
  """The MetricReading of the rows of one metric (two or more arms)."""
  sign = -1 if direction(metric) < 0 else 1
  ordered = sorted(group, key=lambda r: -sign * r["mean"])
  leader = ordered[0]
  gaps = tuple(compare_rows(leader, other, sign) for other in ordered[1:])
  chance = leader.get("chance", "")
  random_gap = next((g for g in gaps if g.arm == RANDOM_INIT), None)
  return MetricReading(metric, leader, gaps, tuple(r["arm"] for r in ordered if at_chance(r)),
                       chance, "higher" if sign < 0 else "lower", direction(metric),
                       random_gap)


def read_rows(rows):
  """MetricReadings of every metric that two or more arms have."""
  report_noise.of(rows)
  out = []
  for metric in results_lib.metrics_of(rows):
    group = [r for r in rows if r["metric"] == metric]
    if len(group) >= 2:
      out.append(read_metric(metric, group))
  return out


def annotate(rows):
  """Each row's interval and p-values as CSV cells: ci_low, ci_high (its
  95% interval), p_vs_best and p_vs_best_holm (against its metric's best
  arm; "" for the best), p_above_chance_holm."""
  analysis = report_noise.of(rows)
  leaders = {m.metric: m.leader["arm"] for m in read_rows(rows)}
  for r in rows:
    reading = analysis.estimates[(r["metric"], r["arm"])]
    r.update(ci_low=round(reading.low, 6), ci_high=round(reading.high, 6),
             p_vs_best="", p_vs_best_holm="", p_above_chance_holm="")
    leader = leaders.get(r["metric"])
    if leader is not None and leader != r["arm"]:
      contrast, holm = analysis.contrast(r["metric"], leader, r["arm"])
      r.update(p_vs_best=round(contrast.p, 6),
               p_vs_best_holm="" if holm is None else round(holm, 6))
    p = analysis.above_chance(r["metric"], r["arm"])
    if p is not None:
      r["p_above_chance_holm"] = round(p, 6)
  return rows


def noise_line(reading):
  """One metric's line: the leader, then each other arm's gap."""
  leader = reading.leader
  chance = reading.chance
  chance_text = f" (majority class {chance:.4f})" if chance not in ("", None) else ""
  value = f"{leader['arm']} ({leader['mean']:.4f})"
  if leader["arm"] in reading.at_chance:
    head = f"no arm shown above chance: highest {value}"
  elif reading.direction != 0 and not reading.above_random:
    head = f"no arm shown above {RANDOM_INIT}: highest {value}"
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


def _examples_behind(rows):
  analysis = report_noise.of(rows)
  # What is resampled: dev rows, questions, sentences, held-out records.
  counts = sorted({reading.examples for (metric, _), reading in analysis.estimates.items()
                   if analysis.by_example.get(metric) and reading.examples})
  if not counts:
    return "no metric's dev examples (none kept)"
  span = f"{counts[0]:,}" if len(counts) == 1 else f"{counts[0]:,} to {counts[-1]:,}"
  return f"{span} dev examples per metric"


def noise_statement(rows):
  """The one sentence that says what the noise is: runs, examples,
  samples, tests."""
  analysis = report_noise.of(rows)
  runs = " or ".join(str(k) for k in _runs_behind(rows))
  return (f"Noise: the multi-bootstrap (Sellam et al. 2022) over {runs} pretraining "
          f"run(s) per arm and {_examples_behind(rows)}, {analysis.samples:,} samples "
          f"(seed {analysis.seed}), paired by example (where kept) and by pretraining seed; beyond noise "
          f"= Holm-corrected p < 0.05 over the table's {analysis.tests} tests (every pair of "
          "arms on every metric, each arm above its majority share).")


def noise_preamble(rows):
  """What the noise lines can and cannot show, from the runs behind them."""
  runs = _runs_behind(rows)
  few = ("" if runs == [1] else
         " With few pretraining runs the runs' share of the noise is read against Student's "
         "t on runs - 1 degrees of freedom (Banerjee's combination with the examples' "
         f"share): with {min(runs)} runs only large differences can be told apart.")
  out = (noise_statement(rows) + " Each line: the leading arm, then each other arm's gap "
         "with its 95% interval, its p-value and its Holm-corrected p." + few)
  if runs == [1]:
    out = ("One pretraining run per arm: the noise below is the dev examples (and "
           "fine-tuning seeds) only, so NO difference here is evidence about the objectives "
           "(a second pretraining run could move it as much). Use --pretrain_seeds=3 or "
           "more for that. " + out)
  return out


def verdict(rows):
  """The opening lines of results.md, in plain words."""
  runs = _runs_behind(rows)
  readings = read_rows(rows)
  out = [noise_statement(rows)]
  if runs == [1]:
    out.insert(0, "One pretraining run per arm: no difference below is evidence about the "
               "objectives (a second pretraining run could move it as much); \"beyond "
               "noise\" here means beyond the dev examples and fine-tuning seeds only.")
  beyond, within, unmeasured, chance_lines, not_random = [], [], [], [], []
  for r in readings:
    if r.all_at_chance:
      chance_lines.append(f"{r.metric} (every arm; majority class {r.chance:.4f})")
      continue
    if r.at_chance:
      chance_lines.append(f"{r.metric}: {', '.join(r.at_chance)} (majority class "
                          f"{r.chance:.4f})")
    if r.direction != 0 and not r.above_random:
      not_random.append(f"{r.metric} (highest {r.leader['arm']})")
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
  if not_random:
    out.append(f"No arm shown above {RANDOM_INIT} (an encoder never pretrained, through the "
               "same fine-tuning and probes), so saying nothing for pretraining: "
               + "; ".join(not_random) + ".")
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
  reading = (r.get("analysis") or report_noise.of([r], attach=False)).estimates[
      (r["metric"], r["arm"])]
  interval = f" [{reading.low:.4f}, {reading.high:.4f}]" if reading.se > 0 else ""
  if r["pretrain_seeds"] > 1:
    return f"{r['mean']:.4f}{interval} ± {r['sd']:.4f} ({r['pretrain_seeds']} runs{examples})"
  if r["n"] > 1:
    return f"{r['mean']:.4f}{interval} (1 run, {r['n']} fine-tuning seeds{examples})"
  return f"{r['mean']:.4f}{interval} (1 run{examples})"


def _flops(value):
  return f"{value:.3g}" if value != "" else ""


def _rate(value):
  return f"{float(value):.1f}" if value not in ("", None) else ""


def table(rows):
  """The arm x metric table with each arm's compute (seconds, steps,
  tokens, training FLOPs, parameters, and the measured training examples/s
  and FLOP/s: whether each ran at its expected cost); a figure is its mean,
  95% interval, and ± the sd over pretraining runs; a last row gives each
  metric's majority-class share, where it has one."""
  report_noise.of(rows)
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
  chance = {r["metric"]: r["chance"] for r in rows if r.get("chance") not in ("", None)}
  if chance:
    out.append("| majority class |  |  |  |  |  |  |  | "
               + " | ".join(f"{chance[m]:.4f}" if m in chance else "" for m in metrics) + " |")
  return out


def markdown(rows, title, notes=(), beside=(), provenance=()):
  """results.md: the verdict, the table, `beside` (lines such as a paper's
  figures beside ours: experiments.paper_figures), the noise lines, the
  notes, and how the table was made (`provenance` lines)."""
  out = [f"# {title}", "", "Verdict:", ""] + verdict(rows) + [""] + table(rows)
  if beside:
    out += [""] + list(beside)
  out += ["", "Which differences are beyond noise:", "", noise_preamble(rows), ""]
  out += noise_lines(rows)
  if notes:
    out += ["", "Notes:", ""] + [f"- {n}" for n in notes]
  if provenance:
    out += ["", "How this table was made:", ""] + [f"- {p}" for p in provenance]
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
  out = [f"corpus {provenance.shown_path(options.corpus)}; model "
         f"{provenance.shown_path(options.bert_config_file)} "
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
  spread = ("its ± is the sd over the pretraining runs; its interval and noise resample "
            "the runs and the held-out records" if options.pretrain_seeds > 1 else
            "its interval resamples the held-out records")
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
  if any(arms_lib.never_pretrained(a) for a in options.arm_list):
    out.append(f"{arms_lib.RANDOM_INIT}: the same encoder as initialized by each pretraining "
               "seed, never pretrained (0 steps), through the same held-out reading, probes "
               "and fine-tuning: what the fine-tuning and probes reach without pretraining")
  reused = sorted({s["reused_from"] for s in summaries.values() if s.get("reused_from")})
  if reused:
    out.append("pretraining runs read from --reuse_runs_from: " + ", ".join(
        provenance.shown_path(r) for r in reused))
  out += [f"warning: {n}" for n in size_notes]
  return out
