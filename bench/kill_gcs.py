"""The kill sweep of bench/kill_sweep.py with every output on gs://: the data
writer's shards, the trainer's checkpoints, the exporter's SavedModel and
--hf_out folder, written through TensorFlow's own GCS filesystem to a Cloud
Storage emulator on loopback (tests/gcs/gcs_namespace.py: private network
and mount namespaces, nothing leaves the machine).

  PYTHONPATH=$PWD .venv/bin/python bench/kill_gcs.py --points=6 --out=/tmp/kill_gcs

Needs what the `gcs` test fixture needs (root or user namespaces,
`unshare`, `nsenter`, the `test` extra's fake-gcs-server and cryptography).
Starts the emulator, runs the sweep inside its namespaces (the inputs and
event logs in --out, the tools' outputs under gs://BUCKET/kill_sweep) and
prints one JSON line per tool as kill_sweep.py does, and the seconds.
tests/gcs/test_gcs_kills.py runs a few points of it with the fixture's
emulator (`--inside`).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
NAMESPACE = os.path.join(REPO, "tests", "gcs", "gcs_namespace.py")
BUCKET = "bert-tf-kills"


def emulator_env(workdir):
  """The environment of a client of the emulator started in `workdir`."""
  env = dict(os.environ, CURL_CA_BUNDLE=os.path.join(workdir, "ca.pem"),
             GOOGLE_AUTH_TOKEN_FOR_TESTING="test-token", NO_GCE_CHECK="true",
             PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p))
  env.pop("GOOGLE_APPLICATION_CREDENTIALS", None)
  return env


def sweep_inside(args):
  """The sweep, run inside the emulator's namespaces."""
  sys.path.insert(0, HERE)
  import kill_sweep  # pylint: disable=g-import-not-at-top
  start = time.time()
  outputs = f"gs://{args.bucket}/kill_sweep"
  kill_sweep.remove_tree(outputs)
  if args.no_delays:
    kill_sweep.SAVE_DELAYS_S = ()
  results = kill_sweep.run_sweep(os.path.join(args.out, "work"), args.points,
                                 tuple(args.tools.split(",")),
                                 log=lambda line: print(line, file=sys.stderr, flush=True),
                                 outputs=outputs)
  for result in results:
    print(json.dumps(result), flush=True)
  print(json.dumps({"seconds": round(time.time() - start)}))
  return 1 if any(r["failures"] for r in results) else 0


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
  parser.add_argument("--points", type=int, default=6, help="kill points per tool")
  parser.add_argument("--out", default="/tmp/kill_gcs", help="local work folder (emptied)")
  parser.add_argument("--tools", default="writer,trainer,exporter")
  parser.add_argument("--bucket", default=BUCKET)
  parser.add_argument("--no_delays", action="store_true",
                      help="kill at write events only, not at delays into saves")
  parser.add_argument("--inside", action="store_true",
                      help="already inside an emulator's namespaces (the test fixture's)")
  args = parser.parse_args()
  if args.inside:
    return sweep_inside(args)
  shutil.rmtree(args.out, ignore_errors=True)
  server_dir = os.path.join(args.out, "server")
  os.makedirs(server_dir)
  with open(os.path.join(server_dir, "server.log"), "wb") as log:
    server = subprocess.Popen(["unshare", "-mn", sys.executable, NAMESPACE, server_dir,
                               args.bucket], stdout=log, stderr=subprocess.STDOUT)
  try:
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(server_dir, "ready")):
      if server.poll() is not None or time.monotonic() > deadline:
        with open(os.path.join(server_dir, "server.log"), encoding="utf-8") as f:
          sys.exit(f"kill_gcs: the gs:// emulator did not start:\n{f.read()[-3000:]}")
      time.sleep(0.05)
    return subprocess.run(
        ["nsenter", f"--target={server.pid}", "--net", "--mount", f"--wd={REPO}", "--",
         sys.executable, os.path.abspath(__file__), "--inside", f"--points={args.points}",
         f"--out={args.out}", f"--tools={args.tools}", f"--bucket={args.bucket}"]
        + ["--no_delays"] * args.no_delays,
        env=emulator_env(server_dir), cwd=REPO, check=False).returncode
  finally:
    server.terminate()
    try:
      server.wait(timeout=20)
    except subprocess.TimeoutExpired:
      server.kill()
      server.wait()


if __name__ == "__main__":
  sys.exit(main())
