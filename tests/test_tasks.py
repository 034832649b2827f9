"""Tests of the bert_tf.tasks tool on a few WordNet lines in the documented
format (tests/helpers/wordnet_files.py writes them)."""

import json
import os
import subprocess
import sys

from bert_tf.downstream.builders import wordnet
from bert_tf.downstream.classification import tsv as classification
from helpers.wordnet_files import write_wordnet

REPO = os.path.dirname(os.path.abspath(__file__)).rsplit(os.sep, 1)[0]


def _run_tool(args, cwd):
  return subprocess.run([sys.executable, "-m", "bert_tf.tasks"] + args, cwd=cwd,
                        capture_output=True, text=True, timeout=300,
                        env=dict(os.environ, PYTHONPATH=REPO))


def test_tool_writes_tsvs_the_finetuner_reads(tmp_path):
  wn = tmp_path / "wn"
  wn.mkdir()
  write_wordnet(wn)
  child = _run_tool([f"--wordnet_dir={wn}", f"--output_dir={tmp_path / 'tasks'}"], tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert "wic/train.tsv:" in child.stdout and "label 1:" in child.stdout
  summary = json.loads((tmp_path / "tasks" / "summary.json").read_text())
  wic = summary["label_counts"]["wic"]
  assert sum(sum(c.values()) for c in wic.values()) == 12
  for split in ("train", "dev", "test"):
    for task, columns in (("wic", ("sentence1", "sentence2", "label")),
                          ("gloss", ("definition", None, "label"))):
      path = tmp_path / "tasks" / task / f"{split}.tsv"
      assert path.read_text().splitlines()[0].split("\t")[-1] == "label"
      counts = summary["label_counts"][task][split]
      if counts:
        examples = classification.read_tsv(str(path), *columns)
        assert len(examples) == sum(counts.values())
  # Deterministic: a second build is byte-identical.
  first = (tmp_path / "tasks" / "wic" / "train.tsv").read_bytes()
  wordnet.write_tasks(str(wn), str(tmp_path / "again"))
  assert (tmp_path / "again" / "wic" / "train.tsv").read_bytes() == first


def test_bad_input_is_one_line_nonzero_exit_and_no_files(tmp_path):
  wn = tmp_path / "wn"
  wn.mkdir()
  write_wordnet(wn)
  (wn / "data.verb").write_text("01926311 38 v 02 run 0 | broken\n")
  child = _run_tool([f"--wordnet_dir={wn}", f"--output_dir={tmp_path / 'tasks'}"], tmp_path)
  assert child.returncode == 1
  assert child.stderr.strip().splitlines()[-1].startswith(
      "bert_tf.tasks: error: ") and "data.verb:1: not a WordNet data line" in child.stderr
  assert not (tmp_path / "tasks").exists()
  child = _run_tool([f"--wordnet_dir={wn}"], tmp_path)
  assert child.returncode == 2 and "--output_dir is required" in child.stderr


def test_tool_builds_the_names_task_from_a_cased_corpus(tmp_path):
  corpus = tmp_path / "corpus.txt"
  corpus.write_text("\n\n".join(
      "\n".join(f"Then the men of Moab went {i} miles with Josiah to Jerusalem {j}."
                for j in range(6)) for i in range(30)) + "\n")
  out = tmp_path / "tasks"
  child = _run_tool([f"--corpus={corpus}", "--heldout_every=3", f"--output_dir={out}"],
                    tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert "names/dev.txt:" in child.stdout and "unseen in train" in child.stdout
  summary = json.loads((out / "names" / "summary.json").read_text())
  assert summary["name_types"] == 3 and summary["heldout_every"] == 3
  assert sum(s["sentences"] for s in summary["splits"].values()) == 10 * 6
  # The span task from the same corpus: after each document's first
  # sentence, each of the three names asked (the others in the passage).
  assert "name_cloze/dev.json:" in child.stdout
  cloze = json.loads((out / "name_cloze" / "summary.json").read_text())
  assert sum(s["questions"] for s in cloze["splits"].values()) == 10 * 5 * 3
  dev = json.loads((out / "name_cloze" / "dev.json").read_text())
  assert dev["version"] == "1.1" and dev["data"][0]["paragraphs"][0]["qas"]
  assert not (out / "wic").exists()


def test_tool_refuses_a_task_without_its_source(tmp_path):
  child = _run_tool(["--tasks=names", f"--output_dir={tmp_path}"], tmp_path)
  assert child.returncode != 0
  assert "--tasks=names needs --corpus" in child.stderr
