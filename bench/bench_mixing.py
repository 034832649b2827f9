"""Random next-sentence Bs and record mixing at a corpus far larger than a
block, side by side with the original.

  python bench/bench_mixing.py [--original_dir=PATH_TO/google-research/bert]
      [--num_docs=20000] [--block_bytes=65536] [--dupe_factor=5] [--ours_repo=PATH]

--ours_repo runs the bert_tf of another checkout (e.g. an older commit, for
a before/after figure).

A corpus of many short documents in index order whose every token names its
document (tests/helpers/sourced_corpus.py), written with a small --block_bytes
so that it spans ~45 blocks, as Wikipedia spans ~16,000 of the default
size. Printed for each run (ours to 4 --output_file files and to 4
--output_dir shards; the original to 4 --output_file files, through
../shared/reference/run_v1_script.py, when --original_dir is given):

- how many distinct documents served as a random B, and the most any one
  served (the original draws B's document uniformly from the whole input);
- for each output file, from how many of 20 equal regions of the corpus its
  first 1,000 records come (the original shuffles globally: all 20);
- the manifest's own counts of the same (ours).
Goals (issue 22): distinct >= 0.9x the original's, most <= 3x the
original's, >= 18 of 20 regions in every file.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SHARED = os.path.normpath(os.path.join(REPO, "..", "shared"))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))

from helpers import sourced_corpus  # pylint: disable=g-import-not-at-top,wrong-import-position

FILES = 4


def run(cmd, env=None, cwd=None):
  started = time.time()
  result = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
  if result.returncode:
    raise RuntimeError(f"failed: {' '.join(cmd)}\n{result.stderr[-3000:]}")
  return time.time() - started


def common_flags(args, corpus, vocab):
  return [f"--input_file={corpus}", f"--vocab_file={vocab}", "--do_lower_case=True",
          "--max_seq_length=128", "--max_predictions_per_seq=20", "--masked_lm_prob=0.15",
          f"--dupe_factor={args.dupe_factor}", "--random_seed=12345"]


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--original_dir", default="")
  parser.add_argument("--num_docs", type=int, default=20000)
  parser.add_argument("--block_bytes", type=int, default=65536)
  parser.add_argument("--dupe_factor", type=int, default=5)
  parser.add_argument("--work_dir", default="")
  parser.add_argument("--ours_repo", default="", help="checkout whose bert_tf to run")
  args = parser.parse_args()
  work = args.work_dir or tempfile.mkdtemp(prefix="bench_mixing_")
  corpus, vocab = os.path.join(work, "corpus.txt"), os.path.join(work, "vocab.txt")
  sourced_corpus.write_corpus(corpus, args.num_docs)
  sourced_corpus.write_vocab(vocab, args.num_docs)
  size = os.path.getsize(corpus)
  print(f"# Random B and mixing: {args.num_docs} documents in index order, {size / 1e6:.2f} MB, "
        f"--block_bytes={args.block_bytes} (~{size / args.block_bytes:.0f} blocks), "
        f"--dupe_factor={args.dupe_factor}, {FILES} output files")
  rows = []
  if args.original_dir:
    paths = [os.path.join(work, f"orig{k}.tfrecord") for k in range(FILES)]
    wall = run([sys.executable, os.path.join(SHARED, "reference", "run_v1_script.py"),
                os.path.join(args.original_dir, "create_pretraining_data.py"),
                *common_flags(args, corpus, vocab), f"--output_file={','.join(paths)}"])
    rows.append(("original (--output_file, 4 files)", paths, wall, None))
  tool = [sys.executable, "-m", "bert_tf.create_pretraining_data", *common_flags(args, corpus, vocab),
          f"--block_bytes={args.block_bytes}", "--num_workers=2"]
  env, cwd = None, None
  if args.ours_repo:  # python -m looks in the working folder first
    cwd = os.path.abspath(args.ours_repo)
    env = dict(os.environ, PYTHONPATH=cwd)
  paths = [os.path.join(work, f"ours{k}.tfrecord") for k in range(FILES)]
  wall = run(tool + [f"--output_file={','.join(paths)}"], env, cwd)
  rows.append(("bert_tf (--output_file, 4 files)", paths, wall, paths[0] + ".manifest.json"))
  out_dir = os.path.join(work, "ours_dir")
  wall = run(tool + [f"--output_dir={out_dir}", f"--num_output_shards={FILES}"], env, cwd)
  paths = sorted(os.path.join(out_dir, p) for p in os.listdir(out_dir) if p.endswith(".tfrecord"))
  rows.append(("bert_tf (--output_dir, 4 shards)", paths, wall, os.path.join(out_dir, "manifest.json")))

  print("| run | wall s | random Bs | distinct B documents | most per document | regions of the "
        "first 1,000 records, per file | manifest: distinct / most |")
  print("|---|---|---|---|---|---|---|")
  figures = {}
  for name, paths, wall, manifest_path in rows:
    f = sourced_corpus.mixing_figures(paths, args.num_docs)
    figures[name] = f
    stated = ""
    if manifest_path:
      with open(manifest_path) as m:
        counts = json.load(m)["counts"]
      if "nsp_random_documents" in counts:  # (older writers do not count them)
        stated = f"{counts['nsp_random_documents']} / {counts['nsp_random_most_per_document']}"
    print(f"| {name} | {wall:.1f} | {f['random_b']} | {f['distinct_b_documents']} | "
          f"{f['most_per_document']} | {', '.join(map(str, f['regions_of_first']))} | {stated} |")
  if args.original_dir:
    base = figures[rows[0][0]]
    for name, *_ in rows[1:]:
      f = figures[name]
      print(f"{name}: distinct {f['distinct_b_documents'] / base['distinct_b_documents']:.2f}x "
            f"the original's (goal >= 0.9x), most per document "
            f"{f['most_per_document'] / base['most_per_document']:.2f}x (goal <= 3x), fewest regions "
            f"{min(f['regions_of_first'])} of 20 (goal >= 18)")
  print(f"work dir: {work}")


if __name__ == "__main__":
  main()
