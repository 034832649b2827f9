"""The reproductions' stand-ins (configs/experiments/*.flags): no paper
figure of a downstream task (MNLI, QNLI, SQuAD, GLUE, ...) is set against a
pair or order objective's own task (random-document pairs, same-document
pairs, sentence order), which NSP or SOP is trained on; only ALBERT Table 5,
whose figures are those objectives' own intrinsic accuracies, may.
"""

import glob
import os
import re

import pytest

from bert_tf.data import pair_tasks
from bert_tf.experiments import paper_figures

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGFILES = sorted(glob.glob(os.path.join(REPO, "configs", "experiments", "*.flags")))
OWN_TASK_READERS = ("albert_table5.flags",)
# A metric reads a pair/order task when it is a probe, head or frozen probe
# of one of pair_tasks.TASKS (probe_nsp_random_accuracy, head_sop_accuracy, ...).
OWN_TASK = re.compile(r"^(probe|head|frozen)_(%s)_" % "|".join(pair_tasks.TASKS))


def _figures(path):
  with open(path, encoding="utf-8") as f:
    return [paper_figures.PaperFigure.parse(line.strip().split("=", 1)[1])
            for line in f if line.startswith("--paper_figure=")]


def test_the_pattern_knows_the_pair_tasks():
  assert OWN_TASK.match("probe_nsp_random_accuracy") and OWN_TASK.match("head_sop_accuracy")
  assert OWN_TASK.match("frozen_nsp_same_doc_accuracy")
  assert not OWN_TASK.match("wic_accuracy") and not OWN_TASK.match("name_cloze_f1")


@pytest.mark.parametrize("flagfile", FLAGFILES, ids=os.path.basename)
def test_no_paper_figure_on_a_pair_objectives_own_task(flagfile):
  figures = _figures(flagfile)
  own = [f"{f.arm}:{f.metric}" for f in figures if OWN_TASK.match(f.metric)]
  if os.path.basename(flagfile) in OWN_TASK_READERS:
    assert own, "ALBERT Table 5's figures are the pair objectives' own readings"
    return
  assert not own, (f"{os.path.basename(flagfile)} sets paper figures against a pair or order "
                   f"objective's own task: {', '.join(own)}")


def test_the_pair_stand_ins_are_wordnet_tasks():
  # Each table that compares pair-task figures reads them on WiC and lexical
  # entailment, the tasks built from WordNet's sentences.
  for name in ("bert_table5", "roberta_table2", "electra_table5", "wettig_masking"):
    path = os.path.join(REPO, "configs", "experiments", f"{name}.flags")
    with open(path, encoding="utf-8") as f:
      text = f.read()
    assert "--task=wic=tasks/wic,sentence1,sentence2,label" in text, name
    assert "--task=entail=tasks/lexical_entailment,sentence1,sentence2,label" in text, name
    metrics = {f.metric for f in _figures(path)}
    assert {"wic_accuracy", "entail_accuracy"} <= metrics, name
