"""bert_tf.downstream.span.span_answers against google-research/bert run_squad.py's
own write_predictions on the same features and logits
(tests/fixtures/squad/golden_*_predict.json, made by the original code)."""

import json
import os

import pytest

from bert_tf.downstream.span import squad
from bert_tf.data.tokenizers import tokenization
from bert_tf.data.tokenizers import wordpiece_vocab
from bert_tf.downstream.span import span_answers

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))),
                        "fixtures", "squad")


def golden(name):
  with open(os.path.join(FIXTURES, f"golden_{name}.json"), encoding="utf-8") as f:
    return json.load(f)


def decoded(name, threshold=0.0):
  want = golden(name)
  tokenizer = tokenization.BatchTokenizer(
      wordpiece_vocab.load_vocab(os.path.join(FIXTURES, "vocab.txt")), do_lower_case=True)
  examples = squad.read_examples(os.path.join(FIXTURES, want["input"]), False).examples
  features = squad.convert_examples(examples, tokenizer, is_training=False,
                                    **want["settings"])
  results = [span_answers.RawResult(**r) for r in want["results"]]
  out = span_answers.decode(examples, features, results, do_lower_case=True,
                            version_2_with_negative=want["version_2_with_negative"],
                            null_score_diff_threshold=threshold, **want["decoding"])
  return want, out


@pytest.mark.parametrize("name", ["v1_predict", "v2_predict"])
def test_predictions_and_nbest_equal_the_originals(name):
  want, (predictions, nbest, null_odds) = decoded(name)
  assert list(predictions.items()) == list(want["predictions"].items())
  assert list(nbest) == list(want["nbest"])
  for qid, entries in want["nbest"].items():
    assert [e["text"] for e in nbest[qid]] == [e["text"] for e in entries], qid
    for got, expected in zip(nbest[qid], entries):
      assert got["start_logit"] == expected["start_logit"]
      assert got["end_logit"] == expected["end_logit"]
      assert got["probability"] == pytest.approx(expected["probability"], abs=1e-12)
  if want["version_2_with_negative"]:
    assert list(null_odds) == list(want["null_odds"])
    for qid, value in want["null_odds"].items():
      assert null_odds[qid] == pytest.approx(value, abs=1e-9)
  else:
    assert not null_odds


def test_the_case_covers_what_it_should():
  want = golden("v2_predict")
  texts = [e["text"] for entries in want["nbest"].values() for e in entries]
  assert "" in want["predictions"].values() and any(want["predictions"].values())
  assert any(t != t.lower() for t in texts)  # case restored from the context
  assert any(any(ord(c) > 127 for c in t) for t in texts)  # accents restored
  v1 = golden("v1_predict")
  assert any(len(entries) == v1["decoding"]["n_best_size"] for entries in v1["nbest"].values())


def test_the_threshold_moves_answers_to_null():
  _, (predictions, _, null_odds) = decoded("v2_predict", threshold=-1e9)
  assert set(predictions.values()) == {""}
  _, (predictions, _, _) = decoded("v2_predict", threshold=1e9)
  assert "" not in predictions.values()


def test_final_text_aligns_to_the_original_words():
  assert span_answers.final_text("steve smith", "Steve Smith's", True) == "Steve Smith"
  assert span_answers.final_text("cafe muller", "Café Müller,", True) == "Café Müller"
  assert span_answers.final_text("1895", "(1895-1943).", True) == "1895"
  # No alignment: the original words whole.
  assert span_answers.final_text("xyz", "Café", True) == "Café"


def test_written_files_are_the_originals_format(tmp_path):
  want, (predictions, nbest, null_odds) = decoded("v2_predict")
  paths = span_answers.write_predictions(str(tmp_path), predictions, nbest, null_odds, True)
  assert [os.path.basename(p) for p in paths] == [
      "predictions.json", "nbest_predictions.json", "null_odds.json"]
  text = (tmp_path / "predictions.json").read_text(encoding="utf-8")
  assert text == json.dumps(want["predictions"], indent=4) + "\n"
  assert json.loads((tmp_path / "nbest_predictions.json").read_text())["q_born"][0]["text"] == \
      want["nbest"]["q_born"][0]["text"]
  assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(p) for p in paths)
