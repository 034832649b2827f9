"""Where dynamic masking's input time goes: the records read and parsed
alone against read, parsed and masked (`pipeline.make_dataset` with and
without `DynamicMasking`), on random records of BERT's shapes (seq 128, 20
predictions, vocab 30,522, batch 32).

    .venv/bin/python bench/profile_masking.py [--rounds=2]

Prints the best examples/s of 3 timed runs of 50 batches per round.
"""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_training  # noqa: E402  (this folder's, on the path above)
from bert_tf.data.input import dynamic_masking  # noqa: E402
from bert_tf.data.input import pipeline  # noqa: E402
from bert_tf.data.pretraining import masking as masking_lib  # noqa: E402

SEQ, PREDS, BATCH, VOCAB = 128, 20, 32, 30522


def rate(records, masking, batches=50):
  """Best examples/s over 3 runs of `batches` batches, after 4 untimed."""
  ds = pipeline.make_dataset([records], BATCH, SEQ, PREDS, True, seed=1, shuffle_buffer=1000,
                             masking=masking)
  it = iter(ds)
  for _ in range(4):
    next(it)
  best = 0.0
  for _ in range(3):
    start = time.perf_counter()
    for _ in range(batches):
      next(it)
    best = max(best, batches * BATCH / (time.perf_counter() - start))
  return best


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--rounds", type=int, default=2)
  args = parser.parse_args()
  config = dynamic_masking.DynamicMasking(
      masked_lm_prob=0.15, max_predictions_per_seq=PREDS,
      vocab=masking_lib.MaskingVocab(size=VOCAB, cls_id=101, sep_id=102, mask_id=103,
                                     is_subword=(False,) * VOCAB))
  with tempfile.TemporaryDirectory() as work:
    records = os.path.join(work, "train.tfrecord")
    bench_training.write_random_records(records, 256, SEQ, PREDS, VOCAB)
    for r in range(args.rounds):
      print(f"round {r}: read+parse {rate(records, None):,.0f} ex/s; "
            f"read+parse+mask {rate(records, config):,.0f} ex/s", flush=True)


if __name__ == "__main__":
  main()
