"""SIGKILL inside the writes of the data writer, the trainer, the exporter
(bench/kill_sweep.py) and compare_objectives (bench/kill_compare.py), a
few points of their sweeps: no partial file under a final name, a rerun
identical to an uninterrupted run (the comparison's results table but its
timing columns), the latest complete checkpoint restored.
docs/reliability.md has the full sweeps."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench"))
import kill_sweep  # pylint: disable=g-import-not-at-top,wrong-import-position


def test_choose_points_takes_structural_events_and_delays_into_saves():
  events = ["GFile.write"] * 10 + ["CheckpointManager.save", "GFile.write", "gfile.rename"]
  points = kill_sweep.choose_points(events, 4, first_event="CheckpointManager.save")
  assert (11, 0.0) in points and (13, 0.0) in points  # the save and the rename
  assert (11, kill_sweep.SAVE_DELAYS_S[0]) in points  # into the save's own writes
  assert all(i >= 11 for i, _ in points)


@pytest.mark.slow
@pytest.mark.parametrize("tools", [("writer",), ("trainer", "exporter")])
def test_kills_inside_writes_leave_no_partial_file_and_reruns_are_identical(tmp_path, tools):
  results = kill_sweep.run_sweep(str(tmp_path), 2, tools, log=lambda line: None)
  assert [r["tool"] for r in results] == [
      {"writer": "create_pretraining_data", "trainer": "run_pretraining",
       "exporter": "export_saved_model --hf_out"}[t] for t in tools]
  for result in results:
    assert result["failures"] == [], result
    assert result["killed"] >= 2 and result["partial_seen"] == 0
    assert result["reruns_identical"] == result["points"], result
    if result["tool"] == "run_pretraining":
      assert result["resumed_from_latest_complete"] == result["points"]


@pytest.mark.soak
@pytest.mark.slow
def test_a_comparison_killed_in_a_checkpoint_save_reruns_to_the_same_table(tmp_path):
  import kill_compare  # pylint: disable=g-import-not-at-top
  result = kill_compare.run_sweep(str(tmp_path), 1, log=lambda line: None,
                                  only=lambda event, delay: delay > 0)
  assert result["points"] == 1 and result["killed"] == 1, result
  assert result["failures"] == [] and result["partial_seen"] == 0, result
  assert result["reruns_identical"] == 1, result
