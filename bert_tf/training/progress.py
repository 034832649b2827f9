"""What a training run tells the user while it runs: one progress line a
host loop (losses, rate, ETA), with an ETA that ignores the first loop's
tracing and compiling."""

import math

from absl import logging


def _format_eta(seconds):
  if not math.isfinite(seconds):
    return "?"
  seconds = int(seconds)
  return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class EtaEstimator:
  """The time left, from the steady host loops: the first loop of a run
  includes tracing the step (and XLA's compiling it), which took as long as
  the steps themselves, so an ETA from it came out twice the real one.

  `loop_done(step, now)` after every host loop; `text(step)` is the ETA of
  the steps after `step`: from the loops after the first, or while there is
  only the first, an upper bound from it ("<H:MM:SS").
  """

  def __init__(self, start_step, start_time, total):
    self.total = total
    self._start = (start_step, start_time)
    self._first = None  # (step, time) at the end of the first loop
    self._last = None

  def loop_done(self, step, now):
    if self._first is None:
      self._first = (step, now)
    self._last = (step, now)

  def text(self, step):
    if step >= self.total:
      return _format_eta(0.0)
    if self._first is None:
      return "?"
    since, bound = (self._first, "") if self._last[0] > self._first[0] else (self._start, "<")
    steps, seconds = self._last[0] - since[0], self._last[1] - since[1]
    if steps <= 0:
      return "?"
    return bound + _format_eta((self.total - step) * max(seconds, 0.0) / steps)


def log_progress(step, total, m, eta_text, objective):
  """The progress line of a host loop: the objective's losses and
  accuracies, learning rate, gradient norm, rates and ETA."""
  fields = "  ".join(f"{label} {m[key]:.4f}" for label, key in objective.progress_fields())
  logging.info(
      "step %d/%d  %s  lr %.3g  grad_norm %.3g  %.1f ex/s  %.0f tok/s  ETA %s",
      step, total, fields, m["learning_rate"], m["gradient_norm"],
      m["examples_per_second"], m["tokens_per_second"], eta_text)
