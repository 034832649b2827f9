"""End-to-end learning check: BERT-tiny pretrained on the KJV corpus.

Splits ../shared/corpora/kjv.txt into training chapters and held-out
chapters (every 10th chapter), writes pretraining records for each with
`bert_tf.create_pretraining_data` (original vocab, the original recipe),
trains BERT-tiny with `bert_tf.training.loop.run` evaluating the held-out records
every --eval_every steps, and writes the curve to <workdir>/curve.csv
(step, heldout_mlm_accuracy, heldout_nsp_accuracy, heldout_mlm_loss,
heldout_nsp_loss) and a summary.

Targets: held-out masked-LM accuracy >= 0.142 (2x the most-frequent-token
baseline 0.071) and NSP accuracy above 0.5. Rerunning the same command
resumes training from the latest checkpoint in <workdir>/train.

  python bench/learning_curve.py --workdir /tmp/kjv_curve --steps 2000
"""

import argparse
import csv
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
SHARED = os.path.normpath(os.path.join(REPO, "..", "shared"))


def split_chapters(corpus, train_path, heldout_path, every):
  """Chapters are separated by blank lines; every `every`-th is held out.
  Returns (train chapters, held-out chapters)."""
  with open(corpus, encoding="utf-8") as f:
    chapters = [c.strip() for c in f.read().split("\n\n") if c.strip()]
  train = [c for i, c in enumerate(chapters) if i % every != every - 1]
  heldout = [c for i, c in enumerate(chapters) if i % every == every - 1]
  for path, part in ((train_path, train), (heldout_path, heldout)):
    with open(path + ".tmp", "w", encoding="utf-8") as f:
      f.write("\n\n".join(part) + "\n")
    os.replace(path + ".tmp", path)
  return len(train), len(heldout)


def write_records(text, output, vocab, dupe_factor, seed):
  if os.path.exists(output):
    return
  start = time.time()
  subprocess.run([sys.executable, "-m", "bert_tf.create_pretraining_data",
                  f"--input_file={text}", f"--output_file={output}", f"--vocab_file={vocab}",
                  "--do_lower_case=True", "--max_seq_length=128", "--max_predictions_per_seq=20",
                  "--masked_lm_prob=0.15", f"--dupe_factor={dupe_factor}",
                  f"--random_seed={seed}"], check=True, cwd=REPO)
  print(f"wrote {output} in {time.time() - start:.0f} s", flush=True)


def read_eval_curve(eval_dir):
  """Reads the eval scalars TensorBoard holds: {step: {name: value}}."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  curve = {}
  for path in sorted(tf.io.gfile.glob(os.path.join(eval_dir, "events.out.tfevents.*"))):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        curve.setdefault(event.step, {})[value.tag] = float(
            tf.make_ndarray(value.tensor)) if value.HasField("tensor") else value.simple_value
  return curve


def nsp_majority_share(path, limit):
  """Share of the more frequent NSP label in the first `limit` records: the
  accuracy of a model that ignores its input."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert_tf.data.records import schema  # pylint: disable=g-import-not-at-top
  labels = np.concatenate([
      b["next_sentence_labels"].numpy().ravel()
      for b in tf.data.TFRecordDataset(path).take(limit).batch(1024).map(
          lambda s: schema.parse_examples(s, 128, 20))])
  return max(labels.mean(), 1 - labels.mean())


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--workdir", default="/tmp/bert_tf_kjv_curve")
  parser.add_argument("--corpus", default=os.path.join(SHARED, "corpora", "kjv.txt"))
  parser.add_argument("--vocab",
                      default=os.path.join(SHARED, "vocab", "bert-base-uncased-vocab.txt"))
  parser.add_argument("--config", default=os.path.join(REPO, "configs", "bert_tiny.json"))
  parser.add_argument("--steps", type=int, default=2000)
  parser.add_argument("--batch_size", type=int, default=64)
  parser.add_argument("--learning_rate", type=float, default=1e-3)
  parser.add_argument("--warmup_fraction", type=float, default=0.1)
  parser.add_argument("--dupe_factor", type=int, default=10)
  parser.add_argument("--heldout_every", type=int, default=10)
  parser.add_argument("--eval_every", type=int, default=250)
  parser.add_argument("--eval_batches", type=int, default=40)
  args = parser.parse_args()

  os.makedirs(args.workdir, exist_ok=True)
  train_txt = os.path.join(args.workdir, "train.txt")
  heldout_txt = os.path.join(args.workdir, "heldout.txt")
  n_train, n_heldout = split_chapters(args.corpus, train_txt, heldout_txt, args.heldout_every)
  print(f"{n_train} training chapters, {n_heldout} held-out chapters", flush=True)
  train_rec = os.path.join(args.workdir, "train.tfrecord")
  heldout_rec = os.path.join(args.workdir, "heldout.tfrecord")
  write_records(train_txt, train_rec, args.vocab, args.dupe_factor, seed=12345)
  # Held-out: two maskings of each held-out chapter, a steadier estimate.
  write_records(heldout_txt, heldout_rec, args.vocab, 2, seed=54321)

  from absl import logging  # pylint: disable=g-import-not-at-top
  from bert_tf.training import loop  # pylint: disable=g-import-not-at-top
  from bert_tf.models.config import BertConfig  # pylint: disable=g-import-not-at-top
  logging.set_verbosity(logging.INFO)
  out_dir = os.path.join(args.workdir, "train")
  config = loop.TrainConfig(
      input_file=train_rec, eval_input_file=heldout_rec, output_dir=out_dir,
      do_train=True, do_eval=True, train_batch_size=args.batch_size, eval_batch_size=64,
      learning_rate=args.learning_rate, num_train_steps=args.steps,
      num_warmup_steps=int(args.steps * args.warmup_fraction),
      save_checkpoints_steps=args.eval_every, iterations_per_loop=args.eval_every,
      log_steps=50, eval_every_steps=args.eval_every, max_eval_steps=args.eval_batches)
  start = time.time()
  loop.run(config, BertConfig.from_json_file(args.config))
  minutes = (time.time() - start) / 60

  curve = read_eval_curve(os.path.join(out_dir, "eval"))
  csv_path = os.path.join(args.workdir, "curve.csv")
  with open(csv_path + ".tmp", "w", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(["step", "heldout_mlm_accuracy", "heldout_nsp_accuracy",
                     "heldout_mlm_loss", "heldout_nsp_loss"])
    for step in sorted(curve):
      m = curve[step]
      writer.writerow([step, f"{m['masked_lm_accuracy']:.4f}", f"{m['next_sentence_accuracy']:.4f}",
                       f"{m['masked_lm_loss']:.4f}", f"{m['next_sentence_loss']:.4f}"])
  os.replace(csv_path + ".tmp", csv_path)
  print(open(csv_path).read())
  majority = nsp_majority_share(heldout_rec, args.eval_batches * 64)
  final = curve[max(curve)]
  mlm, nsp = final["masked_lm_accuracy"], final["next_sentence_accuracy"]
  print(f"BERT-tiny on KJV, {max(curve)} steps x batch {args.batch_size}, lr {args.learning_rate} "
        f"({minutes:.1f} min this run): held-out MLM accuracy {mlm:.4f} "
        f"(target >= 0.142: {'PASS' if mlm >= 0.142 else 'FAIL'}), "
        f"NSP accuracy {nsp:.4f} (target > 0.5: {'PASS' if nsp > 0.5 else 'FAIL'}; "
        f"always answering the majority label scores {majority:.4f})")
  return 0 if mlm >= 0.142 and nsp > 0.5 else 1


if __name__ == "__main__":
  sys.exit(main())
