"""The bert_tf.tasks tool's --lexical_entailment: the pair task from a small
noun hierarchy in WordNet's format (tests/downstream/builders/
test_lexical_entailment.py tests the rows themselves)."""

import json
import os
import subprocess
import sys

from bert_tf.downstream.classification import tsv as classification
from helpers.wordnet_files import DATA, INDEX as WIC_INDEX, write_wordnet

REPO = os.path.dirname(os.path.abspath(__file__))

ANIMAL = ("00000100 05 n 01 animal 0 000 | a living organism  ",
          "00000101 05 n 01 dog 0 001 @ 00000100 n 0000 | a canid; \"a dog chased the "
          "ball\"; \"the dog slept\"  ",
          "00000102 05 n 01 cat 0 001 @ 00000100 n 0000 | a feline; \"the cat sat on the "
          "mat\"  ")
INDEX = ("animal n 1 0 1 0 00000100  ", "cat n 1 0 1 0 00000102  ", "dog n 1 0 1 0 00000101  ")


def _run_tool(args, cwd):
  return subprocess.run([sys.executable, "-m", "bert_tf.tasks"] + args, cwd=cwd,
                        capture_output=True, text=True, timeout=300,
                        env=dict(os.environ, PYTHONPATH=REPO.rsplit(os.sep, 1)[0]))


def test_tool_builds_lexical_entailment_when_asked(tmp_path):
  wn = tmp_path / "wn"
  wn.mkdir()
  write_wordnet(wn, dict(DATA, noun=list(ANIMAL)), dict(WIC_INDEX, noun=list(INDEX)))
  out = tmp_path / "tasks"
  child = _run_tool([f"--wordnet_dir={wn}", "--lexical_entailment", f"--output_dir={out}"],
                    tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert "lexical_entailment/train.tsv:" in child.stdout and "wic/train.tsv:" in child.stdout
  summary = json.loads((out / "lexical_entailment" / "summary.json").read_text())
  counts = summary["label_counts"]
  assert sum(sum(c.values()) for c in counts.values()) == 6  # 3 sentences x 2
  for split, labels in counts.items():
    assert labels.get("0", 0) == labels.get("1", 0)
    if labels:
      rows = classification.read_tsv(str(out / "lexical_entailment" / f"{split}.tsv"),
                                     "sentence1", "sentence2", "label")
      assert len(rows) == sum(labels.values())
  # Without the flag, the default WordNet tasks only; with no hypernyms it
  # is refused in one line.
  child = _run_tool([f"--wordnet_dir={wn}", f"--output_dir={tmp_path / 'default'}"], tmp_path)
  assert child.returncode == 0 and not (tmp_path / "default" / "lexical_entailment").exists()
  write_wordnet(wn, {"noun": [ANIMAL[0]], "verb": [], "adj": [], "adv": []},
                {"noun": [INDEX[0]], "verb": [], "adj": [], "adv": []})
  child = _run_tool([f"--wordnet_dir={wn}", "--tasks=lexical_entailment",
                     f"--output_dir={tmp_path / 'again'}"], tmp_path)
  assert child.returncode == 1
  assert "no lexical_entailment examples" in child.stderr.strip().splitlines()[-1]
  child = _run_tool(["--lexical_entailment", f"--output_dir={tmp_path}"], tmp_path)
  assert child.returncode != 0 and "needs --wordnet_dir" in child.stderr
