"""Tests of the comparison (bert_tf.experiments.compare and the plan,
stages and preflight it runs): a whole tiny comparison (records,
pretraining, held-out masked-LM accuracy, heads, frozen probes, pair tasks and
a task over seeds, the results files), its rerun skipping finished stages,
arms over pretraining seeds with identical ones reused, ELECTRA against
BERT at equal training FLOPs, the steps each budget plans, the rerun check
of the plan's inputs, what is checked before any pretraining, and bad
options."""

import contextlib
import csv
import dataclasses
import json
import logging
import math
import os
import re

import numpy as np
import pytest

from bert_tf.experiments import arms as arms_lib
from bert_tf.experiments import compare
from bert_tf.experiments import heldout_reading
from bert_tf.experiments import plan
from bert_tf.experiments import preflight
from bert_tf.experiments import stages
from bert_tf.models.config import BertConfig
from bert_tf.training import objectives
from bert_tf.util import bootstrap

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from helpers.compare_options import tiny_options
from helpers.topic_corpus import write_corpus


def test_a_whole_comparison_writes_its_results_and_a_rerun_skips_finished_work(
    tmp_path, capsys):
  options = tiny_options(tmp_path)
  with _warnings("tensorflow") as tf_warnings, _warnings("absl") as our_warnings:
    rows = compare.run_comparison(options)
  # Nothing alarming a user cannot act on: no retracing (a function traced
  # anew per seed, epoch or run), no writer warning naming flags this tool lacks.
  assert not [w for w in tf_warnings if "retracing" in w], tf_warnings
  assert not [w for w in our_warnings if "shards" in w], our_warnings
  names = list(options.objectives)
  by = {(r["arm"], r["metric"]): r for r in rows}
  frozen = ["frozen_sop_accuracy", "frozen_same_accuracy"]
  tuned = ["probe_sop_accuracy", "same_accuracy"]
  # The heads of the objectives that have one; frozen probes for every arm.
  mlm = ["masked_lm_accuracy", "masked_lm_accuracy_at_mask", "masked_lm_accuracy_kept"]
  # Each head on held-out pairs and on pairs of its pretraining documents.
  heads = ["head_sop_accuracy", "head_sop_accuracy_seen"]
  assert [m for (o, m) in by if o == "mlm_nsp"] == mlm + heads + frozen + tuned
  assert [m for (o, m) in by if o == "mlm"] == mlm + frozen + tuned
  assert "head_sop_accuracy" in [m for (o, m) in by if o == "mlm_sop"]
  for r in rows:
    assert 0.0 <= r["mean"] <= 1.0 and r["pretrain_steps"] == 3 and r["pretrain_seeds"] == 1
    assert r["n"] == (2 if r["metric"] in tuned else 1)
    assert r["eval_examples"] >= preflight.MIN_EVAL_EXAMPLES
    # What always answering the dev set's majority class scores, beside each
    # classification metric; beside the accuracy at [MASK], the unigram
    # plateau (one token predicted everywhere); none beside the others.
    assert (r["chance"] == "") == (r["metric"] in mlm[::2])
    assert r["chance"] == "" or 0.5 <= r["chance"] < 1.0 or r["metric"] == mlm[1]
  out = tmp_path / "cmp"
  # Held-out masked LM over every held-out record, the short last batch too.
  from bert_tf.data.records import manifest as manifest_lib  # pylint: disable=g-import-not-at-top
  held = manifest_lib.Manifest.find(str(out / "records" / "heldout" / "*.tfrecord"))
  assert held.count("instances") % 32 != 0
  assert by[("mlm", "masked_lm_accuracy")]["eval_examples"] == held.count("predictions")
  # Split by what the input held: [MASK] and kept are 80% and 10% of them.
  at_mask, kept = (by[("mlm", m)]["eval_examples"] for m in mlm[1:])
  assert at_mask + kept < held.count("predictions")
  assert at_mask == pytest.approx(0.8 * held.count("predictions"), rel=0.1)
  assert 0 < by[("mlm", mlm[1])]["chance"] < 0.5
  table = (out / "results.md").read_text()
  # A verdict first, in plain words; then the table.
  assert table.startswith("# Pretraining objectives compared\n\nVerdict:\n\n- One "
                          "pretraining run per arm: no difference below is evidence")
  assert table.index("Verdict:") < table.index("| arm |")
  assert all(f"| {n} |" in table for n in names)
  assert "NO difference here is evidence about the objectives" in table
  assert "- **head_sop_accuracy** (majority class 0." in table
  assert "only 64 evaluation rows" in table  # the task's dev set is small: said so
  with open(out / "results.csv", encoding="utf-8") as f:
    csv_rows = list(csv.DictReader(f))
  assert len(csv_rows) == len(rows) and {"pretrain_seeds", "eval_examples"} <= set(csv_rows[0])
  assert sorted(os.listdir(out / "plots")) == sorted(f"{m}.png" for m in compare_metrics(rows))
  assert set(names) <= set(os.listdir(out / "hparams"))
  printed = capsys.readouterr().out
  count = 1 + len(names) * 6  # records, pretraining, held-out, instruments, 2 fine-tunes
  assert f"[{count}/{count}]" in printed and "ETA" in printed
  # What the corpus allows, first; the verdict of results.md, last.
  assert printed.startswith("what the corpus allows: ")
  verdict = printed[printed.index("verdict (results.md):\n"):]
  assert verdict.splitlines()[1] == "  " + table.splitlines()[4]
  assert "Beyond noise: " in verdict
  # The rerun reads every finished stage back and gives the same table,
  # with what each stage took when it ran.
  first = json.loads((out / "provenance.json").read_text())
  assert first["read_back_untimed"] == 0 and first["total_seconds"] == pytest.approx(
      sum(first["stage_seconds"].values()))
  assert compare.run_comparison(options) == rows
  printed = capsys.readouterr().out
  assert printed.count("(done before, skipped)") == len(names) * 6
  again = json.loads((out / "provenance.json").read_text())
  assert again["read_back_untimed"] == 0 and set(again["stages_read_back"]) == {
      "records", "pretrain", "heldout", "instruments", "finetune"}
  assert again["total_seconds"] == pytest.approx(
      first["total_seconds"] - first["stage_seconds"]["text"] + again["stage_seconds"]["text"],
      rel=0.05)


def test_pairs_of_the_pretraining_text_are_made_only_for_a_sentence_head(
    tmp_path, monkeypatch):
  options = tiny_options(tmp_path, objectives=("mlm", "electra"))
  train_txt, held_txt, vocab_file, _ = stages.prepare_text(options)
  read = []
  monkeypatch.setattr(compare.files, "read_documents_prefix",
                      lambda *args: read.append(args) or "")
  sets = compare._pair_sets(options, held_txt, train_txt, vocab_file)
  assert not read and all(s.seen is None for s in sets.values())
  monkeypatch.undo()
  with_head = dataclasses.replace(options, objectives=("mlm", "mlm_sop"))
  sets = compare._pair_sets(with_head, held_txt, train_txt, vocab_file)
  assert all(len(s.seen_labels) > 0 for s in sets.values())


def compare_metrics(rows):
  return {r["metric"] for r in rows}


def test_arms_over_pretraining_seeds_share_what_is_identical(tmp_path):
  from bert_tf.data.input import pipeline  # pylint: disable=g-import-not-at-top
  from bert_tf.experiments import arms  # pylint: disable=g-import-not-at-top
  options = tiny_options(
      tmp_path, pretrain_seeds=2, tasks=(), seeds=1,
      arms=(arms.Arm.parse("bert:objective=mlm_nsp"), arms.Arm.parse("again:objective=mlm_nsp"),
            arms.Arm.parse("mask100:objective=mlm_nsp,masked_token_share=1.0")))
  with _warnings("tensorflow") as tf_warnings:
    rows = compare.run_comparison(options)
  out = tmp_path / "cmp"
  # Two seeds of two distinct arms: four runs, and four sets of records
  # (each seed masks and pairs anew) beside the shared held-out ones.
  runs = sorted(os.listdir(out / "runs"))
  assert len(runs) == 4
  assert len(os.listdir(out / "records")) == 5
  described = [json.loads((out / "runs" / r / "run.json").read_text()) for r in runs]
  assert sorted((d["arm"].split(":")[0], d["seed"]) for d in described) == [
      ("bert", 12345), ("bert", 12346), ("mask100", 12345), ("mask100", 12346)]
  by = {(r["arm"], r["metric"]): r for r in rows}
  for arm in ("bert", "again", "mask100"):
    r = by[(arm, "masked_lm_accuracy")]
    assert r["pretrain_seeds"] == r["n"] == 2 and sorted(r["values"]) == [0, 1]
    assert r["spread"] == "pretraining runs"
    assert r["mean"] == pytest.approx(sum(r["values"].values()) / 2)
  # The identical arm is the same runs, said so; never "within noise" of itself.
  assert by[("again", "head_sop_accuracy")]["values"] == by[("bert", "head_sop_accuracy")][
      "values"]
  table = (out / "results.md").read_text()
  assert "identical pretraining (one run shared): bert = again" in table
  assert "again not compared (the same in every pretraining run)" in table
  # The fine-tuning seeds are nested in each pretraining run.
  finetuned = [p for r in runs for p in (out / "runs" / r / "finetune").iterdir()]
  assert len(finetuned) == 4 and all((p / "results.json").exists() for p in finetuned)
  # mask100's records put [MASK] at every predicted position; bert's do not.
  for d in described:
    info = pipeline.check_data(d["records"], 32, options.max_predictions_per_seq)
    batch = next(iter(pipeline.make_dataset(info.files, 64, 32,
                                            options.max_predictions_per_seq, False)))
    at = np.take_along_axis(batch["input_ids"].numpy(), batch["masked_lm_positions"].numpy(), 1)
    masked = at[batch["masked_lm_weights"].numpy() > 0] == 4  # [MASK] of the built vocab
    assert masked.all() == d["arm"].startswith("mask100"), d["arm"]
  # More seeds later: only the new runs are pretrained.
  bigger = dataclasses.replace(options, pretrain_seeds=3)
  with _warnings("tensorflow") as more_warnings:
    compare.run_comparison(bigger)
  assert len(os.listdir(out / "runs")) == 6
  # Six pretraining runs in one process, each its own trace: no retracing
  # warning of the training loop (TensorFlow counts a bound method's traces
  # together). The writer's tokenizer, one per set of records, still is.
  assert not [w for w in tf_warnings + more_warnings
              if "retracing" in w and ("Trainer" in w or "Evaluator" in w)]


def test_a_rerun_with_other_inputs_is_refused_naming_them(tmp_path):
  options = tiny_options(tmp_path)
  inputs = plan.check_plan(options)
  plan.start_draft(options, inputs)
  plan.claim(options, inputs)  # once the preflight passed: the folder is claimed
  assert sorted(os.listdir(tmp_path / "cmp")) == ["plan.json"]
  plan.check_plan(options)  # the same inputs: fine
  changed = dataclasses.replace(options, heldout_every=3, max_seq_length=48)
  with pytest.raises(plan.PlanMismatch, match=r"holds a comparison of other inputs "
                                              r"\(heldout_every 2 -> 3; max_seq_length 32 -> "
                                              r"48\)") as error:
    plan.check_plan(changed)
  # It names what changed and a folder of its own for these inputs.
  where = str(tmp_path / "cmp-heldout_every3-max_seq_length48")
  assert error.value.suggested_dir == where
  assert f"another --output_dir, such as {where}" in str(error.value)
  # That folder, claimed by these inputs, is taken as it is; claimed by
  # others, the next name is suggested.
  plan.claim(dataclasses.replace(changed, output_dir=where), plan.plan_inputs(changed))
  with pytest.raises(plan.PlanMismatch) as error:
    plan.check_plan(changed)
  assert error.value.suggested_dir == where
  with pytest.raises(plan.PlanMismatch) as error:
    plan.check_plan(dataclasses.replace(changed, max_seq_length=40))
  assert error.value.suggested_dir == str(tmp_path / "cmp-heldout_every3-max_seq_length40")
  # A corpus edited in place, same size, other text: another corpus.
  corpus = open(options.corpus, encoding="utf-8").read()
  with open(options.corpus, "w", encoding="utf-8") as f:
    f.write(corpus.replace("king", "kong", 1))
  with pytest.raises(ValueError, match="corpus_sha256"):
    plan.check_plan(options)
  old = tmp_path / "old"
  old.mkdir()
  (old / "train.txt").write_text("x\n")
  with pytest.raises(ValueError, match="written by an earlier bert_tf"):
    plan.check_plan(dataclasses.replace(options, output_dir=str(old)))


def test_an_unclaimed_draft_of_other_inputs_is_discarded(tmp_path):
  # A run refused by its preflight left its text stage and a draft: a run of
  # other inputs starts clean there; one of the same inputs keeps them.
  options = tiny_options(tmp_path)
  out = tmp_path / "cmp"
  plan.start_draft(options, plan.check_plan(options))
  for name in ("train.txt", "heldout.txt", "vocab.txt", "bert_config.json"):
    (out / name).write_text("x\n")
  (out / "probes" / "sop").mkdir(parents=True)
  (out / "records" / "heldout").mkdir(parents=True)
  plan.check_plan(options)
  assert (out / "train.txt").exists() and (out / "plan.draft.json").exists()
  plan.check_plan(dataclasses.replace(options, heldout_every=3))
  assert sorted(os.listdir(out)) == ["records"] and not os.listdir(out / "records")


def test_what_the_corpus_allows_is_said_and_refused_before_anything_is_written(
    tmp_path, capsys):
  # 72 documents, every 10th held out: seven, one of them dev: too few rows
  # for the pair tasks. ONE message names each, with what meets it, before
  # anything is written.
  options = tiny_options(tmp_path, corpus=write_corpus(tmp_path / "small.txt", documents=72),
                         heldout_every=10, pair_tasks=("sop", "nsp_random"))
  with pytest.raises(ValueError, match=r"too few evaluation rows for this comparison at "
                                       r"--heldout_every=10 \(nothing was written\)") as error:
    compare.run_comparison(options)
  message = str(error.value)
  assert "\n" not in message
  for short in ("probe_sop: 11 dev rows, needs 20", "probe_nsp_random: 11 dev rows, needs 20"):
    assert short in message, short
  assert "same" not in message  # the --task's 64 dev rows are enough
  assert "(fix: --heldout_every=2 on this corpus, or a corpus of about 100 documents" in message
  assert not (tmp_path / "cmp").exists()
  printed = capsys.readouterr().out
  assert "--heldout_every=10 holds out 7, 1 of them dev documents" in printed
  assert re.search(r"pairs sop \(head_, frozen_\) +about 3 dev segment pairs: short of 20",
                   printed), printed
  assert re.search(r"same \(--task, dev \S+dev.tsv\) +64 dev rows: ok, a warning below 200",
                   printed), printed
  # The fix it names is enough.
  assert preflight.check_corpus(dataclasses.replace(options, heldout_every=2))


def test_what_every_stage_needs_is_checked_before_pretraining_and_claims_nothing(
    tmp_path, monkeypatch):
  # Past the count before any work (an estimate for the segment pairs), the
  # exact count after the vocab: ONE message names every instrument that
  # falls short and what each needs, before any training record or model
  # is written; the folder is not claimed, so other flags run there.
  options = tiny_options(tmp_path, corpus=write_corpus(tmp_path / "small.txt", documents=72),
                         heldout_every=10, pair_tasks=("sop", "nsp_random"))
  monkeypatch.setattr(preflight, "check_corpus", lambda options: [])
  with pytest.raises(ValueError, match="too few evaluation rows for this comparison") as error:
    compare.run_comparison(options)
  message = str(error.value)
  assert "\n" not in message and "--heldout_every" in message
  for short in ("probe_sop (dev", "probe_nsp_random (dev", "pairs sop", "pairs nsp_random"):
    assert short in message, short
  assert "same (dev" not in message  # the --task's 64 dev rows are enough
  assert f"What each instrument needs: {preflight.needs(options)}" in message
  assert "about 3,200 held-out tokens at --max_seq_length=32" in message
  assert re.search(r"pairs sop \(held-out segment pairs, dev\): \d+ dev rows, needs 20 \(a "
                   r"corpus of about [\d,]+ documents like these", message), message
  out = tmp_path / "cmp"
  assert not (out / "runs").exists()
  assert os.listdir(out / "records") == ["heldout"]
  assert not (out / "plan.json").exists() and (out / "plan.draft.json").exists()
  # A rerun there with another --heldout_every is not refused: the refused
  # run's split is discarded.
  plan.check_plan(dataclasses.replace(options, heldout_every=2))
  assert not (out / "train.txt").exists() and not (out / "plan.draft.json").exists()
  # The eval-size rule: refused below 20 rows, a warning below 200.
  with pytest.raises(ValueError, match="x: 19 evaluation rows"):
    preflight.eval_size_note("x", 19, "hint")
  assert "differences below 0.14" in preflight.eval_size_note("x", 100, "hint")
  assert preflight.eval_size_note("x", 200, "hint") is None


def test_the_counts_before_any_work_are_those_the_comparison_makes(tmp_path):
  # The pair tasks' dev and train rows, counted from the corpus alone, are
  # the rows their TSVs get; the segment pairs' estimate is near the count
  # after the vocab.
  options = tiny_options(tmp_path, pair_tasks=("sop", "nsp_same_doc"), max_probe_examples=10**6,
                         heldout_every=3)
  allowances, _ = preflight.corpus_allows(options)
  by = {a.name: a for a in allowances}
  os.makedirs(options.output_dir)
  train_txt, held_txt, vocab_file, _ = stages.prepare_text(options)
  for task in stages.pair_task_files(options, held_txt):
    rows = {split: len(open(task.file(split), encoding="utf-8").read().splitlines()) - 1
            for split in ("train", "dev")}
    assert (by[task.name].dev, by[task.name].train) == (rows["dev"], rows["train"]), task.name
  sets = compare._pair_sets(options, held_txt, train_txt, vocab_file)  # pylint: disable=protected-access
  for name, pairs in sets.items():
    estimate = by[f"pairs {name} (head_, frozen_)"].dev
    assert 0.7 * len(pairs.dev_labels) <= estimate <= 1.3 * len(pairs.dev_labels), name


def test_task_specs_and_bad_options_are_one_line_errors(tmp_path):
  task = plan.Task.parse("wic=/data/wic,sentence1,sentence2,label")
  assert task == plan.Task("wic", "/data/wic", "sentence1", "sentence2", "label")
  assert plan.Task.parse("gloss=gs://b/gloss,3,4").text_b_column == ""
  with pytest.raises(ValueError, match="expected NAME=DIR,TEXT_A"):
    plan.Task.parse("wic:/data/wic")
  with pytest.raises(ValueError, match="--objectives: 'nsp' is not one of mlm_nsp"):
    tiny_options(tmp_path, objectives=("nsp",)).validate()
  from bert_tf.experiments import arms  # pylint: disable=g-import-not-at-top
  with pytest.raises(ValueError, match="arm x: optimizer='sgd' is not one of"):
    tiny_options(tmp_path, arms=(arms.Arm.parse("x:objective=mlm,optimizer=sgd"),)).validate()
  with pytest.raises(ValueError, match="--pretrain_seeds=0: must be at least 1"):
    tiny_options(tmp_path, pretrain_seeds=0).validate()
  with pytest.raises(ValueError, match="--probes: 'order' is not one of"):
    tiny_options(tmp_path, pair_tasks=("order",)).validate()


def test_flops_budget_plans_the_first_objectives_flops_for_every_other():
  # The tiny config of tests/models/test_flops.py: one step of batch 8 x 32
  # tokens (5 predictions) costs 5,484,576 FLOPs for mlm_nsp, 6,629,568 for
  # ELECTRA (its generator and per-token head), 5,469,888 for mlm.
  config = BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=1,
                      num_attention_heads=2, intermediate_size=32, max_position_embeddings=32)
  options = plan.CompareOptions(corpus="c", output_dir="o", bert_config_file="b",
                                   objectives=("mlm_nsp", "electra", "mlm"),
                                   max_seq_length=32, train_batch_size=8, num_train_steps=1000)
  # The random_init arm (on by default) is never pretrained: 0 steps.
  assert plan.plan_steps(options, config) == {"mlm_nsp": 1000, "electra": 1000, "mlm": 1000,
                                              "random_init": 0}
  options = dataclasses.replace(options, random_init=False)
  assert plan.plan_steps(options, config) == {"mlm_nsp": 1000, "electra": 1000, "mlm": 1000}
  flops = dataclasses.replace(options, budget="flops")
  # round(1000 x 5484576 / 6629568) = round(827.3); round(1000 x 5484576 / 5469888)
  assert plan.plan_steps(flops, config) == {"mlm_nsp": 1000, "electra": 827, "mlm": 1003}
  first_electra = dataclasses.replace(flops, objectives=("electra", "mlm_nsp"))
  assert plan.plan_steps(first_electra, config) == {"electra": 1000, "mlm_nsp": 1209}
  with pytest.raises(ValueError, match="--budget='time' is not one of steps, flops"):
    dataclasses.replace(options, budget="time").validate()
  # A 40% arm's records hold 13 prediction slots of 32 tokens (15%'s: 5),
  # and its masked-LM head runs at each: 6,239,424 FLOPs a step for mlm
  # against 5,469,888, round(1000 x 5469888 / 6239424) = round(876.7).
  masking = dataclasses.replace(flops, objectives=(), arms=(
      arms_lib.Arm.parse("m15:objective=mlm"),
      arms_lib.Arm.parse("m40:objective=mlm,masked_lm_prob=0.4")))
  assert plan.plan_steps(masking, config) == {"m15": 1000, "m40": 877}
  assert objectives.get("distill_mlm").train_flops is None  # no FLOPs model
  with pytest.raises(ValueError, match=r"--budget=flops: objective distill_mlm \(arm distill_mlm\) has no FLOPs"):
    dataclasses.replace(flops, objectives=("mlm_nsp", "distill_mlm")).validate()


def test_random_init_provenance_and_runs_reused_from_another_table(tmp_path, capsys):
  """The random_init arm (never pretrained: a step-0 checkpoint through the
  same instruments and fine-tuning), the per-example outcomes kept, how the
  table was made, and tables reading the first's finished runs along a chain."""
  first = tiny_options(tmp_path, objectives=("mlm",), random_init=True, tasks=(),
                       output_dir=str(tmp_path / "first"))
  rows = compare.run_comparison(first)
  assert [a.name for a in first.arm_list] == ["mlm", "random_init"]
  runs = {r.arm.name: r for r in plan.plan_runs(first, BertConfig.from_json_file(
      str(tmp_path / "first" / "bert_config.json")))}
  assert runs["random_init"].steps == 0
  summary = json.loads((tmp_path / "first" / "runs" / runs["random_init"].key
                        / "pretrain.json").read_text())
  assert summary["steps"] == 0 and summary["train_flops"] == 0
  assert not any("random_init" in d for d in os.listdir(tmp_path / "first" / "records"))
  by = {(r["arm"], r["metric"]): r for r in rows}
  assert ("random_init", "probe_sop_accuracy") in by
  assert ("random_init", "frozen_sop_accuracy") in by
  # Per-example outcomes: in the run's cached results, and behind the rows.
  instruments = json.loads((tmp_path / "first" / "runs" / runs["mlm"].key
                            / "instruments.json").read_text())
  outcomes = instruments["frozen_sop_accuracy"]["outcomes"]
  assert outcomes["kind"] == "mean" and len(outcomes["ids"]) == len(outcomes["seeds"][0])
  assert np.mean(outcomes["seeds"][0]) == pytest.approx(
      instruments["frozen_sop_accuracy"]["value"])
  heldout = json.loads((tmp_path / "first" / "runs" / runs["mlm"].key
                        / "heldout_mlm.json").read_text())
  assert heldout["outcomes"]["kind"] == "ratio"  # each held-out record's (hits, predictions)
  assert bootstrap.run_values(bootstrap.from_records([(0, heldout["outcomes"])]))[0] == (
      pytest.approx(heldout["masked_lm_accuracy"]))
  # Drawn by held-out record, paired between the arms.
  assert "; one pretraining run and " in table_line(tmp_path / "first", "masked_lm_accuracy")
  probe_dir = next((tmp_path / "first" / "runs" / runs["mlm"].key / "finetune").glob(
      "probe_sop-*"))
  probe = json.loads((probe_dir / "results.json").read_text())
  assert len(probe["outcomes"]["accuracy"]["seeds"]) == first.seeds
  assert np.mean(probe["outcomes"]["accuracy"]["seeds"][1]) == pytest.approx(
      probe[f"seed_{first.seed + 1}_accuracy"])
  assert by[("mlm", "probe_sop_accuracy")]["outcomes"].pieces.shape[:2] == (1, first.seeds)
  table = (tmp_path / "first" / "results.md").read_text()
  assert "random_init: the same encoder as initialized by each pretraining seed" in table
  assert "Noise: the multi-bootstrap (Sellam et al. 2022)" in table
  # How it was made: in results.md, results.csv and provenance.json.
  made = table[table.index("How this table was made:"):]
  assert "; Python " in made and "TensorFlow" in made and "sha256 " in made
  assert "wall time of this invocation by stage: " in made and "machine: " in made
  with open(tmp_path / "first" / "results.csv", encoding="utf-8") as f:
    csv_rows = list(csv.DictReader(f))
  assert csv_rows[0]["corpus_sha256"] == plan.plan_inputs(first)["corpus_sha256"]
  assert csv_rows[0]["ci_low"] != "" and csv_rows[0]["tensorflow"]
  assert json.loads((tmp_path / "first" / "provenance.json").read_text())["corpus_bytes"] > 0
  capsys.readouterr()
  # A second table: the same runs read from the first, not trained again.
  second = dataclasses.replace(first, output_dir=str(tmp_path / "second"),
                               reuse_runs_from=str(tmp_path / "first"))
  again = compare.run_comparison(second)
  printed = capsys.readouterr().out
  assert printed.count(f"its pretraining is read from {tmp_path / 'first'}") == 1
  reused = json.loads((tmp_path / "second" / "runs" / runs["mlm"].key
                       / "pretrain.json").read_text())
  assert reused["reused_from"] == str(tmp_path / "first")
  assert reused["model_dir"] == str(tmp_path / "first" / "runs" / runs["mlm"].key / "model")
  assert not (tmp_path / "second" / "records").exists() or not any(
      d.startswith("train-") for d in os.listdir(tmp_path / "second" / "records"))
  assert {(r["arm"], r["metric"]): r["mean"] for r in again} == {
      k: r["mean"] for k, r in by.items()}
  # A third table reuses the second: its runs are read where the first
  # trained them, along the chain.
  third = dataclasses.replace(first, output_dir=str(tmp_path / "chained"),
                              reuse_runs_from=str(tmp_path / "second"))
  chained = compare.run_comparison(third)
  assert capsys.readouterr().out.count(
      f"its pretraining is read from {tmp_path / 'second'}") == 1
  read = json.loads((tmp_path / "chained" / "runs" / runs["mlm"].key
                     / "pretrain.json").read_text())
  assert read["model_dir"] == reused["model_dir"]
  assert {(r["arm"], r["metric"]): r["mean"] for r in chained} == {
      k: r["mean"] for k, r in by.items()}
  # Evaluation sets of another size: the runs are still shared.
  smaller = dataclasses.replace(third, max_probe_examples=first.max_probe_examples + 7)
  stages.check_reuse(smaller, plan.plan_inputs(smaller))
  # A model moved away: a one-line error naming the run and the path.
  os.rename(reused["model_dir"], reused["model_dir"] + "_moved")
  with pytest.raises(ValueError, match=rf"--reuse_runs_from=.*second: run {runs['mlm'].key} "
                     r"has no model at .*first.*model \(its pretrain.json names it\)"):
    compare.run_comparison(dataclasses.replace(third, output_dir=str(tmp_path / "refused")))
  assert not (tmp_path / "refused" / "runs").exists()
  os.rename(reused["model_dir"] + "_moved", reused["model_dir"])
  # Another model: the first table's runs are not this plan's.
  other = dataclasses.replace(second, output_dir=str(tmp_path / "third"), vocab_size=110)
  with pytest.raises(ValueError, match=r"--reuse_runs_from=.*: a comparison of other inputs "
                     r"\(vocab_size differ\)"):
    compare.run_comparison(other)


def table_line(out, metric):
  """results.md's noise line of `metric`."""
  text = (out / "results.md").read_text()
  return next(line for line in text.splitlines() if line.startswith(f"- **{metric}**"))


def test_electra_against_bert_at_equal_flops(tmp_path, capsys):
  options = tiny_options(tmp_path, objectives=("mlm_nsp", "electra"), budget="flops",
                         num_train_steps=6, tasks=(), seeds=1)
  rows = compare.run_comparison(options)
  out = tmp_path / "cmp"
  bert_config = BertConfig.from_json_file(str(out / "bert_config.json"))
  flops = {a.objective: plan.step_flops(options, a, bert_config) for a in options.arm_list}
  run_dirs = {json.loads((d / "run.json").read_text())["objective"]: d
              for d in (out / "runs").iterdir()}
  summaries = {n: json.loads((run_dirs[n] / "pretrain.json").read_text()) for n in flops}
  # ELECTRA's step costs more (its generator, its per-token head): fewer steps.
  assert flops["electra"] > flops["mlm_nsp"]
  assert summaries["mlm_nsp"]["steps"] == 6
  assert summaries["electra"]["steps"] == round(6 * flops["mlm_nsp"] / flops["electra"]) < 6
  for name, summary in summaries.items():
    assert summary["budget"] == "flops"
    assert summary["train_flops"] == summary["steps"] * flops[name]
  assert abs(summaries["electra"]["train_flops"] - summaries["mlm_nsp"]["train_flops"]) \
      <= flops["electra"] / 2
  # ELECTRA read the mlm_nsp records; none were written for it.
  assert len(os.listdir(out / "records")) == 2 and (out / "records" / "heldout").is_dir()
  by = {(r["arm"], r["metric"]): r for r in rows}
  heldout = json.loads((run_dirs["electra"] / "heldout_mlm.json").read_text())
  discriminator = [m for m, _ in heldout_reading.reading("electra").rows]
  assert [m for (o, m) in by if o == "mlm_nsp"] == [
      "masked_lm_accuracy", "masked_lm_accuracy_at_mask", "masked_lm_accuracy_kept",
      "head_sop_accuracy", "head_sop_accuracy_seen", "frozen_sop_accuracy",
      "probe_sop_accuracy"]
  # ELECTRA's held-out masked-LM figure is its generator's: a column of its own.
  assert [m for (o, m) in by if o == "electra"] == (["generator_masked_lm_accuracy"]
                                                    + discriminator + ["frozen_sop_accuracy",
                                                                       "probe_sop_accuracy"])
  assert by[("electra", "generator_masked_lm_accuracy")]["mean"] == heldout["masked_lm_accuracy"]
  # Tokens replaced: at most the masked share, more than none from an
  # untrained generator; the vs-prior figure is the loss less H(share).
  share = heldout["replaced_share"]
  assert 0 < share <= heldout["predictions"] / heldout["tokens"] < 0.2
  prior = -share * math.log(share) - (1 - share) * math.log(1 - share)
  assert heldout["discriminator_loss_vs_prior"] == pytest.approx(
      heldout["discriminator_loss"] - prior, abs=1e-6)
  assert by[("electra", "discriminator_loss_vs_prior")]["mean"] == pytest.approx(
      heldout["discriminator_loss_vs_prior"])
  for metric in ("discriminator_accuracy", "discriminator_precision", "discriminator_recall"):
    assert 0.0 <= by[("electra", metric)]["mean"] <= 1.0
  assert by[("electra", "discriminator_loss")]["se"] is None  # not measured
  assert by[("electra", "replaced_share")]["train_flops"] == summaries["electra"]["train_flops"]
  # Fine-tuning started from ELECTRA's discriminator.
  probe_dir = next((run_dirs["electra"] / "finetune").glob("probe_sop-*"))
  probe = json.loads((probe_dir / "results.json").read_text())
  assert "ELECTRA discriminator" in probe["init"]
  table = (out / "results.md").read_text()
  lines = table.splitlines()
  cells = lambda line: [c.strip() for c in line.split("|")[1:-1]]  # noqa: E731
  header = cells(next(line for line in lines if line.startswith("| arm")))
  assert header[2:8] == ["steps", "tokens", "train FLOPs", "params", "ex/s", "FLOP/s"]
  table_rows = {c[0]: dict(zip(header, c)) for c in map(cells, lines) if c and c[0] in flops}
  # Each arm's measured rate, and FLOP/s = ex/s / batch x its step's FLOPs.
  for name, row in table_rows.items():
    rate = summaries[name]["examples_per_second"]
    assert rate > 0 and row["ex/s"] == f"{rate:.1f}"
    assert summaries[name]["flops_per_second"] == pytest.approx(
        rate / options.train_batch_size * summaries[name]["step_flops"])
  # mlm_nsp has no generator or discriminator cells; electra no BERT masked-LM one.
  assert all(table_rows["mlm_nsp"][m] == ""
             for m in ["generator_masked_lm_accuracy"] + discriminator)
  assert table_rows["electra"]["masked_lm_accuracy"] == ""
  assert table_rows["electra"]["replaced_share"].startswith(f"{share:.4f} [")
  assert "budget equal training FLOPs" in table
  assert "electra: generator_masked_lm_accuracy is a generator's" in table
  assert "not the same quantity as masked_lm_accuracy" in table
  with open(out / "results.csv", encoding="utf-8") as f:
    csv_rows = list(csv.DictReader(f))
  assert len(csv_rows) == len(rows) and "train_flops" in csv_rows[0]
  assert not any(r["arm"] == "mlm_nsp" and r["metric"].startswith("discriminator")
                 for r in csv_rows)
  assert {(r["arm"], r["objective"]) for r in csv_rows} == {("mlm_nsp", "mlm_nsp"),
                                                            ("electra", "electra")}
  capsys.readouterr()
  # The rerun skips every finished stage: records, pretraining, held-out,
  # instruments, probe; the records both runs read count their time once.
  first = json.loads((out / "provenance.json").read_text())
  assert compare.run_comparison(options) == rows
  assert capsys.readouterr().out.count("(done before, skipped)") == 2 * 5
  again = json.loads((out / "provenance.json").read_text())
  assert again["read_back_untimed"] == 0
  assert again["read_back_seconds"]["records"] == pytest.approx(
      first["stage_seconds"]["records"], rel=0.1)  # once, not once per run
  # The table's readings alone (no model, no records: the JSON results and
  # the stage times, what a repository can keep) give the same table to the
  # same command on another machine: every finished run is read back,
  # nothing is trained.
  trained = tmp_path / "trained"
  out.rename(trained)
  for path in trained.rglob("*.json"):
    if "model" not in path.relative_to(trained).parts and (
        path.parent.parent.name != "records" or path.name.endswith(".seconds.json")):
      (out / path.relative_to(trained)).parent.mkdir(parents=True, exist_ok=True)
      (out / path.relative_to(trained)).write_bytes(path.read_bytes())
  assert not list(out.rglob("*.tfrecord")) and not list(out.rglob("checkpoint"))
  capsys.readouterr()
  assert {(r["arm"], r["metric"]): r["mean"] for r in compare.run_comparison(options)} == {
      (r["arm"], r["metric"]): r["mean"] for r in rows}
  printed = capsys.readouterr().out
  assert printed.count("no records (its pretraining is done)") == 2
  assert printed.count("(done before, skipped)") == 2 * 5
  assert {p.parent.name for p in out.rglob("*.tfrecord")} == {"heldout"}
  assert not list(out.rglob("checkpoint"))
  moved_made = json.loads((out / "provenance.json").read_text())
  moved_made = json.loads((out / "provenance.json").read_text())
  assert moved_made["read_back_untimed"] == 0
  assert moved_made["read_back_seconds"] == pytest.approx(again["read_back_seconds"], rel=1e-6)
  assert moved_made["total_seconds"] == pytest.approx(again["total_seconds"], rel=0.1)


@contextlib.contextmanager
def _warnings(logger_name):
  """The warnings logged to `logger_name` inside the block."""
  messages = []
  handler = logging.Handler(logging.WARNING)
  handler.emit = lambda record: messages.append(record.getMessage())
  logging.getLogger(logger_name).addHandler(handler)
  try:
    yield messages
  finally:
    logging.getLogger(logger_name).removeHandler(handler)


def test_records_get_no_more_shards_than_blocks(tmp_path):
  block = plan.RECORD_BLOCK_BYTES
  assert [plan.record_shards(n * block) for n in (0, 1, 3, 4, 40)] == [1, 1, 1, 2, 2]
  # A small corpus is one block: one shard, and the writer has nothing to warn
  # about (it used to say "1 blocks for 2 shards ... lower --block_bytes or
  # --num_output_shards", flags compare_objectives does not have).
  with _warnings("absl") as messages:
    options = tiny_options(tmp_path)
    train_txt, _, vocab_file, _ = stages.prepare_text(options)
    records, written = stages.write_records(options, train_txt, vocab_file, "mlm_nsp",
                                             options.base_data_options(options.seed))
  assert not written and len(tf_glob(records)) == 1
  assert not [m for m in messages if "shards" in m], messages


def tf_glob(pattern):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.io.gfile.glob(pattern)


def test_objectives_with_the_same_record_options_share_their_records(tmp_path):
  # ELECTRA reads BERT's records; RoBERTa's and ALBERT's are their own.
  config = BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=1,
                      num_attention_heads=2, intermediate_size=32, max_position_embeddings=32)
  options = tiny_options(tmp_path, objectives=("mlm_nsp", "electra", "mlm", "mlm_sop"),
                         pretrain_seeds=2)
  runs = plan.plan_runs(options, config)
  keys = {(r.arm.name, r.seed_index): r.records_key for r in runs}
  assert keys[("electra", 0)] == keys[("mlm_nsp", 0)] != keys[("mlm_nsp", 1)]
  assert len({keys[(n, 0)] for n in ("mlm_nsp", "mlm", "mlm_sop")}) == 3
  assert len({r.key for r in runs}) == 8  # every (arm, seed) its own pretraining
  assert [r.seed for r in runs[:4]] == [12345] * 4  # seed-major
  assert objectives.get("mlm").record_options == {
      "sentence_task": "none", "packing": "full_sentences", "dynamic_masking": True}


def test_a_pretraining_stopped_by_a_signal_is_not_marked_done(tmp_path, monkeypatch):
  # SIGTERM (a preempted VM) makes the loop save and return early: the run
  # must stay unfinished, so the rerun resumes it instead of measuring a
  # model of fewer steps.
  options = tiny_options(tmp_path, tasks=())
  config = BertConfig.from_json_file(options.bert_config_file)
  run = plan.plan_runs(options, config)[0]
  monkeypatch.setattr(stages.loop, "run",
                      lambda *a: {"global_step": 2, "stopped_by_signal": True})
  with pytest.raises(stages.RunStopped,
                     match=r"mlm_nsp \(seed 0\) stopped at step 2 of 3 \(signal\).*run the same"):
    stages.pretrain(options, run, "records", config)
  assert not os.path.exists(os.path.join(run.directory(options), "pretrain.json"))
