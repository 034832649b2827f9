"""Where a short fine-tuning run's time goes: bench_peers' classify workload
(BERT-tiny, KJV verse pairs, one epoch, the dev set evaluated) split into
tracing, each traced function's first call, the steady steps, prediction
and the rest.

  .venv/bin/python bench/profile_finetune.py [--config=tiny] [--train=640] [--dev=256]

Every call of a length_buckets.StepsByShape (the training step, the
prediction function) is timed: the trace (get_concrete_function), the
first call of each traced function (TensorFlow instantiates and optimizes
the graph then) and the later calls, each to its result read back. Then
finetune.predict of the dev set alone (a built model, traced), as
bench_peers' "classify predict" times it.
"""

import argparse
import os
import sys
import tempfile
import time
import types

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "bench"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main():
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--config", default="tiny", help="configs/bert_<name>.json")
  p.add_argument("--train", type=int, default=640, help="train pairs")
  p.add_argument("--dev", type=int, default=256, help="dev pairs")
  p.add_argument("--batch", type=int, default=32)
  args = p.parse_args()
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import bench_peers  # pylint: disable=g-import-not-at-top
  from bert_tf.data.input import length_buckets  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream import finetune  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.classification import finetune_tsv  # pylint: disable=g-import-not-at-top
  calls = []
  call = length_buckets.StepsByShape.__call__

  def timed_call(self, *batch):
    key = tuple(self._shape(t) for t in tf.nest.flatten(batch))  # pylint: disable=protected-access
    start = time.perf_counter()
    first = key not in self._concrete  # pylint: disable=protected-access
    if first:
      specs = tf.nest.map_structure(lambda t: tf.TensorSpec(self._shape(t), t.dtype), batch)  # pylint: disable=protected-access
      self._concrete[key] = self._function.get_concrete_function(*specs)  # pylint: disable=protected-access
    traced = time.perf_counter()
    out = self._concrete[key](*batch)  # pylint: disable=protected-access
    tf.nest.map_structure(lambda t: t.numpy(), out)
    calls.append((id(self), first, traced - start, time.perf_counter() - traced))
    return out

  with tempfile.TemporaryDirectory() as work:
    pairs = bench_peers._verse_pairs(args.train + args.dev, 3, 20)  # pylint: disable=protected-access
    for name, part in (("train", pairs[:args.train]), ("dev", pairs[args.train:])):
      with open(os.path.join(work, f"{name}.tsv"), "w", encoding="utf-8") as f:
        f.write("sentence1\tsentence2\tlabel\n" + "".join(f"{a}\t{b}\t{l}\n" for a, b, l in part))
    vocab = bench_peers.SHARED_VOCAB
    config = finetune.FinetuneConfig(
        train_file=os.path.join(work, "train.tsv"), dev_file=os.path.join(work, "dev.tsv"),
        output_dir=os.path.join(work, "ft"), vocab_file=vocab, text_a_column="sentence1",
        text_b_column="sentence2", max_seq_length=128, num_train_epochs=1.0,
        learning_rate=1e-4, train_batch_size=args.batch, eval_batch_size=args.batch,
        save_model=False)
    bert = bench_peers.bert_config(types.SimpleNamespace(config=args.config), vocab)
    task = finetune_tsv.load_task(config)
    length_buckets.StepsByShape.__call__ = timed_call
    start = time.perf_counter()
    model, _, _ = finetune_tsv.train_seed(config, bert, task, 0, os.path.join(work, "seed"))
    total = time.perf_counter() - start
    length_buckets.StepsByShape.__call__ = call
    lengths = length_buckets.boundaries(128, config.length_buckets)
    predict_fn = finetune.make_predict_fn(model)
    finetune.predict(model, task.dev, args.batch, predict_fn, lengths)
    start = time.perf_counter()
    finetune.predict(model, task.dev, args.batch, predict_fn, lengths)
    predict_s = time.perf_counter() - start
  owners = list(dict.fromkeys(owner for owner, *_ in calls))
  print(f"BERT-{args.config}, {args.train} train / {args.dev} dev pairs, batch {args.batch}: "
        f"train_seed {total:.2f} s")
  accounted = 0.0
  for name, owner in zip(("training step", "prediction (dev)"), owners):
    mine = [c for c in calls if c[0] == owner]
    trace = sum(c[2] for c in mine)
    first = sum(c[3] for c in mine if c[1])
    later = [c[3] for c in mine if not c[1]]
    accounted += trace + first + sum(later)
    print(f"  {name}: traced {trace:.2f} s, first call {first:.2f} s, {len(later)} later "
          f"calls {sum(later):.2f} s ({1000 * np.median(later):.0f} ms median)")
  print(f"  the rest (model and optimizer built, input pipeline, summaries): "
        f"{total - accounted:.2f} s")
  print(f"finetune.predict of the {args.dev} dev pairs on the trained model: {predict_s:.3f} s "
        f"({args.dev / predict_s:.0f} examples/s)")


if __name__ == "__main__":
  main()
