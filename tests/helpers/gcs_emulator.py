"""Starting and stopping the Cloud Storage emulator of tests/gcs/
(gcs_namespace.py, run in private network and mount namespaces), and the
environment of its clients: what the `gcs` fixture (tests/gcs/conftest.py)
and bench/kill_gcs.py share."""

import contextlib
import os
import subprocess
import sys
import time

# The checkout these tests belong to (tests/helpers/ -> the repository root).
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMESPACE = os.path.join(REPO, "tests", "gcs", "gcs_namespace.py")
# Seconds the emulator has to write its `ready` file.
START_TIMEOUT_S = 60


def client_env(workdir):
  """The environment of a client of the emulator started in `workdir`: its
  certificate, a test token, no GCE probe, the checkout on PYTHONPATH and
  no real credentials."""
  env = dict(os.environ, CURL_CA_BUNDLE=os.path.join(workdir, "ca.pem"),
             GOOGLE_AUTH_TOKEN_FOR_TESTING="test-token", NO_GCE_CHECK="true",
             PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p))
  env.pop("GOOGLE_APPLICATION_CREDENTIALS", None)
  return env


@contextlib.contextmanager
def running(workdir, bucket):
  """Runs the emulator serving gs://bucket, its files and server.log in
  `workdir`; yields its subprocess.Popen (clients enter its namespaces with
  `nsenter --target=PID --net --mount`) once it is ready, and stops it on
  exit.

  Raises:
    RuntimeError: it exited or was not ready within START_TIMEOUT_S; the
      message ends with the tail of its log.
  """
  with open(os.path.join(workdir, "server.log"), "wb") as log:
    proc = subprocess.Popen(["unshare", "-mn", sys.executable, NAMESPACE, workdir, bucket],
                            stdout=log, stderr=subprocess.STDOUT)
  try:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not os.path.exists(os.path.join(workdir, "ready")):
      if proc.poll() is not None or time.monotonic() > deadline:
        with open(os.path.join(workdir, "server.log"), encoding="utf-8") as f:
          raise RuntimeError(f"gs:// emulator did not start:\n{f.read()[-3000:]}")
      time.sleep(0.05)
    yield proc
  finally:
    proc.terminate()
    try:
      proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
      proc.kill()
      proc.wait()
