"""A small writer run (corpus, vocab, records) for the statistics tests."""

import random

from bert_tf.data.pretraining import writer


WORDS = ["the", "light", "of", "day", "and", "night", "water", "land", "lights", "days"]


VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "."] + WORDS[:8] + ["##s"]


MASK_ID = VOCAB.index("[MASK]")


def write_run(root, seq=32, gzip=False, num_shards=2):
  (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
  rng = random.Random(1)
  docs = ["\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14))) + " ."
                    for _ in range(rng.randint(3, 12))) for _ in range(20)]
  (root / "corpus.txt").write_text("\n\n".join(docs) + "\n")
  outputs = writer.Outputs(directory=str(root / "out"), num_shards=num_shards, gzip=gzip)
  writer.create_pretraining_data(
      str(root / "corpus.txt"), outputs, str(root / "vocab.txt"),
      writer.DataOptions(max_seq_length=seq, max_predictions_per_seq=max(5, seq // 6),
                         dupe_factor=2))
  return outputs
