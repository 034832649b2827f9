"""A tiny separable tagging task in CoNLL format, its vocab and model config:
person names (one or two words) tagged PER, places LOC, the rest O."""

import random

from bert_tf.models.config import BertConfig

PEOPLE = ("john", "mary", "anna", "peter")
PLACES = ("paris", "london", "rome", "berlin")
FILLER = ("the", "a", "went", "to", "saw", "in", "and", "met", "with", "today")
# "johns" is two pieces, john ##s: the label on the first, the second out of the loss.
VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(PEOPLE + PLACES + FILLER)
         + ["##s", ".", ","])


def tiny_config(max_positions=32):
  return BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2,
                    num_attention_heads=2, intermediate_size=64,
                    max_position_embeddings=max_positions)


def write_vocab(path):
  path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
  return str(path)


def sentence(rng, length):
  """(words, BIO labels) of about `length` words."""
  words, labels = [], []
  while len(words) < length:
    kind = rng.random()
    if kind < 0.25:
      name = [rng.choice(PEOPLE)] + ([rng.choice(PEOPLE) + "s"] if rng.random() < 0.3 else [])
      words += name
      labels += ["B-PER"] + ["I-PER"] * (len(name) - 1)
    elif kind < 0.45:
      words.append(rng.choice(PLACES))
      labels.append("B-LOC")
    else:
      words.append(rng.choice(FILLER))
      labels.append("O")
  return words, labels


def write_task(path, n, seed, length=6, extra_columns=True):
  """n sentences in CoNLL format (a -DOCSTART- line first; with
  extra_columns a part-of-speech-like column between token and label)."""
  rng = random.Random(seed)
  lines = ["-DOCSTART- -X- O", ""]
  for _ in range(n):
    words, labels = sentence(rng, length)
    lines += [f"{w} X {l}" if extra_columns else f"{w} {l}" for w, l in zip(words, labels)]
    lines.append("")
  path.write_text("\n".join(lines), encoding="utf-8")
  return str(path)
