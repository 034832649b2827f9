"""bert_tf against what users pick instead, side by side in one run:
Hugging Face transformers on PyTorch (CPU here; the same script on a GPU),
and keras-hub where it has the piece (bench/peers_keras_hub.py).

  pip install -e .[peers]                      # torch, transformers>=5
  python bench/bench_peers.py --rounds=3       # BERT-tiny, every workload
  python bench/bench_peers.py --config=base    # BERT-base, a few steps
  python bench/bench_peers.py --smoke          # toy sizes: checks the script

--config=base (or large) sets, unless given, the sizes of BASE_SIZES: 2
timed pretraining steps, 128 train / 64 dev pairs, 64 / 32 SQuAD
questions, and leaves out masking (it does not depend on the model). Each
side's worker holds its model for the workload's rounds: BERT-base's
pretraining step takes 8-9 GB a side on CPU (transformers' 30,522-way
logits at every position, ours and keras-hub's Adam state and
activations), so three sides need about 27 GB; --no-keras_hub, or
--workloads without pretrain, where memory is short.

Each workload runs both sides on the same model shape (configs/bert_<name>.json),
the same data, batch and sequence length, in alternating rounds (ours first
in even rounds, theirs first in odd ones) so that load from other processes
on a shared machine hits both alike; it prints each side's best and median
examples/s and the ratio ours / theirs of the best. Before timing, each
workload checks the pairing: both sides compute the same loss, logits or
answers on the same batch from the same weights (ours exported with
bert_tf.serving.hf_export, the `--hf_out` path, and read by transformers).

Workloads (--workloads):
  pretrain  the MLM + NSP training step: bert_tf's loop.run (the original's
            optimizer and loss, records read by tf.data) against
            BertForPreTraining with torch's fused AdamW (same lr, weight
            decay, clipping at 1.0), on the same masked records (15%,
            80/10/10, --preds predictions). Steady state: the first host loop
            of ours (tracing) and the first --warmup steps of theirs are not
            timed.
  masking   dynamic masking of the input alone: bert_tf's tf.data pipeline
            (DynamicMasking) against DataCollatorForLanguageModeling (its
            fast path: special_tokens_mask given) on the same token ids.
  classify  sentence-pair fine-tuning, one epoch of short pairs (KJV verse
            pairs: the next verse or a random one), from tokenized features
            to the trained model with its dev set evaluated (the model's
            building included on both sides), bert_tf's length buckets
            (tracing included) against a run_glue-style loop with dynamic
            padding (DataCollatorWithPadding); then prediction of the dev
            pairs (steady state: ours traced before timing).
  squad     SQuAD-format fine-tuning (features, the model built, one epoch as
            the original counts it, a checkpoint written) and prediction
            (features, logits, answers decoded) on the same windows:
            run_squad's path against a run_qa-style loop (bench/peers_squad.py).
  serve     fill-mask: the exported SavedModel's `fill_mask` signature (text
            in) against transformers' pipeline("fill-mask") on the --hf_out
            folder of the same weights; one request's latency (as
            requests/s) and a batch's throughput; load times printed apart.

Each side runs in its own worker process (TensorFlow and torch in one
process crash on import here: triton's module against TensorFlow's), held
for a workload's rounds and idle while the other side runs; a setup process
writes the shared data first (records, their batches as numpy, the vocab,
our seeded model's transformers folder). Without torch or transformers it
prints the one line of what is missing and exits 2 (the peers are an
optional install, never needed by the tests). Settings each side ran are
printed with the versions.
"""

import argparse
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
import types

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "bench"))
import peers_keras_hub  # pylint: disable=g-import-not-at-top,wrong-import-position
import peers_squad  # pylint: disable=g-import-not-at-top,wrong-import-position
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
SHARED = os.path.normpath(os.path.join(REPO, "..", "shared"))
SHARED_VOCAB = os.path.join(SHARED, "vocab", "bert-base-uncased-vocab.txt")
SHARED_CORPUS = os.path.join(SHARED, "corpora", "kjv.txt")
WORKLOADS = ("pretrain", "masking", "classify", "squad", "serve")
LOSS_RTOL = 1e-4  # relative, float32 on both sides
LOGITS_ATOL = 1e-4


def missing_peers():
  """The peers' packages that do not import (or are too old), as one line; "" if none."""
  missing = []
  try:
    import torch  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  except ImportError:
    missing.append("torch")
  try:
    import transformers  # pylint: disable=g-import-not-at-top
    if int(transformers.__version__.split(".")[0]) < 5:
      missing.append(f"transformers>=5 (found {transformers.__version__})")
  except ImportError:
    missing.append("transformers>=5")
  return ", ".join(missing)


def cpu_model():
  try:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
      for line in f:
        if line.startswith("model name"):
          return line.split(":", 1)[1].strip()
  except OSError:
    pass
  return platform.processor() or "unknown CPU"


def versions():
  """Versions of everything, read from the installed packages' metadata
  (no import: the coordinator imports neither TensorFlow nor torch)."""
  from importlib import metadata  # pylint: disable=g-import-not-at-top
  found = []
  for name in ("tensorflow", "keras", "keras-hub", "torch", "transformers"):
    try:
      found.append(f"{name} {metadata.version(name)}")
    except metadata.PackageNotFoundError:
      found.append(f"{name} not installed")
  return (f"python {platform.python_version()}, {', '.join(found)}; {cpu_model()}, "
          f"{os.cpu_count()} cores")


# ------------------------------------------------------------------------------
# Setup (its own process, TensorFlow): the data both sides read
# ------------------------------------------------------------------------------


def setup(args):
  """Writes into args.work: the records, their parsed batches (batches.npz),
  the vocab, our seeded MLM+NSP model's transformers folder (hf/) and its
  weights (ours.weights.h5), the sentence pairs (train.tsv, dev.tsv)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import keras  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import bench_training  # pylint: disable=g-import-not-at-top
  from bert_tf.data.records import schema  # pylint: disable=g-import-not-at-top
  from bert_tf.serving import hf_export  # pylint: disable=g-import-not-at-top
  from bert_tf.training import objectives  # pylint: disable=g-import-not-at-top
  work = args.work
  vocab_file = SHARED_VOCAB if os.path.exists(SHARED_VOCAB) else _generated_vocab(work)
  config = bert_config(args, vocab_file)
  records = os.path.join(work, "train.tfrecord")
  bench_training.write_random_records(records, args.records, args.seq, args.preds,
                                      config.vocab_size)
  parsed = [{k: v.numpy() for k, v in schema.parse_examples(s, args.seq, args.preds).items()}
            for s in tf.data.TFRecordDataset(records).batch(args.records)]
  np.savez(os.path.join(work, "batches.npz"), **parsed[0])
  objective = objectives.get("mlm_nsp")
  keras.utils.set_random_seed(7)
  model = objective.build_model(config)
  model({k: tf.constant(v[:2]) for k, v in parsed[0].items()}, training=False)
  model.save_weights(os.path.join(work, "ours.weights.h5"))
  hf_export.write_hf_folder(model, objective, vocab_file, True, os.path.join(work, "hf"))
  pairs = _verse_pairs(args.train + args.dev, 3, args.pair_words)
  for name, part in (("train", pairs[:args.train]), ("dev", pairs[args.train:])):
    with open(os.path.join(work, f"{name}.tsv"), "w", encoding="utf-8") as f:
      f.write("sentence1\tsentence2\tlabel\n" + "".join(f"{a}\t{b}\t{l}\n" for a, b, l in part))
  peers_squad.setup(args, work, SHARED_CORPUS)
  with open(os.path.join(work, "vocab_file"), "w", encoding="utf-8") as f:
    f.write(vocab_file)
  return {"ready": True}


def bert_config(args, vocab_file):
  from bert_tf.models.config import BertConfig  # pylint: disable=g-import-not-at-top
  with open(vocab_file, encoding="utf-8") as f:
    vocab_size = sum(1 for _ in f)
  config = BertConfig.from_json_file(os.path.join(REPO, "configs", f"bert_{args.config}.json"))
  return config.replace(vocab_size=vocab_size)


def _generated_vocab(work):
  """Without ../shared: the special tokens, characters and made-up words
  (enough for random-token workloads)."""
  path = os.path.join(work, "vocab.txt")
  words = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]",
                                                           "[MASK]"]
  words += [chr(c) for c in range(33, 127)] + [f"##{chr(c)}" for c in range(97, 123)]
  words += [f"w{i}" for i in range(2000)]
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(words) + "\n")
  return path


def _verse_pairs(n, seed, max_words):
  """(a verse, the next verse or a random one, 1 if the next), alternating."""
  rng = random.Random(seed)
  if os.path.exists(SHARED_CORPUS):
    with open(SHARED_CORPUS, encoding="utf-8") as f:
      lines = [" ".join(l.split()[:max_words]) for l in f if l.strip()]
  else:
    lines = [f"line {i} of the words {' '.join(str(j) for j in range(i % 11))}"
             for i in range(5000)]
  pairs = []
  for i in range(n):
    a = rng.randrange(len(lines) - 1)
    b = a + 1 if i % 2 == 0 else rng.randrange(len(lines))
    pairs.append((lines[a].replace("\t", " "), lines[b].replace("\t", " "), int(b == a + 1)))
  return pairs


def _read_pairs(work, name):
  with open(os.path.join(work, f"{name}.tsv"), encoding="utf-8") as f:
    rows = [line.rstrip("\n").split("\t") for line in f][1:]
  return [(a, b, int(l)) for a, b, l in rows]


def _vocab_file(work):
  with open(os.path.join(work, "vocab_file"), encoding="utf-8") as f:
    return f.read()


def _timed(fn, count):
  """count / seconds of fn()."""
  start = time.perf_counter()
  fn()
  return count / (time.perf_counter() - start)


# ------------------------------------------------------------------------------
# Ours (TensorFlow worker). Each returns (check values, {key: round}, settings).
# ------------------------------------------------------------------------------


def _our_model(args):
  import keras  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert_tf.training import objectives  # pylint: disable=g-import-not-at-top
  config = bert_config(args, _vocab_file(args.work))
  objective = objectives.get("mlm_nsp")
  keras.utils.set_random_seed(7)
  model = objective.build_model(config)
  batch = dict(np.load(os.path.join(args.work, "batches.npz")))
  model({k: tf.constant(v[:2]) for k, v in batch.items()}, training=False)
  model.load_weights(os.path.join(args.work, "ours.weights.h5"))
  return config, objective, model, batch


def ours_pretrain(args):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import bench_training  # pylint: disable=g-import-not-at-top
  config, objective, model, batch = _our_model(args)
  feats = {k: tf.constant(v[:args.batch]) for k, v in batch.items()}
  sums = objective.loss_sums(model(feats, training=False), feats)
  loss = float(objective.replica_loss(sums, objective.global_counts(feats)))
  ours_args = types.SimpleNamespace(loops=2, steps_per_loop=args.steps, seq=args.seq,
                                    preds=args.preds, batch=args.batch, mixed_precision="none",
                                    jit_compile=False, strategy="", optimizer="adamw_original")
  counter = [0]

  def round_():
    counter[0] += 1
    return bench_training.bench_ours(config, os.path.join(args.work, "train.tfrecord"),
                                     ours_args, os.path.join(args.work, f"pre{counter[0]}"))
  return ({"loss": loss}, {"pretrain": round_},
          f"loop.run: adamw_original, float32, jit_compile off (the defaults), tf.data from "
          f"the records, {args.steps} steps per timed host loop (the first loop, tracing, "
          f"not timed)")


def _masking_config(args, size):
  from bert_tf.data.input import dynamic_masking  # pylint: disable=g-import-not-at-top
  from bert_tf.data.pretraining import masking as masking_lib  # pylint: disable=g-import-not-at-top
  return dynamic_masking.DynamicMasking(
      masked_lm_prob=0.15, max_predictions_per_seq=args.preds,
      vocab=masking_lib.MaskingVocab(size=size, cls_id=101, sep_id=102, mask_id=103,
                                     is_subword=(False,) * size))


def _mask_stats(input_ids, picked):
  """The check values: share of tokens picked, share of the picked that
  read [MASK], and the counts each share is of."""
  return {"picked": float(picked.mean()), "mask": float((input_ids[picked] == 103).mean()),
          "n": int(picked.size), "n_picked": int(picked.sum())}


def ours_masking(args):
  import numpy as np  # pylint: disable=g-import-not-at-top
  from bert_tf.data.input import pipeline  # pylint: disable=g-import-not-at-top
  config = bert_config(args, _vocab_file(args.work))
  ds = pipeline.make_dataset([os.path.join(args.work, "train.tfrecord")], args.batch, args.seq,
                             args.preds, True, seed=1, shuffle_buffer=1000,
                             masking=_masking_config(args, config.vocab_size))
  it = iter(ds)
  picked, ids = [], []
  for _ in range(4):
    b = {k: v.numpy() for k, v in next(it).items()}
    p = np.zeros(b["input_ids"].shape, bool)
    rows, cols = np.nonzero(b["masked_lm_weights"] > 0)
    p[rows, b["masked_lm_positions"][rows, cols]] = True
    picked.append(p)
    ids.append(b["input_ids"])
  stats = _mask_stats(np.concatenate(ids), np.concatenate(picked))
  n = args.masking_batches

  def round_():
    def run():
      for _ in range(n):
        next(it)
    return _timed(run, n * args.batch)
  return (stats, {"masking": round_},
          f"pipeline.make_dataset with DynamicMasking (read, parsed, masked, batched in "
          f"tf.data), 15%, 80/10/10, at most {args.preds} predictions")


def ours_classify(args):
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert_tf.data.input import length_buckets  # pylint: disable=g-import-not-at-top
  from bert_tf.models import hf_config  # pylint: disable=g-import-not-at-top
  from bert_tf.serving import hf_export  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream import finetune  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.classification import finetune_tsv  # pylint: disable=g-import-not-at-top
  work = args.work
  config = finetune.FinetuneConfig(
      train_file=os.path.join(work, "train.tsv"), dev_file=os.path.join(work, "dev.tsv"),
      output_dir=os.path.join(work, "ft"), vocab_file=_vocab_file(work),
      text_a_column="sentence1", text_b_column="sentence2", max_seq_length=args.seq,
      num_train_epochs=1.0, learning_rate=1e-4, train_batch_size=args.batch,
      eval_batch_size=args.batch, save_model=False)
  bert = bert_config(args, config.vocab_file)
  task = finetune_tsv.load_task(config)
  model, _ = finetune.build_classifier(bert, 2, seed=0, labels=["0", "1"])
  feats = {k: tf.constant(v[:args.batch]) for k, v in task.dev.items()}
  logits = model(feats, training=False).numpy()
  hf_export.write_hf_head_folder(model.encoder, bert, "bert", hf_config.SEQUENCE_CLASSIFICATION,
                                 model.head.kernel.numpy(), model.head.bias.numpy(),
                                 config.vocab_file, True, os.path.join(work, "hf_classifier"),
                                 labels=["0", "1"])
  model.encoder.save_weights(os.path.join(work, "cls_encoder.weights.h5"))  # keras-hub's check
  np.savez(os.path.join(work, "cls_head.npz"), kernel=model.head.kernel.numpy(),
           bias=model.head.bias.numpy())
  ids = [row[row > 0].tolist() for row in task.dev["input_ids"][:args.batch]]
  lengths = length_buckets.boundaries(config.max_seq_length, config.length_buckets)
  predict_fn = finetune.make_predict_fn(model)
  finetune.predict(model, task.dev, args.batch, predict_fn, lengths)  # traced before timing
  counter = [0]
  n_train = len(task.train_labels) // args.batch * args.batch

  def train():
    counter[0] += 1
    return _timed(lambda: finetune_tsv.train_seed(config, bert, task, 0,
                                              os.path.join(work, f"ft{counter[0]}")), n_train)

  def predict():
    return _timed(lambda: finetune.predict(model, task.dev, args.batch, predict_fn, lengths),
                  len(task.dev_labels))
  return ({"logits": logits.tolist(), "ids": ids},
          {"classify train": train, "classify predict": predict},
          f"finetune_tsv.train_seed (the model built, one epoch, the dev set evaluated): "
          f"{config.length_buckets} length buckets, adamw_original, warmup 10%, clip 1.0, "
          f"tracing included; predict: "
          f"finetune.predict, traced before timing")


def ours_serve(args):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_text  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from bert_tf.serving import saved_model  # pylint: disable=g-import-not-at-top
  _, _, model, _ = _our_model(args)
  export_dir = os.path.join(args.work, "saved_model")
  saved_model.export_saved_model(model, _vocab_file(args.work), True, export_dir,
                                 max_seq_length=args.seq, top_k=5)
  start = time.perf_counter()
  fill = tf.saved_model.load(export_dir).signatures["fill_mask"]
  load_s = time.perf_counter() - start
  texts = serve_texts(args)
  top = fill(text=tf.constant(texts[:4]))["top_k_ids"].numpy()[:, 0, :]
  one, batch = tf.constant(texts[:1]), tf.constant(texts)
  for _ in range(3):
    fill(text=one)
  fill(text=batch)

  def single():
    def run():
      for _ in range(args.serve_requests):
        fill(text=one)["top_k_ids"].numpy()
    return _timed(run, args.serve_requests)
  return ({"top": top.tolist()},
          {"serve 1 request": single,
           f"serve batch {len(texts)}": lambda: _timed(
               lambda: fill(text=batch)["top_k_ids"].numpy(), len(texts))},
          f"SavedModel fill_mask signature (text in, top 5); load {load_s:.2f} s")


def serve_texts(args):
  return [f"{a} [MASK] {b}" for a, b, _ in _verse_pairs(args.serve_batch, 5, 12)]


# ------------------------------------------------------------------------------
# Theirs (torch worker; never imports TensorFlow)
# ------------------------------------------------------------------------------


def _torch_device(args):
  import torch  # pylint: disable=g-import-not-at-top
  if torch.cuda.is_available():
    return "cuda"
  torch.set_num_threads(args.torch_threads or os.cpu_count())
  return "cpu"


def _optimizer(params, lr):
  """torch's AdamW on its fast path: fused where this torch has it."""
  import torch  # pylint: disable=g-import-not-at-top
  try:
    return torch.optim.AdamW(params, lr=lr, weight_decay=0.01, fused=True), "fused"
  except (RuntimeError, TypeError):
    return torch.optim.AdamW(params, lr=lr, weight_decay=0.01, foreach=True), "foreach"


def _sync(device):
  import torch  # pylint: disable=g-import-not-at-top
  if device == "cuda":
    torch.cuda.synchronize()


def _torch_batches(args, device):
  """The records' batches as BertForPreTraining's inputs (labels -100 off
  the masked positions)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  f = dict(np.load(os.path.join(args.work, "batches.npz")))
  labels = np.full(f["input_ids"].shape, -100, np.int64)
  rows, cols = np.nonzero(f["masked_lm_weights"] > 0)
  labels[rows, f["masked_lm_positions"][rows, cols]] = f["masked_lm_ids"][rows, cols]
  as_t = lambda x, i: torch.tensor(np.asarray(x[i:i + args.batch], np.int64), device=device)
  return [{"input_ids": as_t(f["input_ids"], i), "token_type_ids": as_t(f["segment_ids"], i),
           "attention_mask": as_t(f["input_mask"], i), "labels": as_t(labels, i),
           "next_sentence_label": as_t(f["next_sentence_labels"], i).reshape(-1)}
          for i in range(0, len(labels) - args.batch + 1, args.batch)]


def theirs_pretrain(args):
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  device = _torch_device(args)
  hf_dir = os.path.join(args.work, "hf")
  batches = _torch_batches(args, device)
  hf = transformers.BertForPreTraining.from_pretrained(hf_dir).to(device).eval()
  with torch.no_grad():
    loss = float(hf(**batches[0]).loss)
  model = transformers.BertForPreTraining(transformers.BertConfig.from_pretrained(hf_dir))
  model.to(device).train()
  optimizer, kind = _optimizer(model.parameters(), 1e-4)
  forward = torch.compile(model) if args.torch_compile else model

  def step(batch):
    forward(**batch).loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)

  def round_():
    for i in range(args.warmup):
      step(batches[i % len(batches)])
    _sync(device)

    def run():
      for i in range(args.steps):
        step(batches[i % len(batches)])
      _sync(device)
    return _timed(run, args.steps * args.batch)
  return ({"loss": loss}, {"pretrain": round_},
          f"BertForPreTraining ({model.config._attn_implementation} attention), AdamW "
          f"{kind}, clip 1.0, float32, torch.compile {'on' if args.torch_compile else 'off'}, "
          f"{torch.get_num_threads()} threads on {device}, batches in memory, {args.steps} "
          f"steps timed after {args.warmup}")


def theirs_masking(args):
  import numpy as np  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  _torch_device(args)
  f = dict(np.load(os.path.join(args.work, "batches.npz")))
  ids = f["input_ids"].copy()  # the records' text, its masks undone
  rows, cols = np.nonzero(f["masked_lm_weights"] > 0)
  ids[rows, f["masked_lm_positions"][rows, cols]] = f["masked_lm_ids"][rows, cols]
  special = np.zeros(ids.shape, np.int64)
  special[:, [0, args.seq // 2 - 1, args.seq - 1]] = 1
  examples = [{"input_ids": ids[i].tolist(), "token_type_ids": f["segment_ids"][i].tolist(),
               "special_tokens_mask": special[i].tolist()} for i in range(len(ids))]
  tokenizer = transformers.BertTokenizerFast.from_pretrained(os.path.join(args.work, "hf"))
  collator = transformers.DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
  torch.manual_seed(0)  # the collator draws from torch's generator
  rng = random.Random(0)
  out = [collator(rng.sample(examples, args.batch)) for _ in range(4)]
  picked = np.concatenate([(b["labels"] != -100).numpy() for b in out])
  stats = _mask_stats(np.concatenate([b["input_ids"].numpy() for b in out]), picked)
  n = args.masking_batches

  def round_():
    def run():
      for _ in range(n):
        collator(rng.sample(examples, args.batch))
    return _timed(run, n * args.batch)
  return (stats, {"masking": round_},
          "DataCollatorForLanguageModeling(mlm_probability=0.15) on token-id examples with "
          "special_tokens_mask given (its fast path), no cap on predictions")


def theirs_classify(args):
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  device = _torch_device(args)
  head_dir = os.path.join(args.work, "hf_classifier")
  tokenizer = transformers.BertTokenizerFast.from_pretrained(head_dir)
  train_pairs, dev_pairs = _read_pairs(args.work, "train"), _read_pairs(args.work, "dev")
  encode = lambda pairs: [dict(tokenizer(a, b, truncation=True, max_length=args.seq), labels=l)
                          for a, b, l in pairs]
  train, dev = encode(train_pairs), encode(dev_pairs)
  dev_inputs = [{k: v for k, v in f.items() if k != "labels"} for f in dev]
  collate = transformers.DataCollatorWithPadding(tokenizer)
  hf = transformers.BertForSequenceClassification.from_pretrained(head_dir).to(device).eval()
  with torch.no_grad():
    logits = hf(**collate(dev_inputs[:args.batch]).to(device)).logits.cpu().numpy()

  def predict(model):
    with torch.inference_mode():
      for i in range(0, len(dev_inputs), args.batch):
        model(**collate(dev_inputs[i:i + args.batch]).to(device)).logits.cpu()

  def train_round():
    # As ours (finetune.train_seed): the model built, one epoch, the dev set evaluated.
    def run():
      torch.manual_seed(0)
      model = transformers.BertForSequenceClassification(
          transformers.BertConfig.from_pretrained(head_dir)).to(device).train()
      loader = torch.utils.data.DataLoader(train, batch_size=args.batch, shuffle=True,
                                           drop_last=True, collate_fn=collate)
      optimizer, _ = _optimizer(model.parameters(), 1e-4)
      steps = len(loader)
      schedule = transformers.get_linear_schedule_with_warmup(optimizer, int(0.1 * steps),
                                                              steps)
      for batch in loader:
        model(**batch.to(device)).loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
      predict(model.eval())
      _sync(device)
    return _timed(run, len(train) // args.batch * args.batch)

  def predict_round():
    return _timed(lambda: predict(hf), len(dev_inputs))
  return ({"logits": logits.tolist(), "ids": [f["input_ids"] for f in dev[:args.batch]]},
          {"classify train": train_round, "classify predict": predict_round},
          "BertForSequenceClassification built, one epoch with dynamic padding "
          "(DataCollatorWithPadding), shuffled DataLoader, AdamW fused, linear warmup 10%, "
          "clip 1.0, the dev set evaluated (as ours); predict in "
          "torch.inference_mode, dynamic padding")


def theirs_serve(args):
  import transformers  # pylint: disable=g-import-not-at-top
  device = _torch_device(args)
  start = time.perf_counter()
  pipe = transformers.pipeline("fill-mask", model=os.path.join(args.work, "hf"), top_k=5,
                               device=device)
  load_s = time.perf_counter() - start
  texts = serve_texts(args)
  top = [[r["token"] for r in out] for out in pipe(texts[:4])]
  for _ in range(3):
    pipe(texts[:1])
  pipe(texts, batch_size=len(texts))

  def single():
    def run():
      for _ in range(args.serve_requests):
        pipe(texts[:1])
    return _timed(run, args.serve_requests)
  return ({"top": top},
          {"serve 1 request": single,
           f"serve batch {len(texts)}": lambda: _timed(
               lambda: pipe(texts, batch_size=len(texts)), len(texts))},
          f"pipeline('fill-mask', top_k=5) on the --hf_out folder; load {load_s:.2f} s")


def ours_squad(args):
  vocab_file = _vocab_file(args.work)
  return peers_squad.ours(args, bert_config(args, vocab_file), vocab_file, _timed)


def theirs_squad(args):
  return peers_squad.theirs(args, _torch_device(args), _optimizer, _timed)


def keras_hub_classify(args):
  vocab_file = _vocab_file(args.work)
  return peers_keras_hub.classify(args, bert_config(args, vocab_file), vocab_file,
                                  (_read_pairs(args.work, "train"), _read_pairs(args.work, "dev")),
                                  _timed)


def keras_hub_pretrain(args):
  import numpy as np  # pylint: disable=g-import-not-at-top
  return peers_keras_hub.pretrain(args, bert_config(args, _vocab_file(args.work)),
                                  dict(np.load(os.path.join(args.work, "batches.npz"))), _timed)


SIDES = {"ours": {"pretrain": ours_pretrain, "masking": ours_masking,
                  "classify": ours_classify, "squad": ours_squad, "serve": ours_serve},
         "theirs": {"pretrain": theirs_pretrain, "masking": theirs_masking,
                    "classify": theirs_classify, "squad": theirs_squad, "serve": theirs_serve},
         "keras_hub": {"pretrain": keras_hub_pretrain, "classify": keras_hub_classify}}
KERAS_HUB_ROWS = {"pretrain": "pretrain (keras-hub: MLM only)"}


def pairing(name, ours, theirs):
  """(ok, what was compared) of the two sides' check values."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  if name == "pretrain":
    o, t = ours["loss"], theirs["loss"]
    return (abs(o - t) <= LOSS_RTOL * abs(o),
            f"MLM+NSP loss on one batch, same weights: ours {o:.6f}, theirs {t:.6f} (relative "
            f"tolerance {LOSS_RTOL:g})")
  if name == "masking":
    # Each share's difference within 4 standard errors of two binomial samples of its counts.
    tol = {key: 4 * math.sqrt(p * (1 - p) * (1 / ours[n] + 1 / theirs[n]))
           for key, p, n in (("picked", 0.15, "n"), ("mask", 0.8, "n_picked"))}
    ok = all(abs(ours[key] - theirs[key]) <= tol[key] for key in tol)
    return ok, (f"share of tokens picked: ours {ours['picked']:.3f}, theirs "
                f"{theirs['picked']:.3f} (tolerance {tol['picked']:.3f}); [MASK] share of the "
                f"picked: ours {ours['mask']:.2f}, theirs {theirs['mask']:.2f} (tolerance "
                f"{tol['mask']:.2f})")
  if name == "squad":
    return peers_squad.pairing(ours, theirs)
  if name == "classify":
    same_ids = ours["ids"] == theirs["ids"]
    diff = float(np.abs(np.array(ours["logits"]) - np.array(theirs["logits"])).max())
    return (same_ids and diff <= LOGITS_ATOL,
            f"tokenizers give the same ids: {same_ids}; logits on one dev batch, same "
            f"weights: largest difference {diff:.1e} (tolerance {LOGITS_ATOL:g})")
  same = ours["top"] == theirs["top"]
  return same, f"top-5 fill ids of 4 requests, same weights: {'equal' if same else 'DIFFER'}"


# ------------------------------------------------------------------------------
# Workers and the coordinator
# ------------------------------------------------------------------------------


def worker(args):
  """A side's process: sets the workload up, prints its check values and
  settings as one JSON line, then times one round per key read on stdin."""
  from absl import logging  # pylint: disable=g-import-not-at-top
  logging.set_verbosity(logging.WARNING)
  if args.worker == "setup":
    print(json.dumps(setup(args)), flush=True)
    return
  if args.worker == "theirs":
    import transformers  # pylint: disable=g-import-not-at-top
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
  values, rounds, settings = SIDES[args.worker][args.workload](args)
  print(json.dumps({"check": values, "settings": settings, "keys": list(rounds)}), flush=True)
  for line in sys.stdin:
    print(json.dumps({"rate": rounds[line.strip()]()}), flush=True)


class Worker:
  """A worker process and its JSON lines."""

  def __init__(self, argv, side, workload):
    self.name = side
    self.proc = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), f"--worker={side}",
         f"--workload={workload}"] + argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, env=dict(os.environ, TF_FORCE_GPU_ALLOW_GROWTH="true"))
    # (on a GPU our idle worker holds only what it used, not the whole memory)

  def read(self):
    for line in self.proc.stdout:
      if line.startswith("{"):
        return json.loads(line)
    self.proc.wait()
    raise SystemExit(f"bench_peers: the {self.name} worker exited {self.proc.returncode} "
                     "before answering (its error is above)")

  def ask(self, key):
    self.proc.stdin.write(key + "\n")
    self.proc.stdin.flush()
    return self.read()["rate"]

  def close(self):
    self.proc.stdin.close()
    self.proc.wait()


def run_workload(name, argv, rounds, keras_hub):
  """The sides of one workload (ours, transformers, and keras-hub where it
  has the piece and `keras_hub`): checks, then rounds in rotating order.
  Returns ({key: [rates of each side]}, settings lines, sides)."""
  sides = ["ours", "theirs"] + (["keras_hub"] if keras_hub and name in SIDES["keras_hub"] else [])
  workers, answers = [], []
  for side in sides:  # ours first: it writes what the others read (the classifier's weights)
    workers.append(Worker(argv, side, name))
    answers.append(workers[-1].read())
  checks = [pairing(name, answers[0]["check"], a["check"]) if a["check"] else
            (None, "none: another objective (MLM only), timed as such") for a in answers[1:]]
  for side, (ok, what) in zip(sides[1:], checks):
    label = "check:" if side == "theirs" else f"check, {SIDE_NAMES[side]}:"
    print(f"  {label} {what}" + ("" if ok is None else f" -> {'PASS' if ok else 'FAIL'}"),
          flush=True)
  if not all(ok is not False for ok, _ in checks):
    for w in workers:
      w.close()
    raise SystemExit(f"bench_peers: {name}: the sides do not compute the same; not timed")
  rates = {key: [[] for _ in sides] for key in answers[0]["keys"]}
  for key in answers[0]["keys"]:
    for r in range(rounds):
      for i in [(r + k) % len(sides) for k in range(len(sides))]:
        rates[key][i].append(workers[i].ask(key) if key in answers[i]["keys"] else None)
  for w in workers:
    w.close()
  settings = "\n  ".join(f"{SIDE_NAMES[side]}: {a['settings']}" for side, a in zip(sides, answers))
  return rates, settings, sides


# --config=base (and large): what a run sets unless given. The masking
# workload does not depend on the model's shape: it is left out.
BASE_SIZES = (("workloads", "pretrain,classify,squad,serve"), ("steps", 2), ("records", 64),
              ("train", 128), ("dev", 64), ("squad_train", 64), ("squad_dev", 32),
              ("serve_requests", 10))
SIDE_NAMES = {"ours": "ours", "theirs": "transformers", "keras_hub": "keras-hub"}


def parse_args(argv=None):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--config", default="tiny", help="configs/bert_<name>.json")
  p.add_argument("--workloads", default=",".join(WORKLOADS))
  p.add_argument("--rounds", type=int, default=3, help="alternating rounds of each workload")
  p.add_argument("--steps", type=int, default=4, help="timed pretraining steps per round")
  p.add_argument("--warmup", type=int, default=1, help="untimed torch steps before each round")
  p.add_argument("--seq", type=int, default=128)
  p.add_argument("--preds", type=int, default=20)
  p.add_argument("--batch", type=int, default=32)
  p.add_argument("--records", type=int, default=256)
  p.add_argument("--masking_batches", type=int, default=50)
  p.add_argument("--train", type=int, default=640, help="classify: train pairs")
  p.add_argument("--dev", type=int, default=256, help="classify: dev pairs")
  p.add_argument("--pair_words", type=int, default=20, help="classify: words kept of a verse")
  peers_squad.add_flags(p)
  p.add_argument("--serve_batch", type=int, default=32)
  p.add_argument("--serve_requests", type=int, default=20)
  p.add_argument("--torch_threads", type=int, default=0,
                 help="torch's CPU threads (0: the cores, torch.set_num_threads's advice); on "
                      "a machine loaded by other processes 1 can be much faster (see "
                      "docs/performance.md)")
  p.add_argument("--torch_compile", action="store_true",
                 help="torch.compile the peer's pretraining model")
  p.add_argument("--keras_hub", action=argparse.BooleanOptionalAction, default=True,
                 help="keras-hub as a third side where it has the piece (pretrain: MLM only; "
                      "classify), when installed")
  p.add_argument("--smoke", action="store_true", help="toy sizes: checks the script runs")
  p.add_argument("--worker", default="", help=argparse.SUPPRESS)
  p.add_argument("--workload", default="", help=argparse.SUPPRESS)
  p.add_argument("--work", default="", help=argparse.SUPPRESS)
  args = p.parse_args(argv)
  if args.smoke:
    for key, value in (("rounds", 2), ("steps", 2), ("warmup", 1), ("seq", 32), ("preds", 5),
                       ("batch", 8), ("records", 32), ("masking_batches", 3), ("train", 32),
                       ("dev", 16), ("pair_words", 6), ("serve_batch", 4),
                       ("serve_requests", 2)) + peers_squad.SMOKE:
      if getattr(args, key) == p.get_default(key):
        setattr(args, key, value)
  if args.config in ("base", "large"):
    # A few steps of the larger shapes keep a run in minutes on 2 cores.
    for key, value in BASE_SIZES:
      if getattr(args, key) == p.get_default(key):
        setattr(args, key, value)
  unknown = set(args.workloads.split(",")) - set(WORKLOADS)
  if unknown:
    p.error(f"--workloads: unknown {', '.join(sorted(unknown))} (choose from "
            f"{', '.join(WORKLOADS)})")
  return args


def main(argv=None):
  argv = sys.argv[1:] if argv is None else argv
  args = parse_args(argv)
  if args.worker:
    return worker(args)
  missing = missing_peers()
  if missing:
    print(f"bench_peers: the peers are not installed: missing {missing} "
          f"(pip install -e .[peers]); nothing measured", flush=True)
    sys.exit(2)
  print(f"bench_peers: {versions()}", flush=True)
  print(f"BERT-{args.config}, seq {args.seq}, batch {args.batch}, {args.preds} predictions, "
        f"{args.rounds} alternating rounds, torch threads {args.torch_threads or os.cpu_count()}" + (" (smoke run)" if args.smoke else ""), flush=True)
  rows, begin = [], time.perf_counter()
  with tempfile.TemporaryDirectory() as work:
    child_argv = [a for a in argv if not a.startswith("--work")] + [f"--work={work}"]
    setup_worker = Worker(child_argv, "setup", "")
    setup_worker.read()
    setup_worker.close()
    for name in args.workloads.split(","):
      print(f"\n[{name}]", flush=True)
      start = time.perf_counter()
      result, settings, sides = run_workload(name, child_argv, args.rounds,
                                             args.keras_hub and keras_hub_installed())
      print(f"  {settings}", flush=True)
      for key, per_side in result.items():
        best = [max(r) if r and None not in r else None for r in per_side]
        median = [statistics.median(r) if best[i] else None for i, r in enumerate(per_side)]
        row = [KERAS_HUB_ROWS.get(key, key) if "keras_hub" in sides else key]
        for i in range(3):
          row += [best[i], median[i]] if i < len(sides) and best[i] else [None, None]
        rows.append(row)
        line = f"  {key}: ours {best[0]:.1f} (median {median[0]:.1f})"
        for i, side in enumerate(sides[1:], start=1):
          if best[i]:
            line += (f", {'theirs' if side == 'theirs' else SIDE_NAMES[side]} {best[i]:.1f} "
                     f"(median {median[i]:.1f})")
        ratios = " ".join(f"{best[0] / best[i]:.2f}x" for i in range(1, len(sides)) if best[i])
        print(f"{line} examples/s -> {ratios}", flush=True)
      print(f"  ({time.perf_counter() - start:.0f} s)", flush=True)
  print(f"\nexamples/s (serving: requests/s), best (median) of {args.rounds} rounds; ratio: "
        f"ours / theirs of the best; {time.perf_counter() - begin:.0f} s in all")
  print(f"{'workload':31} {'ours':>17} {'transformers':>17} {'ratio':>7} {'keras-hub':>17} "
        f"{'ratio':>7}")
  cell = lambda b, m: f"{b:8.1f} ({m:6.1f})" if b else f"{'-':>17}"
  for name, bo, mo, bt, mt, bk, mk in rows:
    print(f"{name:31} {cell(bo, mo)} {cell(bt, mt)} {bo / bt:6.2f}x {cell(bk, mk)} "
          + (f"{bo / bk:6.2f}x" if bk else f"{'-':>7}"))


def keras_hub_installed():
  import importlib.util  # pylint: disable=g-import-not-at-top
  return importlib.util.find_spec("keras_hub") is not None

if __name__ == "__main__":
  main()
