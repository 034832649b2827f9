"""Tests of the bert_tf.finetune tool: a tiny run with --export_dir whose
SavedModel answers text in a fresh process with only tensorflow and
tensorflow-text; bad input is one line, a non-zero exit and no result file."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from helpers import finetune_task
from helpers.finetune_task import write_task
from helpers.tool_runs import model_flags, run_tool


@pytest.fixture
def files(tmp_path):
  return {"model": model_flags(tmp_path, finetune_task),
          "train": write_task(tmp_path / "train.tsv", 128, seed=1, pair=True),
          "dev": write_task(tmp_path / "dev.tsv", 48, seed=2, pair=True)}


def _args(files, out, *extra):
  return files["model"] + [
      f"--train_file={files['train']}", f"--dev_file={files['dev']}",
      "--text_a_column=sentence", "--text_b_column=2", "--max_seq_length=16",
      "--learning_rate=1e-3", "--num_train_epochs=6", "--train_batch_size=16",
      f"--output_dir={out}"] + list(extra)


def test_run_and_export_answer_text_in_a_fresh_process(files, tmp_path):
  child = run_tool("finetune",
                   _args(files, tmp_path / "out", f"--export_dir={tmp_path / 'model'}"), tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert "accuracy = " in child.stdout and ", sd 0.0000)" in child.stdout
  assert "only 48 examples" in child.stdout  # the noise note
  results = dict(line.split(" = ") for line in
                 (tmp_path / "out" / "eval_results.txt").read_text().splitlines())
  assert float(results["accuracy"]) > 0.8
  code = textwrap.dedent(f"""
      import json, sys
      import tensorflow as tf, tensorflow_text  # noqa
      assert "bert_tf" not in sys.modules
      model = tf.saved_model.load({str(tmp_path / 'model')!r})
      out = model.signatures["classify"](
          text_a=tf.constant(["the movie was great", "an awful plot", "good " * 40]),
          text_b=tf.constant(["the show", "the actor", "very"]))
      ids = model.signatures["classify_ids"](
          input_ids=tf.constant([[2, 5, 3]]), input_mask=tf.constant([[1, 1, 1]]),
          segment_ids=tf.constant([[0, 0, 0]]))
      print(json.dumps({{"labels": [x.decode() for x in out["labels"].numpy()],
                        "probs": out["probabilities"].numpy().tolist(),
                        "truncated": out["truncated"].numpy().tolist(),
                        "names": [x.decode() for x in out["label_names"].numpy()],
                        "ids_probs": ids["probabilities"].numpy().tolist()}}))
      """)
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  fresh = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, env=env)
  assert fresh.returncode == 0, fresh.stderr[-3000:]
  answer = json.loads(fresh.stdout.strip().splitlines()[-1])
  assert answer["names"] == ["0", "1"]
  assert answer["labels"][:2] == ["1", "0"]
  assert answer["truncated"] == [False, False, True]
  for row in answer["probs"] + answer["ids_probs"]:
    assert abs(sum(row) - 1) < 1e-5


def test_bad_input_is_one_line_nonzero_exit_and_no_result_file(files, tmp_path):
  child = run_tool("finetune", _args(files, tmp_path / "out", "--label_column=gold"), tmp_path)
  assert child.returncode == 1
  lines = child.stderr.strip().splitlines()
  assert lines[-1].startswith("bert_tf.finetune: error: ") and "label_column='gold'" in lines[-1]
  assert "Traceback" not in child.stderr
  assert not (tmp_path / "out" / "eval_results.txt").exists()
  child = run_tool("finetune", _args(files, tmp_path / "out", "--seeds=0"), tmp_path)
  assert child.returncode == 2 and "seeds must be positive, got 0" in child.stderr
  # An existing --export_dir is refused before any training, and left as it was.
  (tmp_path / "model").mkdir()
  (tmp_path / "model" / "keep.txt").write_text("x")
  child = run_tool("finetune",
                   _args(files, tmp_path / "out", f"--export_dir={tmp_path / 'model'}"), tmp_path)
  assert child.returncode == 1, child.stderr[-3000:]
  assert child.stderr.strip().splitlines()[-1] == (
      f"bert_tf.finetune: error: --export_dir {tmp_path / 'model'} exists already; "
      "pass overwrite=True (--overwrite) to replace it")
  assert os.listdir(tmp_path / "model") == ["keep.txt"]
  assert not (tmp_path / "out" / "eval_results.txt").exists()


def test_a_transformers_folder_stands_in_for_config_vocab_and_weights(files, tmp_path):
  """--init_checkpoint=<transformers folder> with no --bert_config_file or
  --vocab_file: its config.json and tokenizer.json's vocab are used."""
  from helpers.hf_fixtures import fixture  # pylint: disable=g-import-not-at-top
  args = [a for a in _args(files, tmp_path / "out", "--num_train_epochs=1")
          if not a.startswith(("--bert_config_file", "--vocab_file"))]
  child = run_tool("finetune", args + [f"--init_checkpoint={fixture('bert_for_masked_lm')}"],
                   tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert "from transformers folder" in child.stdout + child.stderr
  assert "its pooler is not there and starts at random" in child.stdout + child.stderr
  assert (tmp_path / "out" / "eval_results.txt").exists()
