"""Tests of bert_tf.training.progress: the ETA of the progress line."""

import logging

from bert_tf.training import progress


def test_eta_is_estimated_from_the_steady_loops_not_the_first():
  # 1,000 steps, host loops of 100: the first takes 60 s (30 of them tracing),
  # each later one 30 s. The steady rate gives 800 x 0.3 s = 4:00 at step 200;
  # from the start (the old estimate) it would be 800 x 90 / 200 s = 6:00.
  eta = progress.EtaEstimator(0, 1000.0, 1000)
  assert eta.text(0) == "?"
  eta.loop_done(100, 1060.0)
  assert eta.text(100) == "<0:09:00"  # only the first loop: an upper bound
  eta.loop_done(200, 1090.0)
  assert eta.text(200) == "0:04:00"
  eta.loop_done(900, 1300.0)
  assert eta.text(900) == "0:00:30"
  eta.loop_done(1000, 1330.0)
  assert eta.text(1000) == "0:00:00"
  # A resumed run counts from where it resumed.
  resumed = progress.EtaEstimator(500, 0.0, 1000)
  resumed.loop_done(600, 50.0)
  resumed.loop_done(700, 70.0)
  assert resumed.text(700) == "0:01:00"


def test_progress_line_names_the_objectives_fields_rate_and_eta(caplog):
  class Fields:  # an objective's progress fields: (label, metric key)
    def progress_fields(self):
      return [("loss", "loss"), ("mlm", "masked_lm_loss"), ("mlm_acc", "masked_lm_accuracy")]

  metrics = {"loss": 2.5, "masked_lm_loss": 2.0, "masked_lm_accuracy": 0.25,
             "learning_rate": 1e-4, "gradient_norm": 0.5, "examples_per_second": 12.0,
             "tokens_per_second": 1536.0}
  with caplog.at_level(logging.INFO, logger="absl"):
    progress.log_progress(20, 100, metrics, "0:01:00", Fields())
  assert ("step 20/100  loss 2.5000  mlm 2.0000  mlm_acc 0.2500  lr 0.0001  grad_norm 0.5"
          "  12.0 ex/s  1536 tok/s  ETA 0:01:00") in caplog.text
