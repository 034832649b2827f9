"""bench/bench_gpu.py, the device check: a clean one-line stop without a GPU,
and its CPU smoke run end to end (every section, tiny sizes)."""

import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench",
                      "bench_gpu.py")


def _run(*flags, timeout):
  env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3")
  return subprocess.run([sys.executable, SCRIPT, *flags], capture_output=True, text=True,
                        env=env, timeout=timeout, check=False)


def test_without_a_gpu_it_stops_with_one_line():
  proc = _run(timeout=120)
  assert proc.returncode == 1
  assert proc.stdout.strip().splitlines() == [
      "bench_gpu: no GPU visible to TensorFlow (tf.config.list_physical_devices('GPU') is "
      "empty); nothing measured (--cpu_smoke runs tiny sizes on CPU)"]


@pytest.mark.slow  # 95 s on 2 cores: every section, XLA compiles included
def test_the_cpu_smoke_run_passes_every_section():
  proc = _run("--cpu_smoke", timeout=600)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  out = proc.stdout
  assert "[1] ELECTRA corruption" in out and "128/128 exact, labels exact" in out
  for name in ("mlm_nsp", "mlm_sop", "mlm", "electra", "distill_mlm"):
    assert any(line.strip().startswith(name) and line.endswith("PASS")
               for line in out.splitlines()), name
  assert "bf16+xla batch 8:" in out and "fp32 batch 8:" in out
  assert out.count("records:") == 2
  # Section 5: the peers' ratios where torch and transformers are installed.
  assert "[5] against transformers + PyTorch" in out
  peer_checks = sum(l.strip().startswith("check:") and l.endswith("-> PASS")
                    for l in out.splitlines())
  assert peer_checks == (0 if "skipped: the peers are not installed" in out else 2), out
  assert out.strip().splitlines()[-1].endswith("every check passed")
