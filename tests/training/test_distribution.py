"""Distribution tests on CPU: one device, MirroredStrategy over two logical
CPU devices, MultiWorkerMirroredStrategy with two local worker processes,
XLA on one device, and a clear fast error for --strategy=tpu without a TPU.

Logical devices must be configured before TensorFlow initializes its
devices, and multi-worker needs one process per worker, so those run in
subprocesses (a script written to tmp_path)."""

import json
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from bert_tf.training import loop
from helpers.pretraining import tiny_bert_config, tiny_train_config, write_records

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(TESTS_DIR))

# Runs in a subprocess: argv = data_dir, mode.
_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import tensorflow as tf
    data, mode = sys.argv[1], sys.argv[2]
    objective = sys.argv[3] if len(sys.argv) > 3 else "bert"
    suffix = "" if objective == "bert" else "-" + objective
    if mode == "mirrored":
      cpu = tf.config.list_physical_devices("CPU")[0]
      tf.config.set_logical_device_configuration(
          cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from bert_tf.training import loop
    from helpers.pretraining import tiny_bert_config, tiny_train_config
    import pathlib
    data = pathlib.Path(data)

    def train(strategy_name, out):
      config = tiny_train_config(data, input_file=str(data / "train-*.tfrecord"),
                                 output_dir=str(out), strategy=strategy_name,
                                 num_train_steps=4, iterations_per_loop=4, log_steps=4,
                                 save_checkpoints_steps=2, shuffle_buffer=1,
                                 objective=objective)
      return loop.run(config, tiny_bert_config(dropout=0.0))

    if mode == "mirrored":
      result = train("mirrored", data / ("two" + suffix))
    else:
      result = train("multi_worker_mirrored", data / "mw")
    task = json.loads(os.environ.get("TF_CONFIG", '{"task": {"index": 0}}'))["task"]["index"]
    out = {"step": result["global_step"], "replicas": result["replicas"],
           "loss": result["train"]["loss"]}
    np.savez(str(data / f"weights-{mode}{task}{suffix}.npz"),
             *[w.numpy() for w in result["model"].weights])
    print("RESULT", json.dumps(out))
""")


def _run_script(tmp_path, mode, env=None, objective="bert"):
  script = tmp_path / "dist_script.py"
  script.write_text(_SCRIPT)
  env = dict(os.environ if env is None else env)
  env["PYTHONPATH"] = os.pathsep.join([REPO, os.path.dirname(TESTS_DIR),  # tests/: helpers
                                       env.get("PYTHONPATH", "")])
  return subprocess.Popen([sys.executable, str(script), str(tmp_path), mode, objective],
                          env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _result(proc, timeout=150):
  try:
    output, _ = proc.communicate(timeout=timeout)
  except subprocess.TimeoutExpired:
    proc.kill()
    output, _ = proc.communicate()
    pytest.fail("subprocess timed out:\n" + output[-3000:])
  assert proc.returncode == 0, output[-3000:]
  line = [l for l in output.splitlines() if l.startswith("RESULT ")][-1]
  return json.loads(line[len("RESULT "):])


def _train_config(data, **kw):
  kw = dict(input_file=str(data / "train-*.tfrecord"), num_train_steps=4,
            iterations_per_loop=4, log_steps=4, save_checkpoints_steps=2, shuffle_buffer=1, **kw)
  return tiny_train_config(data, **kw)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
  """Two record files and the one-device result of 4 steps (no dropout):
  (data dir, loss of the 4-step loop, list of weight arrays)."""
  data = tmp_path_factory.mktemp("dist")
  write_records(data / "train-0.tfrecord", 48, seed=1)
  write_records(data / "train-1.tfrecord", 48, seed=2)
  result = loop.run(_train_config(data, output_dir=str(data / "one"),
                                      strategy="one_device"), tiny_bert_config(dropout=0.0))
  assert result["replicas"] == 1 and result["global_step"] == 4
  return data, result["train"]["loss"], [w.numpy() for w in result["model"].weights]


def _weights(path):
  with np.load(path) as f:
    return [f[f"arr_{i}"] for i in range(len(f.files))]


def test_mirrored_two_devices_equals_one_device(baseline):
  # Same global batches (one input pipeline, shuffle_buffer 1), no dropout:
  # a 4-step loop on two replicas gives the one-device loss and weights.
  data, loss, weights = baseline
  out = _result(_run_script(data, "mirrored"))
  assert out["replicas"] == 2 and out["step"] == 4
  assert abs(out["loss"] - loss) < 1e-5, (out, loss)
  mirrored = _weights(data / "weights-mirrored0.npz")
  assert len(mirrored) == len(weights)
  for a, b in zip(weights, mirrored):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)


def test_electra_on_two_mirrored_devices_equals_one_device(baseline):
  # ELECTRA draws its masks and samples per example, so two replicas corrupt
  # the same tokens as one device and the global loss and update agree.
  data, _, _ = baseline
  one = loop.run(_train_config(data, output_dir=str(data / "one-electra"),
                               strategy="one_device", objective="electra"),
                 tiny_bert_config(dropout=0.0))
  out = _result(_run_script(data, "mirrored", objective="electra"))
  assert out["replicas"] == 2 and out["step"] == 4
  assert abs(out["loss"] - one["train"]["loss"]) < 1e-4, (out, one["train"]["loss"])
  mirrored = _weights(data / "weights-mirrored0-electra.npz")
  for a, b in zip([w.numpy() for w in one["model"].weights], mirrored):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)


def test_jit_compile_on_one_device_matches_plain(baseline):
  data, loss, weights = baseline
  result = loop.run(_train_config(data, output_dir=str(data / "jit"), strategy="one_device",
                                      jit_compile=True), tiny_bert_config(dropout=0.0))
  assert result["global_step"] == 4
  assert result["train"]["loss"] == pytest.approx(loss, rel=1e-4)
  for a, b in zip(weights, result["model"].weights):
    np.testing.assert_allclose(a, b.numpy(), rtol=0, atol=1e-3)


def _free_ports(n):
  socks = [socket.socket() for _ in range(n)]
  for s in socks:
    s.bind(("127.0.0.1", 0))
  ports = [s.getsockname()[1] for s in socks]
  for s in socks:
    s.close()
  return ports


@pytest.mark.slow
def test_multi_worker_mirrored_two_processes_equals_one_device(baseline):
  # Two worker processes on 127.0.0.1 (two cores' worth of work: ~30 s).
  # Each worker reads its own file (4 records per step); the one-device
  # baseline interleaves the same two files record by record, so its batch of
  # 8 holds the same records: same loss and weights, not only the same
  # weights on both workers.
  data, loss, weights = baseline
  workers = [f"127.0.0.1:{p}" for p in _free_ports(2)]
  procs = []
  for index in range(2):
    env = dict(os.environ)
    env["TF_CONFIG"] = json.dumps({"cluster": {"worker": workers},
                                   "task": {"type": "worker", "index": index}})
    procs.append(_run_script(data, "multi_worker", env=env))
  results = [_result(p) for p in procs]
  assert [r["step"] for r in results] == [4, 4]
  assert [r["replicas"] for r in results] == [2, 2]
  assert results[0]["loss"] == pytest.approx(results[1]["loss"], abs=1e-6)
  w0, w1 = (_weights(data / f"weights-multi_worker{i}.npz") for i in range(2))
  assert len(w0) == len(w1) > 10
  for a, b in zip(w0, w1):
    np.testing.assert_array_equal(a, b)
  assert results[0]["loss"] == pytest.approx(loss, abs=1e-5)
  assert len(w0) == len(weights)
  for a, b in zip(weights, w0):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
  # Only the chief keeps checkpoints; the other worker's are removed.
  assert (data / "mw" / "ckpt-4.index").exists()
  assert not [p for p in os.listdir(data / "mw") if p.startswith("workertemp")]
