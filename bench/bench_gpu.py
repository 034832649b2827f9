"""GPU training throughput of BERT pretraining (MLM + NSP): one prepared run.

  python bench/bench_gpu.py                      # BERT-base, 128 tokens, on the GPU
  python bench/bench_gpu.py --config=tiny --batches=8,16 --steps=2 --loops=2   # CPU check

For each precision (bfloat16 mixed, float32) and XLA on/off it trains
bert_tf's default step (`loop.run`, the original optimizer) at growing batch
sizes until one no longer fits in memory (or --batches runs out), each
combination in its own process so that an out-of-memory failure leaves the
others clean, and prints per batch: examples/s, tokens/s, model TFLOP/s and
MFU against --peak_tflops (H200 dense bf16: 989) and against the matmul
peak measured in the same process in that precision. Training FLOPs of a
step come from bert_tf/models/flops.py (encoder 6 x non-embedding weights x
tokens + attention, the MLM head at the masked slots, the NSP head).

Steady state: the first host loop (tracing, XLA compilation) is not timed;
the best of the remaining --loops loops of --steps steps is.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "bench"))

COMBOS = {"bf16+xla": ("bfloat16", True), "bf16": ("bfloat16", False),
          "fp32+xla": ("none", True), "fp32": ("none", False)}


def run_combo(args, combo, records):
  """In this process: each batch of --batches in turn until one fails with
  out-of-memory; prints one JSON line per batch."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from absl import logging  # pylint: disable=g-import-not-at-top
  import bench_training  # pylint: disable=g-import-not-at-top
  from bert_tf.models.config import BertConfig  # pylint: disable=g-import-not-at-top
  from bert_tf.training import loop, objectives  # pylint: disable=g-import-not-at-top
  logging.set_verbosity(logging.WARNING)
  precision, xla = COMBOS[combo]
  bert_config = BertConfig.from_json_file(os.path.join(REPO, "configs", f"bert_{args.config}.json"))
  peak = bench_training.matmul_peak(tf.bfloat16 if precision == "bfloat16" else tf.float32)
  for batch in [int(b) for b in args.batches.split(",")]:
    config = loop.TrainConfig(
        input_file=records, output_dir=tempfile.mkdtemp(), do_train=True,
        max_seq_length=args.seq, max_predictions_per_seq=args.preds, train_batch_size=batch,
        learning_rate=1e-4, num_train_steps=args.loops * args.steps, num_warmup_steps=1,
        save_checkpoints_steps=10 ** 9, iterations_per_loop=args.steps, log_steps=args.steps,
        mixed_precision=precision, jit_compile=xla, shuffle_buffer=100)
    try:
      result = loop.run(config, bert_config)
    except tf.errors.ResourceExhaustedError as e:  # out of memory; anything else fails loudly
      print(json.dumps({"combo": combo, "batch": batch, "error": str(e).splitlines()[0][:200]}),
            flush=True)
      return
    ex_s = max(m["examples_per_second"] for m in result["train_history"][1:])
    step_flops = objectives.OBJECTIVES["mlm_nsp"].train_flops(bert_config, batch, args.seq,
                                                              args.preds)
    model_flops = ex_s / batch * step_flops
    print(json.dumps({"combo": combo, "batch": batch, "examples_per_second": ex_s,
                      "tokens_per_second": ex_s * args.seq, "model_tflops": model_flops / 1e12,
                      "mfu_declared": model_flops / (args.peak_tflops * 1e12),
                      "mfu_measured": model_flops / peak, "matmul_peak_tflops": peak / 1e12}),
          flush=True)


def main():
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--config", default="base", help="configs/bert_<name>.json")
  p.add_argument("--seq", type=int, default=128)
  p.add_argument("--preds", type=int, default=20)
  p.add_argument("--batches", default="256,512,1024,2048,4096")
  p.add_argument("--combos", default=",".join(COMBOS))
  p.add_argument("--steps", type=int, default=10, help="steps per host loop")
  p.add_argument("--loops", type=int, default=3, help="host loops; the first is not timed")
  p.add_argument("--peak_tflops", type=float, default=989.0,
                 help="declared dense peak for the MFU column (H200 bf16: 989)")
  p.add_argument("--combo", default="", help=argparse.SUPPRESS)
  p.add_argument("--records", default="", help=argparse.SUPPRESS)
  args = p.parse_args()
  if args.combo:
    return run_combo(args, args.combo, args.records)
  import bench_training  # pylint: disable=g-import-not-at-top  (imports TensorFlow)
  from bert_tf.models.config import BertConfig  # pylint: disable=g-import-not-at-top
  bert_config = BertConfig.from_json_file(os.path.join(REPO, "configs", f"bert_{args.config}.json"))
  rows = []
  with tempfile.TemporaryDirectory() as work:
    records = os.path.join(work, "train.tfrecord")
    bench_training.write_random_records(records, 2048, args.seq, args.preds,
                                        bert_config.vocab_size)
    for combo in args.combos.split(","):
      child = subprocess.run(
          [sys.executable, __file__, f"--combo={combo}", f"--records={records}"]
          + [f"--{k}={getattr(args, k)}" for k in ("config", "seq", "preds", "batches", "steps",
                                                   "loops", "peak_tflops")],
          stdout=subprocess.PIPE, text=True, check=False)
      lines = [json.loads(line) for line in child.stdout.splitlines() if line.startswith("{")]
      rows += lines
      for r in lines:
        print(f"  {combo} batch {r['batch']}: "
              + (f"out of memory ({r['error']})" if "error" in r else
                 f"{r['examples_per_second']:.1f} ex/s, MFU {r['mfu_declared']:.1%}"), flush=True)
      if child.returncode:
        print(f"  {combo}: the worker exited {child.returncode}", flush=True)
  print(f"\nBERT-{args.config}, {args.seq} tokens, {args.preds} predictions, MLM + NSP, "
        f"original optimizer; MFU against {args.peak_tflops:g} TFLOP/s and the measured matmul peak")
  print(f"{'combo':9} {'batch':>6} {'ex/s':>9} {'tokens/s':>10} {'TFLOP/s':>8} {'MFU':>6} "
        f"{'MFU meas.':>9}")
  for r in rows:
    if "error" not in r:
      print(f"{r['combo']:9} {r['batch']:6d} {r['examples_per_second']:9.1f} "
            f"{r['tokens_per_second']:10.0f} {r['model_tflops']:8.2f} {r['mfu_declared']:6.1%} "
            f"{r['mfu_measured']:9.1%}")


if __name__ == "__main__":
  main()
