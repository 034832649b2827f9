"""Training throughput: bert_tf's MLM+NSP step against keras-hub's
BertMaskedLM.fit (MLM only) on the same config and data, side by side.

For each config it prints examples/s and tokens/s of both, their ratio, and
the model FLOPs utilization (MFU) of ours: (6 x non-embedding parameters x
tokens + 12 x layers x hidden x seq x tokens for attention, the encoder
term of bert_tf.models.flops) per second,
against this machine's measured matmul peak (a large tf.matmul in the
compute dtype). Steady state: the first host loop (tracing) is not counted;
the two are timed in alternating rounds and the best loop of each is
reported (as timeit does), so load from other processes on a shared machine
biases neither side.

  python bench/bench_training.py                       # tiny, mini, small on CPU
  python bench/bench_training.py --config base --mixed_precision bfloat16  # on a GPU
  python bench/bench_training.py --config tiny --seq 64 --preds 10 --vocab_size 7723 \
      --dropout 0 --compare_jit --loops 4 --steps_per_loop 100   # the quickstart's shape

With --compare_jit the baseline is our own step without XLA instead of
keras-hub's fit: the two alternate, and the ratio is XLA / plain.
"""

import argparse
import os
import random
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from absl import logging  # noqa: E402

from bert_tf.data.records import schema  # noqa: E402
from bert_tf.models import flops  # noqa: E402
from bert_tf.training import loop  # noqa: E402
from bert_tf.models.config import BertConfig  # noqa: E402


def write_random_records(path, n, seq, preds, vocab, seed=0):
  """Full-length instances of random tokens with `preds` masked positions."""
  rng = random.Random(seed)
  encoder = schema.ExampleEncoder(seq, preds, vocab)
  with tf.io.TFRecordWriter(path) as writer:
    for _ in range(n):
      ids = [rng.randrange(999, vocab) for _ in range(seq)]
      positions = sorted(rng.sample(range(1, seq - 1), preds))
      targets = [ids[p] for p in positions]
      for p in positions:
        ids[p] = 103
      # [CLS] A [SEP] B [SEP] of seq // 2 and seq - seq // 2 segment ids.
      writer.write(encoder.encode_batch([ids], [seq], [seq // 2], [positions], [targets], [preds],
                                        [rng.randint(0, 1)])[0])


def matmul_peak(dtype, n=4096, seconds=3.0):
  """Measured FLOP/s of a large square matmul in `dtype` (the machine's
  practical peak for dense layers)."""
  a = tf.random.normal([n, n], dtype=tf.float32)
  a = tf.cast(a, dtype)
  b = tf.cast(tf.random.normal([n, n], dtype=tf.float32), dtype)

  @tf.function
  def mm(x, y):
    return tf.reduce_sum(tf.cast(tf.matmul(x, y)[:1, :1], tf.float32))

  mm(a, b).numpy()
  runs, start = 0, time.time()
  while time.time() - start < seconds:
    mm(a, b).numpy()
    runs += 1
  return 2 * n ** 3 * runs / (time.time() - start)


def flops_per_token(bert_config, seq):
  """Training FLOPs per token of the encoder (6 x non-embedding params +
  attention): bert_tf.models.flops, the heads left out as MFU usually does."""
  return flops.encoder_flops_per_token(bert_config, seq)


def bench_ours(bert_config, path, args, workdir, jit_compile=None):
  jit_compile = args.jit_compile if jit_compile is None else jit_compile
  steps = args.loops * args.steps_per_loop
  config = loop.TrainConfig(
      input_file=path, output_dir=os.path.join(workdir, "ours"), do_train=True,
      max_seq_length=args.seq, max_predictions_per_seq=args.preds,
      train_batch_size=args.batch, learning_rate=1e-4, num_train_steps=steps,
      num_warmup_steps=1, save_checkpoints_steps=10 ** 9, iterations_per_loop=args.steps_per_loop,
      log_steps=args.steps_per_loop, mixed_precision=args.mixed_precision,
      jit_compile=jit_compile, strategy=args.strategy, optimizer=args.optimizer,
      shuffle_buffer=100)
  result = loop.run(config, bert_config)
  return max(m["examples_per_second"] for m in result["train_history"][1:])


def bench_keras_hub(bert_config, path, args):
  import keras_hub  # pylint: disable=g-import-not-at-top
  dtype = {"none": None, "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}[
      args.mixed_precision]
  backbone = keras_hub.models.BertBackbone(
      vocabulary_size=bert_config.vocab_size, num_layers=bert_config.num_hidden_layers,
      num_heads=bert_config.num_attention_heads, hidden_dim=bert_config.hidden_size,
      intermediate_dim=bert_config.intermediate_size, dropout=bert_config.hidden_dropout_prob,
      max_sequence_length=bert_config.max_position_embeddings, dtype=dtype)
  model = keras_hub.models.BertMaskedLM(backbone=backbone, preprocessor=None)
  model.compile(optimizer=keras.optimizers.AdamW(1e-4),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                weighted_metrics=["sparse_categorical_accuracy"])

  def to_fit(serialized):
    f = schema.parse_examples(serialized, args.seq, args.preds)
    x = {"token_ids": f["input_ids"], "segment_ids": f["segment_ids"],
         "padding_mask": f["input_mask"], "mask_positions": f["masked_lm_positions"]}
    return x, f["masked_lm_ids"], f["masked_lm_weights"]

  ds = (tf.data.TFRecordDataset(path).repeat().shuffle(100)
        .batch(args.batch, drop_remainder=True).map(to_fit).prefetch(tf.data.AUTOTUNE))
  times = []

  class Timer(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
      self.start = time.time()

    def on_epoch_end(self, epoch, logs=None):
      times.append(time.time() - self.start)

  model.fit(ds, steps_per_epoch=args.steps_per_loop, epochs=args.loops, verbose=0,
            callbacks=[Timer()])
  return args.steps_per_loop * args.batch / min(times[1:])


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--config", default="tiny,mini,small",
                      help="comma-separated names of configs/bert_<name>.json")
  parser.add_argument("--seq", type=int, default=128)
  parser.add_argument("--preds", type=int, default=20)
  parser.add_argument("--batch", type=int, default=32)
  parser.add_argument("--loops", type=int, default=3, help="host loops; the first is not timed")
  parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of ours/keras-hub")
  parser.add_argument("--steps_per_loop", type=int, default=3)
  parser.add_argument("--mixed_precision", default="none", choices=["none", "bfloat16", "float16"])
  parser.add_argument("--jit_compile", action="store_true")
  parser.add_argument("--optimizer", default="adamw_original",
                      choices=["adamw_original", "adamw", "lamb"])
  parser.add_argument("--strategy", default="")
  parser.add_argument("--no_keras_hub", action="store_true")
  parser.add_argument("--compare_jit", action="store_true",
                      help="time ours with XLA against ours without it (instead of keras-hub)")
  parser.add_argument("--vocab_size", type=int, default=None,
                      help="vocab size (default: the config's; the quickstart's is ~7.7k)")
  parser.add_argument("--dropout", type=float, default=None,
                      help="hidden and attention dropout (default: the config's)")
  args = parser.parse_args()
  logging.set_verbosity(logging.WARNING)

  compute_dtype = {"none": tf.float32, "bfloat16": tf.bfloat16, "float16": tf.float16}[
      args.mixed_precision]
  peak = matmul_peak(compute_dtype)
  device = "GPU" if tf.config.list_physical_devices("GPU") else f"CPU ({os.cpu_count()} cores)"
  print(f"{device}: measured {compute_dtype.name} matmul peak {peak / 1e9:.1f} GFLOP/s", flush=True)

  rows = []
  baseline = "ours without XLA" if args.compare_jit else "keras-hub fit"
  with tempfile.TemporaryDirectory() as workdir:
    for name in args.config.split(","):
      bert_config = BertConfig.from_json_file(os.path.join(REPO, "configs", f"bert_{name}.json"))
      if args.vocab_size is not None:
        bert_config = bert_config.replace(vocab_size=args.vocab_size)
      if args.dropout is not None:
        bert_config = bert_config.replace(hidden_dropout_prob=args.dropout,
                                          attention_probs_dropout_prob=args.dropout)
      path = os.path.join(workdir, f"{name}.tfrecord")
      write_random_records(path, 512, args.seq, args.preds, bert_config.vocab_size)
      ours, theirs = [], [float("nan")]
      for r in range(args.rounds):
        if args.compare_jit:
          ours.append(bench_ours(bert_config, path, args, os.path.join(workdir, f"{name}{r}x"),
                                 jit_compile=True))
          theirs.append(bench_ours(bert_config, path, args, os.path.join(workdir, f"{name}{r}"),
                                   jit_compile=False))
          continue
        ours.append(bench_ours(bert_config, path, args, os.path.join(workdir, f"{name}{r}")))
        if not args.no_keras_hub:
          theirs.append(bench_keras_hub(bert_config, path, args))
      ours, theirs = max(ours), max(theirs[1:] or theirs)
      mfu = ours * args.seq * flops_per_token(bert_config, args.seq) / peak
      rows.append((name, ours, theirs, mfu))
      print(f"  {name}: ours {ours:.1f} ex/s, {baseline} {theirs:.1f} ex/s", flush=True)

  tokens = args.seq
  jit = "XLA against plain" if args.compare_jit else f"jit_compile={args.jit_compile}"
  dropout = "the config's dropout" if args.dropout is None else f"dropout {args.dropout:g}"
  print(f"\nseq {args.seq}, batch {args.batch}, {args.mixed_precision}, {jit}, {dropout}, "
        f"best of {args.rounds} rounds x {args.loops - 1} loops x {args.steps_per_loop} steps")
  ours_name, base_name = ("XLA", "plain") if args.compare_jit else ("ours", "keras-hub")
  print(f"{'config':8} {ours_name + ' ex/s':>10} {ours_name + ' tok/s':>11} "
        f"{base_name + ' ex/s':>15} {base_name + ' tok/s':>16} "
        f"{ours_name + '/' + base_name:>15} {'MFU':>6}")
  for name, ours, theirs, mfu in rows:
    print(f"{name:8} {ours:10.1f} {ours * tokens:11.0f} {theirs:15.1f} {theirs * tokens:16.0f} "
          f"{ours / theirs:15.2f} {mfu:6.1%}")


if __name__ == "__main__":
  main()
