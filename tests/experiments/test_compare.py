"""Tests of bert_tf.experiments.compare: a whole tiny comparison (records,
pretraining, held-out masked-LM accuracy, probes and a task over seeds,
the results files), its rerun skipping finished stages, and bad options."""

import csv
import json
import os
import random

import pytest

from bert_tf.experiments import compare

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUBJECTS = ("king", "shepherd", "river", "city", "prophet", "garden", "temple", "field")
VERBS = ("went to", "looked at", "spoke of", "built", "praised", "left")


def write_corpus(path, documents=40, sentences=7, seed=0):
  """Documents of simple sentences, each document about two subjects."""
  rng = random.Random(seed)
  docs = []
  for _ in range(documents):
    a, b = rng.sample(SUBJECTS, 2)
    docs.append("\n".join(f"the {rng.choice((a, b))} {rng.choice(VERBS)} the "
                          f"{rng.choice(SUBJECTS)} on day {i} ." for i in range(sentences)))
  path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
  return str(path)


def write_task(directory, n=48, seed=1):
  """A pair task: label 1 when both texts name the same subject."""
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
  return compare.Task("same", str(directory), "first", "second", "label")


def tiny_options(tmp_path, **kw):
  config = tmp_path / "tiny.json"
  config.write_text(json.dumps({
      "vocab_size": 100, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
      "intermediate_size": 32, "max_position_embeddings": 32, "type_vocab_size": 2,
      "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
      "initializer_range": 0.02}))
  defaults = dict(corpus=write_corpus(tmp_path / "corpus.txt"), output_dir=str(tmp_path / "cmp"),
                  bert_config_file=str(config), vocab_size=120, heldout_every=4,
                  max_seq_length=32, dupe_factor=1, num_train_steps=3, train_batch_size=8,
                  probes=("sop",), tasks=(write_task(tmp_path / "task"),), seeds=2,
                  finetune_epochs=1.0, finetune_batch_size=8, max_probe_examples=64)
  defaults.update(kw)
  return compare.CompareOptions(**defaults)


def test_a_whole_comparison_writes_its_results_and_a_rerun_skips_finished_work(
    tmp_path, capsys):
  options = tiny_options(tmp_path)
  rows = compare.run_comparison(options)
  names = list(options.objectives)
  assert [r["objective"] for r in rows] == [n for n in names for _ in range(3)]
  assert {r["metric"] for r in rows} == {"masked_lm_accuracy", "probe_sop_accuracy",
                                         "same_accuracy"}
  for r in rows:
    assert 0.0 <= r["mean"] <= 1.0 and r["pretrain_steps"] == 3
    assert r["n"] == (1 if r["metric"] == "masked_lm_accuracy" else 2)
  out = tmp_path / "cmp"
  table = (out / "results.md").read_text()
  assert all(f"| {n} |" in table for n in names)
  assert "within noise" in table or "lower by" in table
  with open(out / "results.csv", encoding="utf-8") as f:
    assert len(list(csv.DictReader(f))) == len(rows)
  assert sorted(os.listdir(out / "plots")) == ["masked_lm_accuracy.png",
                                               "probe_sop_accuracy.png", "same_accuracy.png"]
  assert set(names) <= set(os.listdir(out / "hparams"))
  printed = capsys.readouterr().out
  assert f"[{1 + len(names) * 5}/{1 + len(names) * 5}]" in printed and "ETA" in printed
  # The rerun reads every finished stage back and gives the same table.
  assert compare.run_comparison(options) == rows
  printed = capsys.readouterr().out
  # Records, pretraining, held-out accuracy and two fine-tuning tasks each.
  assert printed.count("(done before, skipped)") == len(names) * 5


def test_task_specs_and_bad_options_are_one_line_errors(tmp_path):
  task = compare.Task.parse("wic=/data/wic,sentence1,sentence2,label")
  assert task == compare.Task("wic", "/data/wic", "sentence1", "sentence2", "label")
  assert compare.Task.parse("gloss=gs://b/gloss,3,4").text_b_column == ""
  with pytest.raises(ValueError, match="expected NAME=DIR,TEXT_A"):
    compare.Task.parse("wic:/data/wic")
  with pytest.raises(ValueError, match="--objectives: 'nsp' is not one of mlm_nsp"):
    tiny_options(tmp_path, objectives=("nsp",)).validate()
  with pytest.raises(ValueError, match="--probes: 'order' is not one of"):
    tiny_options(tmp_path, probes=("order",)).validate()
