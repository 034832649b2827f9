"""Tests of bert_tf.training.evaluation on a tiny model and tiny random
records: the Evaluator's sums over batches (the objective's, or a function's
given), its batch limit, and eval_results.txt's format. The eval metrics
against a direct computation are tests/training/test_loop.py's
test_eval_metrics_are_the_original_streaming_means (through a run)."""

import pytest
import tensorflow as tf

from bert_tf.data.input import pipeline
from bert_tf.models import modeling
from bert_tf.training import evaluation
from bert_tf.training import objectives

from helpers.pretraining import PREDS, SEQ, tiny_bert_config, write_records


@pytest.fixture
def batches(tmp_path):
  write_records(tmp_path / "heldout.tfrecord", 24, seed=2)
  return pipeline.make_dataset([str(tmp_path / "heldout.tfrecord")], 8, SEQ, PREDS,
                               is_training=False)


def test_the_evaluator_adds_each_batch_up_to_max_batches(batches):
  model = modeling.BertPretrainer(tiny_bert_config())
  objective = objectives.get("mlm_nsp")

  def examples(outputs, features):
    del outputs
    return {"examples": tf.cast(tf.shape(features["input_ids"])[0], tf.float32)}

  totals, losses = evaluation.Evaluator(model, objective, sums=examples).totals(batches, 2)
  assert (totals, losses) == ({"examples": 16.0}, [])
  totals, losses = evaluation.Evaluator(model, objective).totals(batches, 10)
  assert len(losses) == 3  # 24 records in batches of 8
  assert totals["mlm_weight_sum"] == pytest.approx(sum(
      float(tf.reduce_sum(b["masked_lm_weights"])) for b in batches))
  assert all(loss > 0 for loss in losses)


def test_eval_results_are_one_sorted_key_value_line_each(tmp_path):
  path = tmp_path / "eval_results.txt"
  evaluation.write_eval_results(str(path), {"loss": 1.5, "global_step": 3})
  assert path.read_text() == "global_step = 3\nloss = 1.5\n"
