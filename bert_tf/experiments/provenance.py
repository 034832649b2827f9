"""How a comparison's results were made: the code's commit, the Python,
TensorFlow and Keras versions, the corpus's size and SHA-256, the machine,
the wall time of each stage, and the command, for results.md ("How this
table was made"), results.csv (a column each) and provenance.json.

Paths are written as given, or relative to the working directory or the
repository when they lie inside it: another machine's absolute home folder
says nothing to a reader.
"""

import os
import platform
import shlex
import subprocess
import sys

from bert_tf.io import file_io as files

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The CSV columns of `fields`, in order.
CSV_FIELDS = ("commit", "python", "tensorflow", "keras", "corpus_bytes", "corpus_sha256",
              "machine", "command")


def shown_path(path):
  """`path` relative to the working directory or the repository when inside
  one of them (a remote path such as gs://... as given)."""
  if not path or "://" in str(path):
    return path
  absolute = os.path.abspath(path)
  for base in (os.getcwd(), REPOSITORY):
    if absolute == base or absolute.startswith(base.rstrip(os.sep) + os.sep):
      return os.path.relpath(absolute, base)
  return path


def commit(directory=REPOSITORY):
  """The repository's HEAD commit, "+ local changes" when its tracked files
  differ from it; "unknown" without git or outside a repository."""
  try:
    head = subprocess.run(["git", "-C", directory, "rev-parse", "HEAD"], capture_output=True,
                          text=True, timeout=20, check=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", directory, "status", "--porcelain",
                            "--untracked-files=no"], capture_output=True, text=True,
                           timeout=20, check=True).stdout.strip()
  except (OSError, subprocess.SubprocessError):
    return "unknown"
  return f"{head} + local changes" if dirty else (head or "unknown")


def cpu_model(cpuinfo="/proc/cpuinfo"):
  """The CPU's model name (`cpuinfo`, Linux's, when it exists; else
  platform's)."""
  if files.exists(cpuinfo):
    # A kernel file of size 0: read line by line (file_io's whole-file
    # reads go by size and would see it empty).
    with files.open_file(cpuinfo) as f:
      for line in f:
        if line.lower().startswith(("model name", "hardware", "cpu model")):
          return line.split(":", 1)[1].strip()
  return platform.processor() or platform.machine() or "unknown"


def machine():
  """The machine in words: cores, CPU model, system, accelerators."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  gpus = tf.config.list_physical_devices("GPU")
  accelerators = f", {len(gpus)} GPU(s)" if gpus else ", no GPU"
  return (f"{os.cpu_count()} cores, {cpu_model()}, {platform.system()} "
          f"{platform.machine()}{accelerators}")


def versions():
  """{python, tensorflow, keras}: the versions that ran."""
  import keras  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return {"python": platform.python_version(), "tensorflow": tf.__version__,
          "keras": keras.__version__}


def command(argv=None):
  """The command that ran, paths as `shown_path` writes them."""
  args = []
  for arg in list(sys.argv[1:] if argv is None else argv):
    if arg.startswith("--") and "=" in arg:
      name, value = arg.split("=", 1)
      local = "://" not in value and files.exists(value)  # a remote path is shown as given
      arg = f"{name}={shown_path(value) if local else value}"
    args.append(arg)
  tool = "bert_tf.compare_objectives"
  return " ".join(["python", "-m", tool] + [shlex.quote(a) for a in args])


def fields(corpus, corpus_sha256, argv=None):
  """The provenance of one comparison (dict; CSV_FIELDS among its keys)."""
  out = {"commit": commit(), **versions(), "corpus": shown_path(corpus),
         "corpus_bytes": files.size(corpus), "corpus_sha256": corpus_sha256,
         "machine": machine(), "command": command(argv)}
  return out


def stage_times(seconds, skipped, recorded=None):
  """"text 3 s, records 12 s, ..." of this invocation's wall time per kind
  of stage ({kind: seconds}), and the kinds found done before
  ({kind: count}) with the time they took when they ran (`recorded`:
  {kind: (seconds, how many of them had a time)})."""
  recorded = recorded or {}
  parts = [f"{kind} {value:.0f} s" for kind, value in seconds.items()]
  for kind, count in skipped.items():
    took, timed = recorded.get(kind, (0.0, 0))
    when = ("" if not timed else f"; {took:.0f} s when they ran" if timed == count
            else f"; {timed} of them {took:.0f} s when they ran, {count - timed} not timed")
    parts.append(f"{kind}: {count} done before (read back{when})")
  return ", ".join(parts) or "every stage done before (read back)"


def total_seconds(seconds, skipped, recorded=None):
  """(every stage's wall time, this invocation's and the read-back stages'
  when they ran, seconds; how many read-back stages had no time kept)."""
  recorded = recorded or {}
  took = sum(seconds.values()) + sum(t for t, _ in recorded.values())
  untimed = sum(count - recorded.get(kind, (0.0, 0))[1] for kind, count in skipped.items())
  return took, untimed


def lines(info, times, pretraining, total=None):
  """results.md's "How this table was made" lines; `times`: stage_times();
  `pretraining`: [(arm, seed index, seconds)] of each pretraining run;
  `total`: total_seconds()."""
  runs = "; ".join(f"{arm} seed {k}: {seconds:.0f} s" for arm, k, seconds in pretraining)
  took, untimed = total or (0.0, 0)
  whole = (f"wall time of every stage, those read back as they ran: {took:.0f} s "
           f"({took / 60:.0f} min)" + (f"; {untimed} read back with no time kept"
                                       if untimed else ""))
  return [f"commit {info['commit']}; Python {info['python']}, TensorFlow "
          f"{info['tensorflow']}, Keras {info['keras']}",
          f"corpus {info['corpus']}: {info['corpus_bytes']:,} bytes, sha256 "
          f"{info['corpus_sha256']}",
          f"machine: {info['machine']}",
          f"wall time of this invocation by stage: {times}",
          whole,
          f"pretraining wall time of each run (when it ran): {runs}",
          f"command: `{info['command']}`"]
