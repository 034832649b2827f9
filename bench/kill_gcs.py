"""The kill sweep of bench/kill_sweep.py with every output on gs://: the data
writer's shards, the trainer's checkpoints, the exporter's SavedModel and
--hf_out folder (and with --tools=compare, the output folder of
bench/kill_compare.py's comparison), written through TensorFlow's own GCS
filesystem to a Cloud Storage emulator on loopback
(tests/gcs/gcs_namespace.py: private network and mount namespaces, nothing
leaves the machine).

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
BUCKET = "bert-tf-kills"


def sweep_inside(args):
  """The sweep, run inside the emulator's namespaces."""
  sys.path.insert(0, HERE)
  import kill_sweep  # pylint: disable=g-import-not-at-top
  start = time.time()
  outputs = f"gs://{args.bucket}/kill_sweep"
  kill_sweep.remove_tree(outputs)
  if args.no_delays:
    kill_sweep.SAVE_DELAYS_S = ()
  tools = tuple(args.tools.split(","))
  log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
  results = kill_sweep.run_sweep(os.path.join(args.out, "work"), args.points,
                                 tuple(t for t in tools if t != "compare"), log=log,
                                 outputs=outputs) if set(tools) - {"compare"} else []
  if "compare" in tools:
    import kill_compare  # pylint: disable=g-import-not-at-top
    compare_outputs = f"gs://{args.bucket}/kill_compare"
    kill_sweep.remove_tree(compare_outputs)
    only = (lambda event, delay: delay > 0) if args.delays_only else None
    results.append(kill_compare.run_sweep(os.path.join(args.out, "work_compare"), args.points,
                                          log=log, only=only, outputs=compare_outputs))
  for result in results:
    print(json.dumps(result), flush=True)
  print(json.dumps({"seconds": round(time.time() - start)}))
  return 1 if any(r["failures"] for r in results) else 0


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
  parser.add_argument("--points", type=int, default=6, help="kill points per tool")
  parser.add_argument("--out", default="/tmp/kill_gcs", help="local work folder (emptied)")
  parser.add_argument("--tools", default="writer,trainer,exporter",
                      help="of writer, trainer, exporter and compare (compare_objectives, "
                      "bench/kill_compare.py's toy comparison)")
  parser.add_argument("--bucket", default=BUCKET)
  parser.add_argument("--no_delays", action="store_true",
                      help="kill at write events only, not at delays into saves")
  parser.add_argument("--delays_only", action="store_true",
                      help="compare: kill only at the delays into its checkpoint save")
  parser.add_argument("--inside", action="store_true",
                      help="already inside an emulator's namespaces (the test fixture's)")
  args = parser.parse_args()
  if args.inside:
    return sweep_inside(args)
  sys.path.insert(0, os.path.join(REPO, "tests"))
  from helpers import gcs_emulator  # pylint: disable=g-import-not-at-top
  shutil.rmtree(args.out, ignore_errors=True)
  server_dir = os.path.join(args.out, "server")
  os.makedirs(server_dir)
  try:
    with gcs_emulator.running(server_dir, args.bucket) as server:
      return subprocess.run(
          ["nsenter", f"--target={server.pid}", "--net", "--mount", f"--wd={REPO}", "--",
           sys.executable, os.path.abspath(__file__), "--inside", f"--points={args.points}",
           f"--out={args.out}", f"--tools={args.tools}", f"--bucket={args.bucket}"]
          + ["--no_delays"] * args.no_delays + ["--delays_only"] * args.delays_only,
          env=gcs_emulator.client_env(server_dir), cwd=REPO, check=False).returncode
  except RuntimeError as e:
    sys.exit(f"kill_gcs: the {e}")


if __name__ == "__main__":
  sys.exit(main())
