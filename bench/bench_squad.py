"""SQuAD features and answers side by side with the original run_squad.py, at scale.

    .venv/bin/python bench/bench_squad.py --bert_dir=REF \
        [--shared_dir=../shared] [--corpus=SHARED/corpora/kjv.txt] \
        [--vocab=SHARED/vocab/bert-base-uncased-vocab.txt] \
        [--paragraphs=500] [--version_2_with_negative]

REF is a checkout of google-research/bert (run unchanged under tf.compat.v1
with ../shared/reference/tf1_shim.py; nothing of it is committed). The
script makes a SQuAD-shaped file from the corpus (each paragraph 12
consecutive lines, three questions on it: a random other line's first
words, the answer a random 1-6 word span of the context at its character
offset; one in 40 answers moved off its answer_start; with
--version_2_with_negative one question in 5 unanswerable), then for
training and for prediction reads and converts it with the original's
functions and with bert_tf.downstream.span.squad (the original's default windows:
384 / 128 / 64), decodes the same seeded logits with the original's
write_predictions and bert_tf.downstream.span.span_answers, and prints the
number of windows, how many differ (must be 0), the predictions and n-best
lists that differ, and each side's time.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

import numpy as np

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _REPO)
_SHARED = os.path.join(_REPO, "..", "shared")

FIELDS = ("tokens", "token_to_orig_map", "token_is_max_context", "input_ids", "input_mask",
          "segment_ids", "start_position", "end_position")


def make_squad(lines, paragraphs, version_2, seed=0):
  rng = random.Random(seed)
  data = []
  for p in range(paragraphs):
    context = " ".join(lines[p * 12:(p + 1) * 12])
    qas = []
    for q in range(3):
      qid = f"p{p}q{q}"
      question = " ".join(rng.choice(lines).split()[:rng.randint(4, 90)]) + "?"
      if version_2 and rng.random() < 0.2:
        qas.append({"id": qid, "question": question, "answers": [], "is_impossible": True})
        continue
      words = context.split(" ")
      first = rng.randrange(len(words))
      text = " ".join(words[first:first + rng.randint(1, 6)])
      start = len(" ".join(words[:first])) + (1 if first else 0)
      if rng.random() < 1 / 40:
        start += 3
      qa = {"id": qid, "question": question, "answers": [{"text": text, "answer_start": start}]}
      if version_2:
        qa["is_impossible"] = False
      qas.append(qa)
    data.append({"context": context, "qas": qas})
  return {"version": "v2.0" if version_2 else "1.1",
          "data": [{"title": "corpus", "paragraphs": data}]}


def _as_dict(feature):
  out = {k: getattr(feature, k) for k in FIELDS}
  out["token_to_orig_map"] = {str(k): v for k, v in out["token_to_orig_map"].items()}
  out["token_is_max_context"] = {str(k): v for k, v in out["token_is_max_context"].items()}
  return out


def seeded_logits(features, version_2):
  rng = np.random.default_rng(0)
  raw = []
  for f in features:
    start = rng.normal(0, 2, 384).astype(np.float32)
    end = rng.normal(0, 2, 384).astype(np.float32)
    if version_2:
      start[0] += 3.0
      end[0] += 3.0
    raw.append((f.unique_id, [float(x) for x in start], [float(x) for x in end]))
  return raw


def run_original(args, path, out_path):
  """The original's side, in its own process (its shim turns TF2 behaviour off)."""
  sys.path.insert(0, os.path.join(args.shared_dir, "reference"))
  import tf1_shim  # pylint: disable=g-import-not-at-top
  tf1_shim.install()
  sys.path.insert(0, args.bert_dir)
  import run_squad  # pylint: disable=g-import-not-at-top
  run_squad.FLAGS(["bench", f"--version_2_with_negative={args.version_2_with_negative}"])
  tokenizer = run_squad.tokenization.FullTokenizer(args.vocab, do_lower_case=True)
  out = {}
  for is_training in (True, False):
    start = time.perf_counter()
    examples = run_squad.read_squad_examples(path, is_training=is_training)
    features = []
    run_squad.convert_examples_to_features(examples, tokenizer, 384, 128, 64, is_training,
                                           features.append)
    out["train" if is_training else "predict"] = {
        "seconds": time.perf_counter() - start, "questions": len(examples),
        "features": [_as_dict(f) for f in features]}
  raw = seeded_logits(features, args.version_2_with_negative)
  with tempfile.TemporaryDirectory() as tmp:
    names = [os.path.join(tmp, n) for n in ("p.json", "n.json", "o.json")]
    start = time.perf_counter()
    run_squad.write_predictions(examples, features, [run_squad.RawResult(*r) for r in raw],
                                20, 30, True, *names)
    out["answers_seconds"] = time.perf_counter() - start
    out["answers"] = [json.load(open(n, encoding="utf-8")) if os.path.exists(n) else {}
                      for n in names]
  with open(out_path, "w", encoding="utf-8") as f:
    json.dump(out, f)


def run_ours(args, path, theirs):
  from bert_tf.downstream.span import squad  # pylint: disable=g-import-not-at-top
  from bert_tf.data.tokenizers import tokenization  # pylint: disable=g-import-not-at-top
  from bert_tf.data.tokenizers import wordpiece_vocab  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.span import span_answers  # pylint: disable=g-import-not-at-top
  tokenizer = tokenization.BatchTokenizer(wordpiece_vocab.load_vocab(args.vocab), True)
  for is_training in (True, False):
    kind = "train" if is_training else "predict"
    start = time.perf_counter()
    read = squad.read_examples(path, is_training, args.version_2_with_negative)
    features = squad.convert_examples(read.examples, tokenizer, 384, 128, 64, is_training)
    seconds = time.perf_counter() - start
    want = theirs[kind]["features"]
    differ = sum(_as_dict(a) != b for a, b in zip(features, want))
    differ += abs(len(features) - len(want))
    print(f"{kind}: {len(read.examples)} questions ({len(read.skipped)} answers skipped), "
          f"{len(want)} windows, {differ} differ; original {theirs[kind]['seconds']:.1f} s, "
          f"bert_tf {seconds:.1f} s")
  raw = seeded_logits(features, args.version_2_with_negative)
  start = time.perf_counter()
  ours = span_answers.decode(read.examples, features,
                             [span_answers.RawResult(*r) for r in raw], 20, 30, True,
                             args.version_2_with_negative, 0.0)
  seconds = time.perf_counter() - start
  ours = [json.loads(json.dumps(o)) for o in ours]
  want = theirs["answers"]
  preds = sum(want[0][k] != ours[0].get(k) for k in want[0])
  nbest = sum([e["text"] for e in want[1][k]] != [e["text"] for e in ours[1].get(k, [])]
              for k in want[1])
  odds = sum(abs(want[2][k] - ours[2][k]) > 1e-9 for k in want[2])
  print(f"answers: {len(want[0])} questions, {preds} predictions, {nbest} n-best lists and "
        f"{odds} null odds differ; original {theirs['answers_seconds']:.1f} s, "
        f"bert_tf {seconds:.1f} s")


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--bert_dir", required=True)
  parser.add_argument("--shared_dir", default=_SHARED)
  parser.add_argument("--corpus", default="", help="default: SHARED/corpora/kjv.txt")
  parser.add_argument("--vocab", default="",
                      help="default: SHARED/vocab/bert-base-uncased-vocab.txt")
  parser.add_argument("--paragraphs", type=int, default=500)
  parser.add_argument("--version_2_with_negative", action="store_true")
  parser.add_argument("--original_side", nargs=2, help=argparse.SUPPRESS)
  args = parser.parse_args()
  args.corpus = args.corpus or os.path.join(args.shared_dir, "corpora", "kjv.txt")
  args.vocab = args.vocab or os.path.join(args.shared_dir, "vocab", "bert-base-uncased-vocab.txt")
  if args.original_side:
    run_original(args, *args.original_side)
    return
  with open(args.corpus, encoding="utf-8") as f:
    lines = [line.strip() for line in f if line.strip()]
  with tempfile.TemporaryDirectory() as tmp:
    path, theirs = os.path.join(tmp, "squad.json"), os.path.join(tmp, "original.json")
    with open(path, "w", encoding="utf-8") as f:
      json.dump(make_squad(lines, args.paragraphs, args.version_2_with_negative), f)
    subprocess.run([sys.executable] + sys.argv + ["--original_side", path, theirs], check=True,
                   stderr=subprocess.DEVNULL)
    with open(theirs, encoding="utf-8") as f:
      run_ours(args, path, json.load(f))


if __name__ == "__main__":
  main()
