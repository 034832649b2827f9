"""The main job, end to end on the bundled sample corpus, in about 10 minutes
on 2 CPU cores:

  sample corpus -> WordPiece vocab -> pretraining records (train + held-out)
  -> train a small BERT (MLM + NSP) -> export a SavedModel -> fill-mask demo

Each stage prints what it did. Every stage is the same library function the
command-line tools call, with small settings.

  python -m bert_tf.quickstart --output_dir=runs/quickstart
"""

import collections
import hashlib
import math
import os
import random
import subprocess
import sys
import time

from absl import flags
from absl import logging

from bert_tf import cli

FLAGS = flags.FLAGS

_TINY_CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "configs", "bert_tiny.json")


def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  f = flag_values
  flags.DEFINE_string("output_dir", "runs/quickstart", "Where everything is written.", flag_values=f)
  flags.DEFINE_string("corpus", "data/sample_corpus.txt",
                      "Input text; generated from the Python standard library's docstrings "
                      "(bert_tf.sample_corpus) when the file does not exist.", flag_values=f)
  flags.DEFINE_integer("vocab_size", 8000, "WordPiece vocab size.", flag_values=f)
  flags.DEFINE_string("bert_config_template", _TINY_CONFIG,
                      "Model config; the quickstart sets its vocab_size to the vocab's and its "
                      "max_position_embeddings to --max_seq_length.", flag_values=f)
  flags.DEFINE_integer("train_steps", 2500, "Training steps.", flag_values=f)
  flags.DEFINE_integer("dupe_factor", 20, "Masked copies of the corpus (different masks and pairs).", flag_values=f)
  flags.DEFINE_integer("batch_size", 32, "Training batch size.", flag_values=f)
  flags.DEFINE_integer("max_seq_length", 64,
                       "Tokens per instance ([CLS] A [SEP] B [SEP]); masked-LM predictions "
                       "per instance are 15% of it, rounded up.", flag_values=f)
  flags.DEFINE_float("learning_rate", 1e-3, "Peak learning rate (linear warmup over the "
                     "first 10% of the steps, then linear decay).", flag_values=f)
  flags.DEFINE_bool("overwrite", True, "Start from scratch when output_dir exists.", flag_values=f)


DEMO_SENTENCES = (
    "Return a new [MASK] containing the items of the iterable.",
    "The [MASK] is closed when the with statement ends.",
    "Raise a [MASK] if the argument is not a string.",
    "This module provides access to the [MASK] system.",
)


def _stage(n, title):
  print(f"\n=== stage {n}: {title}", flush=True)
  return time.time()


def _done(start, text):
  print(f"    {text} ({time.time() - start:.1f} s)", flush=True)


# Words too common to say whether a model uses the context.
STOP_WORDS = frozenset(
    "a an and are as at be by can for from has have if in is it its may not of on or that the "
    "this to was were will with".split())


def _content_word(word, vocab):
  lower = word.lower()
  return word.isalpha() and len(word) >= 3 and lower not in STOP_WORDS and lower in vocab


def masked_word_cases(sentences, vocab, num=200, seed=0):
  """Fill-mask cases that say whether a model learned more than word
  frequencies: from up to `num` of `sentences` (seeded choice), one content
  word (alphabetic, 3+ letters, not a stop word, a whole token of `vocab`)
  replaced by [MASK]. Returns [(masked sentence, the word lower-cased)]."""
  rng = random.Random(seed)
  pool = [s for s in sentences if len(s.split()) >= 6]
  rng.shuffle(pool)
  cases = []
  for sentence in pool:
    words = sentence.split()
    candidates = [i for i, w in enumerate(words) if _content_word(w, vocab)]
    if not candidates:
      continue
    i = rng.choice(candidates)
    answer = words[i].lower()
    words[i] = "[MASK]"
    cases.append((" ".join(words), answer))
    if len(cases) == num:
      break
  return cases


def score_fills(cases, top_fills, train_sentences, vocab):
  """Share of cases whose word is the top fill and in the top 5 fills, and
  the top-5 share of always answering the 5 most frequent content words of
  the training text (what a model that ignores the context can reach)."""
  counts = collections.Counter(
      w.lower() for s in train_sentences for w in s.split() if _content_word(w, vocab))
  frequent = {w for w, _ in counts.most_common(5)}
  n = max(len(cases), 1)
  return {
      "cases": len(cases),
      "top1": sum(fills[:1] == [word] for (_, word), fills in zip(cases, top_fills)) / n,
      "top5": sum(word in fills[:5] for (_, word), fills in zip(cases, top_fills)) / n,
      "frequency_baseline_top5": sum(word in frequent for _, word in cases) / n,
  }


def main(argv):
  del argv
  import tensorflow as tf
  from bert_tf import build_vocab
  from bert_tf import split_corpus
  from bert_tf.data import vocab as vocab_lib
  from bert_tf.data import writer
  from bert_tf.serving import export
  from bert_tf.training import loop

  out = FLAGS.output_dir
  if FLAGS.overwrite and tf.io.gfile.exists(out):
    tf.io.gfile.rmtree(out)
  tf.io.gfile.makedirs(out)
  total_start = time.time()

  t = _stage(1, "sample corpus")
  corpus = FLAGS.corpus
  generated = not tf.io.gfile.exists(corpus)
  if generated:
    # In a fresh interpreter: the corpus is the docstrings of the modules as
    # they are after a plain import, not after this process's imports.
    child = subprocess.run([sys.executable, "-m", "bert_tf.sample_corpus", f"--output={corpus}"],
                           stdout=subprocess.DEVNULL, check=False)
    if child.returncode:
      raise cli.Error(f"generating the sample corpus {corpus} failed (its error is above)")
  with tf.io.gfile.GFile(corpus, "rb") as f:
    data = f.read()
  # The figures below depend on the corpus: its fingerprint says whether it
  # is the one a published figure came from (the standard library's
  # docstrings change with the Python version).
  fingerprint = f"sha256 {hashlib.sha256(data).hexdigest()[:12]}, {len(data) / 1e6:.2f} MB"
  _done(t, f"generated {corpus} from the standard library's docstrings of Python "
           f"{sys.version.split()[0]} ({fingerprint})" if generated else
           f"using {corpus} ({fingerprint})")
  train_txt, held_txt = os.path.join(out, "train.txt"), os.path.join(out, "heldout.txt")
  n_train, n_held = split_corpus.split_corpus(corpus, train_txt, held_txt)
  print(f"    split by document: {n_train} for training, {n_held} held out")

  t = _stage(2, "WordPiece vocab and model config")
  vocab_file = os.path.join(out, "vocab.txt")
  tokens = vocab_lib.build_vocab([train_txt], FLAGS.vocab_size, do_lower_case=True)
  vocab_lib.write_vocab(tokens, vocab_file)
  seq = FLAGS.max_seq_length
  config_path = os.path.join(out, "bert_config.json")
  bert_config = build_vocab.write_bert_config(FLAGS.bert_config_template, len(tokens),
                                              config_path, max_position_embeddings=seq)
  _done(t, f"{len(tokens)} entries -> {vocab_file}; {FLAGS.bert_config_template} with "
           f"vocab_size={len(tokens)}, max_position_embeddings={seq} -> {config_path}")

  t = _stage(3, "pretraining records (original schema, 80/10/10 masking + NSP)")
  max_predictions = math.ceil(seq * 0.15)  # the original's 20 at 128, 80 at 512
  records = {}
  for name, path, dupe in (("train", train_txt, FLAGS.dupe_factor), ("heldout", held_txt, 1)):
    options = writer.DataOptions(
        max_seq_length=seq, max_predictions_per_seq=max_predictions, dupe_factor=dupe,
        block_bytes=256 << 10)
    outputs = writer.Outputs(directory=os.path.join(out, "records", name),
                                       num_shards=2 if name == "train" else 1)
    manifest = writer.create_pretraining_data(
        path, outputs, vocab_file, options, num_workers=writer.default_num_workers())
    records[name] = outputs.directory + "/*.tfrecord"
    c, s = manifest["counts"], manifest["shares"]
    print(f"    {name}: {c['instances']} instances from {c['documents']} documents in "
          f"{manifest['run']['seconds']:.1f} s | mean tokens {s['mean_tokens']:.1f} | "
          f"predictions {s['predictions_per_instance']:.2f} | [MASK]/kept/random "
          f"{s['masked']:.2f}/{s['kept']:.2f}/{s['random']:.2f} | NSP random {s['nsp_random']:.2f}")
  _done(t, "records written")

  t = _stage(4, f"train a small BERT for {FLAGS.train_steps} steps")
  model_dir = os.path.join(out, "model")
  train_config = loop.TrainConfig(
      input_file=records["train"], eval_input_file=records["heldout"], output_dir=model_dir,
      do_train=True, do_eval=True, train_batch_size=FLAGS.batch_size, eval_batch_size=64,
      learning_rate=FLAGS.learning_rate, num_train_steps=FLAGS.train_steps,
      num_warmup_steps=FLAGS.train_steps // 10, save_checkpoints_steps=500,
      iterations_per_loop=100, log_steps=100, max_eval_steps=20, max_seq_length=seq,
      max_predictions_per_seq=max_predictions)
  logging.set_verbosity(logging.INFO)  # the loop's progress lines: losses, rate, ETA
  result = loop.run(train_config, bert_config)
  logging.set_verbosity(logging.WARNING)
  ev = result["eval"]
  _done(t, f"step {result['global_step']}: held-out masked-LM accuracy "
           f"{ev['masked_lm_accuracy']:.3f}, NSP accuracy {ev['next_sentence_accuracy']:.3f}, "
           f"loss {ev['loss']:.3f} (TensorBoard: tensorboard --logdir {model_dir})")

  t = _stage(5, "export SavedModel")
  export_dir = os.path.join(out, "saved_model")
  pretrainer, checkpoint = export.load_pretrainer(bert_config, model_dir)
  export.export_saved_model(pretrainer, vocab_file, True, export_dir, max_seq_length=seq)
  _done(t, f"{checkpoint} -> {export_dir} (signatures: serving_default/pretraining, encode, "
           "fill_mask, next_sentence)")

  t = _stage(6, "fill-mask with the exported model (loaded by stock TensorFlow + tensorflow_text)")
  import tensorflow_text  # noqa: F401  pylint: disable=unused-import
  loaded = tf.saved_model.load(export_dir)
  fill = loaded.signatures["fill_mask"]
  result = fill(text=tf.constant(list(DEMO_SENTENCES)))
  tokens_out = result["top_k_tokens"].numpy()
  probs = result["top_k_probs"].numpy()
  for i, sentence in enumerate(DEMO_SENTENCES):
    fills = ", ".join(f"{tok.decode()} ({p:.2f})" for tok, p in zip(tokens_out[i][0], probs[i][0]))
    print(f"    {sentence}\n      -> {fills}")
  # A figure for the demo: one content word masked in held-out sentences.
  vocab = set(tokens)
  with tf.io.gfile.GFile(held_txt) as f:
    cases = masked_word_cases(f.read().splitlines(), vocab)
  top_fills = []
  for i in range(0, len(cases), 64):
    batch = [text for text, _ in cases[i:i + 64]]
    out_tokens = fill(text=tf.constant(batch))["top_k_tokens"].numpy()
    top_fills += [[tok.decode() for tok in row[0]] for row in out_tokens]
  with tf.io.gfile.GFile(train_txt) as f:
    scores = score_fills(cases, top_fills, f.read().splitlines(), vocab)
  for (text, word), fills in list(zip(cases, top_fills))[:3]:
    print(f"    {text}\n      -> {', '.join(fills)}   (masked: {word})")
  _done(t, f"held-out sentences with one content word masked: the word is the top fill in "
           f"{scores['top1']:.0%} and in the top 5 in {scores['top5']:.0%} of "
           f"{scores['cases']} (always answering the 5 most frequent words: "
           f"{scores['frequency_baseline_top5']:.0%})")
  print(f"\nall stages done in {time.time() - total_start:.0f} s; outputs in {out}")


def run():
  logging.set_verbosity(logging.WARNING)
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
