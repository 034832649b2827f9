"""Side by side: bert_tf against the original google-research/bert pretraining.

Trains BERT-tiny (configs/bert_tiny.json) twice on the same KJV records, with
the same steps, batch, learning rate and warmup (10% of the steps), then
evaluates both on the same held-out batches and prints one table:

  - "original": google-research/bert's own graph, imported at run time from
    --original_dir (never copied here) and run under tf.compat.v1 with
    ../shared/reference/tf1_shim.py: `modeling.BertModel`,
    `run_pretraining.get_masked_lm_output` / `get_next_sentence_output`,
    `optimization.create_optimizer`, the original record parse
    (`run_pretraining._decode_record`) and the original eval metrics
    (`tf.metrics.accuracy`, masked LM weighted by masked_lm_weights), driven
    by a plain `tf.compat.v1.Session` loop (TF 2.21 has no Estimator);
  - "bert_tf": `bert_tf.training.loop.run`.

Each side runs in its own subprocess, one after the other: the shim replaces
`tensorflow` with tf.compat.v1 and disables v2 behaviour, so the original
cannot share a process with Keras, and running the sides one at a time keeps
their timings comparable on a small machine.

Records: <records_dir>/train.tfrecord and heldout.tfrecord when they exist
(bench/learning_curve.py writes them: every 10th KJV chapter held out,
original vocab, dupe factor 10 / 2, seq 128, 20 predictions); otherwise they
are written there the same way, with learning_curve's helpers.

  python bench/compare_original.py --original_dir=/work/ref_bert \\
    --workdir=/tmp/cmp --steps=500 --batch_size=64 --learning_rate=1e-3
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
SHARED = os.path.normpath(os.path.join(REPO, "..", "shared"))
RESULT_PREFIX = "COMPARE_ORIGINAL_RESULT "
# Held-out masked-LM accuracy of always predicting the most frequent token
# (bench/learning_curve.py's baseline on these records).
MOST_FREQUENT_TOKEN_ACCURACY = 0.071


def _log(message):
  print(message, file=sys.stderr, flush=True)


def _emit(result):
  print(RESULT_PREFIX + json.dumps(result), flush=True)


# --------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------


def ensure_records(args):
  """Returns (train record path, held-out record path), writing them the way
  bench/learning_curve.py does when they are missing."""
  train_rec = os.path.join(args.records_dir, "train.tfrecord")
  heldout_rec = os.path.join(args.records_dir, "heldout.tfrecord")
  if os.path.exists(train_rec) and os.path.exists(heldout_rec):
    _log(f"reusing {train_rec} and {heldout_rec}")
    return train_rec, heldout_rec
  sys.path.insert(0, os.path.join(REPO, "bench"))
  import learning_curve  # pylint: disable=g-import-not-at-top
  os.makedirs(args.records_dir, exist_ok=True)
  train_txt = os.path.join(args.records_dir, "train.txt")
  heldout_txt = os.path.join(args.records_dir, "heldout.txt")
  n_train, n_heldout = learning_curve.split_chapters(args.corpus, train_txt, heldout_txt, 10)
  _log(f"{n_train} training chapters, {n_heldout} held-out chapters")
  # Same seeds and dupe factors as learning_curve, so both benches measure
  # on the same records.
  learning_curve.write_records(train_txt, train_rec, args.vocab, 10, seed=12345)
  learning_curve.write_records(heldout_txt, heldout_rec, args.vocab, 2, seed=54321)
  return train_rec, heldout_rec


# --------------------------------------------------------------------------
# The original, in its own process
# --------------------------------------------------------------------------


def run_original(args):
  """Trains and evaluates with google-research/bert's graph; emits the result."""
  process_start = time.time()
  sys.path.insert(0, os.path.join(SHARED, "reference"))
  import tf1_shim  # pylint: disable=g-import-not-at-top
  tf = tf1_shim.install()
  sys.path.insert(0, os.path.abspath(args.original_dir))
  # run_pretraining defines absl flags at import; they are parsed lazily and
  # never read here, but keep argv free of our own flags all the same.
  argv, sys.argv = sys.argv, sys.argv[:1]
  import modeling  # pylint: disable=g-import-not-at-top
  import optimization  # pylint: disable=g-import-not-at-top
  import run_pretraining  # pylint: disable=g-import-not-at-top
  sys.argv = argv
  tf.logging.set_verbosity(tf.logging.WARN)

  bert_config = modeling.BertConfig.from_json_file(args.config)
  seq, preds = args.max_seq_length, args.max_predictions_per_seq
  name_to_features = {
      "input_ids": tf.FixedLenFeature([seq], tf.int64),
      "input_mask": tf.FixedLenFeature([seq], tf.int64),
      "segment_ids": tf.FixedLenFeature([seq], tf.int64),
      "masked_lm_positions": tf.FixedLenFeature([preds], tf.int64),
      "masked_lm_ids": tf.FixedLenFeature([preds], tf.int64),
      "masked_lm_weights": tf.FixedLenFeature([preds], tf.float32),
      "next_sentence_labels": tf.FixedLenFeature([1], tf.int64),
  }

  def dataset(path, batch_size, is_training):
    # The original's input_fn uses tf.contrib.data; this is the same pipeline
    # in core tf.data. The shuffle buffer is ours (not the original's 100
    # after a file-level shuffle): with one record file, both sides then see
    # equally mixed batches.
    d = tf.data.TFRecordDataset(path)
    if is_training:
      d = d.repeat().shuffle(args.shuffle_buffer, seed=args.seed)
    d = d.map(lambda record: run_pretraining._decode_record(record, name_to_features))  # pylint: disable=protected-access
    # Eval reads the held-out file once, in order, in full batches: the same
    # batches bert_tf's evaluation reads.
    return d.batch(batch_size, drop_remainder=True).prefetch(2)

  def heads(features, is_training):
    # Built twice (training with dropout, eval without) on shared variables;
    # named scopes only, so AUTO_REUSE finds the same variables.
    model = modeling.BertModel(
        config=bert_config, is_training=is_training, input_ids=features["input_ids"],
        input_mask=features["input_mask"], token_type_ids=features["segment_ids"],
        use_one_hot_embeddings=False, scope="bert")
    mlm_loss, mlm_example_loss, mlm_log_probs = run_pretraining.get_masked_lm_output(
        bert_config, model.get_sequence_output(), model.get_embedding_table(),
        features["masked_lm_positions"], features["masked_lm_ids"],
        features["masked_lm_weights"])
    nsp_loss, nsp_example_loss, nsp_log_probs = run_pretraining.get_next_sentence_output(
        bert_config, model.get_pooled_output(), features["next_sentence_labels"])
    return mlm_loss, mlm_example_loss, mlm_log_probs, nsp_loss, nsp_example_loss, nsp_log_probs

  tf.set_random_seed(args.seed)
  with tf.variable_scope("", reuse=tf.AUTO_REUSE):
    train_features = tf.data.make_one_shot_iterator(
        dataset(args.train_file, args.batch_size, True)).get_next()
    mlm_loss, _, _, nsp_loss, _, _ = heads(train_features, is_training=True)
    total_loss = mlm_loss + nsp_loss
    num_trainable = len(tf.trainable_variables())
    num_params = sum(int(v.shape.num_elements()) for v in tf.trainable_variables())
    train_op = optimization.create_optimizer(
        total_loss, args.learning_rate, args.steps, args.warmup_steps, use_tpu=False)

    eval_iterator = tf.data.make_initializable_iterator(
        dataset(args.heldout_file, args.eval_batch_size, False))
    ef = eval_iterator.get_next()
    (_, mlm_example_loss, mlm_log_probs, _, nsp_example_loss,
     nsp_log_probs) = heads(ef, is_training=False)
  if len(tf.trainable_variables()) != num_trainable:
    raise RuntimeError("the eval graph made new variables instead of sharing the trained ones: "
                       f"{len(tf.trainable_variables())} != {num_trainable}")

  # The original's metric_fn, statement for statement (it is nested inside
  # model_fn_builder, so it cannot be imported).
  with tf.variable_scope("eval_metrics"):
    mlm_log_probs = tf.reshape(mlm_log_probs, [-1, mlm_log_probs.shape[-1]])
    mlm_predictions = tf.argmax(mlm_log_probs, axis=-1, output_type=tf.int32)
    mlm_weights = tf.reshape(ef["masked_lm_weights"], [-1])
    mlm_accuracy = tf.metrics.accuracy(labels=tf.reshape(ef["masked_lm_ids"], [-1]),
                                       predictions=mlm_predictions, weights=mlm_weights)
    mlm_mean_loss = tf.metrics.mean(values=tf.reshape(mlm_example_loss, [-1]),
                                    weights=mlm_weights)
    nsp_log_probs = tf.reshape(nsp_log_probs, [-1, nsp_log_probs.shape[-1]])
    nsp_predictions = tf.argmax(nsp_log_probs, axis=-1, output_type=tf.int32)
    nsp_labels = tf.reshape(ef["next_sentence_labels"], [-1])
    nsp_accuracy = tf.metrics.accuracy(labels=nsp_labels, predictions=nsp_predictions)
    nsp_mean_loss = tf.metrics.mean(values=nsp_example_loss)
  metric_updates = [m[1] for m in (mlm_accuracy, mlm_mean_loss, nsp_accuracy, nsp_mean_loss)]
  metric_values = [m[0] for m in (mlm_accuracy, mlm_mean_loss, nsp_accuracy, nsp_mean_loss)]
  metric_init = tf.variables_initializer(
      tf.get_collection(tf.GraphKeys.LOCAL_VARIABLES, scope="eval_metrics"))
  global_step = tf.train.get_global_step()

  def evaluate(sess):
    sess.run([metric_init, eval_iterator.initializer])
    batches, ones = 0, 0
    while batches < args.eval_batches:
      try:
        _, labels = sess.run([metric_updates, nsp_labels])
      except tf.errors.OutOfRangeError:
        break
      batches += 1
      ones += int(labels.sum())
    mlm_acc, mlm_l, nsp_acc, nsp_l = (float(v) for v in sess.run(metric_values))
    examples = batches * args.eval_batch_size
    return {"global_step": int(sess.run(global_step)), "eval_batches": batches,
            "masked_lm_accuracy": mlm_acc, "masked_lm_loss": mlm_l,
            "next_sentence_accuracy": nsp_acc, "next_sentence_loss": nsp_l,
            "nsp_majority_share": max(ones, examples - ones) / max(examples, 1)}

  history = []
  with tf.Session() as sess:
    sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
    train_seconds = 0.0
    window_start, window_loss, window_steps = time.time(), 0.0, 0
    for step in range(1, args.steps + 1):
      step_start = time.time()
      _, loss = sess.run([train_op, total_loss])
      train_seconds += time.time() - step_start
      window_loss += loss
      window_steps += 1
      if step % args.log_every == 0 or step == args.steps:
        rate = window_steps * args.batch_size / (time.time() - window_start)
        _log(f"original: step {step}/{args.steps}  loss {window_loss / window_steps:.4f}  "
             f"{rate:.1f} ex/s")
        window_start, window_loss, window_steps = time.time(), 0.0, 0
      if args.eval_every and step % args.eval_every == 0 and step < args.steps:
        history.append(evaluate(sess))
        _log(f"original: eval {history[-1]}")
    final = evaluate(sess)
    _log(f"original: eval {final}")
  history.append(final)
  _emit({"eval": final, "eval_history": history, "train_seconds": train_seconds,
         "wall_seconds": time.time() - process_start, "parameters": num_params})


# --------------------------------------------------------------------------
# bert_tf, in its own process
# --------------------------------------------------------------------------


def run_ours(args):
  """Trains and evaluates with bert_tf.training.loop.run; emits the result."""
  process_start = time.time()
  from absl import logging  # pylint: disable=g-import-not-at-top
  from bert_tf.training import loop  # pylint: disable=g-import-not-at-top
  from bert_tf.models.config import BertConfig  # pylint: disable=g-import-not-at-top
  logging.set_verbosity(logging.INFO)
  out_dir = os.path.join(args.workdir, "bert_tf")
  # loop.run resumes from a checkpoint in its output_dir: a rerun must
  # start from scratch to be comparable.
  shutil.rmtree(out_dir, ignore_errors=True)
  config = loop.TrainConfig(
      input_file=args.train_file, eval_input_file=args.heldout_file, output_dir=out_dir,
      do_train=True, do_eval=True, train_batch_size=args.batch_size,
      eval_batch_size=args.eval_batch_size, learning_rate=args.learning_rate,
      num_train_steps=args.steps, num_warmup_steps=args.warmup_steps,
      max_eval_steps=args.eval_batches, iterations_per_loop=100,
      log_steps=args.log_every, save_checkpoints_steps=max(args.steps, 1),
      eval_every_steps=args.eval_every, seed=args.seed, shuffle_buffer=args.shuffle_buffer,
      max_seq_length=args.max_seq_length, max_predictions_per_seq=args.max_predictions_per_seq)
  result = loop.run(config, BertConfig.from_json_file(args.config))
  # Time in the training loops (the first includes tracing, as the
  # original's first session.run includes graph optimization).
  train_seconds = sum(
      (h["global_step"] - prev) * args.batch_size / h["examples_per_second"]
      for h, prev in zip(result["train_history"],
                         [0] + [h["global_step"] for h in result["train_history"][:-1]]))
  _emit({"eval": result["eval"], "eval_history": result["eval_history"],
         "train_seconds": train_seconds, "wall_seconds": time.time() - process_start,
         "parameters": result["model"].count_params()})


# --------------------------------------------------------------------------
# Parent: both sides, one after the other, and the table
# --------------------------------------------------------------------------


def _run_side(side, args, train_rec, heldout_rec):
  cmd = [sys.executable, os.path.abspath(__file__), f"--side={side}",
         f"--original_dir={args.original_dir}", f"--workdir={args.workdir}",
         f"--config={args.config}", f"--steps={args.steps}",
         f"--batch_size={args.batch_size}", f"--learning_rate={args.learning_rate}",
         f"--warmup_fraction={args.warmup_fraction}", f"--eval_batches={args.eval_batches}",
         f"--eval_batch_size={args.eval_batch_size}", f"--eval_every={args.eval_every}",
         f"--log_every={args.log_every}", f"--seed={args.seed}",
         f"--shuffle_buffer={args.shuffle_buffer}",
         f"--max_seq_length={args.max_seq_length}",
         f"--max_predictions_per_seq={args.max_predictions_per_seq}",
         f"--train_file={train_rec}", f"--heldout_file={heldout_rec}"]
  _log(f"=== {side} ===")
  proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, cwd=REPO, check=False)
  lines = [l for l in proc.stdout.splitlines() if l.startswith(RESULT_PREFIX)]
  if proc.returncode or not lines:
    raise SystemExit(f"compare_original: error: the {side} side failed "
                     f"(exit {proc.returncode}); its log is above")
  return json.loads(lines[-1][len(RESULT_PREFIX):])


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--original_dir", required=True,
                      help="a checkout of google-research/bert (modeling.py etc.)")
  parser.add_argument("--workdir", default="/tmp/bert_tf_compare_original")
  parser.add_argument("--records_dir", default="/tmp/kjv",
                      help="where train.tfrecord / heldout.tfrecord are, or are written")
  parser.add_argument("--corpus", default=os.path.join(SHARED, "corpora", "kjv.txt"))
  parser.add_argument("--vocab",
                      default=os.path.join(SHARED, "vocab", "bert-base-uncased-vocab.txt"))
  parser.add_argument("--config", default=os.path.join(REPO, "configs", "bert_tiny.json"))
  parser.add_argument("--steps", type=int, default=500)
  parser.add_argument("--max_seq_length", type=int, default=128,
                      help="of the records (other records than KJV's: give --records_dir)")
  parser.add_argument("--max_predictions_per_seq", type=int, default=20)
  parser.add_argument("--batch_size", type=int, default=64)
  parser.add_argument("--learning_rate", type=float, default=1e-3)
  parser.add_argument("--warmup_fraction", type=float, default=0.1)
  parser.add_argument("--eval_batches", type=int, default=40)
  parser.add_argument("--eval_batch_size", type=int, default=64)
  parser.add_argument("--eval_every", type=int, default=0,
                      help="also evaluate every this many steps (0: at the end only)")
  parser.add_argument("--log_every", type=int, default=50)
  parser.add_argument("--seed", type=int, default=12345)
  parser.add_argument("--shuffle_buffer", type=int, default=10000)
  parser.add_argument("--sides", default="original,bert_tf",
                      help="which sides to run, in this order")
  # Internal: set by the parent for each side's subprocess.
  parser.add_argument("--side", default="", choices=("", "original", "bert_tf"),
                      help=argparse.SUPPRESS)
  parser.add_argument("--train_file", default="", help=argparse.SUPPRESS)
  parser.add_argument("--heldout_file", default="", help=argparse.SUPPRESS)
  args = parser.parse_args()
  args.warmup_steps = int(args.steps * args.warmup_fraction)

  if not os.path.exists(os.path.join(args.original_dir, "run_pretraining.py")):
    raise SystemExit(f"compare_original: error: --original_dir={args.original_dir} holds no "
                     "run_pretraining.py (a checkout of google-research/bert is needed)")
  if args.side == "original":
    return run_original(args)
  if args.side == "bert_tf":
    return run_ours(args)

  os.makedirs(args.workdir, exist_ok=True)
  train_rec, heldout_rec = ensure_records(args)
  sides = [s.strip() for s in args.sides.split(",") if s.strip()]
  results = {side: _run_side(side, args, train_rec, heldout_rec) for side in sides}

  header = ("implementation", "steps", "batch", "lr", "held-out MLM acc",
            "held-out NSP acc", "wall min", "ex/s")
  rows = []
  for side, r in results.items():
    rows.append((side, str(r["eval"]["global_step"]), str(args.batch_size),
                 f"{args.learning_rate:g}", f"{r['eval']['masked_lm_accuracy']:.4f}",
                 f"{r['eval']['next_sentence_accuracy']:.4f}",
                 f"{r['wall_seconds'] / 60:.1f}",
                 f"{args.steps * args.batch_size / r['train_seconds']:.1f}"))
  widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
  print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
  print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
  for row in rows:
    print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |")
  print("Trainable parameters: " + ", ".join(
      f"{side} {r['parameters']:,}" for side, r in results.items()))
  eval_batches = results.get("original", {}).get("eval", {}).get("eval_batches")
  print(f"Held-out: {heldout_rec}, {eval_batches or args.eval_batches} batches of "
        f"{args.eval_batch_size}; warmup {args.warmup_steps} steps; "
        + (f"most-frequent-token MLM baseline (KJV) {MOST_FREQUENT_TOKEN_ACCURACY:.3f}"
           if args.corpus.endswith("kjv.txt") and args.max_seq_length == 128 else "")
        + (f"; NSP majority-label share {results['original']['eval']['nsp_majority_share']:.4f}"
           if "original" in results else ""))
  if "original" in results and "bert_tf" in results:
    ours, orig = results["bert_tf"]["eval"], results["original"]["eval"]
    print(f"MLM accuracy ratio bert_tf / original: "
          f"{ours['masked_lm_accuracy'] / orig['masked_lm_accuracy']:.3f}; "
          f"NSP accuracy ratio: "
          f"{ours['next_sentence_accuracy'] / orig['next_sentence_accuracy']:.3f}; "
          f"ex/s ratio: {results['original']['train_seconds'] / results['bert_tf']['train_seconds']:.2f}")
    if args.eval_every:
      print("step | original MLM / NSP | bert_tf MLM / NSP")
      ours_by_step = {h["global_step"]: h for h in results["bert_tf"]["eval_history"]}
      for h in results["original"]["eval_history"]:
        o = ours_by_step.get(h["global_step"])
        print(f"{h['global_step']} | {h['masked_lm_accuracy']:.4f} / "
              f"{h['next_sentence_accuracy']:.4f} | "
              + (f"{o['masked_lm_accuracy']:.4f} / {o['next_sentence_accuracy']:.4f}"
                 if o else "-"))
  path = os.path.join(args.workdir, "results.json")
  with open(path + ".tmp", "w", encoding="utf-8") as f:
    json.dump({"args": vars(args), "results": results}, f, indent=1)
  os.replace(path + ".tmp", path)
  return 0


if __name__ == "__main__":
  sys.exit(main())
