"""The reproductions of configs/experiments/ (docs/reproductions.md): each
flagfile runs as its documented command does, at a toy budget (a tiny model
and corpus, a few steps: the flags after --flagfile override its budget),
and every paper figure it carries names an arm and a metric the comparison
measures, so results.md sets the paper beside ours with no gap."""

import csv
import glob
import json
import os
import re
import subprocess
import sys

import pytest

from bert_tf.downstream.builders import name_cloze
from bert_tf.experiments import paper_figures

from helpers import tagging_task
from helpers.topic_corpus import write_corpus

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGFILES = sorted(glob.glob(os.path.join(REPO, "configs", "experiments", "*.flags")))
TOY = ["--vocab_size=120", "--heldout_every=2", "--max_seq_length=32", "--dupe_factor=1",
       "--num_train_steps=3", "--train_batch_size=8", "--pretrain_seeds=1", "--seeds=1",
       "--finetune_epochs=1", "--max_probe_examples=64"]


def _figures(path):
  with open(path, encoding="utf-8") as f:
    return [paper_figures.PaperFigure.parse(line.strip().split("=", 1)[1])
            for line in f if line.startswith("--paper_figure=")]


def test_there_are_reproductions():
  assert [os.path.basename(p) for p in FLAGFILES], "no configs/experiments/*.flags"


@pytest.mark.parametrize("flagfile", FLAGFILES, ids=os.path.basename)
def test_a_reproduction_parses_into_a_valid_plan(flagfile, tmp_path):
  # As compare_objectives reads it: its flags, arms and paper figures, and
  # every paper figure on an arm of the plan (seconds; the toy run below
  # also checks that the comparison measures each figure's metric).
  from bert_tf import cli  # pylint: disable=g-import-not-at-top
  from bert_tf import compare_objectives  # pylint: disable=g-import-not-at-top
  from bert_tf.experiments import arms  # pylint: disable=g-import-not-at-top
  from bert_tf.experiments import plan  # pylint: disable=g-import-not-at-top
  fv = cli.parse(compare_objectives.define_flags,
                 ["compare_objectives", f"--flagfile={flagfile}", "--corpus=c.txt",
                  f"--output_dir={tmp_path}"])
  options = cli.options_from_flags(
      plan.CompareOptions, fv, objectives=tuple(fv.objectives),
      arms=tuple(arms.Arm.parse(spec) for spec in fv.arm), pair_tasks=tuple(fv.probes),
      paper_figures=tuple(paper_figures.PaperFigure.parse(s) for s in fv.paper_figure))
  options.validate()
  assert options.pretrain_seeds >= 3, "a reproduction needs 3 or more pretraining seeds"
  assert len(options.paper_figures) == len(_figures(flagfile)) > 0


@pytest.mark.slow  # 20 to 50 s each on 2 cores: in the default run, as CI's smoke test
@pytest.mark.parametrize("flagfile", FLAGFILES, ids=os.path.basename)
def test_a_reproduction_runs_at_a_toy_budget(flagfile, tmp_path):
  config = tmp_path / "tiny.json"
  config.write_text(json.dumps({
      "vocab_size": 100, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
      "intermediate_size": 32, "max_position_embeddings": 32, "type_vocab_size": 2,
      "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
      "initializer_range": 0.02}))
  out = tmp_path / "out"
  with open(flagfile, encoding="utf-8") as f:
    text = f.read()
  for task_dir in re.findall(r"^--task=\w+=conll:(\S+)$", text, re.M):
    # The documented task folder, relative to the run.
    (tmp_path / task_dir).mkdir(parents=True)
    for split, n in (("train", 64), ("dev", 24)):
      tagging_task.write_task(tmp_path / task_dir / f"{split}.txt", n, seed=len(split))
  for task_dir in re.findall(r"^--task=\w+=([^:,\s]+),sentence1,sentence2,label$", text,
                            re.M):
    # A pair task in TSV (bert_tf.tasks' wic and lexical_entailment).
    (tmp_path / task_dir).mkdir(parents=True)
    for split, n in (("train", 48), ("dev", 24)):
      (tmp_path / task_dir / f"{split}.tsv").write_text("sentence1\tsentence2\tlabel\n" + "".join(
          f"the dog {i} ran\tthe {'animal' if i % 2 else 'cat'} {i} ran\t{i % 2}\n"
          for i in range(n)))
  for task_dir in re.findall(r"^--task=\w+=squad:(\S+)$", text, re.M):
    # As bert_tf.tasks builds it, from a corpus of names.
    names = tmp_path / "names.txt"
    names.write_text("\n\n".join(f"And Josiah went to Moab with Hilkiah {i}.\n"
                                  f"Then Hilkiah the priest saw it {i}." for i in range(400)))
    name_cloze.write_task(str(names), str(tmp_path / task_dir), min_count=2)
  command = [sys.executable, "-m", "bert_tf.compare_objectives",
             f"--flagfile={os.path.join(REPO, flagfile)}",
             f"--corpus={write_corpus(tmp_path / 'corpus.txt', documents=120)}",
             f"--output_dir={out}", f"--bert_config_file={config}"] + TOY
  done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=1200,
                        env={**os.environ, "PYTHONPATH": REPO})
  assert done.returncode == 0, done.stderr[-3000:]
  with open(out / "results.csv", encoding="utf-8") as f:
    measured = {(r["arm"], r["metric"]) for r in csv.DictReader(f)}
  figures = _figures(flagfile)
  assert figures, f"{flagfile} carries no --paper_figure"
  for fig in figures:
    assert (fig.arm, fig.metric) in measured, f"{fig.arm}:{fig.metric} is not measured"
  text = (out / "results.md").read_text()
  assert "The paper beside ours" in text and "not measured" not in text
  # Every pair the paper tells apart is read (reproduced, same direction,
  # reversed, contradicted, at chance or not compared).
  assert text.count(": the paper has ") >= 1
