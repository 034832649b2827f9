"""Evidence for the RoBERTa / ALBERT data variants (issue #12, data part).

  python bench/data_variants.py [--input_file=../shared/corpora/kjv.txt]
      [--vocab_file=../shared/vocab/bert-base-uncased-vocab.txt] [--dupe_factor=1]

Writes records for each switch into a temporary directory and prints, from
the written records, the statistics the rule implies:

* sop: every pair's A and B found in one document of the tokenized input,
  in the order the label says (0: A before B, 1: swapped), swapped share 0.5;
* full_sentences / doc_sentences: mean fill (real tokens / max_seq_length),
  share of instances crossing a document ([SEP] inside), which must be 0
  for doc_sentences;
* max_ngram=3 (with whole-word masking): the span lengths that the rule
  drew (masking.mask_tokens_ngram on the records' own instances) against the
  1/n weights, and runs of consecutive masked words in the records (spans
  that touch merge into one run; max_ngram=1 shows that merging alone);
* dynamic masking: input pipeline examples/s with and without it (same
  process, same options), and how differently two epochs mask each record.
"""

import argparse
import collections
import os
import random
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
SHARED = os.path.normpath(os.path.join(HERE, "..", "..", "shared"))


def parse_args():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--input_file", default=os.path.join(SHARED, "corpora", "kjv.txt"))
  p.add_argument("--vocab_file", default=os.path.join(SHARED, "vocab", "bert-base-uncased-vocab.txt"))
  p.add_argument("--dupe_factor", type=int, default=1)
  p.add_argument("--max_seq_length", type=int, default=128)
  p.add_argument("--max_predictions_per_seq", type=int, default=20)
  p.add_argument("--num_workers", type=int, default=2)
  p.add_argument("--sop_sample", type=int, default=3000, help="SOP records checked against the input")
  p.add_argument("--batch_size", type=int, default=256)
  p.add_argument("--pipeline_batches", type=int, default=60)
  return p.parse_args()


def write(args, root, name, **changes):
  from bert_tf.data.pretraining import writer
  options = writer.DataOptions(max_seq_length=args.max_seq_length,
                               max_predictions_per_seq=args.max_predictions_per_seq,
                               dupe_factor=args.dupe_factor, **changes)
  outputs = writer.Outputs(directory=os.path.join(root, name), num_shards=1)
  started = time.time()
  manifest = writer.create_pretraining_data(args.input_file, outputs, args.vocab_file, options,
                                            num_workers=args.num_workers)
  return manifest, outputs.paths(), time.time() - started


def read(paths):
  import tensorflow as tf
  out = []
  for record in tf.data.TFRecordDataset(paths):
    feature = tf.train.Example.FromString(record.numpy()).features.feature
    out.append({k: list(v.int64_list.value) or list(v.float_list.value) for k, v in feature.items()})
  return out


def real_tokens(r):
  ids = r["input_ids"][:sum(r["input_mask"])]
  for p, w, label in zip(r.get("masked_lm_positions", ()), r.get("masked_lm_weights", ()),
                         r.get("masked_lm_ids", ())):
    if w:
      ids[p] = label
  return ids


def input_documents(args):
  """The input as the writer tokenizes it: list of documents (flat id lists)."""
  from bert_tf.data.pretraining import corpus_scan
  from bert_tf.data.pretraining import token_cache
  from bert_tf.data.tokenizers import tokenization
  from bert_tf.data.tokenizers import wordpiece_vocab
  tokenizer = tokenization.BatchTokenizer(wordpiece_vocab.load_vocab(args.vocab_file), True)
  docs = []
  from bert_tf.io import file_io as files_lib
  for chunk in corpus_scan.scan_chunks(files_lib.expand_patterns(args.input_file), 1 << 20):
    block = corpus_scan.Block(chunk.index, (chunk,), chunk.documents)  # the input in order
    for doc in token_cache.tokenize_block(block, tokenizer).documents():
      docs.append([t for sentence in doc for t in sentence])
  return docs


def sop_table(args, records, docs):
  """Checks each sampled pair against the input: A and B both found in one
  document, in the order the label says."""
  index = collections.defaultdict(list)
  for d, doc in enumerate(docs):
    for i in range(len(doc) - 3):
      index[tuple(doc[i:i + 4])].append((d, i))

  def places(tokens):
    if len(tokens) < 4:
      return None
    return [(d, i) for d, i in index.get(tuple(tokens[:4]), ())
            if docs[d][i:i + len(tokens)] == tokens]

  rng = random.Random(0)
  sample = rng.sample(records, min(args.sop_sample, len(records)))
  ok = wrong_order = other_doc = unchecked = swapped = 0
  for r in sample:
    ids = real_tokens(r)
    num_a = len(ids) - sum(r["segment_ids"])  # [CLS] A [SEP]
    a, b = ids[1:num_a - 1], ids[num_a:-1]
    label = r["next_sentence_labels"][0]
    swapped += label
    pa, pb = places(a), places(b)
    if not pa or not pb:
      unchecked += 1
      continue
    same = [(x, y) for x in pa for y in pb if x[0] == y[0]]
    if not same:
      other_doc += 1
    elif any((x[1] + len(a) <= y[1]) if label == 0 else (y[1] + len(b) <= x[1]) for x, y in same):
      ok += 1
    else:
      wrong_order += 1
  checked = ok + wrong_order + other_doc
  print(f"\n## sop ({len(records)} records; {len(sample)} sampled, {checked} located in the input, "
        f"{unchecked} with a side under 4 tokens not located)")
  print("| figure | records | the rule implies |")
  print("|---|---|---|")
  print(f"| pairs with A and B in one document | {(ok + wrong_order) / max(checked, 1):.4f} | 1 |")
  print(f"| pairs in the order the label says | {ok / max(checked, 1):.4f} | 1 |")
  print(f"| swapped share (label 1), all records | "
        f"{sum(r['next_sentence_labels'][0] for r in records) / len(records):.4f} | 0.5 |")


def packing_table(args, results, sep_id):
  print("\n## packing")
  print("| packing | records | mean fill (tokens / max_seq_length) | crossing a document "
        "([SEP] inside) | the rule implies |")
  print("|---|---|---|---|---|")
  for name, records in results:
    fill = sum(sum(r["input_mask"]) for r in records) / len(records) / args.max_seq_length
    crossing = sum(sep_id in real_tokens(r)[1:-1] for r in records) / len(records)
    implied = ("fill near 1 (short only where the next sentence does not fit); crossings > 0"
               if name == "full_sentences" else "crossings exactly 0; shorter at document ends")
    print(f"| {name} | {len(records)} | {fill:.4f} | {crossing:.4f} | {implied} |")


def ngram_table(args, records_by_n, vocab):
  from bert_tf.data.pretraining import masking
  mv = masking.MaskingVocab(size=vocab.size, cls_id=vocab.cls_id, sep_id=vocab.sep_id,
                            mask_id=vocab.mask_id, is_subword=tuple(bool(x) for x in vocab.is_subword))
  weights = masking.ngram_weights(3)
  print("\n## n-gram masking (whole words)")
  print("| figure | n=1 | n=2 | n=3 | >3 |")
  print("|---|---|---|---|---|")
  print(f"| the rule implies: span lengths ~ 1/n | {weights[0]:.3f} | {weights[1]:.3f} | "
        f"{weights[2]:.3f} | 0 |")
  rng = random.Random(0)
  drawn = collections.Counter()
  free = collections.Counter()
  for r in records_by_n[3][:5000]:
    tokens = real_tokens(r)
    units = masking.mask_units(tokens, mv, True)
    want = masking.num_to_predict(len(tokens), 0.15, args.max_predictions_per_seq)
    count = 0
    for span in masking.choose_ngram_spans(units, want, 3, rng):
      drawn[len(span)] += 1
      # A draw the budget could not have shortened: even 3 words from its
      # start fit. Such spans show the 1/n law itself.
      start = span[0]
      if count + sum(len(u) for u in units[start:start + 3]) <= want and start + 3 <= len(units):
        free[len(span)] += 1
      count += sum(len(units[k]) for k in span)
  row("spans chosen by the rule, all (max_ngram=3, on the records' instances)", drawn)
  row("spans chosen where the budget could not shorten them", free)
  for n, records in sorted(records_by_n.items(), reverse=True):
    runs = collections.Counter()
    for r in records:
      tokens = real_tokens(r)
      units = masking.mask_units(tokens, mv, True)
      chosen = {p for p, w in zip(r["masked_lm_positions"], r["masked_lm_weights"]) if w}
      run = 0
      for unit in units:
        if unit[0] in chosen:
          run += 1
        elif run:
          runs[run] += 1
          run = 0
      if run:
        runs[run] += 1
    row(f"runs of masked words in the records, max_ngram={n}", runs)


def row(name, counter):
  total = max(sum(counter.values()), 1)
  more = sum(v for k, v in counter.items() if k > 3)
  print(f"| {name} ({total}) | {counter[1] / total:.3f} | {counter[2] / total:.3f} | "
        f"{counter[3] / total:.3f} | {more / total:.3f} |")


def pipeline_table(args, static_paths, dynamic_paths, n_dynamic):
  from bert_tf.data.input import pipeline

  def dataset(paths, **kw):
    info = pipeline.check_data(paths, args.max_seq_length, args.max_predictions_per_seq)
    return pipeline.make_dataset(info.files, args.batch_size, info.max_seq_length,
                                 info.max_predictions_per_seq, True, seed=1,
                                 sentence_task=info.sentence_task, masking=info.masking, **kw)

  def rate(paths):
    it = iter(dataset(paths))
    for _ in range(5):
      next(it)
    started = time.time()
    for _ in range(args.pipeline_batches):
      next(it)
    return args.pipeline_batches * args.batch_size / (time.time() - started)

  print("\n## dynamic masking")
  print("| input pipeline (batch %d, seq %d, whole-word + max_ngram=3) | examples/s |"
        % (args.batch_size, args.max_seq_length))
  print("|---|---|")
  rates = {}
  for _ in range(2):  # alternate, so CPU contention hits both alike
    for name, paths in (("static records (masks read)", static_paths),
                        ("dynamic records (masked in tf.data)", dynamic_paths)):
      rates.setdefault(name, []).append(rate(paths))
  for name, values in rates.items():
    print(f"| {name} | {max(values):.0f} (runs: {', '.join(f'{v:.0f}' for v in values)}) |")

  # Two epochs of the same records in the same order (one file, shuffle
  # buffer 1): how differently is each record masked?
  info = pipeline.check_data(dynamic_paths, args.max_seq_length, args.max_predictions_per_seq)
  n = min(n_dynamic, 4000)
  ds = pipeline.make_dataset(info.files, 1, info.max_seq_length, info.max_predictions_per_seq,
                             True, seed=1, shuffle_buffer=1, masking=info.masking)
  rows = [(b["masked_lm_positions"].numpy()[0], b["masked_lm_weights"].numpy()[0])
          for b in ds.take(n_dynamic + n)]
  differ = same_set = total = 0
  for (p1, w1), (p2, w2) in zip(rows[:n], rows[n_dynamic:n_dynamic + n]):
    s1, s2 = set(p1[w1 > 0]), set(p2[w2 > 0])
    differ += len(s1 ^ s2)
    total += len(s1 | s2)
    same_set += s1 == s2
  print(f"\nTwo epochs, {n} records: share of positions masked in either epoch but not both: "
        f"{differ / total:.4f} (independent 15% draws imply about 0.9); records masked "
        f"identically: {same_set / n:.4f}")


def main():
  args = parse_args()
  for path in (args.input_file, args.vocab_file):
    if not os.path.exists(path):
      sys.exit(f"{path}: not found (pass --input_file / --vocab_file)")
  from absl import logging
  logging.set_verbosity(logging.WARNING)
  from bert_tf.data.tokenizers import wordpiece_vocab
  vocab = wordpiece_vocab.load_vocab(args.vocab_file)
  root = tempfile.mkdtemp(prefix="data_variants-")
  print(f"input {args.input_file}, dupe_factor {args.dupe_factor}, max_seq_length "
        f"{args.max_seq_length}, records in {root}")
  runs = {
      "sop": dict(sentence_task="sop"),
      "full_sentences": dict(sentence_task="none", packing="full_sentences"),
      "doc_sentences": dict(sentence_task="none", packing="doc_sentences"),
      "ngram1": dict(do_whole_word_mask=True),
      "ngram3": dict(do_whole_word_mask=True, max_ngram=3),
      "dynamic_ngram3": dict(do_whole_word_mask=True, max_ngram=3, dynamic_masking=True),
  }
  written = {}
  print("\n| run | options | instances | seconds |")
  print("|---|---|---|---|")
  for name, changes in runs.items():
    manifest, paths, seconds = write(args, root, name, **changes)
    written[name] = (manifest, paths)
    print(f"| {name} | {changes} | {manifest['counts']['instances']} | {seconds:.1f} |")
  records = {name: read(paths) for name, (_, paths) in written.items() if name != "dynamic_ngram3"}
  sop_table(args, records["sop"], input_documents(args))
  packing_table(args, [(k, records[k]) for k in ("full_sentences", "doc_sentences")], vocab.sep_id)
  ngram_table(args, {1: records["ngram1"], 3: records["ngram3"]}, vocab)
  pipeline_table(args, written["ngram3"][1], written["dynamic_ngram3"][1],
                 written["dynamic_ngram3"][0]["counts"]["instances"])


if __name__ == "__main__":
  main()
