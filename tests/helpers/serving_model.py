"""The tiny model and vocab the serving tests export."""

from bert_tf.models.config import BertConfig


MAX_SEQ_LENGTH = 16


TOP_K = 4


WORDS = ("the a of and to in is it that was he for on are with as his they be at "
         "one have this from or had by word but what some we can out other were all "
         "there when up use your how said an each she which do their time if will way "
         "about many then them write would like so these her long make thing see him "
         "two has look more day could go come did number sound no most people my over "
         "know water than call first who may down side been now find").split()


VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS +
         ["##s", "##ed", "##ing", ".", ",", "!", "?"])


CONFIG = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2,
                    num_attention_heads=2, intermediate_size=32, max_position_embeddings=40,
                    type_vocab_size=2)


def write_vocab(path, tokens=VOCAB):
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(tokens) + "\n")
  return str(path)
