"""A tiny ALBERT on the committed SentencePiece fixture and a tiny SQuAD 1.1
file in its words, for run_squad's --spm_model_file tests."""

import json

from helpers.spm_models import SPM_MODEL, SPM_PIECES, tiny_albert_config

CONTEXT = "In the beginning God created the light, and the light was good."


def answer(qid, question, text):
  """A question whose answer is the first occurrence of `text` in CONTEXT."""
  return {"id": qid, "question": question,
          "answers": [{"text": text, "answer_start": CONTEXT.index(text)}]}


QUESTIONS = (answer("q1", "What was created?", "the light"),
             answer("q2", "Who created the light?", "God"),
             answer("q3", "What was the light?", "good"),
             answer("q4", "What was in the beginning?", "God created the light"))


def write_squad(path, questions=QUESTIONS):
  """A SQuAD 1.1 JSON file of CONTEXT and `questions` at `path` (pathlib);
  returns its name."""
  path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [
      {"context": CONTEXT, "qas": list(questions)}]}]}), encoding="utf-8")
  return str(path)


def model_flags(directory, vocab_size=SPM_PIECES):
  """--bert_config_file (written in `directory`, made when missing) and
  --spm_model_file."""
  directory.mkdir(parents=True, exist_ok=True)
  config = directory / "albert_config.json"
  tiny_albert_config(vocab_size=vocab_size).to_json_file(str(config))
  return [f"--bert_config_file={config}", f"--spm_model_file={SPM_MODEL}"]
