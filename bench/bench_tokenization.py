"""Tokenizer and vocab-builder speed, side by side with their baselines.

    python bench/bench_tokenization.py [--corpus=../shared/corpora/kjv.txt]
        [--vocab=../shared/vocab/bert-base-uncased-vocab.txt] [--batch_lines=4096]
        [--reference_lines=0] [--repeat=1] [--skip_vocab]

1. BatchTokenizer.tokenize_to_ids (tf-text ops, batches of --batch_lines as the
   data writer calls it) vs reference_tokenize (plain Python, the original
   rules; tests/helpers/reference_tokenization.py): MB/s and lines/s on the
   same lines, and a check that the ids agree.
   With --repeat=N, ours is timed N times and the fastest pass reported (the
   pass over KJV takes well under a second: one pass is noise on a busy
   machine).
2. Threads: the whole corpus in one tokenize_to_ids call (the size of the
   data writer's blocks and negative pool), in chunks on threads (the
   default for batches of 8,192 lines or more) against one thread, timed
   alternately --repeat times (at least 3), with the same ids.
3. build_vocab's learner (geometric threshold search over tensorflow-text's
   learn_with_thresh) vs tensorflow-text's own `learn` (linear bisection) on
   the same word counts, for --vocab_size.
"""

import argparse
import os
import sys
import time

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _REPO)
# The baseline: the original's rules in plain Python, the tests' oracle.
sys.path.insert(0, os.path.join(_REPO, "tests"))

from bert_tf.data.tokenizers import tokenization  # pylint: disable=g-import-not-at-top
from bert_tf.data.tokenizers import vocab_learning as build_vocab
from bert_tf.data.tokenizers import wordpiece_vocab

from helpers import reference_tokenization

_SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared")


def _rate(n_bytes, n_lines, seconds):
  return f"{n_bytes / 1e6 / seconds:7.2f} MB/s {n_lines / seconds:9.0f} lines/s"


def bench_tokenizer(lines, vocab_path, batch_lines, reference_lines, repeat=1):
  t0 = time.perf_counter()
  vocab = wordpiece_vocab.load_vocab(vocab_path)
  tokenizer = tokenization.BatchTokenizer(vocab, do_lower_case=True)
  tokenizer.tokenize_to_ids(lines[:batch_lines])  # trace once
  setup = time.perf_counter() - t0
  n_bytes = sum(len(line.encode("utf-8")) + 1 for line in lines)

  times, cpu_times = [], []
  for _ in range(max(repeat, 1)):
    t0, c0 = time.perf_counter(), time.process_time()
    ours = []
    for i in range(0, len(lines), batch_lines):
      values, splits = tokenizer.tokenize_to_ids(lines[i:i + batch_lines])
      ours.extend(values[a:b] for a, b in zip(splits[:-1], splits[1:]))
    times.append(time.perf_counter() - t0)
    cpu_times.append(time.process_time() - c0)
  t_ours = min(times)
  n_tokens = sum(len(ids) for ids in ours)

  ref_lines = lines[:reference_lines] if reference_lines else lines
  ref_bytes = sum(len(line.encode("utf-8")) + 1 for line in ref_lines)
  t0 = time.perf_counter()
  reference = [reference_tokenization.reference_tokenize(line, vocab.token_to_id, True)
               for line in ref_lines]
  t_ref = time.perf_counter() - t0
  same = all([vocab.tokens[i] for i in ids] == want
             for ids, want in zip(ours, reference))

  print(f"tokenizer on {len(lines)} lines, {n_bytes / 1e6:.2f} MB, "
        f"{n_tokens} tokens (vocab {vocab.size}, do_lower_case=True)")
  print(f"  setup (vocab, regex classes, wordpiece model, trace): {setup:.1f} s")
  print(f"  ours  tokenize_to_ids, batches of {batch_lines}: "
        f"{_rate(n_bytes, len(lines), t_ours)}  ({t_ours:.2f} s, fastest of "
        f"{len(times)}; median {sorted(times)[len(times) // 2]:.2f} s; CPU "
        f"{min(cpu_times):.2f} s all threads, less swayed by other load)")
  print(f"  base  reference_tokenize (Python):      "
        f"{_rate(ref_bytes, len(ref_lines), t_ref)}  ({t_ref:.2f} s, "
        f"{len(ref_lines)} lines)")
  print(f"  speed-up {(n_bytes / t_ours) / (ref_bytes / t_ref):.1f}x; "
        f"ids identical on the {len(ref_lines)} compared lines: {same}")


def bench_threads(lines, vocab_path, repeat):
  tokenizer = tokenization.BatchTokenizer(wordpiece_vocab.load_vocab(vocab_path), do_lower_case=True)
  default_threads = tokenization._tokenizer_threads  # pylint: disable=protected-access
  one_thread = lambda: 1
  tokenizer.tokenize_to_ids(lines[:100])  # trace once
  times = {"threads": [], "one": []}
  outputs = {}
  for _ in range(max(repeat, 3)):
    for name, threads in (("threads", default_threads), ("one", one_thread)):
      tokenization._tokenizer_threads = threads  # pylint: disable=protected-access
      t0 = time.perf_counter()
      outputs[name] = tokenizer.tokenize_to_ids(lines)
      times[name].append(time.perf_counter() - t0)
  tokenization._tokenizer_threads = default_threads  # pylint: disable=protected-access
  same = all((a == b).all() for a, b in zip(outputs["threads"], outputs["one"]))
  med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
  print(f"whole corpus in one call ({len(lines)} lines), median of {len(times['one'])} "
        f"alternating runs:")
  print(f"  ours  chunks on {default_threads()} thread(s): {med['threads']:.3f} s "
        f"({min(times['threads']):.3f}-{max(times['threads']):.3f})")
  print(f"  base  one thread:              {med['one']:.3f} s "
        f"({min(times['one']):.3f}-{max(times['one']):.3f})")
  print(f"  speed-up {med['one'] / med['threads']:.2f}x; ids identical: {same}")


def bench_vocab(corpus, vocab_size):
  from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib  # pylint: disable=g-import-not-at-top
  t0 = time.perf_counter()
  counts = build_vocab.count_words(corpus, do_lower_case=True)
  t_count = time.perf_counter() - t0
  reserved = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  t0 = time.perf_counter()
  ours = build_vocab.learn_vocab(counts, vocab_size, reserved)
  t_ours = time.perf_counter() - t0
  t0 = time.perf_counter()
  base = wordpiece_tokenizer_learner_lib.learn(
      counts, vocab_size, reserved, lower_thresh=1, max_input_tokens=-1,
      max_unique_chars=10**9)
  t_base = time.perf_counter() - t0
  print(f"vocab build, --vocab_size={vocab_size}, {len(counts)} distinct words")
  print(f"  count words (pre-tokenization):   {t_count:6.1f} s")
  print(f"  ours  learn_vocab:                {t_ours:6.1f} s -> {len(ours)} tokens;"
        f" total with counting {t_count + t_ours:.1f} s")
  print(f"  base  tf-text learner learn():    {t_base:6.1f} s -> {len(base)} tokens")
  print(f"  speed-up {t_base / t_ours:.1f}x")


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--corpus", default=os.path.join(_SHARED, "corpora", "kjv.txt"))
  parser.add_argument("--vocab", default=os.path.join(
      _SHARED, "vocab", "bert-base-uncased-vocab.txt"))
  parser.add_argument("--batch_lines", type=int, default=4096)
  parser.add_argument("--reference_lines", type=int, default=0,
                      help="reference on the first N lines only (0: all)")
  parser.add_argument("--repeat", type=int, default=1,
                      help="time the tokenizer this many times, report the fastest")
  parser.add_argument("--vocab_sizes", default="30522,8000")
  parser.add_argument("--skip_vocab", action="store_true")
  args = parser.parse_args()
  with open(args.corpus, encoding="utf-8") as f:
    lines = f.read().split("\n")
  bench_tokenizer(lines, args.vocab, args.batch_lines, args.reference_lines, args.repeat)
  bench_threads(lines, args.vocab, args.repeat)
  if not args.skip_vocab:
    for size in args.vocab_sizes.split(","):
      bench_vocab(args.corpus, int(size))


if __name__ == "__main__":
  main()
