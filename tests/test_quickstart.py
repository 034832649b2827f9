"""The README's main command runs end to end (with small settings)."""

import os
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_quickstart_runs_every_stage(tmp_path):
  out = tmp_path / "run"
  proc = subprocess.run(
      [sys.executable, "-m", "bert_tf.quickstart", f"--output_dir={out}",
       f"--corpus={tmp_path / 'corpus.txt'}", "--vocab_size=3000", "--train_steps=40",
       "--dupe_factor=1", "--batch_size=16"],
      capture_output=True, text=True, timeout=900)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  text = proc.stdout
  for n in range(1, 7):
    assert f"=== stage {n}:" in text
  assert "generated" in text and "standard library" in text
  assert "held-out masked-LM accuracy" in text
  assert os.path.exists(out / "saved_model" / "saved_model.pb")
  assert os.path.exists(out / "model" / "eval_results.txt")
  # Stage 6 prints the top fills of each demo sentence.
  assert text.count("      -> ") == 4
  assert "all stages done" in text
