"""The comparison's progress lines: each stage with the elapsed time and an
ETA computed from the plan's stages still to come.

The plan lists every stage before the first one runs (`Planned`: its kind,
its size in the units of its kind, and whether its result is already on
disk). A kind's seconds per unit is measured from its stages that ran; the
ETA is the sum, over the stages left that are not done, of size x that
rate. Kinds and their units:

  text         1 (split, vocab, held-out records and evaluation sets)
  records      bytes of training text x dupe_factor
  pretrain     training FLOPs (steps x the objective's step FLOPs); steps
               for an objective without a FLOPs model (a kind of its own)
  heldout      1 per run (the same held-out records for every run)
  instruments  1 per run (the same pairs and tasks for every run)
  finetune     train rows x epochs x seeds

Until a kind has run once, its stages have no estimate: the line then
gives the ETA of the timed ones as a lower bound and names the kinds not
timed yet, instead of a guess.
"""

import dataclasses
import time


@dataclasses.dataclass(frozen=True)
class Planned:
  """One stage of the plan: its kind, its size (units of the kind) and
  whether its result is on disk (a rerun skips it: no time)."""
  kind: str
  units: float
  done: bool = False


class Progress:
  """Prints `[k/total] text | elapsed, ETA` for each stage of `planned`,
  in order."""

  def __init__(self, planned, clock=time.time, start=None):
    """start: when the plan started (clock's time; default now)."""
    self.planned = list(planned)
    self.done = 0
    self.clock = clock
    self.start = clock() if start is None else start
    self.seconds, self.units, self.skipped = {}, {}, {}
    # Of the stages found done: {kind: [seconds when they ran, how many had a time]}.
    self.recorded = {}

  def eta(self):
    """(seconds for the timed stages left, kinds left that are not timed yet)."""
    seconds, untimed = 0.0, []
    for stage in self.planned[self.done:]:
      if stage.done:
        continue
      if stage.kind in self.seconds and self.units[stage.kind] > 0:
        seconds += stage.units * self.seconds[stage.kind] / self.units[stage.kind]
      elif stage.kind not in untimed:
        untimed.append(stage.kind)
    return seconds, untimed

  def eta_text(self):
    seconds, untimed = self.eta()
    if not untimed:
      return f"ETA {seconds / 60:.1f} min"
    if not seconds:
      return f"ETA ? ({', '.join(untimed)} not timed yet)"
    return f"ETA at least {seconds / 60:.1f} min ({', '.join(untimed)} not timed yet)"

  def stage(self, text, skipped=False, seconds=0.0, recorded=None):
    """Marks the next planned stage finished (it took `seconds`, or was
    found done, having taken `recorded` seconds when it ran: None when
    unknown) and prints its line."""
    planned = self.planned[self.done]
    self.done += 1
    if skipped:
      self.skipped[planned.kind] = self.skipped.get(planned.kind, 0) + 1
      if recorded is not None:
        total = self.recorded.setdefault(planned.kind, [0.0, 0])
        total[0] += recorded
        total[1] += 1
    else:
      self.seconds[planned.kind] = self.seconds.get(planned.kind, 0.0) + seconds
      self.units[planned.kind] = self.units.get(planned.kind, 0.0) + planned.units
    elapsed = (self.clock() - self.start) / 60
    left = self.eta_text() if self.done < len(self.planned) else "done"
    print(f"[{self.done}/{len(self.planned)}] {text}"
          f"{' (done before, skipped)' if skipped else ''} | elapsed {elapsed:.1f} min, {left}",
          flush=True)
