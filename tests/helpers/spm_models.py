"""The committed tiny ALBERT SentencePiece model (120 pieces, [CLS] [SEP]
[MASK] as control symbols, <unk>) and a tiny ALBERT config over it."""

import os

from bert_tf.models.config import BertConfig

SPM_MODEL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "fixtures", "albert_sentencepiece", "spm.model")


# The fixture model's pieces.
SPM_PIECES = 120


def tiny_albert_config(max_positions=64, vocab_size=SPM_PIECES):
  """An ALBERT config (embedding_size set) of the fixture model's pieces
  (another vocab_size: a model that does not fit it)."""
  return BertConfig(vocab_size=vocab_size, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                    num_attention_heads=2, intermediate_size=64,
                    max_position_embeddings=max_positions)
