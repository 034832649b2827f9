"""A tiny comparison's options (experiments.plan.CompareOptions: a topic
corpus, a one-layer model, a few steps) and downstream tasks of each --task
kind made from the corpus's words: a TSV pair task, a SQuAD JSON, a CoNLL
tagging task."""

import json
import os
import random

from bert_tf.experiments import plan
from helpers.topic_corpus import SUBJECTS, VERBS, write_corpus


def tiny_options(tmp_path, **kw):
  """CompareOptions of a tiny comparison under tmp_path (a TSV task, the
  sop pair task, no random_init arm unless asked; `kw` replaces any
  field)."""
  config = tmp_path / "tiny.json"
  config.write_text(json.dumps({
      "vocab_size": 100, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
      "intermediate_size": 32, "max_position_embeddings": 32, "type_vocab_size": 2,
      "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
      "initializer_range": 0.02}))
  defaults = dict(corpus=write_corpus(tmp_path / "corpus.txt"), output_dir=str(tmp_path / "cmp"),
                  bert_config_file=str(config), vocab_size=120, heldout_every=2,
                  max_seq_length=32, dupe_factor=1, num_train_steps=3, train_batch_size=8,
                  pair_tasks=("sop",), seeds=2, finetune_epochs=1.0, finetune_batch_size=8,
                  max_probe_examples=64, random_init=False)
  if "tasks" not in kw:
    defaults["tasks"] = (write_tsv_task(tmp_path / "task"),)
  defaults.update(kw)
  return plan.CompareOptions(**defaults)


def write_tsv_task(directory, n=64, seed=1):
  """A pair task "same": label 1 when both texts name the same subject."""
  rng = random.Random(seed)
  os.makedirs(directory, exist_ok=True)
  for split in ("train", "dev"):
    lines = ["first\tsecond\tlabel"]
    for _ in range(n):
      a = rng.choice(SUBJECTS)
      b = a if rng.random() < 0.5 else rng.choice(SUBJECTS)
      lines.append(f"the {a} went\tthe {b} came\t{int(a == b)}")
    with open(os.path.join(directory, f"{split}.tsv"), "w", encoding="utf-8") as f:
      f.write("\n".join(lines) + "\n")
  return plan.Task("same", str(directory), "first", "second", "label")


def _sentence(rng):
  """(words, the subject the sentence is about, the place it names)."""
  a, b = rng.sample(SUBJECTS, 2)
  words = f"the {a} {rng.choice(VERBS)} the {b} .".split()
  return words, a, b


def write_squad_task(directory, name="span", train=40, dev=24, seed=3):
  """SQuAD 1.1 train.json and dev.json: a sentence of the corpus's words
  per paragraph, its question the sentence up to the object ("the king went
  to"), the answer the object ("the river"); Task NAME=squad:directory."""
  rng = random.Random(seed)
  os.makedirs(directory, exist_ok=True)
  for split, n in (("train", train), ("dev", dev)):
    articles = []
    for i in range(n):
      words, _, obj = _sentence(rng)
      context = " ".join(words)
      answer = f"the {obj}"
      start = context.rindex(answer)
      question = context[:start].strip()
      articles.append({"title": f"t{i}", "paragraphs": [{"context": context, "qas": [{
          "id": f"{split}-{i}", "question": question,
          "answers": [{"text": answer, "answer_start": start}]}]}]})
    with open(os.path.join(directory, f"{split}.json"), "w", encoding="utf-8") as f:
      json.dump({"version": "1.1", "data": articles}, f)
  return plan.Task.parse(f"{name}=squad:{directory}")


def write_conll_task(directory, name="subj", train=40, dev=24, seed=4):
  """CoNLL train.txt and dev.txt of corpus sentences: each subject word
  tagged B-SUBJ, the rest O; Task NAME=conll:directory."""
  rng = random.Random(seed)
  os.makedirs(directory, exist_ok=True)
  for split, n in (("train", train), ("dev", dev)):
    lines = ["-DOCSTART- O", ""]
    for _ in range(n):
      words, _, _ = _sentence(rng)
      lines += [f"{w} {'B-SUBJ' if w in SUBJECTS else 'O'}" for w in words] + [""]
    with open(os.path.join(directory, f"{split}.txt"), "w", encoding="utf-8") as f:
      f.write("\n".join(lines))
  return plan.Task.parse(f"{name}=conll:{directory}")
