"""Serving speed and size of exported SavedModels side by side (e.g. a
distilled student against its teacher): examples/s of the `pretraining`
signature (ids in, masked-LM and sentence log-probs out) on real records.

  python bench/bench_distill.py --saved_model=teacher=/tmp/saved_teacher \\
    --saved_model=student=/tmp/saved_student \\
    --records='data/heldout/*.tfrecord' --max_seq_length=64 --max_predictions_per_seq=10

Each batch size runs every model in turn, `--rounds` times, and reports the
median of the rounds (the models share the machine's noise alike).
"""

import argparse
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402,F401  (the text signatures' ops)

from bert_tf.io import file_io as files  # noqa: E402
from bert_tf.data.input import pipeline  # noqa: E402

_IDS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--saved_model", action="append", required=True,
                      help="NAME=PATH; repeat for each model")
  parser.add_argument("--records", required=True)
  parser.add_argument("--max_seq_length", type=int, default=128)
  parser.add_argument("--max_predictions_per_seq", type=int, default=20)
  parser.add_argument("--batch_sizes", default="1,32")
  parser.add_argument("--batches", type=int, default=20, help="batches timed per round")
  parser.add_argument("--rounds", type=int, default=5)
  args = parser.parse_args()
  models = {}
  for item in args.saved_model:
    name, path = item.split("=", 1)
    loaded = tf.saved_model.load(path)
    params = sum(int(np.prod(v.shape)) for v in loaded.model_variables)
    models[name] = (loaded.signatures["pretraining"], params)
    print(f"{name}: {params / 1e6:.2f}M parameters ({path})")
  record_files = files.expand_patterns(args.records)
  print(f"tf {tf.__version__}, {os.cpu_count()} CPUs, records {args.records}")
  for batch_size in (int(b) for b in args.batch_sizes.split(",")):
    dataset = pipeline.make_dataset(record_files, batch_size, args.max_seq_length,
                                    args.max_predictions_per_seq, is_training=False)
    batches = [{k: tf.cast(b[k], tf.int32) for k in _IDS}
               for b in dataset.take(args.batches)]
    rates = {name: [] for name in models}
    for name, (signature, _) in models.items():  # warm up (tracing, caches)
      signature(**batches[0])
    for _ in range(args.rounds):
      for name, (signature, _) in models.items():
        start = time.perf_counter()
        for batch in batches:
          signature(**batch)
        rates[name].append(len(batches) * batch_size / (time.perf_counter() - start))
    line = "  ".join(f"{name} {statistics.median(r):.1f} ex/s" for name, r in rates.items())
    first = statistics.median(next(iter(rates.values())))
    ratios = "  ".join(f"{name} x{statistics.median(r) / first:.2f}"
                       for name, r in list(rates.items())[1:])
    print(f"batch {batch_size}: {line}  ({ratios} vs {next(iter(rates))})")


if __name__ == "__main__":
  main()
