"""The end of a training run: how long stopping the training input pipeline
takes, and how long the run waits for it.

Destroying a tf.data iterator joins its threads, the autotuner's among them,
which sleeps up to a minute between optimizations; a run that destroyed its
training iterator on the main thread sat idle that long at its end.
`loop.run` now hands the iterator to another thread (`_TrainInput`). For
each shape this trains once with `loop.run` and prints, side by side:

  destroy   how long destroying the iterator took (on that thread): the
            wait the run had before, as it grows with the run's length;
  waited    how long the main thread spent from the last training step's
            end to the next thing the run did (the eval, or returning).

  python bench/bench_train_stop.py                       # small and quickstart shapes
  python bench/bench_train_stop.py --shapes quickstart --steps 3000

"small" is about tests/training/test_loop.py's model (hidden 32, 2 layers, seq
32); "quickstart" is the quickstart's (hidden 128, 2 layers, 2 heads, seq
64, 10 predictions, vocab 7,723, batch 32, XLA). Records are random tokens.
"""

import argparse
import os
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "bench"))

import tensorflow as tf  # noqa: E402
from absl import logging  # noqa: E402

from bench_training import write_random_records  # noqa: E402
from bert_tf.models.config import BertConfig  # noqa: E402
from bert_tf.training import evaluation  # noqa: E402
from bert_tf.training import loop  # noqa: E402

SHAPES = {
    # name: (BertConfig fields, seq, predictions, batch, jit)
    "small": (dict(vocab_size=1100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=64, max_position_embeddings=64), 32, 5, 8, False),
    "quickstart": (dict(vocab_size=7723, hidden_size=128, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=512,
                        max_position_embeddings=64, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0), 64, 10, 32, True),
}


def run_shape(name, steps, workdir):
  fields, seq, preds, batch, jit = SHAPES[name]
  bert_config = BertConfig(**fields)
  records = os.path.join(workdir, f"{name}.tfrecord")
  write_random_records(records, 2000, seq, preds, bert_config.vocab_size)
  config = loop.TrainConfig(
      input_file=records, eval_input_file=records, output_dir=os.path.join(workdir, name),
      do_train=True, do_eval=True,
      max_seq_length=seq, max_predictions_per_seq=preds, train_batch_size=batch,
      eval_batch_size=batch, max_eval_steps=1, learning_rate=1e-3, num_train_steps=steps,
      num_warmup_steps=steps // 10, save_checkpoints_steps=steps, iterations_per_loop=100,
      log_steps=steps, jit_compile=jit)
  marks = {}
  original_evaluate = evaluation.evaluate

  def evaluate(*args, **kwargs):  # the first thing after training: its start ends the wait
    marks.setdefault("eval_start", time.time())
    return original_evaluate(*args, **kwargs)

  original_release = loop._TrainInput.release  # pylint: disable=protected-access

  def release(self):
    marks.setdefault("release", time.time())
    marks.setdefault("train_input", self)
    return original_release(self)

  evaluation.evaluate, loop._TrainInput.release = evaluate, release  # pylint: disable=protected-access
  try:
    start = time.time()
    loop.run(config, bert_config)
    seconds = time.time() - start
  finally:
    evaluation.evaluate, loop._TrainInput.release = original_evaluate, original_release  # pylint: disable=protected-access
  train_input = marks["train_input"]
  alive_at_return = train_input.thread.is_alive()
  train_input.thread.join()
  return {"shape": name, "steps": steps, "run_s": seconds,
          "destroy_s": train_input.seconds,
          "waited_s": marks["eval_start"] - marks["release"],
          "destroying_at_return": alive_at_return}


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
  parser.add_argument("--steps", type=int, default=2000,
                      help="training steps a shape (the autotuner's sleep grows with the run)")
  args = parser.parse_args()
  logging.set_verbosity(logging.WARNING)
  rows = []
  with tempfile.TemporaryDirectory() as workdir:
    for name in args.shapes:
      rows.append(run_shape(name, args.steps, workdir))
      r = rows[-1]
      print(f"{r['shape']:>10}: {r['steps']} steps in {r['run_s']:.1f} s; destroying the "
            f"training iterator took {r['destroy_s']:.2f} s (in the background; still going "
            f"when run() returned: {r['destroying_at_return']}); the run waited "
            f"{r['waited_s']:.3f} s", flush=True)


if __name__ == "__main__":
  main()
