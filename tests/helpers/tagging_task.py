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


def write_tagger_folder(folder, vocab_file, labels, seed=0):
  """Writes a tiny untrained tagger (its head drawn at a larger scale, so
  that its argmax varies over the labels) as a transformers
  BertForTokenClassification folder whose id2label is `labels`, in that
  order; returns the model."""
  import keras  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  from bert_tf.models import hf_config  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.tagging import token_head  # pylint: disable=g-import-not-at-top
  from bert_tf.serving import hf_export  # pylint: disable=g-import-not-at-top
  keras.utils.set_random_seed(seed)
  model = token_head.BertTokenTagger(tiny_config(), len(labels))
  ids = np.array([[2, 5, 6, 3]], np.int32)
  model({"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)})
  rng = np.random.default_rng(seed)
  model.head.kernel.assign(rng.normal(0, 1, model.head.kernel.shape).astype(np.float32))
  model.head.bias.assign(rng.normal(0, 0.5, len(labels)).astype(np.float32))
  hf_export.write_hf_head_folder(
      model.encoder, tiny_config(), "bert", hf_config.TOKEN_CLASSIFICATION,
      model.head.kernel.numpy(), model.head.bias.numpy(), vocab_file, True, str(folder),
      labels=list(labels))
  return model
