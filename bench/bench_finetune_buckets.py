"""Fine-tuning and prediction on short texts: batches cut to length buckets
against the original's padding to max_seq_length, side by side.

    .venv/bin/python bench/bench_finetune_buckets.py [--config=configs/bert_mini.json] \
        [--max_seq_length=128] [--train=2000] [--dev=500] [--rounds=2]

The task: which of two corpora a sentence comes from, the sample corpus
(Python's docstrings, bert_tf.data.text.stdlib_corpus) or ../shared/corpora/kjv.txt (the King James
Bible), sentences of 20 to 40 WordPieces (about 30), balanced, seeded. For
each round and each setting (length_buckets 1, the original's full padding,
and 8, the default), in alternating order: one epoch of fine-tuning from random weights
(batch 32, lr 1e-4, one seed) and a prediction of the dev set, each timed
alone. Prints examples/s of training and of prediction per setting, the
ratio buckets / full, and the dev accuracy of each (the same examples,
batches and seeds: equal within float noise).
"""

import argparse
import os
import random
import sys
import tempfile
import time

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _REPO)
_SHARED = os.path.join(_REPO, "..", "shared")


def _sentences(path, tokenizer, rng, low=20, high=40):
  with open(path, encoding="utf-8") as f:
    lines = [l.strip() for l in f if l.strip()]
  rng.shuffle(lines)
  return [l for l in lines[:20000] if low <= len(tokenizer.tokenize(l)) <= high]


def make_task(directory, vocab_file, n_train, n_dev, seed=0):
  """train.tsv / dev.tsv of `sentence<TAB>label` (1: KJV); mean WordPieces."""
  from bert_tf.downstream.classification import tsv as classification  # pylint: disable=g-import-not-at-top
  tokenizer = classification.make_tokenizer(vocab_file, True)
  rng = random.Random(seed)
  kjv = _sentences(os.path.join(_SHARED, "corpora", "kjv.txt"), tokenizer, rng)
  from bert_tf.data.text import stdlib_corpus  # pylint: disable=g-import-not-at-top
  sample = os.path.join(directory, "sample_corpus.txt")
  stdlib_corpus.write_corpus(sample)
  docs = _sentences(sample, tokenizer, rng)
  half = (n_train + n_dev) // 2
  if min(len(kjv), len(docs)) < half:
    raise SystemExit(f"only {len(kjv)} / {len(docs)} sentences of 20-40 pieces: lower --train")
  rows = [(s.replace("\t", " "), 1) for s in kjv[:half]] + [(s.replace("\t", " "), 0)
                                                             for s in docs[:half]]
  rng.shuffle(rows)
  pieces = sum(len(tokenizer.tokenize(s)) for s, _ in rows) / len(rows)
  for name, part in (("train", rows[:n_train]), ("dev", rows[n_train:n_train + n_dev])):
    with open(os.path.join(directory, f"{name}.tsv"), "w", encoding="utf-8") as f:
      f.write("sentence\tlabel\n" + "".join(f"{s}\t{l}\n" for s, l in part))
  return pieces


def run_setting(args, bert_config, task_dir, vocab_file, buckets, out_dir):
  """(train examples/s, predict examples/s, dev accuracy) of one setting."""
  from bert_tf.downstream import finetune  # pylint: disable=g-import-not-at-top
  from bert_tf.data.input import length_buckets  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.classification import finetune_tsv  # pylint: disable=g-import-not-at-top
  config = finetune.FinetuneConfig(
      train_file=os.path.join(task_dir, "train.tsv"), dev_file=os.path.join(task_dir, "dev.tsv"),
      output_dir=out_dir, vocab_file=vocab_file, max_seq_length=args.max_seq_length,
      num_train_epochs=1.0, learning_rate=1e-4, train_batch_size=32, eval_batch_size=32,
      seeds=1, save_model=False, length_buckets=buckets)
  task = finetune_tsv.load_task(config)
  start = time.perf_counter()
  model, metrics, _ = finetune_tsv.train_seed(config, bert_config, task, 0, out_dir)
  train_s = time.perf_counter() - start
  lengths = length_buckets.boundaries(config.max_seq_length, buckets)
  predict_fn = finetune.make_predict_fn(model)
  finetune.predict(model, task.dev, 32, predict_fn, lengths)  # traced before timing
  start = time.perf_counter()
  finetune.predict(model, task.dev, 32, predict_fn, lengths)
  predict_s = time.perf_counter() - start
  n_train = len(task.train_labels) // 32 * 32
  return n_train / train_s, len(task.dev_labels) / predict_s, metrics["accuracy"]


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--config", default=os.path.join(_REPO, "configs", "bert_mini.json"))
  parser.add_argument("--vocab", default=os.path.join(_SHARED, "vocab",
                                                      "bert-base-uncased-vocab.txt"))
  parser.add_argument("--max_seq_length", type=int, default=128)
  parser.add_argument("--train", type=int, default=2000)
  parser.add_argument("--dev", type=int, default=500)
  parser.add_argument("--rounds", type=int, default=2)
  args = parser.parse_args()
  if not os.path.exists(os.path.join(_SHARED, "corpora", "kjv.txt")):
    raise SystemExit(f"needs ../shared (kjv.txt and the uncased vocab), not found at {_SHARED}")
  from bert_tf.models.config import BertConfig  # pylint: disable=g-import-not-at-top
  bert_config = BertConfig.from_json_file(args.config)  # its vocab_size: the uncased vocab's
  with tempfile.TemporaryDirectory() as tmp:
    pieces = make_task(tmp, args.vocab, args.train, args.dev)
    print(f"task: {args.train} train / {args.dev} dev sentences, {pieces:.1f} WordPieces on "
          f"average, max_seq_length {args.max_seq_length}; model {args.config}")
    figures = {1: [], 8: []}
    for r in range(args.rounds):
      for buckets in ((1, 8) if r % 2 == 0 else (8, 1)):
        out = os.path.join(tmp, f"r{r}b{buckets}")
        figures[buckets].append(run_setting(args, bert_config, tmp, args.vocab, buckets, out))
        t, p, a = figures[buckets][-1]
        print(f"round {r} length_buckets={buckets}: train {t:.1f} ex/s, predict {p:.1f} ex/s, "
              f"dev accuracy {a:.4f}", flush=True)
  best = {b: (max(f[0] for f in v), max(f[1] for f in v)) for b, v in figures.items()}
  print(f"\n{'setting':<28}{'train ex/s':>12}{'predict ex/s':>14}  dev accuracy (each round)")
  for b, name in ((1, "full padding (original)"), (8, "8 length buckets")):
    print(f"{name:<28}{best[b][0]:>12.1f}{best[b][1]:>14.1f}  "
          f"{' / '.join(f'{f[2]:.4f}' for f in figures[b])}")
  print(f"ratio buckets / full: train {best[8][0] / best[1][0]:.2f}x, "
        f"predict {best[8][1] / best[1][1]:.2f}x (best round of each)")


if __name__ == "__main__":
  main()
