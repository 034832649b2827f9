"""A corpus whose every token names its document, so the document behind
any segment of a record can be read back: where random next-sentence Bs
came from, and how well the records of a file mix the corpus.

Document d is written as word pairs `n<d // 100> m<d % 100>`; its lines hold
2-6 pairs, 1-7 lines a document (~150 bytes). The vocab holds those words alone. Used by
tests/data/pretraining/test_writer.py (small) and bench/bench_mixing.py (20,000
documents, beside the original's output).
"""

import collections
import random

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def vocab_tokens(num_docs):
  return SPECIALS + [f"n{i}" for i in range((num_docs + 99) // 100)] + [f"m{j}" for j in range(100)]


def write_corpus(path, num_docs, seed=0):
  """Writes the corpus (documents in index order) to `path`."""
  rng = random.Random(seed)
  docs = []
  for d in range(num_docs):
    pair = f"n{d // 100} m{d % 100}"
    docs.append("\n".join(" ".join([pair] * rng.randint(2, 6)) for _ in range(rng.randint(1, 7))))
  with open(path, "w") as f:
    f.write("\n\n".join(docs) + "\n")


def write_vocab(path, num_docs):
  with open(path, "w") as f:
    f.write("".join(t + "\n" for t in vocab_tokens(num_docs)))


def segment_document(tokens):
  """The document of a segment (a list of token strings), or None when no
  whole pair is left in it."""
  for a, b in zip(tokens, tokens[1:]):
    if a.startswith("n") and b.startswith("m"):
      return int(a[1:]) * 100 + int(b[1:])
  return None


def read_pairs(path, num_docs):
  """(document of A, document of B, is_random) of each record of a file, in
  order; a document is None where the segment holds no whole pair."""
  import tensorflow as tf
  tokens = vocab_tokens(num_docs)
  sep = tokens.index("[SEP]")
  out = []
  for record in tf.data.TFRecordDataset(path):
    f = tf.train.Example.FromString(record.numpy()).features.feature
    ids = list(f["input_ids"].int64_list.value)
    n = sum(f["input_mask"].int64_list.value)
    weights = f["masked_lm_weights"].float_list.value
    for p, i, w in zip(f["masked_lm_positions"].int64_list.value,
                       f["masked_lm_ids"].int64_list.value, weights):
      if w > 0:
        ids[p] = i  # the original token behind [MASK] or a random one
    first_sep = ids.index(sep)
    a = [tokens[t] for t in ids[1:first_sep]]
    b = [tokens[t] for t in ids[first_sep + 1:n - 1]]
    out.append((segment_document(a), segment_document(b),
                f["next_sentence_labels"].int64_list.value[0] == 1))
  return out


def mixing_figures(paths, num_docs, regions=20, first=1000):
  """What a user checks of a run: distinct documents behind random Bs, the
  most any one served, and per file how many of `regions` equal regions of
  the corpus its first `first` records come from."""
  sources = collections.Counter()
  per_file = []
  for path in paths:
    pairs = read_pairs(path, num_docs)
    for _, b, is_random in pairs:
      if is_random and b is not None:
        sources[b] += 1
    per_file.append(len({a * regions // num_docs for a, _, _ in pairs[:first] if a is not None}))
  return {"random_b": sum(sources.values()), "distinct_b_documents": len(sources),
          "most_per_document": max(sources.values()) if sources else 0,
          "regions_of_first": per_file}
