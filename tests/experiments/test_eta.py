"""Tests of bert_tf.experiments.eta: the ETA comes from the plan's
stages still to come, each sized in its kind's units and timed by the
stages of that kind that ran."""

from bert_tf.experiments import eta


class Clock:
  def __init__(self):
    self.now = 0.0

  def __call__(self):
    return self.now


def _plan(runs=3, tasks=2):
  """A plan like a comparison's: text, then for each run its records,
  pretraining (FLOPs), held-out, instruments and fine-tunes."""
  planned = [eta.Planned("text", 1)]
  for _ in range(runs):
    planned += [eta.Planned("records", 1000), eta.Planned("pretrain", 5e9),
                eta.Planned("heldout", 1), eta.Planned("instruments", 1)]
    planned += [eta.Planned("finetune", 300)] * tasks
  return planned


# Seconds each kind of stage takes in this made-up run.
SECONDS = {"text": 5, "records": 20, "pretrain": 300, "heldout": 10, "instruments": 15,
           "finetune": 60}


def test_the_eta_is_the_time_of_the_stages_left(capsys):
  planned = _plan()
  clock = Clock()
  progress = eta.Progress(planned, clock)
  total = sum(SECONDS[p.kind] for p in planned)
  etas = []
  for i, stage in enumerate(planned):
    clock.now += SECONDS[stage.kind]
    progress.stage(f"stage {i}", seconds=SECONDS[stage.kind])
    seconds, untimed = progress.eta()
    etas.append((seconds, untimed, total - clock.now))
  printed = capsys.readouterr().out.splitlines()
  # Before a kind has run, the line says which are not timed yet and gives
  # the timed ones' ETA as a lower bound: never a guess from the wrong kind.
  assert printed[0].endswith("ETA ? (records, pretrain, heldout, instruments, finetune not "
                             "timed yet)")
  # Two runs of records and pretraining left: 2 x (20 + 300) s.
  assert "ETA at least 10.7 min (heldout, instruments, finetune not timed yet)" in printed[2]
  # Once every kind has run (the first run's stages), the ETA is the time left.
  first_run = 1 + 4 + 2
  for seconds, untimed, truth in etas[first_run:-1]:
    assert not untimed and seconds == truth
  assert printed[-1].endswith("done")
  assert printed[first_run].startswith(f"[{first_run + 1}/{len(planned)}]")


def test_stages_found_done_cost_nothing_and_do_not_time_their_kind():
  planned = [eta.Planned("text", 1), eta.Planned("pretrain", 100, done=True),
             eta.Planned("pretrain", 100), eta.Planned("pretrain", 300)]
  clock = Clock()
  progress = eta.Progress(planned, clock)
  progress.stage("text", seconds=1.0)
  assert progress.eta() == (0.0, ["pretrain"])
  progress.stage("pretrain 1", skipped=True, recorded=70.0)
  assert progress.eta() == (0.0, ["pretrain"])  # skipping measured nothing
  assert progress.recorded == {"pretrain": [70.0, 1]}  # what it took when it ran, kept apart
  progress.stage("pretrain 2", seconds=50.0)
  # 300 units at 0.5 s a unit: 150 s, the size of the stage left counted.
  assert progress.eta() == (150.0, [])
