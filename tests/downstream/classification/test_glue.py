"""The GLUE presets read each task's files in the GLUE download's layout
(written here per task), and name metrics the fine-tuning computes."""

import numpy as np
import pytest

from bert_tf.downstream.classification import tsv as classification
from bert_tf.downstream.classification import glue
from bert_tf.downstream.classification import finetune_tsv
from helpers.glue_files import LAYOUTS, write_task_dir

OFFICIAL = {"CoLA": ("mcc",), "SST-2": ("accuracy",), "MRPC": ("f1", "accuracy"),
            "QQP": ("f1", "accuracy"), "STS-B": ("pearson", "spearman"),
            "MNLI": ("accuracy", "mismatched_accuracy"), "QNLI": ("accuracy",),
            "RTE": ("accuracy",), "WNLI": ("accuracy",)}
SINGLE = ("CoLA", "SST-2")


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_each_preset_reads_its_tasks_files(tmp_path, name):
  written = write_task_dir(tmp_path / name, name, n_train=6, n_dev=4, n_test=3)
  task = glue.preset(name)
  train, devs, test = task.paths(str(tmp_path / name))
  for path, file in [(train, "train.tsv")] + [(p, p.rsplit("/", 1)[1]) for _, p in devs]:
    got = glue.read_split(task, path)
    assert [(e.text_a, e.text_b, e.label) for e in got] == [
        (a, None if name in SINGLE else b, y) for a, b, y in written[file]], file
  got = glue.read_split(task, test, test=True)
  assert [(e.text_a, e.text_b, e.label) for e in got] == [
      (a, None if name in SINGLE else b, None) for a, b, _ in written[test.rsplit("/", 1)[1]]]
  # CoLA's train and dev have no header: the first line is an example.
  if name == "CoLA":
    assert glue.read_split(task, train)[0].line == 1


@pytest.mark.parametrize("name", sorted(OFFICIAL))
def test_each_task_reports_its_official_metrics(name):
  task = glue.preset(name)
  assert task.metrics == OFFICIAL[name]
  space = classification.LabelSpace(task.labels, task.regression)
  rng = np.random.default_rng(0)
  n = 20
  labels = (rng.random(n) * 5 if task.regression
            else rng.integers(0, len(task.labels), n))
  metrics = finetune_tsv.compute_metrics(rng.normal(size=[n, space.num_outputs]), labels, space)
  for split, _ in task.dev_files[1:]:  # MNLI: the mismatched dev set, prefixed
    metrics.update({f"{split}_{k}": v for k, v in list(metrics.items())})
  assert set(task.metrics) <= set(metrics)


def test_labels_are_the_original_lists_and_names_case_free():
  assert glue.preset("mnli").labels == ("contradiction", "entailment", "neutral")
  assert glue.preset("sts-b").regression and glue.preset("STSB").name == "STS-B"
  assert glue.preset("rte").labels == ("entailment", "not_entailment")
  with pytest.raises(ValueError, match="'XNLI' is not a GLUE task: choose one of CoLA"):
    glue.preset("XNLI")


def test_a_short_row_names_file_and_line(tmp_path):
  write_task_dir(tmp_path, "MRPC", n_train=3)
  with (tmp_path / "train.tsv").open("a") as f:
    f.write("1\t5\t6\tonly a\n")
  with pytest.raises(ValueError, match=r"train.tsv:5: 4 tab-separated fields, the columns "
                                       r"asked for need 5"):
    glue.read_split(glue.preset("MRPC"), str(tmp_path / "train.tsv"))
