"""Running a bert_tf tool as a user does: `python -m bert_tf.<tool>` in a
child process that imports this checkout's bert_tf; and the model flags of a
tiny task's run."""

import os
import subprocess
import sys

# The checkout these tests belong to (tests/helpers/ -> the repository root).
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_tool(tool, args, cwd, timeout=600):
  """`python -m bert_tf.<tool> args` in cwd with PYTHONPATH the checkout:
  the subprocess.CompletedProcess, stdout and stderr as text."""
  return subprocess.run([sys.executable, "-m", f"bert_tf.{tool}"] + list(args), cwd=cwd,
                        capture_output=True, text=True, timeout=timeout,
                        env=dict(os.environ, PYTHONPATH=REPO))


def model_flags(directory, task, vocab_name="vocab.txt"):
  """--bert_config_file and --vocab_file of a tiny task's model, written in
  `directory` (a pathlib.Path) as bert_config.json and vocab_name.

  task: a helpers module with tiny_config() and write_vocab(path)
    (finetune_task, tagging_task).
  """
  config = directory / "bert_config.json"
  task.tiny_config().to_json_file(str(config))
  return [f"--bert_config_file={config}",
          f"--vocab_file={task.write_vocab(directory / vocab_name)}"]
