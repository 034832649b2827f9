"""The SavedModel `answer` signature of a SQuAD span model: for contexts that
fit one window (and words of one WordPiece each, where run_squad's final_text
keeps whole words) it gives run_squad's own predictions (the Python n-best
decoding of downstream/span/span_answers.py), with character offsets that slice the
answer out of the context; a long context is cut to one window and says so;
run_squad --export_dir writes it and bert_tf.predict answers it in a fresh
process."""

import json
import os
import subprocess
import sys

import keras
import pytest
import tensorflow as tf

from bert_tf.downstream.span import squad
from bert_tf.downstream.span import span_head
from bert_tf.downstream.span import answer_export
from bert_tf.downstream import finetune
from bert_tf.downstream.span import span_answers
from bert_tf.downstream.span import squad_finetune
from helpers.finetune_task import tiny_config, write_vocab

REPO = os.path.dirname(os.path.abspath(__file__)).rsplit(os.sep, 3)[0]
CASES = [("the movie ?", "the  movie was great\tand the plot  was bad"),
         ("good", "a very nice show"),
         ("actor", " The Actor was sad\nand the show was awful "),
         ("plot ?", "good plot"),
         ("it", "it")]
SETTINGS = dict(max_seq_length=32, max_query_length=6, n_best_size=5, max_answer_length=4)


def _python_predictions(model, vocab, tmp_path, version_2=False, threshold=0.0):
  """run_squad's prediction path on CASES: (answer texts by question)."""
  path = tmp_path / "predict.json"
  path.write_text(json.dumps({"version": "2.0", "data": [{"paragraphs": [
      {"context": c, "qas": [{"id": str(i), "question": q, "answers": []}]}
      for i, (q, c) in enumerate(CASES)]}]}))
  examples = squad.read_examples(str(path), False, version_2).examples
  tokenizer = finetune.task_tokenizer(vocab, True)
  features = squad.convert_examples(examples, tokenizer, SETTINGS["max_seq_length"], 8,
                                    SETTINGS["max_query_length"], False)
  assert len(features) == len(CASES)  # one window each
  raw = squad_finetune.predict_logits(model, features, 8)
  predictions, _, _ = span_answers.decode(
      examples, features, raw, SETTINGS["n_best_size"], SETTINGS["max_answer_length"], True,
      version_2, threshold)
  return [predictions[str(i)] for i in range(len(CASES))]


@pytest.fixture
def span_model(tmp_path):
  keras.utils.set_random_seed(3)
  return span_head.BertSpanModel(tiny_config()), write_vocab(tmp_path / "vocab.txt")


@pytest.mark.parametrize("version_2", [False, True])
def test_answers_are_run_squads_predictions(span_model, tmp_path, version_2):
  model, vocab = span_model
  module = answer_export.AnswerServingModule(model, vocab, True,
                                             version_2_with_negative=version_2, **SETTINGS)
  out = {k: v.numpy() for k, v in module.answer(
      tf.constant([q for q, _ in CASES]), tf.constant([c for _, c in CASES])).items()}
  want = _python_predictions(model, vocab, tmp_path, version_2)
  got = [a.decode() for a in out["answer"]]
  # run_squad's text for a question without a valid span is "empty"; it
  # joins words with one space, the signature slices the context.
  assert [" ".join(g.split()) for g in got] == [("" if w == "empty" else w) for w in want]
  assert ("" if version_2 else "empty") in want and any(got)  # both kinds are compared
  for (_, context), text, start, end, found in zip(CASES, got, out["start"], out["end"],
                                                   out["has_answer"]):
    assert found == bool(text)
    assert (context[start:end] == text) if found else (start, end) == (-1, -1)
  assert not out["truncated"].any()


def test_a_long_context_is_cut_to_one_window(span_model):
  model, vocab = span_model
  module = answer_export.AnswerServingModule(model, vocab, True, **SETTINGS)
  context = " ".join(["the movie was good"] * 20)
  out = module.answer(tf.constant(["plot", "plot"]), tf.constant([context, ""]))
  truncated, found = out["truncated"].numpy(), out["has_answer"].numpy()
  assert truncated.tolist() == [True, False]
  assert found.tolist() == [True, False]  # an empty context has no answer
  # 32 - 3 - 1 question piece = 28 context pieces (words) are read: 7 repeats.
  assert int(out["end"][0]) <= len(" ".join(["the movie was good"] * 7))


def _run(module, args, cwd, env=None):
  return subprocess.run([sys.executable, "-m", module] + args, cwd=cwd, capture_output=True,
                        text=True, timeout=600, env=env or dict(os.environ, PYTHONPATH=REPO))


@pytest.mark.slow
def test_run_squad_export_dir_and_predict(tmp_path):
  config = tmp_path / "bert_config.json"
  tiny_config().to_json_file(str(config))
  vocab = write_vocab(tmp_path / "vocab.txt")
  context = "the movie was great and the plot was bad"
  train = tmp_path / "train.json"
  train.write_text(json.dumps({"version": "1.1", "data": [{"paragraphs": [{
      "context": context, "qas": [{"id": str(i), "question": "the plot ?", "answers": [
          {"text": "bad", "answer_start": context.index("bad")}]} for i in range(8)]}]}]}))
  child = _run("bert_tf.run_squad", [
      f"--bert_config_file={config}", f"--vocab_file={vocab}", "--do_train",
      f"--train_file={train}", f"--output_dir={tmp_path / 'out'}", "--max_seq_length=24",
      "--doc_stride=8", "--max_query_length=6", "--train_batch_size=4",
      "--num_train_epochs=30", "--learning_rate=1e-3", f"--export_dir={tmp_path / 'sm'}"],
      tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert f"wrote SavedModel {tmp_path / 'sm'} (signature answer)" in child.stdout
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  script = os.path.join(REPO, "bert_tf", "serving", "predict.py")
  fresh = subprocess.run([sys.executable, script, f"--saved_model={tmp_path / 'sm'}",
                          "--text_a=the plot ?", f"--text_b={context}"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600, env=env)
  assert fresh.returncode == 0, fresh.stderr[-3000:]
  lines = fresh.stdout.strip().splitlines()
  start = context.index("bad")
  assert lines[-1].startswith(f"answer: 'bad' (characters {start}-{start + 3}, score ")
