"""bert_tf.downstream.span.squad_metrics against the official SQuAD v1.1 and v2.0
evaluation scripts' numbers (tests/fixtures/squad/golden_*_predict.json:
official_eval on the original's predictions, official_eval_handmade on a
handmade predictions file; make_goldens.py ran the scripts)."""

import json
import os

import pytest

from bert_tf.downstream.span import squad_metrics

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))),
                        "fixtures", "squad")


def load(name):
  with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
    return json.load(f)


@pytest.mark.parametrize("key,predictions", [("official_eval", "predictions"),
                                             ("official_eval_handmade", "handmade_predictions")])
def test_v1_equals_the_official_script(key, predictions):
  golden = load("golden_v1_predict.json")
  got = squad_metrics.evaluate_v1(load(golden["input"])["data"], golden[predictions])
  assert got == pytest.approx(golden[key], abs=1e-9)
  assert set(got) == set(golden[key])


def test_v2_equals_the_official_script_with_null_odds():
  golden = load("golden_v2_predict.json")
  got = squad_metrics.evaluate_v2(load(golden["input"])["data"], golden["predictions"],
                                  na_probs=golden["null_odds"])
  assert got == pytest.approx(golden["official_eval"], abs=1e-9)
  assert list(got) == list(golden["official_eval"])


def test_v2_equals_the_official_script_on_handmade_predictions():
  golden = load("golden_v2_predict.json")
  got = squad_metrics.evaluate_v2(load(golden["input"])["data"],
                                  golden["handmade_predictions"])
  assert got == pytest.approx(golden["official_eval_handmade"], abs=1e-9)
  assert 0 < got["f1"] < 100 and got["NoAns_exact"] == 50.0


def test_normalization_and_scores():
  assert squad_metrics.normalize_answer("The  Café,  an Apple!") == "café apple"
  assert squad_metrics.exact_match("the Eiffel Tower", "Eiffel tower.") == 1
  assert squad_metrics.f1_v1("a red apple", "red apple pie") == pytest.approx(0.8)
  assert squad_metrics.f1_v1("the", "the") == 0.0  # v1.1: nothing left, no overlap
  assert squad_metrics.f1_v2("", "") == 1.0 and squad_metrics.f1_v2("", "x") == 0.0
  with pytest.raises(ValueError, match="no prediction for question q1"):
    squad_metrics.evaluate_v2([{"paragraphs": [{"qas": [{"id": "q1", "answers": []}]}]}], {})
