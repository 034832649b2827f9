"""The device check of issue 23: what only a GPU can show, in one command.

  python bench/bench_gpu.py                # on a GPU machine (one H200: under 8 minutes)
  python bench/bench_gpu.py --cpu_smoke    # tiny sizes on CPU: checks the script runs

Without a GPU (and without --cpu_smoke) it stops at once with a one-line
message and exit status 1. Each section prints as it goes, in its own
process (a failure or out-of-memory in one leaves the others clean):

1. ELECTRA's corruption at vocab 30,522 with TensorFloat-32 on: the
   corrupted input and its labels checked id for id against an integer
   reference, and the old float32-einsum write counted on the same ids (it
   rounds odd ids above 2048 where TF32 is in effect: Ampere and later).
2. Each objective's loss in bfloat16 against float32 (TF32 off for the
   reference) on one batch and the same weights, with the tolerance of
   tests/training/test_precision.py.
3. Training throughput of BERT pretraining (MLM + NSP): for each precision
   (bfloat16 mixed, float32, which runs in TF32 on the GPU) and XLA on/off
   it trains bert_tf's default step (`loop.run`, the original optimizer) at
   each of --batches until one no longer fits in memory, and prints per
   batch examples/s, tokens/s, model TFLOP/s and MFU against --peak_tflops
   (H200 dense bf16: 989) and against the matmul peak measured in the same
   process in that precision. Training FLOPs of a step come from
   bert_tf/models/flops.py. Steady state: the first host loop (tracing,
   XLA compilation) is not timed; the best of the remaining --loops loops
   of --steps steps is.
4. The input pipeline alone (static records, and the same records masked
   dynamically in tf.data) in examples/s against the fastest step rate of
   section 3: whether it keeps up.
5. Against transformers + PyTorch on the same GPU (when torch and
   transformers>=5 are installed: `pip install -e .[peers]`; otherwise one
   line says what is missing and the section is skipped, not failed):
   bench/bench_peers.py's pretraining-step and pair fine-tuning workloads at
   --config, their pairing checks, and the ratio ours / theirs beside the MFU
   of section 3.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

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
  from bert_tf.training import loop, objectives  # pylint: disable=g-import-not-at-top
  logging.set_verbosity(logging.WARNING)
  precision, xla = COMBOS[combo]
  bert_config = _bert_config(args)
  peak = bench_training.matmul_peak(tf.bfloat16 if precision == "bfloat16" else tf.float32,
                                    **({"n": 512, "seconds": 0.5} if args.cpu_smoke else {}))
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


ELECTRA_VOCAB = 30522
# tests/training/test_precision.py's tolerance (relative) for bf16 vs fp32.
LOSS_RTOL = 2e-3
LOSS_OBJECTIVES = ("mlm_nsp", "mlm_sop", "mlm", "electra", "distill_mlm")


def _bert_config(args):
  from bert_tf.models.config import BertConfig  # pylint: disable=g-import-not-at-top
  return BertConfig.from_json_file(os.path.join(REPO, "configs", f"bert_{args.config}.json"))


def _int_scatter_reference(ids, positions, values, real):
  """numpy: a copy of ids [b, s] with values [b, p] written where real."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  out = ids.copy()
  b, p = np.nonzero(real)
  out[b, positions[b, p]] = values[b, p]
  return out


def _random_batch(batch, seq, preds, vocab, seed=0, top=False):
  """A masked batch of random ids ([MASK] = 103); with `top`, the masked
  originals are odd ids in the top 4000 of the vocab (TF32 rounds them)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(seed)
  low = vocab - 4000 if top else 999
  ids = rng.integers(low, vocab, (batch, seq)).astype(np.int32)
  positions = np.sort(np.argsort(rng.random((batch, seq - 2)), axis=1)[:, :preds] + 1,
                      axis=1).astype(np.int32)
  originals = np.take_along_axis(ids, positions, 1) | (1 if top else 0)
  originals = np.minimum(originals, vocab - 1).astype(np.int32)
  weights = np.ones((batch, preds), np.float32)
  weights[:, -2:] = 0.0  # padding predictions: position 0, id 0, weight 0
  positions[:, -2:] = 0
  originals[:, -2:] = 0
  text = ids.copy()
  real = weights > 0
  rows = np.arange(batch)[:, None]
  text[rows, positions] = np.where(real, 103, text[rows, positions])
  text[:, 0] = 101
  return {"input_ids": text, "input_mask": np.ones((batch, seq), np.int32),
          "segment_ids": (np.arange(seq) >= seq // 2).astype(np.int32)[None].repeat(batch, 0),
          "masked_lm_positions": positions, "masked_lm_ids": originals,
          "masked_lm_weights": weights,
          "next_sentence_labels": rng.integers(0, 2, (batch, 1)).astype(np.int32)}


def run_electra(args):
  """Section 1: ELECTRA's corrupted ids under TF32, against integers."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert_tf.models import electra  # pylint: disable=g-import-not-at-top
  tf.config.experimental.enable_tensor_float_32_execution(True)
  config = _bert_config(args).replace(vocab_size=ELECTRA_VOCAB)
  model = electra.ElectraPretrainer(config, mask_token_id=103, seed=5)
  f = _random_batch(args.electra_batch, args.seq, args.preds, ELECTRA_VOCAB, top=True)
  out = model({k: tf.constant(v) for k, v in f.items()}, training=True)
  real = f["masked_lm_weights"] > 0
  original_text = _int_scatter_reference(f["input_ids"], f["masked_lm_positions"],
                                         f["masked_lm_ids"], real)
  sampled = out["sampled_ids"].numpy()
  want = _int_scatter_reference(original_text, f["masked_lm_positions"], sampled, real)
  got = out["corrupted_ids"].numpy()
  labels_ok = np.array_equal(out["replaced_labels"].numpy(), (want != original_text))
  # The old write, on the same device: one_hot(positions) x float32(ids).
  with tf.device("/GPU:0" if tf.config.list_physical_devices("GPU") else "/CPU:0"):
    hits = tf.one_hot(f["masked_lm_positions"], args.seq, dtype=tf.float32) * tf.cast(
        real, tf.float32)[..., None]
    old = tf.einsum("bps,bp->bs", hits, tf.cast(sampled, tf.float32)).numpy()
  written = (hits.numpy().max(axis=1) > 0)
  old_wrong = int(np.sum(np.round(old[written]).astype(np.int64) != want[written]))
  print(json.dumps({"section": "electra", "ids_checked": int(got.size),
                    "ids_wrong": int(np.sum(got != want)), "labels_exact": bool(labels_ok),
                    "masked_ids": int(written.sum()),
                    "sampled_above_2048": int(np.sum(sampled[real] > 2048)),
                    "old_einsum_wrong": old_wrong,
                    "tf32": bool(tf.config.experimental.tensor_float_32_execution_enabled())}),
        flush=True)


def _objective_and_model(name, dtype, config):
  import keras  # pylint: disable=g-import-not-at-top
  from bert_tf.models import distillation, modeling  # pylint: disable=g-import-not-at-top
  from bert_tf.training import objectives  # pylint: disable=g-import-not-at-top
  keras.utils.set_random_seed(1)
  if name.startswith("distill_"):
    objective = objectives.DistillationObjective(objectives.OBJECTIVES["mlm"])
    teacher = modeling.BertPretrainer(config, dtype=dtype, sentence_head=False)
    student = modeling.BertPretrainer(
        config.replace(num_hidden_layers=max(1, config.num_hidden_layers // 2)), dtype=dtype,
        sentence_head=False)
    return objective, distillation.Distiller(student, teacher)
  if name == "electra":
    objective = objectives.ElectraObjective(objectives.ElectraSettings(mask_token_id=103, seed=3))
  else:
    objective = objectives.OBJECTIVES[name]
  return objective, objective.build_model(config, dtype=dtype)


def run_losses(args):
  """Section 2: each objective's bfloat16 loss against float32's."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  config = _bert_config(args)
  f = _random_batch(args.loss_batch, args.seq, args.preds, config.vocab_size, seed=2)
  features = {k: tf.constant(v) for k, v in f.items()}
  for name in LOSS_OBJECTIVES:
    losses = {}
    for dtype in ("float32", "mixed_bfloat16"):
      # The float32 reference without TF32: true float32 matmuls.
      tf.config.experimental.enable_tensor_float_32_execution(dtype != "float32")
      objective, model = _objective_and_model(name, dtype, config)
      if dtype == "float32":
        weights = model.get_weights()
      else:
        model.set_weights(weights)
      sums = objective.loss_sums(model(features, training=False), features)
      losses[dtype] = float(objective.replica_loss(sums, objective.global_counts(features)))
      del model
    rel = abs(losses["mixed_bfloat16"] - losses["float32"]) / abs(losses["float32"])
    print(json.dumps({"section": "losses", "objective": name, "float32": losses["float32"],
                      "bfloat16": losses["mixed_bfloat16"], "relative": rel,
                      "within": rel <= LOSS_RTOL}), flush=True)


def run_pipeline(args, records):
  """Section 4: examples/s of the input pipeline alone, static and dynamic."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert_tf.data.input import dynamic_masking, pipeline  # pylint: disable=g-import-not-at-top
  from bert_tf.data.pretraining import masking  # pylint: disable=g-import-not-at-top
  vocab_size = _bert_config(args).vocab_size
  dynamic = dynamic_masking.DynamicMasking(
      masked_lm_prob=0.15, max_predictions_per_seq=args.preds,
      vocab=masking.MaskingVocab(size=vocab_size, cls_id=101, sep_id=102, mask_id=103,
                                 is_subword=(False,) * vocab_size))
  batch = args.pipeline_batch
  for kind, mask in (("static", None), ("dynamic", dynamic)):
    ds = pipeline.make_dataset([records], batch, args.seq, args.preds, True, seed=1,
                               shuffle_buffer=1000, masking=mask)
    it = iter(ds)
    for _ in range(5):
      next(it)
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < args.pipeline_seconds:
      next(it)
      n += 1
    rate = n * batch / (time.perf_counter() - start)
    print(json.dumps({"section": "pipeline", "records": kind, "batch": batch,
                      "examples_per_second": rate, "cpus": os.cpu_count()}), flush=True)


def _child(args, section, records="", combo=""):
  """Runs one section in a fresh process; returns its JSON lines."""
  flags = [f"--{k}={getattr(args, k)}" for k in (
      "config", "seq", "preds", "batches", "steps", "loops", "peak_tflops", "electra_batch",
      "loss_batch", "pipeline_batch", "pipeline_seconds")]
  child = subprocess.run(
      [sys.executable, __file__, f"--section={section}", f"--records={records}",
       f"--combo={combo}"] + flags + (["--cpu_smoke"] if args.cpu_smoke else []),
      stdout=subprocess.PIPE, text=True, check=False)
  lines = [json.loads(line) for line in child.stdout.splitlines() if line.startswith("{")]
  if child.returncode:
    print(f"  {section} {combo}: the worker exited {child.returncode}", flush=True)
  return lines, child.returncode


def run_peers(args):
  """Section 5: bench_peers' pretrain and classify workloads in a child
  process; returns the failed checks (none when the peers are missing)."""
  import bench_peers  # pylint: disable=g-import-not-at-top  (imports neither TF nor torch)
  print("\n[5] against transformers + PyTorch (bench/bench_peers.py: pretraining step, pair "
        "fine-tuning and prediction)", flush=True)
  missing = bench_peers.missing_peers()
  if missing:
    print(f"  skipped: the peers are not installed (missing {missing}; pip install -e "
          ".[peers])", flush=True)
    return []
  flags = ["--workloads=pretrain,classify", "--no-keras_hub", f"--config={args.config}",
           f"--rounds={args.peers_rounds}"] + (["--smoke"] if args.cpu_smoke else [])
  child = subprocess.run([sys.executable, bench_peers.__file__] + flags, stdout=subprocess.PIPE,
                         text=True, check=False)
  lines = child.stdout.splitlines()
  for line in lines:
    if "check:" in line or "examples/s ->" in line or line.startswith("bench_peers"):
      print(f"  {line.strip()}", flush=True)
  if child.returncode or sum("-> PASS" in line for line in lines) != 2:
    print(f"  bench_peers exited {child.returncode}", flush=True)
    return ["peers"]
  return []


def main():
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--config", default="base", help="configs/bert_<name>.json")
  p.add_argument("--seq", type=int, default=128)
  p.add_argument("--preds", type=int, default=20)
  p.add_argument("--batches", default="512")
  p.add_argument("--combos", default=",".join(COMBOS))
  p.add_argument("--steps", type=int, default=10, help="steps per host loop")
  p.add_argument("--loops", type=int, default=3, help="host loops; the first is not timed")
  p.add_argument("--peak_tflops", type=float, default=989.0,
                 help="declared dense peak for the MFU column (H200 bf16: 989)")
  p.add_argument("--electra_batch", type=int, default=64)
  p.add_argument("--loss_batch", type=int, default=32)
  p.add_argument("--pipeline_batch", type=int, default=256)
  p.add_argument("--pipeline_seconds", type=float, default=10.0)
  p.add_argument("--sections", default="electra,losses,throughput,pipeline,peers")
  p.add_argument("--peers_rounds", type=int, default=2, help="section 5's alternating rounds")
  p.add_argument("--cpu_smoke", action="store_true",
                 help="tiny sizes on CPU (BERT-tiny, 32 tokens, batch 8): checks the script")
  p.add_argument("--section", default="", help=argparse.SUPPRESS)
  p.add_argument("--combo", default="", help=argparse.SUPPRESS)
  p.add_argument("--records", default="", help=argparse.SUPPRESS)
  args = p.parse_args()
  if args.cpu_smoke and not args.section:
    for key, value in (("config", "tiny"), ("seq", 32), ("preds", 5), ("batches", "8"),
                       ("steps", 2), ("loops", 2), ("combos", "bf16+xla,fp32"), ("electra_batch", 4), ("loss_batch", 4),
                       ("pipeline_batch", 8), ("pipeline_seconds", 1.0)):
      if getattr(args, key) == p.get_default(key):
        setattr(args, key, value)
  if args.section:
    if args.cpu_smoke:
      os.environ["CUDA_VISIBLE_DEVICES"] = ""
    if args.section == "combo":
      return run_combo(args, args.combo, args.records)
    if args.section == "pipeline":
      return run_pipeline(args, args.records)
    return {"electra": run_electra, "losses": run_losses}[args.section](args)

  # === No GPU: stop at once ===
  if not args.cpu_smoke:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    if not tf.config.list_physical_devices("GPU"):
      print("bench_gpu: no GPU visible to TensorFlow (tf.config.list_physical_devices('GPU') "
            "is empty); nothing measured (--cpu_smoke runs tiny sizes on CPU)", flush=True)
      sys.exit(1)
  begin = time.perf_counter()
  sections = args.sections.split(",")
  failed = []
  print(f"bench_gpu: BERT-{args.config}, {args.seq} tokens, {args.preds} predictions"
        + (" (CPU smoke run)" if args.cpu_smoke else ""), flush=True)

  # === 1. ELECTRA's ids under TF32 ===
  if "electra" in sections:
    print("\n[1] ELECTRA corruption at vocab 30,522, TF32 on, against an integer reference",
          flush=True)
    lines, rc = _child(args, "electra")
    for r in lines:
      ok = r["ids_wrong"] == 0 and r["labels_exact"]
      print(f"  corrupted ids: {r['ids_checked'] - r['ids_wrong']}/{r['ids_checked']} exact, "
            f"labels {'exact' if r['labels_exact'] else 'WRONG'} ({r['masked_ids']} masked, "
            f"{r['sampled_above_2048']} sampled ids > 2048); TF32 "
            f"{'on' if r['tf32'] else 'off'}: the old float32 einsum gets "
            f"{r['old_einsum_wrong']}/{r['masked_ids']} masked ids wrong here -> "
            f"{'PASS' if ok else 'FAIL'}", flush=True)
      if not ok:
        failed.append("electra")
    if rc or not lines:
      failed.append("electra")

  # === 2. bfloat16 against float32 losses ===
  if "losses" in sections:
    print(f"\n[2] each objective's loss, bfloat16 against float32 (TF32 off), one batch of "
          f"{args.loss_batch}, tolerance {LOSS_RTOL:g} relative", flush=True)
    lines, rc = _child(args, "losses")
    for r in lines:
      print(f"  {r['objective']:12} float32 {r['float32']:.5f}  bfloat16 {r['bfloat16']:.5f}  "
            f"relative {r['relative']:.2e} -> {'PASS' if r['within'] else 'FAIL'}", flush=True)
      if not r["within"]:
        failed.append(f"losses {r['objective']}")
    if rc or len(lines) != len(LOSS_OBJECTIVES):
      failed.append("losses")

  with tempfile.TemporaryDirectory() as work:
    records = os.path.join(work, "train.tfrecord")
    if "throughput" in sections or "pipeline" in sections:
      import bench_training  # pylint: disable=g-import-not-at-top  (imports TensorFlow)
      bench_training.write_random_records(records, 2048, args.seq, args.preds,
                                          _bert_config(args).vocab_size)

    # === 3. Training throughput ===
    rows = []
    if "throughput" in sections:
      print("\n[3] training throughput (MLM + NSP, original optimizer), XLA on and off",
            flush=True)
      for combo in args.combos.split(","):
        lines, rc = _child(args, "combo", records, combo)
        rows += lines
        for r in lines:
          print(f"  {combo} batch {r['batch']}: "
                + (f"out of memory ({r['error']})" if "error" in r else
                   f"{r['examples_per_second']:.1f} ex/s, MFU {r['mfu_declared']:.1%}"),
                flush=True)
        if rc or not lines:
          failed.append(f"throughput {combo}")
      print(f"\n  BERT-{args.config}; MFU against {args.peak_tflops:g} TFLOP/s and the "
            "measured matmul peak")
      print(f"  {'combo':9} {'batch':>6} {'ex/s':>9} {'tokens/s':>10} {'TFLOP/s':>8} "
            f"{'MFU':>6} {'MFU meas.':>9}")
      for r in rows:
        if "error" not in r:
          print(f"  {r['combo']:9} {r['batch']:6d} {r['examples_per_second']:9.1f} "
                f"{r['tokens_per_second']:10.0f} {r['model_tflops']:8.2f} "
                f"{r['mfu_declared']:6.1%} {r['mfu_measured']:9.1%}", flush=True)

    # === 4. Does the input pipeline keep up? ===
    if "pipeline" in sections:
      fastest = max([r["examples_per_second"] for r in rows if "error" not in r], default=0.0)
      print(f"\n[4] input pipeline alone, batch {args.pipeline_batch}, against the fastest "
            f"step rate above ({fastest:.1f} ex/s)", flush=True)
      lines, rc = _child(args, "pipeline", records)
      for r in lines:
        ratio = r["examples_per_second"] / fastest if fastest else float("inf")
        verdict = ("no step rate to compare" if not fastest else
                   "keeps up" if ratio >= 1.0 else "DOES NOT keep up")
        print(f"  {r['records']:8} records: {r['examples_per_second']:.0f} ex/s on "
              f"{r['cpus']} CPUs, {ratio:.2f}x the step rate -> {verdict}", flush=True)
      if rc or len(lines) != 2:
        failed.append("pipeline")

  # === 5. Against transformers + PyTorch ===
  if "peers" in sections:
    failed += run_peers(args)

  print(f"\nbench_gpu: {time.perf_counter() - begin:.0f} s; "
        + (f"FAILED: {', '.join(failed)}" if failed else "every check passed"), flush=True)
  sys.exit(1 if failed else 0)


if __name__ == "__main__":
  main()
