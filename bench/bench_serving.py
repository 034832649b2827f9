"""Serving latency and throughput: the exported SavedModel's `encode` and
`fill_mask` signatures against calling the Keras model directly, side by
side in one run, on CPU, at batch 1 and 32.

Paths timed (random weights; the numbers are about the serving machinery, not
about quality):
  encode     SavedModel `encode` signature (ids in)
             Keras encoder, eager call          model(inputs)
             Keras encoder in a tf.function     (what the signature wraps)
  fill_mask  SavedModel `fill_mask` (text in: tokenizes, runs, top-k in graph)
             Python: Tokenizer.tokenize_to_ids, padding in numpy, Keras
             pretrainer + softmax + top-k in a tf.function

Texts are KJV verses with two words replaced by [MASK] (../shared/corpora
if present, else a built-in sentence); the vocab is the original
bert-base-uncased one from ../shared/vocab if present, else a generated one.

  python bench/bench_serving.py                 # mini config (H=256, L=4)
  python bench/bench_serving.py --config tiny --iters 50
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402,F401  (the text signatures' ops)

from bert_tf.serving import saved_model  # noqa: E402
from bert_tf.models import modeling  # noqa: E402
from bert_tf.data.tokenizers import tokenization  # noqa: E402
from bert_tf.data.tokenizers import wordpiece_vocab  # noqa: E402
from bert_tf.models.config import BertConfig  # noqa: E402

SHARED = os.path.normpath(os.path.join(REPO, "..", "shared"))
SHARED_VOCAB = os.path.join(SHARED, "vocab", "bert-base-uncased-vocab.txt")
SHARED_CORPUS = os.path.join(SHARED, "corpora", "kjv.txt")
FALLBACK_TEXT = ("and the earth was without form , and void ; and darkness was upon the "
                 "face of the deep . and the spirit of god moved upon the face of the waters .")


def vocab_file(tmp):
  """The original vocab if present, else a generated one of the same size."""
  if os.path.exists(SHARED_VOCAB):
    return SHARED_VOCAB, "original bert-base-uncased"
  words = sorted(set(FALLBACK_TEXT.split()))
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words
  tokens += [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"] + list("abcdefghijklmnopqrstuvwxyz")
  tokens += [f"w{i}" for i in range(30522 - len(tokens))]
  path = os.path.join(tmp, "vocab.txt")
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(tokens) + "\n")
  return path, "generated"


def texts_with_masks(n, rng):
  """n texts of about 20-40 words, each with two [MASK]s."""
  if os.path.exists(SHARED_CORPUS):
    with open(SHARED_CORPUS, encoding="utf-8") as f:
      lines = [l.strip() for l in f if 20 <= len(l.split()) <= 40]
  else:
    lines = [FALLBACK_TEXT]
  out = []
  for i in range(n):
    words = lines[int(rng.integers(len(lines)))].split()
    for p in rng.choice(len(words), 2, replace=False):
      words[p] = "[MASK]"
    out.append(" ".join(words))
  return out


def timed(fn, iters, warmup=3):
  """Latencies in ms of `iters` calls after `warmup` (tracing, caches)."""
  for _ in range(warmup):
    fn()
  times = []
  for _ in range(iters):
    start = time.perf_counter()
    fn()
    times.append((time.perf_counter() - start) * 1000.0)
  return times


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--config", default="mini", choices=["tiny", "mini"])
  parser.add_argument("--max_seq_length", type=int, default=128)
  parser.add_argument("--iters", type=int, default=30)
  parser.add_argument("--batch_sizes", default="1,32")
  args = parser.parse_args()

  tmp = tempfile.mkdtemp(prefix="bench_serving_")
  vocab_path, vocab_kind = vocab_file(tmp)
  vocab = wordpiece_vocab.load_vocab(vocab_path)
  config = BertConfig.from_json_file(os.path.join(REPO, "configs", f"bert_{args.config}.json"))
  config = config.replace(vocab_size=vocab.size)
  pretrainer = modeling.BertPretrainer(config)
  export_dir = os.path.join(tmp, "saved_model")
  start = time.perf_counter()
  saved_model.export_saved_model(pretrainer, vocab_path, True, export_dir,
                            max_seq_length=args.max_seq_length, top_k=5)
  export_s = time.perf_counter() - start
  size_mb = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(export_dir)
                for f in fs) / 1e6
  start = time.perf_counter()
  loaded = tf.saved_model.load(export_dir)
  load_s = time.perf_counter() - start
  print(f"config {args.config} (H={config.hidden_size}, L={config.num_hidden_layers}), "
        f"vocab {vocab.size} ({vocab_kind}), max_seq_length {args.max_seq_length}, "
        f"CPU threads {os.cpu_count()}")
  print(f"export {export_s:.1f} s, SavedModel {size_mb:.1f} MB, load {load_s:.1f} s\n")

  encoder = pretrainer.encoder
  encoder_fn = tf.function(lambda x: encoder(x, training=False))
  pretrainer_fn = tf.function(
      lambda x: tf.math.top_k(tf.nn.softmax(pretrainer(x, training=False)["mlm_logits"]), k=5))
  tokenizer = tokenization.BatchTokenizer(vocab, True, keep_special_tokens=True)
  encode_sig = loaded.signatures["encode"]
  fill_sig = loaded.signatures["fill_mask"]
  rng = np.random.default_rng(0)

  def python_fill_mask(texts):
    values, splits = tokenizer.tokenize_to_ids(texts)
    rows = [[vocab.cls_id] + list(values[a:b][:args.max_seq_length - 2]) + [vocab.sep_id]
            for a, b in zip(splits[:-1], splits[1:])]
    seq = max(len(r) for r in rows)
    ids = np.zeros([len(rows), seq], np.int32)
    for i, r in enumerate(rows):
      ids[i, :len(r)] = r
    positions = [np.flatnonzero(ids[i] == vocab.mask_id) for i in range(len(rows))]
    preds = max(len(p) for p in positions)
    pos = np.zeros([len(rows), preds], np.int32)
    for i, p in enumerate(positions):
      pos[i, :len(p)] = p
    _, top = pretrainer_fn({"input_ids": ids, "input_mask": (ids > 0).astype(np.int32),
                            "segment_ids": np.zeros_like(ids), "masked_lm_positions": pos})
    return [[[vocab.tokens[t] for t in m] for m in row] for row in top.numpy()]

  rows = []
  for batch in [int(b) for b in args.batch_sizes.split(",")]:
    seq = args.max_seq_length
    ids = rng.integers(1000, vocab.size, (batch, seq)).astype(np.int32)
    ids[:, 0], ids[:, -1] = vocab.cls_id, vocab.sep_id
    enc_np = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
              "padding_mask": np.ones_like(ids)}
    enc_tf = {k: tf.constant(v) for k, v in enc_np.items()}
    sig_in = {"input_ids": enc_tf["token_ids"], "input_mask": enc_tf["padding_mask"],
              "segment_ids": enc_tf["segment_ids"]}
    texts = texts_with_masks(batch, rng)
    text_tensor = tf.constant(texts)
    cases = [
        ("encode", "SavedModel signature", lambda: encode_sig(**sig_in)),
        ("encode", "Keras eager call", lambda: encoder(enc_tf, training=False)),
        ("encode", "Keras in tf.function", lambda: encoder_fn(enc_tf)),
        ("fill_mask", "SavedModel signature (text in)", lambda: fill_sig(text=text_tensor)),
        ("fill_mask", "Python tokenize + Keras tf.function", lambda: python_fill_mask(texts)),
    ]
    baseline = {}
    for name, path, fn in cases:
      times = timed(fn, args.iters)
      p50 = statistics.median(times)
      p90 = float(np.percentile(times, 90))
      throughput = batch * 1000.0 / statistics.mean(times)
      baseline.setdefault(name, throughput)
      rows.append((name, batch, path, p50, p90, throughput, throughput / baseline[name]))

  header = f"{'signature':<10} {'batch':>5}  {'path':<38} {'p50 ms':>8} {'p90 ms':>8} {'ex/s':>8} {'vs SavedModel':>13}"
  print(header)
  print("-" * len(header))
  for name, batch, path, p50, p90, throughput, ratio in rows:
    print(f"{name:<10} {batch:>5}  {path:<38} {p50:>8.2f} {p90:>8.2f} {throughput:>8.1f} {ratio:>12.2f}x")
  tf.io.gfile.rmtree(tmp)


if __name__ == "__main__":
  main()
