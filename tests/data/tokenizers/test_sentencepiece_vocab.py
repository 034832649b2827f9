"""data/tokenizers/sentencepiece_vocab.py against the original ALBERT code's own output
(tests/fixtures/albert_sentencepiece, made by its make_golden.py with
google-research/albert's tokenization.py) and the sentencepiece package."""

import json
import os

import numpy as np
import pytest

from bert_tf.data.tokenizers import sentencepiece_vocab as spv

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "fixtures", "albert_sentencepiece")
MODEL = os.path.join(FIXTURE, "spm.model")


@pytest.fixture(scope="module")
def golden():
  with open(os.path.join(FIXTURE, "golden.json"), encoding="utf-8") as f:
    return json.load(f)["rows"]


@pytest.fixture(scope="module")
def model():
  return spv.load_sentencepiece(MODEL)


def test_preprocessing_is_the_originals(golden):
  for row in golden:
    assert spv.preprocess_text(row["line"], lower=True) == row["preprocessed"], row["line"]


def test_pieces_and_ids_are_the_originals(model, golden):
  """Including the digit-comma rule ("1,000," "4," "5,b") as the original
  runs under Python 3."""
  for row in golden:
    assert model.pieces(row["preprocessed"]) == row["pieces"], row["line"]
    assert model.tokenize(row["line"], lower=True) == row["ids"], row["line"]
  assert any(p == "," for row in golden for p in row["pieces"])


def test_a_batch_is_its_lines(model, golden):
  lines = [row["line"] for row in golden]
  values, splits = model.tokenize_to_ids(lines, lower=True)
  assert splits.dtype == np.int64 and len(splits) == len(lines) + 1
  for i, row in enumerate(golden):
    assert values[splits[i]:splits[i + 1]].tolist() == row["ids"]


def test_the_vocab_is_the_models_pieces_with_albert_specials(model):
  import sentencepiece  # pylint: disable=g-import-not-at-top
  sp = sentencepiece.SentencePieceProcessor(model_file=MODEL)
  vocab = model.vocab
  assert vocab.size == sp.GetPieceSize() == 120
  assert vocab.tokens == [sp.IdToPiece(i) for i in range(vocab.size)]
  # google-research/albert README's spm_train: <pad> 0, <unk> 1, then the
  # control symbols [CLS] [SEP] [MASK].
  assert (vocab.pad_id, vocab.unk_id, vocab.cls_id, vocab.sep_id, vocab.mask_id) == (
      0, 1, 2, 3, 4)


def test_word_starts_are_the_originals_for_every_piece(model):
  """create_pretraining_data._is_start_piece_sp of every piece, as the
  original computed it (its punctuation set lacks the apostrophe: "''" is a
  word start there, and here)."""
  with open(os.path.join(FIXTURE, "golden.json"), encoding="utf-8") as f:
    expected = json.load(f)["word_starts"]
  assert [spv.is_word_start(p) for p in model.vocab.tokens] == expected
  assert model.vocab.is_subword.tolist() == [not s for s in expected]
  assert 0 < sum(expected) < len(expected)


def test_whole_word_units_follow_the_pieces(model, golden):
  vocab = model.vocab
  row = golden[0]
  continues = [bool(vocab.is_subword[i]) for i in row["ids"]]
  assert continues == [not spv.is_word_start(p) for p in row["pieces"]]
  assert any(continues) and not all(continues)


def test_a_file_that_is_not_a_model_is_one_line(tmp_path):
  bad = tmp_path / "bad.model"
  bad.write_bytes(b"not a model")
  with pytest.raises(ValueError, match="is not a SentencePiece model"):
    spv.load_sentencepiece(str(bad))
  with pytest.raises(FileNotFoundError, match="SentencePiece model file not found"):
    spv.load_sentencepiece(str(tmp_path / "missing.model"))
