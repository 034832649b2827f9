"""Tests of bert_tf.downstream.tagging.conll: reading CoNLL files (errors name file and
line), labels on first pieces, and long sentences in overlapping windows
where every word is predicted exactly once."""

import numpy as np
import pytest

from bert_tf.downstream.tagging import conll
from bert_tf.data.tokenizers import tokenization
from bert_tf.data.tokenizers import wordpiece_vocab
from helpers.tagging_task import VOCAB, write_task, write_vocab


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
  path = write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt")
  return tokenization.BatchTokenizer(wordpiece_vocab.load_vocab(path), True)


def test_read_skips_docstart_and_takes_the_last_column(tmp_path):
  path = tmp_path / "t.conll"
  path.write_text("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n\n"
                  "Peter NNP B-NP B-PER\n", encoding="utf-8")
  sentences = conll.read_conll(str(path))
  assert [s.words for s in sentences] == [("EU", "rejects"), ("Peter",)]
  assert [s.labels for s in sentences] == [("B-ORG", "O"), ("B-PER",)]
  assert sentences[0].lines == (3, 4) and sentences[1].lines == (7,)
  assert conll.label_list(sentences) == ("O", "B-ORG", "B-PER")


@pytest.mark.parametrize("text,message", [
    ("john B-PER\nwent\n", r"t\.conll:2: one column \('went'\)"),
    ("john PER\n", r"t\.conll:1: label 'PER' is not O or B-/I-/E-/S-<type>"),
    ("-DOCSTART- O\n\n", r"t\.conll: no tokens"),
])
def test_bad_lines_name_file_and_line(tmp_path, text, message):
  path = tmp_path / "t.conll"
  path.write_text(text, encoding="utf-8")
  with pytest.raises(ValueError, match=message):
    conll.read_conll(str(path))


def test_a_dev_label_unseen_in_training_names_file_and_line(tmp_path):
  path = tmp_path / "dev.conll"
  path.write_text("john B-PER\nparis B-LOC\n", encoding="utf-8")
  with pytest.raises(ValueError, match=r"dev\.conll:2: label 'B-LOC' is not among"):
    conll.check_labels(conll.read_conll(str(path)), ("O", "B-PER"), str(path))


def test_label_on_the_first_piece_only(tokenizer):
  sentence = conll.Sentence(("mary", "johns", "went"), ("B-PER", "I-PER", "O"), (1, 2, 3))
  labels = ("O", "B-PER", "I-PER")
  features = conll.convert_sentences([sentence], tokenizer, labels, 16, 7)
  ids = features.arrays["input_ids"][0]
  assert [VOCAB[i] for i in ids[:6]] == ["[CLS]", "mary", "john", "##s", "went", "[SEP]"]
  np.testing.assert_array_equal(features.arrays["label_weights"][0, :6], [0, 1, 1, 0, 1, 0])
  np.testing.assert_array_equal(features.arrays["label_ids"][0, :6], [0, 1, 2, 0, 0, 0])
  np.testing.assert_array_equal(features.word[0, :6], [-1, 0, 1, -1, 2, -1])
  assert features.num_split == 0


@pytest.mark.parametrize("max_seq_length,stride", [(8, 3), (8, 6), (10, 1), (12, 5)])
def test_a_long_sentence_gets_every_word_predicted_exactly_once(tmp_path, tokenizer,
                                                                max_seq_length, stride):
  path = write_task(tmp_path / "long.conll", 3, seed=4, length=23)
  sentences = conll.read_conll(path)
  labels = conll.label_list(sentences)
  features = conll.convert_sentences(sentences, tokenizer, labels, max_seq_length, stride)
  assert features.num_split == 3
  # Every word scored in exactly one window, at its first piece.
  for index, s in enumerate(sentences):
    rows = features.sentence == index
    scored = features.word[rows][features.word[rows] >= 0]
    assert sorted(scored.tolist()) == list(range(len(s.words)))
  assert features.arrays["label_weights"].sum() == sum(len(s.words) for s in sentences)
  # Predicting each window's gold labels gives back every sentence's labels.
  guesses = conll.sentence_predictions(features, features.arrays["label_ids"], sentences,
                                       labels)
  assert guesses == [s.labels for s in sentences]
  text = conll.format_conll(sentences, guesses)
  assert len([line for line in text.splitlines() if line]) == sum(
      len(s.words) for s in sentences)


def test_the_best_window_is_the_one_of_most_context():
  # 10 pieces, windows of 6 pieces 2 apart: starts 0, 2, 4.
  starts = conll.window_starts(10, 6, 2)
  assert starts == [0, 2, 4]
  # Piece 0 is only in window 0; piece 4 has context min(4, 1) = 1 in window 0,
  # min(2, 3) = 2 in window 1, min(0, 5) = 0 in window 2.
  assert [conll.best_window(p, 10, starts, 6) for p in (0, 4, 5, 9)] == [0, 1, 1, 2]
  # Piece 3: min(3, 2) = 2 in window 0, min(1, 4) = 1 in window 1.
  assert conll.best_window(3, 10, starts, 6) == 0
  # A tie goes to the first window: windows of 4 pieces 1 apart over 6
  # pieces; piece 2 has min(2, 1) = 1 in window 0 and min(1, 2) = 1 in window 1.
  assert conll.window_starts(6, 4, 1) == [0, 1, 2]
  assert conll.best_window(2, 6, [0, 1, 2], 4) == 0
