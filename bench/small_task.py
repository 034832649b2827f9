"""A small fine-tuning task from your own held-out text, for the README's
small-data recipe.

    .venv/bin/python bench/small_task.py --heldout_file=runs/mine/heldout.txt \
      --output_dir=runs/mine/small_task

writes output_dir/train.tsv (--train_rows rows, 76 by default: the size of
the task that showed the original recipe doing nothing) and dev.tsv (up to
--dev_rows), columns sentence, label, of one of two tasks (--task):

  returns     (default) does a docstring sentence say what a function
              returns? Label 1 for the sentences that begin "Return" or
              "Returns", 0 for the others, with that first word cut from
              every sentence, so only the rest tells (the sample corpus's
              docstrings: "[Return] a new list containing ..." against
              "[This] module provides ..."); balanced.
  nsp_random  the sentence-pair task of bert_tf.data.pair_tasks (B follows A,
              or is from another document; columns text_a, text_b, label),
              as compare_objectives builds it.

Train and dev rows come from different documents (returns: every 2nd is dev;
nsp_random: every 5th, as compare_objectives). Then
fine-tune with bert_tf.finetune (the README gives the recipes' commands and
figures).
"""

import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bert_tf import cli  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position
from bert_tf.io import file_io as files  # noqa: E402  pylint: disable=wrong-import-position
from bert_tf.data import pair_tasks as probes  # noqa: E402  pylint: disable=wrong-import-position


RETURN_WORDS = ("Return", "Returns")


def returns_rows(documents, seed):
  """(train, dev) rows (sentence, label) of the `returns` task, balanced."""
  rng = random.Random(seed)
  splits = {"train": ([], []), "dev": ([], [])}
  for d, doc in enumerate(documents):
    positives, negatives = splits["dev" if d % 2 else "train"]
    for sentence in doc:
      first, _, rest = sentence.partition(" ")
      if len(rest.split()) < 3:
        continue
      (positives if first in RETURN_WORDS else negatives).append((rest, "1" if first in
                                                                  RETURN_WORDS else "0"))
  out = []
  for positives, negatives in (splits["train"], splits["dev"]):
    n = min(len(positives), len(negatives))
    rows = rng.sample(positives, n) + rng.sample(negatives, n)
    rng.shuffle(rows)
    out.append(rows)
  return out


def to_tsv(rows):
  lines = ["sentence\tlabel"] + [" ".join(s.replace("\t", " ").split()) + f"\t{label}"
                                 for s, label in rows]
  return "\n".join(lines) + "\n"


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--heldout_file", required=True)
  parser.add_argument("--output_dir", required=True)
  parser.add_argument("--train_rows", type=int, default=76)
  parser.add_argument("--dev_rows", type=int, default=400)
  parser.add_argument("--seed", type=int, default=12345)
  parser.add_argument("--task", choices=("returns", "nsp_random"), default="returns")
  args = parser.parse_args()
  with open(args.heldout_file, encoding="utf-8") as f:
    documents = probes.parse_documents(f.read())
  if args.task == "returns":
    train, dev = returns_rows(documents, args.seed)
    write = to_tsv
  else:
    train, dev = probes.split_rows(probes.task_rows(documents, "nsp_random", seed=args.seed))
    write = probes.to_tsv
  train, dev = train[:args.train_rows], dev[:args.dev_rows]
  if len(train) < args.train_rows or not dev:
    sys.exit(f"small_task: {args.heldout_file} gives {len(train)} train and {len(dev)} dev "
             f"rows; --train_rows={args.train_rows} needs more held-out text")
  os.makedirs(args.output_dir, exist_ok=True)
  for name, rows in (("train", train), ("dev", dev)):
    files.atomic_write(os.path.join(args.output_dir, f"{name}.tsv"), write(rows))
    print(f"{name}: {len(rows)} rows, label 1 share {probes.label_share(rows):.2f} -> "
          f"{os.path.join(args.output_dir, name + '.tsv')}")


if __name__ == "__main__":
  main()
