"""bench/bench_peers.py, bert_tf against transformers + PyTorch: its smoke
run end to end where the peers are installed (every workload's pairing check
passes and each prints a ratio), and its one-line stop where they are not."""

import importlib.util
import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench",
                      "bench_peers.py")
MISSING = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]


def _run(*flags, timeout):
  env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3")
  return subprocess.run([sys.executable, SCRIPT, *flags], capture_output=True, text=True,
                        env=env, timeout=timeout, check=False)


@pytest.mark.skipif(not MISSING, reason="torch and transformers are installed here")
def test_without_the_peers_it_stops_with_one_line():
  proc = _run("--smoke", timeout=120)
  assert proc.returncode == 2
  lines = proc.stdout.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith("bench_peers: the peers are not installed")
  assert "pip install -e .[peers]" in lines[0] and MISSING[0] in lines[0]


@pytest.mark.slow  # about 6 minutes on 2 loaded cores: five workloads, two or three sides
@pytest.mark.skipif(bool(MISSING), reason=f"the peers are not installed (missing "
                    f"{', '.join(MISSING)}; pip install -e .[peers])")
def test_the_smoke_run_checks_and_times_every_workload():
  proc = _run("--smoke", timeout=1200)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  out = proc.stdout
  keras_hub = importlib.util.find_spec("keras_hub") is not None
  # transformers: every workload; keras-hub: classify (pretrain is MLM only, not paired)
  assert out.count("-> PASS") == 5 + keras_hub and "FAIL" not in out, out
  assert "transformers 5" in out and "torch " in out and "tensorflow " in out
  table = out[out.index("\nworkload"):].strip().splitlines()[1:]
  assert [row.split()[0] for row in table] == ["pretrain", "masking", "classify", "classify",
                                               "squad", "squad", "serve", "serve"]
  for row in table:
    ratios = [float(t[:-1]) for t in row.split() if t.endswith("x") and t[:-1][:1].isdigit()]
    with_keras_hub = keras_hub and row.split()[0] in ("pretrain", "classify")
    assert len(ratios) == 1 + with_keras_hub, row
    assert all(r > 0 for r in ratios), row
