"""bert_tf.downstream.span.squad against google-research/bert run_squad.py's own
examples and features (tests/fixtures/squad/golden_*.json, made by
make_goldens.py there with the original code), and its bad-input rules."""

import json
import os

import pytest

from bert_tf.downstream.span import squad
from bert_tf.data.tokenizers import tokenization
from bert_tf.data.tokenizers import wordpiece_vocab

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))),
                        "fixtures", "squad")
CASES = ("v1_train", "v1_predict", "v2_train", "v2_predict")


def golden(name):
  with open(os.path.join(FIXTURES, f"golden_{name}.json"), encoding="utf-8") as f:
    return json.load(f)


@pytest.fixture(scope="module")
def tokenizer():
  return tokenization.BatchTokenizer(
      wordpiece_vocab.load_vocab(os.path.join(FIXTURES, "vocab.txt")), do_lower_case=True)


def convert(name, tokenizer):
  want = golden(name)
  read = squad.read_examples(os.path.join(FIXTURES, want["input"]), want["is_training"],
                             want["version_2_with_negative"])
  features = squad.convert_examples(read.examples, tokenizer, is_training=want["is_training"],
                                    **want["settings"])
  return want, read, features


@pytest.mark.parametrize("name", CASES)
def test_examples_equal_the_originals(name, tokenizer):
  want, read, _ = convert(name, tokenizer)
  got = [dict(qas_id=e.qas_id, doc_tokens=e.doc_tokens, orig_answer_text=e.orig_answer_text,
              start_position=e.start_position, end_position=e.end_position,
              is_impossible=e.is_impossible) for e in read.examples]
  assert got == want["examples"]
  # The original skips the misplaced training answer with a warning; here
  # it is counted and named.
  assert [qid for qid, _ in read.skipped] == (["q_misplaced"] if want["is_training"] else [])


@pytest.mark.parametrize("name", CASES)
def test_features_equal_the_originals(name, tokenizer):
  want, _, features = convert(name, tokenizer)
  assert len(features) == len(want["features"])
  for got, expected in zip(features, want["features"]):
    as_json = dict(
        unique_id=got.unique_id, example_index=got.example_index,
        doc_span_index=got.doc_span_index, tokens=got.tokens,
        token_to_orig_map={str(k): v for k, v in got.token_to_orig_map.items()},
        token_is_max_context={str(k): v for k, v in got.token_is_max_context.items()},
        input_ids=got.input_ids, input_mask=got.input_mask, segment_ids=got.segment_ids,
        start_position=got.start_position, end_position=got.end_position,
        is_impossible=got.is_impossible)
    assert as_json == expected, (expected["unique_id"], expected["tokens"])


def test_the_case_covers_what_it_should(tokenizer):
  want = golden("v1_train")
  features = want["features"]
  # Several windows of one example, answers in some and at [CLS] in others.
  assert max(f["doc_span_index"] for f in features) >= 4
  assert any(f["start_position"] == 0 for f in features)
  by_example = {}
  for f in features:
    if f["start_position"]:
      by_example.setdefault(f["example_index"], f)
  qids = [e["qas_id"] for e in want["examples"]]
  answer = {qids[i]: f["tokens"][f["start_position"]:f["end_position"] + 1]
            for i, f in by_example.items()}
  assert answer["q_born"] == ["1895"]  # the improved span inside "(1895-1943)."
  assert answer["q_country"] == ["japanese"]  # a piece can't be split further
  assert answer["q_cafe"] == ["cafe", "muller"]  # accents stripped


def write_json(tmp_path, data, name="bad.json"):
  path = tmp_path / name
  path.write_text(json.dumps(data), encoding="utf-8")
  return str(path)


def one_question(qa, context="Paris is in France."):
  return {"version": "1.1", "data": [{"paragraphs": [{"context": context, "qas": [qa]}]}]}


def test_a_training_question_without_answers_names_file_and_question(tmp_path):
  path = write_json(tmp_path, one_question({"id": "q7", "question": "Where?", "answers": []}))
  with pytest.raises(ValueError, match=r"bad.json: question q7 has 0 answers.*exactly one"):
    squad.read_examples(path, is_training=True)
  skipped = squad.read_examples(path, is_training=True, skip_malformed=True)
  assert skipped.examples == [] and [qid for qid, _ in skipped.malformed] == ["q7"]
  # Prediction reads it.
  assert len(squad.read_examples(path, is_training=False).examples) == 1


def test_a_misplaced_answer_is_counted_not_dropped(tmp_path):
  data = one_question({"id": "a", "question": "Where?",
                       "answers": [{"text": "France", "answer_start": 3}]})
  data["data"][0]["paragraphs"][0]["qas"].append(
      {"id": "c", "question": "Where?", "answers": [{"text": "France", "answer_start": 12}]})
  read = squad.read_examples(write_json(tmp_path, data), is_training=True)
  assert [e.qas_id for e in read.examples] == ["c"]
  assert [qid for qid, _ in read.skipped] == ["a"]
  assert "not at answer_start=3" in read.skipped[0][1]
  assert read.malformed == []


MALFORMED_ANSWERS = [
    ({"text": "France", "answer_start": "12"}, "answer_start='12', not an integer"),
    ({"text": "France", "answer_start": 12.0}, "answer_start=12.0, not an integer"),
    ({"text": "France", "answer_start": True}, "answer_start=True, not an integer"),
    ({"text": "France", "answer_start": 90}, "answer_start=90 with 6 characters, outside its "
     "context of"),
    ({"text": "France", "answer_start": -1}, "answer_start=-1 with 6 characters, outside"),
    ({"text": "", "answer_start": 12}, "whose text '' is not a non-empty string"),
    ({"answer_start": 12}, "has an answer without 'text'"),
    ({"text": "France"}, "has an answer without 'answer_start'"),
]


@pytest.mark.parametrize("answer,reason", MALFORMED_ANSWERS)
def test_a_malformed_answer_names_file_and_question_or_is_skipped(tmp_path, answer, reason):
  data = one_question({"id": "good", "question": "Where?",
                       "answers": [{"text": "France", "answer_start": 12}]})
  data["data"][0]["paragraphs"][0]["qas"].append(
      {"id": "q-bad", "question": "Where?", "answers": [answer]})
  path = write_json(tmp_path, data)
  with pytest.raises(squad.MalformedQuestion) as raised:
    squad.read_examples(path, is_training=True)
  message = str(raised.value)
  assert message.startswith(f"SQuAD file {path}: question q-bad ") and reason in message
  assert "\n" not in message
  read = squad.read_examples(path, is_training=True, skip_malformed=True)
  assert [e.qas_id for e in read.examples] == ["good"]
  assert [qid for qid, _ in read.malformed] == ["q-bad"] and reason in read.malformed[0][1]
  assert read.skipped == []
  # Prediction does not read answer_start: the question is predicted.
  assert len(squad.read_examples(path, is_training=False).examples) == 2


def test_missing_fields_and_bad_json_are_one_line_errors(tmp_path):
  with pytest.raises(ValueError, match="has no 'question'"):
    squad.read_examples(write_json(tmp_path, one_question({"id": "q1", "answers": []})), False)
  bad = tmp_path / "broken.json"
  bad.write_text("{", encoding="utf-8")
  with pytest.raises(ValueError, match="broken.json: not a SQuAD file"):
    squad.read_examples(str(bad), False)


def test_a_window_that_cannot_hold_the_question_is_an_error(tokenizer):
  with pytest.raises(ValueError, match=r"max_seq_length=67 must be greater than "
                                       r"max_query_length=64 \+ 3"):
    squad.check_window(67, 128, 64)
  squad.check_window(68, 128, 64)
  with pytest.raises(ValueError, match="doc_stride=0"):
    squad.check_window(384, 0, 64)


def test_basic_tokenize():
  assert squad.basic_tokenize("Smith's Café (1895-1943).", True) == [
      "smith", "'", "s", "cafe", "(", "1895", "-", "1943", ")", "."]
  assert squad.basic_tokenize("Zürich 東京", False) == ["Zürich", "東", "京"]
