"""A Hugging Face `tokenizer.json`, read: what transformers 5 saves in the
place of vocab.txt (BERT, ELECTRA) and spiece.model (ALBERT).

Two of its models are read, wherever a vocab or a SentencePiece model is
taken (`wordpiece_vocab.load_vocab`, `sentencepiece_vocab.load_sentencepiece`):

- WordPiece (BertTokenizer, ElectraTokenizer): its `vocab` (token -> id) is
  a vocab.txt's lines; BERT's own tokenizer (`tokenization`) then gives the
  ids transformers gives (the committed fixtures check it).
- Unigram (AlbertTokenizer): its pieces, scores and normalization, which the
  `tokenizers` library (what transformers itself runs; keras-hub depends on
  it) tokenizes, so the ids are transformers' (`sentencepiece_vocab`).

`resolve_vocab_path` lets a transformers folder stand for its vocab: the
folder, its tokenizer.json, or a vocab.txt path in a folder that has only a
tokenizer.json.
"""

import json
import os

from absl import logging

from bert_tf.io import file_io as files

TOKENIZER_JSON = "tokenizer.json"
VOCAB_TXT = "vocab.txt"
SPIECE_MODEL = "spiece.model"
WORDPIECE = "WordPiece"
UNIGRAM = "Unigram"


def is_tokenizer_json(path):
  """Whether `path` names a tokenizer.json (by its name: *.json)."""
  return bool(path) and str(path).endswith(".json")


def resolve_vocab_path(path, names=(VOCAB_TXT, TOKENIZER_JSON)):
  """The file a --vocab_file (or, names=(spiece.model, tokenizer.json), an
  --spm_model_file) path stands for: itself; for a folder the first of
  `names` in it; for a vocab.txt or spiece.model that does not exist, the
  tokenizer.json beside it (transformers 5 saves neither). Other paths are
  returned as they are (the reader names what is missing)."""
  if not path:
    return path
  if files.isdir(path):
    for name in names:
      if files.exists(os.path.join(path, name)):
        return os.path.join(path, name)
    return path
  beside = os.path.join(os.path.dirname(path), TOKENIZER_JSON)
  if (os.path.basename(path) in (VOCAB_TXT, SPIECE_MODEL) and not files.exists(path)
      and files.exists(beside)):
    logging.info("%s does not exist; reading %s (transformers 5 saves no %s)", path, beside,
                 os.path.basename(path))
    return beside
  return path


def read_tokenizer_json(path):
  """(the parsed tokenizer.json, the bytes it was read from).

  Raises:
    FileNotFoundError: no such file.
    ValueError: not JSON, or no model in it.
  """
  data = files.read_bytes(path, "tokenizer.json")
  try:
    parsed = json.loads(data.decode("utf-8"))
  except (UnicodeDecodeError, json.JSONDecodeError) as e:
    raise ValueError(f"{path} is not a tokenizer.json (not JSON: {e})") from None
  if not isinstance(parsed, dict) or not isinstance(parsed.get("model"), dict):
    raise ValueError(f"{path} is not a tokenizer.json (no \"model\")")
  return parsed, data


def model_type(parsed):
  return parsed["model"].get("type")


def check_model(parsed, path, want):
  """Raises ValueError naming the flag to use when the file's model is not
  `want` (WORDPIECE or UNIGRAM)."""
  kind = model_type(parsed)
  if kind == want:
    return
  if kind == UNIGRAM:
    raise ValueError(f"{path} holds a SentencePiece (Unigram) model, not a WordPiece vocab: "
                     f"give it as --spm_model_file={path}")
  if kind == WORDPIECE:
    raise ValueError(f"{path} holds a WordPiece vocab, not a SentencePiece model: give it as "
                     f"--vocab_file={path}")
  raise ValueError(f"{path}: tokenizer model type {kind!r} is not read (WordPiece or Unigram)")


def wordpiece_tokens(parsed, path):
  """The WordPiece vocab of a parsed tokenizer.json, in id order.

  Raises:
    ValueError: not WordPiece, or ids with gaps or repeats.
  """
  check_model(parsed, path, WORDPIECE)
  by_id = {}
  for token, i in (parsed["model"].get("vocab") or {}).items():
    if i in by_id:
      raise ValueError(f"{path}: tokens {by_id[i]!r} and {token!r} have the same id {i}")
    by_id[i] = token
  if sorted(by_id) != list(range(len(by_id))):
    raise ValueError(f"{path}: the WordPiece vocab's ids are not 0..{len(by_id) - 1}")
  return [by_id[i] for i in range(len(by_id))]


def unigram_pieces(parsed, path):
  """(pieces in id order, the unknown piece) of a parsed Unigram tokenizer.json.

  Raises:
    ValueError: not Unigram, or no unknown piece.
  """
  check_model(parsed, path, UNIGRAM)
  model = parsed["model"]
  pieces = [entry[0] for entry in model.get("vocab") or []]
  unk_id = model.get("unk_id")
  if unk_id is None or not 0 <= unk_id < len(pieces):
    raise ValueError(f"{path}: the Unigram model has no unknown piece (unk_id={unk_id})")
  return pieces, pieces[unk_id]
