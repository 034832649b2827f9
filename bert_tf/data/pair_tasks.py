"""Sentence-pair tasks built from held-out text: no labelled data needed.

A PAIR TASK is a small binary classification task that a comparison
fine-tunes every pretrained encoder on. compare_objectives names them by
its --probes flag and reports them as `probe_<task>_accuracy`: fine-tuned
tasks, unlike the frozen linear probes of experiments/linear_probe.py
(`frozen_<task>_accuracy`). Three tasks, each a list of (text_a, text_b,
label) rows drawn from documents in the pretraining format (one sentence a
line, a blank line between documents):

  nsp_random    BERT's next-sentence prediction: B follows A (label 1), or
                B is a sentence of another, random document (label 0). A
                topic change gives the negatives away.
  nsp_same_doc  the same with negatives from the SAME document, at least
                two sentences away from A in either direction: topic no
                longer tells them apart, only coherence does.
  sop           ALBERT's sentence order: two consecutive sentences in their
                order (label 1) or swapped (label 0).

ALBERT's paper (Lan et al. 2020, Table 5) found that a model pretrained with
NSP scores near chance on SOP while one pretrained with SOP does well on NSP:
these tasks repeat that comparison on a user's own corpus. A and B are
single sentences (lines), not the multi-sentence segments pretraining uses,
so every row is one decision about one sentence boundary.

Each task is balanced: every anchor pair (sentence i, sentence i+1 of a
document, both of at least MIN_WORDS words) gives one row, positive or
negative with probability 1/2. Rows are split into train and dev BY
DOCUMENT (every `dev_every`-th document is dev), so no sentence of a dev
row was seen in a train row. Everything is a pure function of the
documents and the seed.
"""

import random

from bert_tf.data.text import split

TASKS = ("nsp_random", "nsp_same_doc", "sop")
LABELS = ("0", "1")
# Anchors need sentences of a few words; shorter lines ("Amen.") carry no
# signal a classifier could learn from.
MIN_WORDS = 3


def parse_documents(text):
  """Documents of `text` (str): lists of their non-empty lines, stripped."""
  return [[line.strip() for line in document.split("\n") if line.strip()]
          for document in split.documents_of(text)]


def _long_enough(sentence):
  return len(sentence.split()) >= MIN_WORDS


def _anchors(documents):
  """(document index, i) for every consecutive pair i, i+1 of long-enough sentences."""
  return [(d, i) for d, doc in enumerate(documents) for i in range(len(doc) - 1)
          if _long_enough(doc[i]) and _long_enough(doc[i + 1])]


def _far_sentence(doc, i, rng):
  """A sentence of `doc` at least two lines away from both i and i+1, or None."""
  choices = [j for j in range(len(doc)) if (j < i - 1 or j > i + 2) and _long_enough(doc[j])]
  return doc[rng.choice(choices)] if choices else None


def check_task(task, num_documents, what):
  """ValueError for an unknown task, or for nsp_random over fewer than two
  documents (its negatives come from another one). `what` names the kind
  in the message ("pair task", "segment pair task")."""
  if task not in TASKS:
    raise ValueError(f"{what} {task!r} is not one of {', '.join(TASKS)}")
  if task == "nsp_random" and num_documents < 2:
    raise ValueError("nsp_random needs at least two documents (its negatives come from "
                     "another document)")


def task_rows(documents, task, seed=12345):
  """The rows of one pair task over `documents`.

  Args:
    documents: list of documents, each a list of sentences (str).
    task: one of TASKS.
    seed: int; the same documents and seed give the same rows.

  Returns:
    list of (document index, text_a, text_b, label) with label "1" (B
    follows A / in order) or "0". An anchor whose negative cannot be drawn
    (nsp_same_doc in a document of fewer than four usable sentences) gives
    no row.

  Raises:
    ValueError: an unknown task, or fewer than two documents for
      nsp_random.
  """
  check_task(task, len(documents), "pair task")
  rng = random.Random(f"{seed}:{task}")
  rows = []
  for d, i in _anchors(documents):
    doc = documents[d]
    a, b = doc[i], doc[i + 1]
    if rng.random() < 0.5:
      rows.append((d, a, b, "1"))
      continue
    if task == "sop":
      rows.append((d, b, a, "0"))
    elif task == "nsp_same_doc":
      other = _far_sentence(doc, i, rng)
      if other is not None:
        rows.append((d, a, other, "0"))
    else:
      other_doc = rng.randrange(len(documents) - 1)
      other_doc += other_doc >= d  # any document but this one
      sentences = [s for s in documents[other_doc] if _long_enough(s)] or documents[other_doc]
      rows.append((d, a, rng.choice(sentences), "0"))
  return rows


def split_rows(rows, dev_every=5):
  """(train, dev) rows without the document index: dev holds the rows of
  every `dev_every`-th document."""
  train = [r[1:] for r in rows if r[0] % dev_every != dev_every - 1]
  dev = [r[1:] for r in rows if r[0] % dev_every == dev_every - 1]
  return train, dev


def to_tsv(rows):
  """GLUE-style TSV text (header text_a, text_b, label) of (a, b, label) rows.
  Tabs and newlines inside a sentence become spaces."""
  def clean(s):
    return " ".join(s.replace("\t", " ").split())
  lines = ["text_a\ttext_b\tlabel"]
  lines += [f"{clean(a)}\t{clean(b)}\t{label}" for a, b, label in rows]
  return "\n".join(lines) + "\n"


def label_share(rows):
  """Share of label "1" among (a, b, label) rows (0.0 for none)."""
  return sum(r[-1] == "1" for r in rows) / len(rows) if rows else 0.0
