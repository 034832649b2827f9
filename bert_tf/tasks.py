"""Builds downstream-task TSVs from an installed WordNet 3.0.

    apt-get install wordnet-base      # Debian/Ubuntu: WordNet's files, offline
    python -m bert_tf.tasks --wordnet_dir=/usr/share/wordnet --output_dir=tasks

Writes, each with train.tsv, dev.tsv and test.tsv (header row):

  wic/    word in context (after SuperGLUE's WiC): lemma, pos, sentence1,
          sentence2, label (1: the two WordNet example sentences use the lemma
          in the same sense, 0: in different senses). Balanced labels; split
          by lemma (no lemma in two splits).
  gloss/  synset, words, definition, label (its lexicographer file, e.g.
          noun.animal: 45 classes).

Splits are 80/10/10 by a SHA-256 hash: the same WordNet gives the same
files. The label counts of every split are printed and written to
summary.json. Fine-tune on them with bert_tf.finetune, e.g.
--text_a_column=sentence1 --text_b_column=sentence2 (wic) or
--text_a_column=definition (gloss).
"""

import json
import os

from absl import app
from absl import flags

from bert_tf import cli

FLAGS = flags.FLAGS
TASKS = ("wic", "gloss")


def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  f = flag_values
  flags.DEFINE_string("wordnet_dir", None, "WordNet's dict folder (data.noun, index.noun, "
                      "...; Debian: /usr/share/wordnet).", flag_values=f)
  flags.DEFINE_string("output_dir", None, "Where wic/ and gloss/ are written.",
                      flag_values=f)
  flags.DEFINE_list("tasks", list(TASKS), "Which tasks to build.", flag_values=f)


def build_tasks(wordnet_dir, output_dir, tasks=TASKS):
  """Writes the tasks' TSVs (each atomically) and summary.json.

  Returns:
    dict task -> {split: {label: count}}.
  """
  from bert_tf import file_io as files  # pylint: disable=g-import-not-at-top
  from bert_tf.data import wordnet  # pylint: disable=g-import-not-at-top
  unknown = [t for t in tasks if t not in TASKS]
  if unknown:
    raise ValueError(f"--tasks: unknown task(s) {', '.join(unknown)}; choose from "
                     f"{', '.join(TASKS)}")
  net = wordnet.load(wordnet_dir)
  built = {}
  outputs = []
  for task in tasks:
    rows = wordnet.wic_rows(net) if task == "wic" else wordnet.gloss_rows(net)
    header = wordnet.WIC_HEADER if task == "wic" else wordnet.GLOSS_HEADER
    if not any(rows.values()):
      raise ValueError(f"{wordnet_dir}: no {task} examples (too few synsets?)")
    for split in wordnet.SPLITS:
      outputs.append((os.path.join(output_dir, task, f"{split}.tsv"),
                      wordnet.to_tsv(header, rows[split])))
    built[task] = wordnet.label_counts(rows)
  for path, text in outputs:  # everything built before anything is written
    files.atomic_write(path, text)
  files.atomic_write(os.path.join(output_dir, "summary.json"),
                     json.dumps({"wordnet_dir": wordnet_dir, "label_counts": built},
                                indent=2, sort_keys=True) + "\n")
  return built


def main(argv):
  del argv
  for name in ("wordnet_dir", "output_dir"):
    if not FLAGS[name].value:
      raise app.UsageError(f"--{name} is required")
  built = build_tasks(FLAGS.wordnet_dir, FLAGS.output_dir, FLAGS.tasks)
  for task, counts in built.items():
    for split, labels in counts.items():
      total = sum(labels.values())
      if not total:
        detail = "empty: too few lemmas or synsets for this split"
      elif task == "wic":
        detail = ", ".join(f"label {k}: {v}" for k, v in labels.items())
      else:
        top = sorted(labels.items(), key=lambda kv: -kv[1])
        detail = (f"{len(labels)} classes, largest {top[0][0]} {top[0][1] / total:.1%}, "
                  f"smallest {top[-1][0]} {top[-1][1]}")
      print(f"{task}/{split}.tsv: {total} examples ({detail})")
  print(f"wrote {os.path.join(FLAGS.output_dir, 'summary.json')}")
  return 0


def run():
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
