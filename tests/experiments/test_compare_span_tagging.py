"""Tests of a comparison's span (SQuAD) and tagging (CoNLL) --tasks: their
specs, their files checked before any pretraining, their rows over
pretraining runs (fine-tuned F1 / exact match, fine-tuned and
feature-based entity F1), a rerun reading them back, and the frozen
tagger of a one-layer encoder (compare's small models)."""

import csv
import dataclasses
import json
import os

import pytest

from bert_tf.experiments import compare
from bert_tf.experiments import plan
from bert_tf.experiments import report
from bert_tf.util import bootstrap
from helpers.compare_options import tiny_options, write_conll_task, write_squad_task

METRICS = ("span_f1", "span_exact_match", "subj_entity_f1", "frozen_subj_entity_f1")


@pytest.mark.slow  # about 65 s: two pretraining runs, six fine-tunings
def test_span_and_tagging_tasks_give_rows_over_pretraining_runs(tmp_path, capsys):
  options = tiny_options(tmp_path, objectives=("mlm",), pair_tasks=(), pretrain_seeds=2,
                         seeds=1, tasks=(write_squad_task(tmp_path / "squad"),
                                         write_conll_task(tmp_path / "conll")))
  rows = compare.run_comparison(options)
  by = {r["metric"]: r for r in rows}
  assert [m for m in by if m in METRICS] == list(METRICS)
  for metric in METRICS:
    r = by[metric]
    # Mean and sd over the two pretraining runs, each run's value kept.
    assert r["pretrain_seeds"] == r["n"] == 2 and sorted(r["values"]) == [0, 1]
    assert r["spread"] == "pretraining runs"
    assert 0.0 <= min(r["values"].values()) <= max(r["values"].values()) <= 1.0
    assert r["mean"] == pytest.approx(sum(r["values"].values()) / 2)
    assert r["sd"] == pytest.approx(abs(r["values"][0] - r["values"][1]) / 2 ** 0.5)
    assert r["eval_examples"] == 24 and r["chance"] == ""
    assert report.direction(metric) == 1
  # Each run's results: the official script's numbers (percent) / 100, the
  # tagger's entity F1 with and without the encoder frozen.
  out = tmp_path / "cmp"
  for run in os.listdir(out / "runs"):
    tuned = {p.name.split("-")[0]: json.loads((p / "results.json").read_text())
             for p in (out / "runs" / run / "finetune").iterdir()}
    assert sorted(tuned) == ["frozen_subj", "span", "subj"]
    assert tuned["span"]["version"] == "1.1" and tuned["span"]["num_dev_examples"] == 24
    assert tuned["frozen_subj"]["frozen_encoder"] == 1 and tuned["subj"]["frozen_encoder"] == 0
    # Each dev question's and sentence's outcome is kept: its pieces give
    # back the reported metric (F1 and EM as means over questions; entity F1
    # from the sentences' summed true/false positives and false negatives).
    for key in ("f1", "exact_match"):
      kept = tuned["span"]["outcomes"][key]
      assert kept["kind"] == "mean" and len(kept["ids"]) == 24
      assert bootstrap.run_values(bootstrap.from_records([(0, kept)]))[0] == pytest.approx(
          tuned["span"][key])
    for name in ("subj", "frozen_subj"):
      kept = tuned[name]["outcomes"]["entity_f1"]
      assert kept["kind"] == "f1" and len(kept["seeds"][0]) == 24
      assert bootstrap.run_values(bootstrap.from_records([(0, kept)]))[0] == pytest.approx(
          tuned[name]["entity_f1"])
    # The SQuAD models are removed once scored; their predictions stay.
    seed_dir = next((out / "runs" / run / "finetune").glob("span-*")) / "seed_12345"
    assert (seed_dir / "predictions.json").exists()
    assert not list(seed_dir.glob("model.*"))
  table = (out / "results.md").read_text()
  assert all(m in table for m in METRICS)
  assert "the official script's F1 and exact match on dev.json" in table
  assert "frozen_<task>_entity_f1: the encoder frozen, one dense layer" in table
  assert "the same linear probe for each TSV --task" not in table
  with open(out / "results.csv", encoding="utf-8") as f:
    written = [r for r in csv.DictReader(f) if r["metric"] in METRICS]
  assert [r["metric"] for r in written] == list(METRICS)
  assert all(r["pretrain_seeds"] == "2" for r in written)
  printed = capsys.readouterr().out
  assert "span f1 " in printed and "exact_match" in printed and "frozen_subj entity_f1" in printed
  # A rerun reads every fine-tuning back: the same rows.
  assert compare.run_comparison(options) == rows
  assert capsys.readouterr().out.count("(done before, skipped)") == 2 * 7


def test_span_and_tagging_specs_and_files_are_checked_up_front(tmp_path):
  assert plan.Task.parse("sq=squad:gs://b/squad") == plan.Task("sq", "gs://b/squad",
                                                                 kind="squad")
  task = plan.Task.parse("ner=conll:/data/ner")
  assert task.kind == "conll" and task.file("dev") == "/data/ner/dev.txt"
  assert plan.Task.parse("sq=squad:/d").file("train") == "/d/train.json"
  # A TSV task in a bucket stays one.
  assert plan.Task.parse("x=gs://b/x,a,label") == plan.Task("x", "gs://b/x", "a", "", "label")
  with pytest.raises(ValueError, match=r"--task='sq=squad:': expected NAME=squad:DIR"):
    plan.Task.parse("sq=squad:")
  with pytest.raises(ValueError, match="NAME=squad:DIR or NAME=conll:DIR"):
    plan.Task.parse("sq=json:/d")
  # Windows that leave no room for the document, named with the flags.
  squad_task = write_squad_task(tmp_path / "squad")
  with pytest.raises(ValueError, match=r"--task=span \(squad\): max_seq_length=16 must be "
                     r"greater than max_query_length=16 \+ 3.*--squad_max_query_length"):
    tiny_options(tmp_path, max_seq_length=16, tasks=(squad_task,)).validate()
  # A missing file, and too few dev rows: refused before any record is written.
  missing = plan.Task.parse(f"ner=conll:{tmp_path / 'nowhere'}")
  options = tiny_options(tmp_path, objectives=("mlm",), pair_tasks=(), tasks=(missing,))
  with pytest.raises(FileNotFoundError, match=r"--task=ner: .*nowhere/train.txt: no such file"):
    compare.run_comparison(options)
  assert not (tmp_path / "cmp").exists()
  small = (write_squad_task(tmp_path / "small_squad", name="few", dev=19),
           write_conll_task(tmp_path / "small_conll", name="fewer", dev=5))
  with pytest.raises(ValueError, match="too few evaluation rows") as error:
    compare.run_comparison(dataclasses.replace(options, tasks=small))
  assert "few (--task, dev " in str(error.value)
  assert "dev.json): 19 dev rows, needs 20 (fix: give the task a larger dev.json)" in str(
      error.value)
  assert "dev.txt): 5 dev rows" in str(error.value)
  assert not (tmp_path / "cmp").exists()  # refused before anything is written


def test_a_one_layer_encoder_tags_frozen_in_a_traced_step():
  # compare's small models may have one layer: the frozen tagger reads it
  # alone (Keras hands a model of one listed output its tensor unlisted).
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.tagging import token_head  # pylint: disable=g-import-not-at-top
  from bert_tf.models.config import BertConfig  # pylint: disable=g-import-not-at-top
  config = BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=32, max_position_embeddings=16)
  model = token_head.BertTokenTagger(config, 3, frozen_encoder=True)
  ids = tf.constant([[2, 5, 6, 3, 0, 0]])
  inputs = {"input_ids": ids, "segment_ids": tf.zeros_like(ids),
            "input_mask": tf.cast(ids > 0, tf.int32)}
  logits = tf.function(lambda x: model(x, training=True))(inputs)
  assert logits.shape == (1, 6, 3)
  assert [w.name for w in model.trainable_weights] == ["kernel", "bias"]


def test_the_frozen_tagger_is_filed_under_its_own_learning_rate(tmp_path):
  # The feature-based tagger trains at --frozen_learning_rate, the fine-tuned
  # one at --finetune_learning_rate: each result is filed under its own rate,
  # so changing one reruns that setting alone.
  import types  # pylint: disable=g-import-not-at-top
  from bert_tf.experiments import stages  # pylint: disable=g-import-not-at-top
  run = types.SimpleNamespace(directory=lambda options: str(tmp_path / "run"))
  task = plan.Task.parse(f"ner=conll:{tmp_path / 'ner'}")
  options = tiny_options(tmp_path, tasks=(task,))
  assert options.frozen_learning_rate == 1e-3 and options.finetune_learning_rate == 1e-4

  def paths(**changed):
    changed_options = dataclasses.replace(options, **changed)
    return (stages.finetune_path(changed_options, run, task),
            stages.finetune_path(changed_options, run, task, frozen=True))

  tuned, frozen = paths()
  assert os.path.basename(os.path.dirname(frozen)).startswith("frozen_ner-")
  assert paths(frozen_learning_rate=3e-3) == (tuned, paths(frozen_learning_rate=3e-3)[1])
  assert paths(frozen_learning_rate=3e-3)[1] != frozen
  assert paths(finetune_learning_rate=3e-4)[1] == frozen
  assert paths(finetune_learning_rate=3e-4)[0] != tuned


def test_the_frozen_tagger_trains_at_its_own_learning_rate(tmp_path, monkeypatch):
  # The tagging kind's finetune hands tagging.run the frozen rate for the
  # feature-based tagger and the fine-tuning rate otherwise.
  from bert_tf.downstream.tagging import tagging  # pylint: disable=g-import-not-at-top
  seen = []
  monkeypatch.setattr(tagging, "run", lambda config, bert_config: seen.append(
      (config.frozen_encoder, config.learning_rate)) or {})
  task = plan.Task.parse(f"ner=conll:{tmp_path / 'ner'}")
  options = dataclasses.replace(tiny_options(tmp_path, tasks=(task,)),
                                frozen_learning_rate=3e-3, finetune_learning_rate=2e-4)
  for frozen in (False, True):
    task.kind_of.finetune(options, task, str(tmp_path / "out"), "vocab.txt", None, "", frozen)
  assert seen == [(False, 2e-4), (True, 3e-3)]


def test_each_sentences_entity_counts_sum_to_conllevals_f1():
  """The per-sentence pieces a CoNLL task keeps for the multi-bootstrap
  (true positives, false positives, false negatives) give conlleval's
  entity F1 over the whole dev set."""
  from bert_tf.downstream.tagging import conlleval  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.tagging import tagging  # pylint: disable=g-import-not-at-top
  sentences = [(["B-PER", "I-PER", "O", "B-LOC"], ["B-PER", "I-PER", "O", "O"]),
               (["O", "B-ORG"], ["B-ORG", "B-ORG"]),
               (["B-LOC", "I-LOC"], ["B-LOC", "O"]),
               (["O"], ["O"])]
  pieces = [tagging._entity_counts(g, p) for g, p in sentences]  # pylint: disable=protected-access
  record = bootstrap.record("f1", range(len(sentences)), [pieces])
  assert bootstrap.run_values(bootstrap.from_records([(0, record)]))[0] == pytest.approx(
      conlleval.evaluate(sentences)["entity_f1"])
