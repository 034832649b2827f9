"""Is ELECTRA's discriminator able to learn on these records? Controls.

  python bench/electra_controls.py --bert_config_file=CONFIG --input_file='TRAIN*.tfrecord' \\
      --eval_input_file='HELDOUT*.tfrecord' --max_seq_length=64 --max_predictions_per_seq=10 \\
      --num_train_steps=600 [--controls=uniform,unigram,generator] [--learning_rate=1e-3]

Trains ELECTRA (`loop.run`, objective electra, default flags otherwise) once
per control, each from scratch, and prints the held-out discriminator loss
against the prior (the binary entropy of the share of replaced tokens: what
a discriminator that learned nothing but that share reaches) and its
recall. The controls differ only in what replaces the masked tokens:

* uniform: random ids from the upper 7/8 of the vocab (rare tokens in a
  frequency-ordered vocab; the token alone gives the replacement away),
* unigram: samples of the records' own token frequencies (context-free:
  only the context tells),
* generator: ELECTRA itself (the generator's samples, plausible in
  context).

If "uniform" does not beat its prior by far, the objective is broken; if it
does and "generator" does not, the discriminator is too small or the run
too short to read the context (docs/bert_family.md).
"""

import argparse
import os
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import tensorflow as tf  # noqa: E402
from absl import logging  # noqa: E402

from bert_tf.io import file_io as files  # noqa: E402
from bert_tf.data.records import schema  # noqa: E402
from bert_tf.training.objectives.electra import binary_entropy  # noqa: E402
from bert_tf.models import electra  # noqa: E402
from bert_tf.models.config import BertConfig  # noqa: E402
from bert_tf.training import loop  # noqa: E402


def unigram_log_probs(paths, seq, preds, vocab_size, num_records=4000):
  """Log-frequencies [1, vocab] of the real tokens of the first records
  (special ids [PAD] [UNK] [CLS] [SEP] [MASK] = 0..4 left out)."""
  counts = np.ones(vocab_size)
  for batch in tf.data.TFRecordDataset(paths).take(num_records).batch(1000):
    f = schema.parse_examples(batch, seq, preds)
    ids = f["input_ids"].numpy()[f["input_mask"].numpy() > 0]
    counts += np.bincount(ids, minlength=vocab_size)[:vocab_size]
  counts[:5] = 1e-9
  return tf.constant(np.log(counts / counts.sum())[None], tf.float32)


def sampler(control, vocab_size, log_probs):
  """A stand-in for electra.sample_tokens: (logits, seed) -> ids."""
  if control == "uniform":
    return lambda logits, seed: tf.random.uniform(
        tf.shape(logits)[:-1], vocab_size // 8, vocab_size, dtype=tf.int32)
  if control == "unigram":
    def draw(logits, seed):
      shape = tf.shape(logits)[:-1]
      return tf.reshape(tf.random.categorical(log_probs, tf.reduce_prod(shape),
                                              dtype=tf.int32), shape)
    return draw
  return electra.sample_tokens


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--bert_config_file", required=True)
  p.add_argument("--input_file", required=True)
  p.add_argument("--eval_input_file", required=True)
  p.add_argument("--max_seq_length", type=int, default=128)
  p.add_argument("--max_predictions_per_seq", type=int, default=20)
  p.add_argument("--num_train_steps", type=int, default=600)
  p.add_argument("--train_batch_size", type=int, default=32)
  p.add_argument("--learning_rate", type=float, default=1e-3)
  p.add_argument("--controls", default="uniform,unigram,generator")
  p.add_argument("--max_eval_steps", type=int, default=20)
  p.add_argument("--seed", type=int, default=12345)
  args = p.parse_args()
  logging.set_verbosity(logging.WARNING)
  bert_config = BertConfig.from_json_file(args.bert_config_file)
  log_probs = unigram_log_probs(files.expand_patterns(args.input_file), args.max_seq_length,
                                args.max_predictions_per_seq, bert_config.vocab_size)
  real_sampler, rows = electra.sample_tokens, []
  with tempfile.TemporaryDirectory() as work:
    for control in args.controls.split(","):
      electra.sample_tokens = sampler(control, bert_config.vocab_size, log_probs)
      try:
        result = loop.run(loop.TrainConfig(
            input_file=args.input_file, eval_input_file=args.eval_input_file,
            output_dir=os.path.join(work, control), do_train=True, do_eval=True,
            objective="electra", max_seq_length=args.max_seq_length,
            max_predictions_per_seq=args.max_predictions_per_seq,
            train_batch_size=args.train_batch_size, eval_batch_size=64,
            learning_rate=args.learning_rate, num_train_steps=args.num_train_steps,
            num_warmup_steps=args.num_train_steps // 10,
            save_checkpoints_steps=args.num_train_steps, iterations_per_loop=100,
            log_steps=100, max_eval_steps=args.max_eval_steps, seed=args.seed), bert_config)
      finally:
        electra.sample_tokens = real_sampler
      ev = result["eval"]
      share, rec, prec = (ev["replaced_share"], ev["discriminator_recall"],
                          ev["discriminator_precision"])
      rows.append((control, share, ev["discriminator_loss"], binary_entropy(share), rec, prec))
      print(f"  {control}: done ({result['global_step']} steps)", flush=True)
  print(f"\nheld-out after {args.num_train_steps} steps x batch {args.train_batch_size}, "
        f"lr {args.learning_rate:g}")
  print(f"{'control':10} {'replaced':>9} {'disc loss':>10} {'prior':>7} {'loss/prior':>11} "
        f"{'recall':>7} {'precision':>10}")
  for control, share, loss, prior, rec, prec in rows:
    print(f"{control:10} {share:9.3f} {loss:10.4f} {prior:7.4f} {loss / prior:11.2f} "
          f"{rec:7.3f} {prec:10.3f}")


if __name__ == "__main__":
  main()
