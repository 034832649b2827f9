"""A SentencePiece model as vocab and tokenizer, by google-research/albert's rules.

Released ALBERT models use a SentencePiece model (`30k-clean.model`) where
BERT uses a WordPiece vocab. google-research/albert's create_pretraining_data
(with --spm_model_file) and tokenization.py do, for each line:

  1. `preprocess_text`: whitespace runs to one space, the ends stripped;
     NFKD, then combining marks dropped (accents); lower-cased with
     --do_lower_case;
  2. `encode_pieces`: the model's pieces, except that a piece ending in a
     comma after a digit ("9,") is encoded again without the comma and the
     comma appended as its own piece. (The original then means to drop a
     word-start marker the re-encoding adds; under Python 3 its test compares
     str with bytes and never holds, so the marker stays: we do the same);
  3. ids by PieceToId.

Whole-word masking takes a word to start at a piece that starts with the
word-start marker "▁" or "<", is punctuation, or holds a character outside
a-z and punctuation (the original's `_is_start_piece_sp`: foreign characters
are whole pieces); every other piece continues the word before it
(`is_subword`).

The model file is read through file_io (gs:// paths); the `sentencepiece`
package tokenizes.
"""

import hashlib
import unicodedata

import numpy as np

from bert_tf.io import file_io as files
from bert_tf.data.tokenizers import wordpiece_vocab

WORD_START = "\u2581"  # SentencePiece's "▁"
UNK_PIECE = "<unk>"
PAD_PIECE = "<pad>"
# The original's `_is_start_piece_sp` punctuation. (It also adds "€" and "£"
# as UTF-8 bytes, which no str piece equals; their pieces start words anyway,
# as characters outside a-z.)
_PUNCTUATION = frozenset('!"#$%&"()*+,-./:;?@[\\]^_`{|}~')
_ENGLISH = frozenset("abcdefghijklmnopqrstuvwxyz")


def preprocess_text(text, lower):
  """google-research/albert tokenization.preprocess_text (remove_space=True)."""
  text = " ".join(text.strip().split())
  text = unicodedata.normalize("NFKD", text)
  text = "".join(c for c in text if not unicodedata.combining(c))
  return text.lower() if lower else text


def is_word_start(piece):
  """Whether `piece` starts a word for whole-word masking (see the module
  docstring)."""
  if piece.startswith((WORD_START, "<")) or piece in _PUNCTUATION:
    return True
  return not all(c.lower() in _ENGLISH or c.lower() in _PUNCTUATION for c in piece)


class SentencePieceVocab:
  """A SentencePiece model: its `vocab` (a wordpiece_vocab.Vocab of its
  pieces, "<unk>" as unknown, `is_subword` from `is_word_start`) and its
  tokenizer.

  Attributes:
    vocab: the Vocab (the data writer, masking and manifests use it as a
      WordPiece vocab's).
    model_proto: the model file's bytes (copied into exports).
    path: where it was read.
  """

  def __init__(self, model_proto, path=None):
    import sentencepiece  # pylint: disable=g-import-not-at-top
    self.model_proto = bytes(model_proto)
    self.path = path
    self.processor = sentencepiece.SentencePieceProcessor(model_proto=self.model_proto)
    pieces = [self.processor.IdToPiece(i) for i in range(self.processor.GetPieceSize())]
    try:
      self.vocab = wordpiece_vocab.Vocab(
          pieces, path=path, sha256=hashlib.sha256(self.model_proto).hexdigest(),
          unk_token=UNK_PIECE, is_subword=[not is_word_start(p) for p in pieces])
    except ValueError as e:
      raise ValueError(f"SentencePiece model {path}: {e} (ALBERT's models have [CLS], "
                       f"[SEP] and [MASK] as control symbols and <unk>)") from None

  def pieces(self, text):
    """The original's encode_pieces of already preprocessed text."""
    out = []
    for piece in self.processor.EncodeAsPieces(text):
      if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
        out.extend(self.processor.EncodeAsPieces(piece[:-1].replace(WORD_START, "")))
        out.append(",")
      else:
        out.append(piece)
    return out

  def tokenize(self, line, lower):
    """ids of one raw line: preprocess_text, pieces, PieceToId."""
    return [self.processor.PieceToId(p) for p in self.pieces(preprocess_text(line, lower))]

  def tokenize_to_ids(self, texts, lower):
    """A batch of raw lines as (values int64 [total], row_splits int64
    [n + 1]), as tokenization.BatchTokenizer.tokenize_to_ids gives."""
    rows = [self.tokenize(t.decode("utf-8") if isinstance(t, bytes) else t, lower)
            for t in texts]
    splits = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=splits[1:])
    values = np.fromiter((i for r in rows for i in r), np.int64, count=int(splits[-1]))
    return values, splits


class SentencePieceTokenizer:
  """The data writer's tokenizer (as tokenization.BatchTokenizer: `vocab`,
  `do_lower_case`, `tokenize_to_ids(lines)`) over a SentencePiece model."""

  def __init__(self, model, do_lower_case):
    self.model = model
    self.vocab = model.vocab
    self.do_lower_case = bool(do_lower_case)

  def tokenize_to_ids(self, texts):
    return self.model.tokenize_to_ids(texts, self.do_lower_case)


class UnigramTokenizerJson:
  """A transformers tokenizer.json's Unigram model (its AlbertTokenizer), in
  the place of a SentencePiece model: `vocab` (as SentencePieceVocab's),
  `tokenize`, `tokenize_to_ids`. The `tokenizers` library (what
  transformers runs) tokenizes, so the ids are transformers' own: its
  normalizer (`` and '' to ", NFKD, accents dropped, lower-casing when it
  was saved uncased) and pieces, not google-research/albert's rules (no
  digit-comma rule); `lower` is the file's to decide.

  Attributes:
    vocab: the pieces as a wordpiece_vocab.Vocab.
    data: the file's bytes (copied into exports); path: where it was read.
  """

  model_proto = None  # no SentencePiece model: no graph tokenizer

  def __init__(self, parsed, data, path=None):
    import tokenizers  # pylint: disable=g-import-not-at-top
    from bert_tf.data.tokenizers import tokenizer_json  # pylint: disable=g-import-not-at-top
    self.data = bytes(data)
    self.path = path
    pieces, unk = tokenizer_json.unigram_pieces(parsed, path)
    try:
      self.vocab = wordpiece_vocab.Vocab(
          pieces, path=path, sha256=hashlib.sha256(self.data).hexdigest(), unk_token=unk,
          is_subword=[not is_word_start(p) for p in pieces])
    except ValueError as e:
      raise ValueError(f"{path}: {e} (an ALBERT tokenizer has [CLS], [SEP] and [MASK])") from None
    try:
      self.tokenizer = tokenizers.Tokenizer.from_str(self.data.decode("utf-8"))
    except Exception as e:  # pylint: disable=broad-except
      raise ValueError(f"{path}: the tokenizers library does not read it: {e}") from None
    self.tokenizer.no_truncation()
    self.tokenizer.no_padding()

  def tokenize(self, line, lower=None):
    """ids of one raw line (no [CLS] or [SEP])."""
    del lower
    return list(self.tokenizer.encode(line, add_special_tokens=False).ids)

  def tokenize_to_ids(self, texts, lower=None):
    """A batch of raw lines as (values int64 [total], row_splits int64 [n + 1])."""
    del lower
    texts = [t.decode("utf-8") if isinstance(t, bytes) else t for t in texts]
    rows = [e.ids for e in self.tokenizer.encode_batch(texts, add_special_tokens=False)]
    splits = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=splits[1:])
    values = np.fromiter((i for r in rows for i in r), np.int64, count=int(splits[-1]))
    return values, splits


def load_sentencepiece(path):
  """Reads a SentencePiece .model file (local or gs://), or a transformers
  tokenizer.json with a Unigram model (UnigramTokenizerJson), or a
  transformers folder's (its spiece.model, else its tokenizer.json).

  Raises:
    FileNotFoundError: no such file.
    ValueError: not a SentencePiece model, or one without [CLS], [SEP],
      [MASK] and <unk>; a tokenizer.json of another model.
  """
  from bert_tf.data.tokenizers import tokenizer_json  # pylint: disable=g-import-not-at-top
  path = tokenizer_json.resolve_vocab_path(
      path, names=(tokenizer_json.SPIECE_MODEL, tokenizer_json.TOKENIZER_JSON))
  if tokenizer_json.is_tokenizer_json(path):
    parsed, data = tokenizer_json.read_tokenizer_json(path)
    return UnigramTokenizerJson(parsed, data, path=path)
  data = files.read_bytes(path, "SentencePiece model")
  try:
    return SentencePieceVocab(data, path=path)
  except RuntimeError as e:  # sentencepiece's parse error
    raise ValueError(f"{path} is not a SentencePiece model: {e}") from None
