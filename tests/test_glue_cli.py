"""bert_tf.finetune --task_name --data_dir on tiny GLUE-layout directories:
MNLI evaluates both dev files and reports them apart, CoLA's header-less
files are read, eval_results.txt has mean, median and sd over seeds; a flag
that contradicts the task, or a missing file, is a one-line error."""

import os

import pytest

from helpers import finetune_task
from helpers.glue_files import write_task_dir
from helpers.tool_runs import model_flags, run_tool


@pytest.fixture
def model_args(tmp_path):
  return model_flags(tmp_path, finetune_task, "v.txt") + [
      "--max_seq_length=16", "--learning_rate=1e-3", "--num_train_epochs=2",
      "--train_batch_size=16"]


def _results(path):
  return dict(line.split(" = ") for line in path.read_text().splitlines())


@pytest.mark.slow
def test_mnli_reports_matched_and_mismatched_over_seeds(tmp_path, model_args):
  write_task_dir(tmp_path / "MNLI", "MNLI", n_train=48, n_dev=20, n_test=4)
  child = run_tool("finetune", model_args + [
      "--task_name=mnli", f"--data_dir={tmp_path / 'MNLI'}", "--seeds=3",
      f"--output_dir={tmp_path / 'out'}"], tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert "MNLI official metrics (dev):" in child.stdout
  printed = [line.split(" = ")[0] for line in child.stdout.splitlines() if " = " in line]
  assert printed == ["accuracy", "mismatched_accuracy"]
  results = _results(tmp_path / "out" / "eval_results.txt")
  for key in ("accuracy", "mismatched_accuracy"):
    seeds = sorted(float(results[f"seed_{s}_{key}"]) for s in range(3))
    assert float(results[f"{key}_median"]) == seeds[1]
    assert abs(float(results[key]) - sum(seeds) / 3) < 1e-9
    assert f"{key}_sd" in results
  predictions = (tmp_path / "out" / "test_results.tsv").read_text().splitlines()
  assert predictions[0] == "label\tp_contradiction\tp_entailment\tp_neutral"
  assert len(predictions) == 5


def test_cola_headerless_files_and_its_official_metric(tmp_path, model_args):
  write_task_dir(tmp_path / "CoLA", "CoLA", n_train=32, n_dev=16)
  os.remove(tmp_path / "CoLA" / "test.tsv")
  child = run_tool("finetune", model_args + [
      "--task_name=CoLA", f"--data_dir={tmp_path / 'CoLA'}",
      f"--output_dir={tmp_path / 'out'}"], tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert "32 train, 16 dev examples" in child.stdout  # no line taken for a header
  assert [line.split(" = ")[0] for line in child.stdout.splitlines() if " = " in line] == [
      "mcc"]
  assert "test predictions: none (no test file in --data_dir)" in child.stdout


def test_contradicting_flag_and_missing_file_are_one_line_errors(tmp_path, model_args):
  write_task_dir(tmp_path / "MRPC", "MRPC", n_train=8, n_dev=4)
  base = model_args + ["--task_name=MRPC", f"--data_dir={tmp_path / 'MRPC'}",
                       f"--output_dir={tmp_path / 'out'}"]
  child = run_tool("finetune", base + ["--label_column=5"], tmp_path)
  assert child.returncode == 2
  assert ("--label_column=5 contradicts --task_name=MRPC (its label_column is '0')"
          in child.stderr.strip().splitlines()[-1])
  os.remove(tmp_path / "MRPC" / "dev.tsv")
  child = run_tool("finetune", base, tmp_path)
  assert child.returncode == 2 and "Traceback" not in child.stderr
  assert (f"{tmp_path / 'MRPC' / 'dev.tsv'}: no such file (--task_name=MRPC "
          f"--data_dir={tmp_path / 'MRPC'})" in child.stderr.strip().splitlines()[-1])
  assert not (tmp_path / "out" / "eval_results.txt").exists()
