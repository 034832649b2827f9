"""SIGKILL inside the writes of the data writer and the exporter with their
outputs on gs:// (the emulator of the `gcs` fixture; bench/kill_gcs.py,
one point of its sweep per tool):
no partial file under a final name, an export folder stopped while it was
moved file by file lacks its saved_model.pb / config.json (no model to its
readers), and the same command again gives the uninterrupted run's output.
docs/reliability.md has the full sweep, the trainer's checkpoints too."""

import json
import os
import sys

import pytest

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow
def test_kills_inside_gcs_writes_leave_no_partial_file_and_reruns_are_identical(gcs, tmp_path):
  proc = gcs.run([sys.executable, os.path.join(_REPO, "bench", "kill_gcs.py"), "--inside",
                  "--points=1", "--no_delays", "--tools=writer,exporter", f"--out={tmp_path}",
                  f"--bucket={gcs.bucket}"], timeout=1500, check=False)
  lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
  results = [r for r in lines if "tool" in r]
  assert proc.returncode == 0 and results, proc.stdout[-3000:] + proc.stderr[-5000:]
  assert [r["tool"] for r in results] == ["create_pretraining_data",
                                          "export_saved_model --hf_out"]
  for result in results:
    assert result["failures"] == [], result
    assert result["killed"] == result["points"] == 1 and result["partial_seen"] == 0, result
    assert result["reruns_identical"] == result["points"], result
  print(f"gs:// kills: {results} in {lines[-1]['seconds']} s")
