"""A tiny separable sentiment task for fine-tuning, its vocab and model config."""

import random

from bert_tf.models.config import BertConfig


POSITIVE = ("good", "great", "fine", "nice")


NEGATIVE = ("bad", "awful", "poor", "sad")


FILLER = ("the", "a", "movie", "was", "plot", "actor", "very", "and", "it", "show")


# 100 tokens, as helpers/pretraining.py's records use.
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(POSITIVE + NEGATIVE + FILLER)


def tiny_config():
  return BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2,
                    num_attention_heads=2, intermediate_size=64,
                    max_position_embeddings=32)


def write_vocab(path):
  path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
  return str(path)


def write_task(path, n, seed, pair=False, regression=False):
  """A separable sentiment task: label 1 when the sentence has a positive word."""
  rng = random.Random(seed)
  lines = ["id\tsentence\tother\tlabel" if pair else "id\tsentence\tlabel"]
  for i in range(n):
    label = rng.randint(0, 1)
    words = rng.sample(FILLER, 4) + [rng.choice(POSITIVE if label else NEGATIVE)]
    rng.shuffle(words)
    value = f"{label * 4 + rng.random():.3f}" if regression else str(label)
    other = "\t" + " ".join(rng.sample(FILLER, 3)) if pair else ""
    lines.append(f"{i}\t{' '.join(words)}{other}\t{value}")
  path.write_text("\n".join(lines) + "\n", encoding="utf-8")
  return str(path)
