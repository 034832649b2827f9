"""Tests of bert_tf.predict against a small export of a random model."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.serving import saved_model as saved_model_lib
from bert_tf.models import modeling
from bert_tf.serving import predict
from bert_tf.training import objectives

from helpers.serving_model import CONFIG, write_vocab
from helpers.checkpoints import load_recorded

TOP_K = 3
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREDICT_PY = os.path.join(REPO, "bert_tf", "serving", "predict.py")


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
  root = tmp_path_factory.mktemp("predict")
  vocab_file = write_vocab(root / "vocab.txt")
  export_dir = str(root / "saved_model")
  saved_model_lib.export_saved_model(modeling.BertPretrainer(CONFIG), vocab_file, True,
                                     export_dir, max_seq_length=16, top_k=TOP_K)
  return export_dir


@pytest.fixture(scope="module")
def predictor(saved_model):
  return predict.Predictor(saved_model)


def test_fill_mask_results(predictor):
  results = predictor.fill_mask(["the [MASK] was [MASK] .", "no mask here"])
  first, second = results
  assert first["error"] == "" and not first["truncated"]
  assert [m["position"] for m in first["masks"]] == [2, 4]
  for mask in first["masks"]:
    probs = [p["probability"] for p in mask["predictions"]]
    assert len(probs) == TOP_K and probs == sorted(probs, reverse=True) and sum(probs) <= 1
    assert all(isinstance(p["token"], str) and p["id"] >= 0 for p in mask["predictions"])
  assert second == {"text": "no mask here", "masks": [], "truncated": False,
                    "error": "no [MASK] in text"}


def test_next_sentence_results(predictor):
  (result,) = predictor.next_sentence([("the day was long", "he said so .")])
  assert set(result) == {"text_a", "text_b", "is_next_probability", "truncated", "error"}
  assert 0 < result["is_next_probability"] < 1 and result["error"] == ""


def test_predict_lines_mixes_both_kinds_in_input_order(predictor):
  lines = [b"the [MASK] was long .", b"the day\twas long", b"", b"he [MASK] .",
           b"bad \xff [MASK] bytes", b"water\tthe day"]
  results = predictor.predict_lines(lines, batch_size=4)
  assert ["is_next_probability" in r for r in results] == [False, True, False, False, False, True]
  assert results[1]["text_a"] == "the day" and results[1]["text_b"] == "was long"
  assert results[2]["error"] == "empty text"
  assert results[4]["text"] == "bad \ufffd [MASK] bytes" and results[4]["error"] == ""
  # Batching does not change an answer.
  alone = predictor.fill_mask([b"he [MASK] ."])[0]
  np.testing.assert_allclose([p["probability"] for p in results[3]["masks"][0]["predictions"]],
                             [p["probability"] for p in alone["masks"][0]["predictions"]],
                             atol=1e-6)


def test_human_readable_output(predictor):
  text = predict.format_fill_mask(predictor.fill_mask(["the [MASK] was long ."])[0])
  lines = text.splitlines()
  assert lines[0] == "text: the [MASK] was long ."
  assert lines[1].startswith("[MASK] 1 (token 2): ") and lines[1].count("(0.") == TOP_K
  text = predict.format_next_sentence(predictor.next_sentence([("the day", "was long")])[0])
  assert text.splitlines()[-1].startswith("P(text_b follows text_a) = 0.")


def _without_tf_log_level():
  return {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}


def test_cli_text_without_mask_echoes_it_and_says_the_error_once(saved_model):
  child = subprocess.run(
      [sys.executable, "-m", "bert_tf.predict", f"--saved_model={saved_model}",
       "--text=nothing to fill"], cwd=REPO, capture_output=True, text=True,
      env=_without_tf_log_level())
  assert child.returncode == 1
  assert child.stdout == "text: nothing to fill\n"
  # Once, on stderr only; nothing of TensorFlow's own start-up log.
  assert child.stderr == "bert_tf.predict: error: no [MASK] in text\n"


def test_cli_answers_on_stdout_only(saved_model):
  child = subprocess.run(
      [sys.executable, "-m", "bert_tf.predict", f"--saved_model={saved_model}",
       "--text_a=the day was long", "--text_b=he said so ."], cwd=REPO, capture_output=True,
      text=True, env=_without_tf_log_level())
  assert child.returncode == 0 and child.stderr == ""
  lines = child.stdout.splitlines()
  assert lines[:2] == ["text_a: the day was long", "text_b: he said so ."]
  assert lines[2].startswith("P(text_b follows text_a) = 0.") and len(lines) == 3


def test_predictor_refuses_an_export_without_text_signatures(tmp_path):
  ids_only = str(tmp_path / "ids_only")
  saved_model_lib.export_saved_model(modeling.BertPretrainer(CONFIG),
                                     write_vocab(tmp_path / "v.txt"), True, ids_only,
                                     max_seq_length=16, text_signatures=False)
  predictor = predict.Predictor(ids_only)
  with pytest.raises(ValueError) as error:
    predictor.fill_mask(["the [MASK] ."])
  message = str(error.value)
  assert "has no signature 'fill_mask'" in message and "\n" not in message
  assert "encode(input_ids, input_mask, segment_ids)" in message
  assert "(none takes text: exported with --notext_signatures?)" in message


def test_a_signature_the_export_lacks_names_those_it_has_and_their_inputs(predictor):
  with pytest.raises(ValueError) as error:
    predictor.answer(["a text"], signature="classify")
  message = str(error.value)
  assert message.startswith(f"SavedModel {predictor._saved_model_dir} has no signature "
                            "'classify'; its signatures (inputs): ")
  assert "fill_mask(text)" in message and "next_sentence(text_a, text_b)" in message
  assert "notext_signatures" not in message  # it has text signatures
  with pytest.raises(ValueError, match="no signature 'fill_mask' that takes a sentence pair"):
    predictor.answer([("a", "b")], signature="fill_mask")


def _classifier_export(root, pair, labels=("neg", "pos")):
  from bert_tf.downstream.classification import classifier  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.classification import classifier_export  # pylint: disable=g-import-not-at-top
  export_dir = str(root / ("pair" if pair else "single"))
  classifier_export.export_classifier(
      classifier.BertClassifier(CONFIG, len(labels) or 1), write_vocab(root / "vocab.txt"),
      True, list(labels), pair, export_dir, max_seq_length=16)
  return export_dir


def _cli(saved_model, *args):
  return subprocess.run([sys.executable, "-m", "bert_tf.predict",
                         f"--saved_model={saved_model}", *args], cwd=REPO,
                        capture_output=True, text=True, env=_without_tf_log_level())


def test_classifier_exports_take_text_or_text_a_text_b_and_predict_serves_them(tmp_path):
  single, pair = _classifier_export(tmp_path, False), _classifier_export(tmp_path, True)
  # The classify signature's inputs are those of fill_mask and next_sentence.
  assert set(tf.saved_model.load(single).signatures["classify"]
             .structured_input_signature[1]) == {"text"}
  assert set(tf.saved_model.load(pair).signatures["classify"]
             .structured_input_signature[1]) == {"text_a", "text_b"}
  (result,) = predict.Predictor(single).answer(["the day was long"])
  assert set(result) == {"text", "label", "probabilities", "truncated"}
  assert result["label"] in ("neg", "pos") and set(result["probabilities"]) == {"neg", "pos"}
  assert abs(sum(result["probabilities"].values()) - 1) < 1e-5
  predictor = predict.Predictor(pair)
  (result,) = predictor.answer([("the day", "was long")])
  assert result["text_a"] == "the day" and result["label"] in ("neg", "pos")
  with pytest.raises(ValueError, match="no signature that takes a text \\(--text\\)"):
    predictor.answer(["one text"])
  # The command line, as the README shows it.
  child = _cli(single, "--text=the day was long")
  assert child.returncode == 0 and child.stderr == "", child.stderr[-2000:]
  lines = child.stdout.splitlines()
  assert lines[0] == "text: the day was long" and lines[1].startswith("label = ")
  child = _cli(pair, "--text_a=the day", "--text_b=was long")
  assert child.returncode == 0 and child.stdout.splitlines()[2].startswith("label = ")
  child = _cli(pair, "--text=one text")
  assert child.returncode == 1 and child.stdout == ""
  assert child.stderr.startswith(f"bert_tf.predict: error: SavedModel {pair} has no signature "
                                 "that takes a text (--text); its signatures (inputs): ")
  assert "classify(text_a, text_b)" in child.stderr and child.stderr.count("\n") == 1


def test_electra_exports_answer_replaced_token_detection(tmp_path):
  objective = objectives.ElectraObjective(
      objectives.ElectraSettings(generator_hidden_size=0.5, mask_token_id=4))
  model = objective.build_model(CONFIG)
  tf.train.Checkpoint(model=model, **objectives.checkpoint_variables(objective)).save(
      str(tmp_path / "train" / "ckpt"))
  pretrainer, _ = load_recorded(CONFIG, str(tmp_path / "train"))
  export_dir = str(tmp_path / "electra")
  saved_model_lib.export_saved_model(pretrainer, write_vocab(tmp_path / "vocab.txt"), True,
                                     export_dir, max_seq_length=16)
  predictor = predict.Predictor(export_dir)
  assert predictor.answer(["the [MASK] ."])[0]["masks"]  # fill_mask: the generator
  (result,) = predictor.answer(["the day was long"], signature="replaced_token_detection")
  tokens = [t["token"] for t in result["tokens"]]
  assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and len(tokens) == 6
  assert all(0 < t["replaced_probability"] < 1 for t in result["tokens"])
  child = _cli(export_dir, "--text=the day was long", "--signature=replaced_token_detection")
  assert child.returncode == 0, child.stderr[-2000:]
  assert child.stdout.splitlines()[1].startswith("P(replaced): [CLS] 0.")


def test_input_file_without_bert_tf(saved_model, tmp_path):
  """predict.py alone (bert_tf made unimportable) turns a file into JSON lines,
  quietly."""
  (tmp_path / "in.txt").write_bytes(b"the [MASK] was long .\nthe day\twas long\nno mask\n")
  out_file = tmp_path / "out.jsonl"
  code = ("import runpy, sys; sys.modules['bert_tf'] = None; "
          f"sys.argv = ['predict', '--saved_model={saved_model}', "
          f"'--input_file={tmp_path / 'in.txt'}', '--output_file={out_file}']; "
          f"runpy.run_path({PREDICT_PY!r}, run_name='__main__')")
  env = _without_tf_log_level()
  env.pop("PYTHONPATH", None)
  child = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
  assert child.returncode == 0, child.stderr[-3000:]
  assert child.stderr == "", child.stderr[-3000:]  # its own copy of the quiet TF log
  results = [json.loads(line) for line in out_file.read_text().splitlines()]
  assert len(results) == 3
  assert len(results[0]["masks"]) == 1 and len(results[0]["masks"][0]["predictions"]) == TOP_K
  assert 0 < results[1]["is_next_probability"] < 1
  assert results[2]["error"] == "no [MASK] in text"


def test_exports_of_sentence_order_and_mlm_alone_have_their_signatures(tmp_path):
  """The objective a checkpoint records decides the export's sentence outputs
  and signature; the predictor answers what the export has."""
  vocab_file = write_vocab(tmp_path / "vocab.txt")
  found = {}
  for name in ("mlm_sop", "mlm"):
    objective = objectives.get(name)
    model = objective.build_model(CONFIG)
    ckpt_dir = tmp_path / name
    tf.train.Checkpoint(model=model,
                        **objectives.checkpoint_variables(objective)).save(
                            str(ckpt_dir / "ckpt"))
    pretrainer, _ = load_recorded(CONFIG, str(ckpt_dir))
    assert objectives.of_model(pretrainer) is objective
    export_dir = str(tmp_path / f"{name}_export")
    saved_model_lib.export_saved_model(pretrainer, vocab_file, True, export_dir, max_seq_length=16)
    loaded = tf.saved_model.load(export_dir)
    ones = tf.ones([1, 6], tf.int32)
    outputs = loaded.signatures["pretraining"](input_ids=ones, input_mask=ones,
                                               segment_ids=ones * 0,
                                               masked_lm_positions=ones[:, :2])
    found[name] = (set(loaded.signatures), set(outputs), predict.Predictor(export_dir))
  signatures, outputs, predictor = found["mlm_sop"]
  assert "sentence_order" in signatures and "next_sentence" not in signatures
  assert outputs == {"masked_lm_log_probs", "sentence_order_log_probs"}
  (result,) = predictor.sentence_pair([("the day was long", "he said so .")])
  assert 0 < result["in_order_probability"] < 1 and "is_next_probability" not in result
  assert "P(text_a, text_b in order) = " in predict.format_next_sentence(result)
  signatures, outputs, predictor = found["mlm"]
  assert not {"sentence_order", "next_sentence"} & signatures and "fill_mask" in signatures
  assert outputs == {"masked_lm_log_probs"}
  assert predictor.fill_mask(["the [MASK] ."])[0]["error"] == ""
  with pytest.raises(ValueError, match="has no sentence-pair signature"):
    predictor.sentence_pair([("a", "b")])
