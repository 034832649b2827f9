"""The main job, end to end on the bundled sample corpus, in about 10 minutes
on 2 CPU cores:

  sample corpus -> WordPiece vocab -> pretraining records (train + held-out)
  -> train a small BERT (MLM + NSP) -> export a SavedModel -> fill-mask demo

Each stage prints what it did. Every stage is the same library function the
command-line tools call, with small settings.

  python -m bert_tf.quickstart --output_dir=runs/quickstart
"""

import os
import time

from absl import app
from absl import flags
from absl import logging

FLAGS = flags.FLAGS


def _define_flags():
  # At run time, not import time: entry modules share absl's global flags,
  # and this one is imported beside the others in tests.
  flags.DEFINE_string("output_dir", "runs/quickstart", "Where everything is written.")
  flags.DEFINE_string("corpus", "data/sample_corpus.txt",
                      "Input text; generated from the Python standard library's docstrings "
                      "(bert_tf.sample_corpus) when the file does not exist.")
  flags.DEFINE_integer("vocab_size", 8000, "WordPiece vocab size.")
  flags.DEFINE_integer("train_steps", 1500, "Training steps.")
  flags.DEFINE_integer("dupe_factor", 5, "Masked copies of the corpus.")
  flags.DEFINE_integer("batch_size", 32, "Training batch size.")
  flags.DEFINE_bool("overwrite", True, "Start from scratch when output_dir exists.")


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


def split_corpus(corpus, train_path, heldout_path, every=10):
  """Every `every`-th document goes to the held-out file."""
  import tensorflow as tf
  with tf.io.gfile.GFile(corpus, "r") as f:
    documents = [d for d in f.read().split("\n\n") if d.strip()]
  train = [d for i, d in enumerate(documents) if i % every != every - 1]
  held = [d for i, d in enumerate(documents) if i % every == every - 1]
  for path, docs in ((train_path, train), (heldout_path, held)):
    with tf.io.gfile.GFile(path, "w") as f:
      f.write("\n\n".join(d.strip("\n") for d in docs) + "\n")
  return len(train), len(held)


def main(argv):
  del argv
  import tensorflow as tf
  from bert_tf import build_vocab
  from bert_tf import config as config_lib
  from bert_tf import export
  from bert_tf import pretraining_data
  from bert_tf import sample_corpus
  from bert_tf import training

  out = FLAGS.output_dir
  if FLAGS.overwrite and tf.io.gfile.exists(out):
    tf.io.gfile.rmtree(out)
  tf.io.gfile.makedirs(out)
  total_start = time.time()

  t = _stage(1, "sample corpus")
  corpus = FLAGS.corpus
  if not tf.io.gfile.exists(corpus):
    docs, lines, size = sample_corpus.write_corpus(corpus)
    _done(t, f"generated {corpus} from the standard library's docstrings: "
             f"{docs} documents, {lines} sentences, {size / 1e6:.2f} MB")
  else:
    _done(t, f"using {corpus} ({tf.io.gfile.stat(corpus).length / 1e6:.2f} MB)")
  train_txt, held_txt = os.path.join(out, "train.txt"), os.path.join(out, "heldout.txt")
  n_train, n_held = split_corpus(corpus, train_txt, held_txt)
  print(f"    split by document: {n_train} for training, {n_held} held out")

  t = _stage(2, "WordPiece vocab")
  vocab_file = os.path.join(out, "vocab.txt")
  tokens = build_vocab.build_vocab([train_txt], FLAGS.vocab_size, do_lower_case=True)
  build_vocab.write_vocab(tokens, vocab_file)
  _done(t, f"{len(tokens)} entries -> {vocab_file}")

  t = _stage(3, "pretraining records (original schema, 80/10/10 masking + NSP)")
  options = pretraining_data.DataOptions(dupe_factor=FLAGS.dupe_factor, block_bytes=256 << 10)
  records = {}
  for name, path, dupe in (("train", train_txt, FLAGS.dupe_factor), ("heldout", held_txt, 1)):
    outputs = pretraining_data.Outputs(directory=os.path.join(out, "records", name),
                                       num_shards=2 if name == "train" else 1)
    manifest = pretraining_data.create_pretraining_data(
        path, outputs, vocab_file, options.__class__(**{**options.__dict__, "dupe_factor": dupe}),
        num_workers=pretraining_data.default_num_workers())
    records[name] = outputs.directory + "/*.tfrecord"
    c, s = manifest["counts"], manifest["shares"]
    print(f"    {name}: {c['instances']} instances from {c['documents']} documents in "
          f"{manifest['run']['seconds']:.1f} s | mean tokens {s['mean_tokens']:.1f} | "
          f"predictions {s['predictions_per_instance']:.2f} | [MASK]/kept/random "
          f"{s['masked']:.2f}/{s['kept']:.2f}/{s['random']:.2f} | NSP random {s['nsp_random']:.2f}")
  _done(t, "records written")

  t = _stage(4, f"train a small BERT for {FLAGS.train_steps} steps")
  bert_config = config_lib.BertConfig(
      vocab_size=len(tokens), hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
      intermediate_size=512, max_position_embeddings=128)
  config_path = os.path.join(out, "bert_config.json")
  bert_config.to_json_file(config_path)
  model_dir = os.path.join(out, "model")
  train_config = training.TrainConfig(
      input_file=records["train"], eval_input_file=records["heldout"], output_dir=model_dir,
      do_train=True, do_eval=True, train_batch_size=FLAGS.batch_size, eval_batch_size=64,
      learning_rate=1e-3, num_train_steps=FLAGS.train_steps,
      num_warmup_steps=FLAGS.train_steps // 10, save_checkpoints_steps=500,
      iterations_per_loop=100, log_steps=100, max_eval_steps=20)
  logging.set_verbosity(logging.INFO)  # the loop's progress lines: losses, rate, ETA
  result = training.run(train_config, bert_config)
  logging.set_verbosity(logging.WARNING)
  ev = result["eval"]
  _done(t, f"step {result['global_step']}: held-out masked-LM accuracy "
           f"{ev['masked_lm_accuracy']:.3f}, NSP accuracy {ev['next_sentence_accuracy']:.3f}, "
           f"loss {ev['loss']:.3f} (TensorBoard: tensorboard --logdir {model_dir})")

  t = _stage(5, "export SavedModel")
  export_dir = os.path.join(out, "saved_model")
  pretrainer, checkpoint = export.load_pretrainer(bert_config, model_dir)
  export.export_saved_model(pretrainer, vocab_file, True, export_dir, max_seq_length=128)
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
  _done(t, "done")
  print(f"\nall stages done in {time.time() - total_start:.0f} s; outputs in {out}")


def run():
  _define_flags()
  logging.set_verbosity(logging.WARNING)
  app.run(main)


if __name__ == "__main__":
  run()
