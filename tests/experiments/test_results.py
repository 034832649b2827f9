"""Tests of bert_tf.experiments.results: the rows, the CSV, the plots and
the HParams data a user reads."""

import csv
import io
import os

import tensorflow as tf

from bert_tf.experiments import results

from helpers.result_rows import PRETRAIN, two_arm_rows as _rows


def test_csv_round_trips(tmp_path):
  rows = list(csv.DictReader(io.StringIO(results.to_csv(_rows()))))
  assert len(rows) == 4 and set(rows[0]) == set(results.COLUMNS)
  assert float(rows[3]["mean"]) == 0.62 and rows[3]["arm"] == "mlm"
  # `arm` is the arm's name, `objective` what it pretrains.
  row = results.row("mask100", "masked_lm_accuracy", 0.2, 0.0, 1, PRETRAIN, se=0.01,
                    objective="mlm_nsp")
  parsed = next(csv.DictReader(io.StringIO(results.to_csv([row]))))
  assert (parsed["arm"], parsed["objective"]) == ("mask100", "mlm_nsp")
  assert results.COLUMNS[:3] == ("arm", "objective", "metric")


def test_plots_and_hparams_are_written(tmp_path):
  paths = results.write_plots(_rows(), str(tmp_path / "plots"))
  assert sorted(os.path.basename(p) for p in paths) == ["masked_lm_accuracy.png",
                                                        "probe_sop_accuracy.png"]
  for path in paths:
    with open(path, "rb") as f:
      assert f.read(8) == b"\x89PNG\r\n\x1a\n"
  results.write_hparams(_rows(), str(tmp_path / "hparams"))
  runs = sorted(os.listdir(tmp_path / "hparams"))
  assert [r for r in runs if not r.startswith("events")] == ["mlm", "mlm_nsp"]
  # The per-run event file holds the hparams plugin data and each metric.
  tags = set()
  for event_file in tf.io.gfile.glob(str(tmp_path / "hparams" / "mlm" / "events*")):
    for event in tf.compat.v1.train.summary_iterator(event_file):
      tags.update(v.tag for v in event.summary.value)
  assert {"masked_lm_accuracy", "probe_sop_accuracy", "_hparams_/session_start_info"} <= tags
