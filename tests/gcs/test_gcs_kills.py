"""SIGKILL inside writes to gs:// (the emulator of the `gcs` fixture;
bench/kill_gcs.py). The exporter, at the middle point of its sweep, which
falls in the file-by-file move of the folders: no partial file under a
final name, the folder stopped half-way lacks its saved_model.pb /
config.json (no model to its readers), and the same command again gives
the uninterrupted run's output. A comparison (compare_objectives) killed
20 ms into its checkpoint save: no partial file, and the same command again
gives the uninterrupted run's results table. docs/reliability.md has the
full sweep: the writer and the trainer's checkpoints too."""

import json
import os
import sys

import pytest

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.soak
@pytest.mark.slow
def test_an_export_killed_inside_its_move_to_gcs_leaves_no_model_and_reruns_identical(gcs, tmp_path):
  proc = gcs.run([sys.executable, os.path.join(_REPO, "bench", "kill_gcs.py"), "--inside",
                  "--points=1", "--no_delays", "--tools=exporter", f"--out={tmp_path}",
                  f"--bucket={gcs.bucket}"], timeout=1500, check=False)
  lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
  results = [r for r in lines if "tool" in r]
  assert proc.returncode == 0 and results, proc.stdout[-3000:] + proc.stderr[-5000:]
  [result] = results
  assert result["tool"] == "export_saved_model --hf_out"
  assert result["failures"] == [], result
  assert result["killed"] == result["points"] == 1 and result["partial_seen"] == 0, result
  # The kill fell inside the move: a folder was left without its completing file.
  assert result["unfinished_without_completing_file"] == 1, result
  assert result["reruns_identical"] == 1, result
  print(f"gs:// kills: {results} in {lines[-1]['seconds']} s")


@pytest.mark.soak
@pytest.mark.slow
def test_a_comparison_on_gcs_killed_in_a_checkpoint_save_reruns_to_the_same_table(gcs, tmp_path):
  # bench/kill_compare.py's toy comparison with its output folder on gs://,
  # killed 20 ms into its checkpoint save (the first point at a delay).
  proc = gcs.run([sys.executable, os.path.join(_REPO, "bench", "kill_gcs.py"), "--inside",
                  "--points=1", "--delays_only", "--tools=compare", f"--out={tmp_path}",
                  f"--bucket={gcs.bucket}"], timeout=3600, check=False)
  lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
  results = [r for r in lines if "tool" in r]
  assert proc.returncode == 0 and results, proc.stdout[-3000:] + proc.stderr[-5000:]
  [result] = results
  assert result["tool"] == "compare_objectives"
  assert result["points"] == 1 and result["killed"] == 1, result
  assert result["failures"] == [] and result["partial_seen"] == 0, result
  assert result["reruns_identical"] == 1, result
  print(f"gs:// compare kill: {result} in {lines[-1]['seconds']} s")
