"""A WordPiece vocabulary (one token a line, id = line number) and its
special tokens: what the tokenizers, the data writer and the exports read.
(Learning a vocab from a corpus: vocab_learning; the ids masking needs of
it: masking.MaskingVocab.)"""

import hashlib
import os

import numpy as np

from bert_tf.io import file_io as files

PAD_TOKEN = "[PAD]"
UNK_TOKEN = "[UNK]"
CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
MASK_TOKEN = "[MASK]"
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)
SUBWORD_PREFIX = "##"


class Vocab:
  """A WordPiece vocabulary: one token a line, id = line number (from 0).

  Attributes:
    tokens: list[str], token of each id.
    token_to_id: dict str -> int.
    size: number of tokens.
    sha256: hex digest of the file bytes (identifies the vocab in manifests;
      for a vocab made from a list, of the file `bert_tf.data.tokenizers.vocab_learning.write_vocab`
      would write).
    path: the file it was read from (or None).
    pad_id, unk_id, cls_id, sep_id, mask_id: ids of the special tokens
      (pad_id is 0: the original pads with 0 whether or not [PAD] exists).
    is_subword: np.bool_ [size], True where the token starts with "##".
  """

  def __init__(self, tokens, path=None, sha256=None, unk_token=UNK_TOKEN, is_subword=None):
    """tokens: one per id. unk_token and is_subword (bool by id; None: the
    "##" pieces) let a vocab of other pieces be one: a SentencePiece model's
    (`sentencepiece_vocab`: "<unk>", word starts marked instead)."""
    tokens = list(tokens)
    token_to_id = {}
    for i, token in enumerate(tokens):
      if not token:
        raise ValueError(f"vocab {path or '<list>'}: line {i + 1} is empty")
      if token in token_to_id:
        raise ValueError(
            f"vocab {path or '<list>'}: token {token!r} appears twice "
            f"(lines {token_to_id[token] + 1} and {i + 1})")
      token_to_id[token] = i
    missing = [t for t in (CLS_TOKEN, SEP_TOKEN, MASK_TOKEN, unk_token)
               if t not in token_to_id]
    if missing:
      raise ValueError(
          f"vocab {path or '<list>'}: missing special token(s) {' '.join(missing)}")
    if PAD_TOKEN in token_to_id and token_to_id[PAD_TOKEN] != 0:
      raise ValueError(
          f"vocab {path or '<list>'}: {PAD_TOKEN} must be id 0 (line 1), "
          f"found at line {token_to_id[PAD_TOKEN] + 1}")
    if sha256 is None:
      sha256 = hashlib.sha256(
          "".join(t + "\n" for t in tokens).encode("utf-8")).hexdigest()
    self.tokens = tokens
    self.token_to_id = token_to_id
    self.size = len(tokens)
    self.sha256 = sha256
    self.path = path
    self.pad_id = 0
    self.unk_id = token_to_id[unk_token]
    self.cls_id = token_to_id[CLS_TOKEN]
    self.sep_id = token_to_id[SEP_TOKEN]
    self.mask_id = token_to_id[MASK_TOKEN]
    self.is_subword = np.array(
        [t.startswith(SUBWORD_PREFIX) for t in tokens] if is_subword is None else is_subword,
        dtype=bool)

  def __len__(self):
    return self.size

  def __repr__(self):
    return f"Vocab(size={self.size}, path={self.path!r}, sha256={self.sha256[:12]})"


def load_vocab(path):
  """Reads a vocab: a vocab.txt (one token a line, surrounding whitespace
  stripped), a transformers tokenizer.json's WordPiece vocab, or a
  transformers folder's (`tokenizer_json.resolve_vocab_path`).

  Raises:
    FileNotFoundError: no such file.
    ValueError: not UTF-8, an empty or duplicate line, a special token of
      [CLS] [SEP] [MASK] [UNK] missing, [PAD] present but not at id 0, a
      SentencePiece listing (piece<TAB>score lines, naming --spm_model_file),
      or a tokenizer.json of another model.
  """
  from bert_tf.data.tokenizers import tokenizer_json  # pylint: disable=g-import-not-at-top
  path = tokenizer_json.resolve_vocab_path(path)
  if tokenizer_json.is_tokenizer_json(path):
    parsed, data = tokenizer_json.read_tokenizer_json(path)
    return Vocab(tokenizer_json.wordpiece_tokens(parsed, path), path=path,
                 sha256=hashlib.sha256(data).hexdigest())
  text = files.read_text(path, "vocab")
  lines = text.split("\n")
  if lines and lines[-1] == "":  # the newline that ends the last line
    lines.pop()
  if lines and all(_is_piece_score(line) for line in lines):
    raise ValueError(f"vocab {path} is a SentencePiece vocab listing (piece<TAB>score lines): "
                     "give the SentencePiece model as --spm_model_file (its .model file)")
  return Vocab([line.strip() for line in lines], path=path,
               sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())


def _is_piece_score(line):
  """A SentencePiece .vocab line: piece, a tab, a float score."""
  piece, tab, score = line.rstrip("\r").partition("\t")
  if not tab or not piece:
    return False
  try:
    float(score)
  except ValueError:
    return False
  return True


def vocab_txt_path(path):
  """A vocab.txt path holding the vocab `load_vocab(path)` reads: `path`
  itself for a vocab.txt, else (a tokenizer.json, a transformers folder) one
  written to a local temporary folder, for what copies the file or reads
  it as lines (exports, the SavedModel's vocab asset).

  Raises:
    FileNotFoundError, ValueError: as load_vocab.
  """
  from bert_tf.data.tokenizers import tokenizer_json  # pylint: disable=g-import-not-at-top
  resolved = tokenizer_json.resolve_vocab_path(path)
  if not tokenizer_json.is_tokenizer_json(resolved):
    return resolved
  import tempfile  # pylint: disable=g-import-not-at-top
  vocab = load_vocab(resolved)
  out = os.path.join(tempfile.mkdtemp(prefix="bert_tf_vocab_"), "vocab.txt")
  files.atomic_write(out, "".join(t + "\n" for t in vocab.tokens))  # through file_io
  return out
