"""Tests of bert_tf.downstream.classification.tsv: TSV columns by name and index,
labels (classes vs regression), the original's packing and pair truncation,
and errors that name the file and line."""

import numpy as np
import pytest

from bert_tf.downstream.classification import tsv as classification
from bert_tf.data.tokenizers import tokenization
from bert_tf.data.tokenizers import wordpiece_vocab

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat",
         "dog", "ran", "##s"]


def _write(path, text):
  path.write_text(text, encoding="utf-8")
  return str(path)


@pytest.fixture
def tokenizer():
  return tokenization.BatchTokenizer(wordpiece_vocab.Vocab(VOCAB), do_lower_case=True)


def test_columns_by_name_or_index_and_labels(tmp_path):
  path = _write(tmp_path / "t.tsv", "id\ta\tb\tlabel\n1\tThe cat\tsat\tyes\n\n2\tdog\tran\tno\n")
  by_name = classification.read_tsv(path, "a", "b", "label")
  by_index = classification.read_tsv(path, "1", "2", "3")
  assert by_name == by_index
  assert by_name[0] == classification.Example(2, "The cat", "sat", "yes")
  assert by_name[1].line == 4  # the blank line is skipped, line numbers kept
  space = classification.label_space(by_name)
  assert space == classification.LabelSpace(("no", "yes"), False)
  np.testing.assert_array_equal(classification.label_values(by_name, space, path), [1, 0])


def test_label_space_numbers_and_regression():
  ex = lambda labels: [classification.Example(i + 2, "x", None, l) for i, l in enumerate(labels)]
  assert classification.label_space(ex(["10", "2", "0"])).labels == ("0", "2", "10")
  assert classification.label_space(ex(["3.800", "1.0", "0.5"])).regression
  assert classification.label_space(ex(["1", "0"]), "regression").regression
  with pytest.raises(ValueError, match="label 'x' on line 3 .* not a number"):
    classification.label_space(ex(["1", "x"]), "regression")
  with pytest.raises(ValueError, match="1 distinct label"):
    classification.label_space(ex(["1", "1"]))


def test_bad_files_name_file_and_line(tmp_path):
  with pytest.raises(FileNotFoundError, match="task file not found: .*nope.tsv"):
    classification.read_tsv(str(tmp_path / "nope.tsv"), "a", None, "label")
  path = _write(tmp_path / "t.tsv", "a\tlabel\nthe cat\t1\nshort\n")
  with pytest.raises(ValueError, match=r"t.tsv:3: 1 tab-separated fields"):
    classification.read_tsv(path, "a", None, "label")
  with pytest.raises(ValueError, match=r"text_b_column='b' is not a column .*\(a, label\)"):
    classification.read_tsv(path, "a", "b", "label")
  with pytest.raises(ValueError, match="label_column=5 is out of range"):
    classification.read_tsv(path, "a", None, "5")
  path = _write(tmp_path / "e.tsv", "a\tlabel\nthe cat\t\n")
  with pytest.raises(ValueError, match=r"e.tsv:2: empty label"):
    classification.read_tsv(path, "a", None, "label")
  # A test file without labels reads; label None.
  path = _write(tmp_path / "test.tsv", "a\nthe cat\n")
  assert classification.read_tsv(path, "a", None, "label", require_labels=False)[0].label is None


def test_pair_truncation_is_the_original_rule():
  a, b = list(range(7)), list(range(4))
  classification.truncate_pair_at_the_back(a, b, 8)
  assert (len(a), len(b)) == (4, 4)
  a, b = list(range(5)), list(range(5))
  classification.truncate_pair_at_the_back(a, b, 7)  # B first on a tie: 5,5 -> 5,4 -> 4,4 -> 4,3
  assert (len(a), len(b)) == (4, 3)


def test_features_pack_cls_a_sep_b_sep(tokenizer):
  examples = [classification.Example(2, "the cats", "sat on the mat", "1"),
              classification.Example(3, "dog", "ran", "0")]
  features, truncated = classification.convert_examples(examples, tokenizer, 8)
  ids = {t: i for i, t in enumerate(VOCAB)}
  # "the cats" -> the cat ##s (3 tokens), "sat on the mat" (4), room for 5.
  # The rule: total 7 > 5: B(4) longer -> 3; 6 > 5: A(3) == B(3) -> B 2.
  assert features["input_ids"][0].tolist() == [
      ids["[CLS]"], ids["the"], ids["cat"], ids["##s"], ids["[SEP]"], ids["sat"], ids["on"],
      ids["[SEP]"]]
  assert features["segment_ids"][0].tolist() == [0, 0, 0, 0, 0, 1, 1, 1]
  assert features["input_mask"][1].tolist() == [1, 1, 1, 1, 1, 0, 0, 0]
  assert features["input_ids"][1].tolist()[:6] == [ids["[CLS]"], ids["dog"], ids["[SEP]"],
                                                   ids["ran"], ids["[SEP]"], 0]
  assert truncated == 1
  single = [classification.Example(2, "the cat sat on the mat", None, "1")]
  features, truncated = classification.convert_examples(single, tokenizer, 5)
  assert features["input_ids"][0].tolist() == [ids["[CLS]"], ids["the"], ids["cat"],
                                               ids["sat"], ids["[SEP]"]]
  assert truncated == 1 and features["input_ids"].dtype == np.int32


def test_dataset_batches(tokenizer):
  examples = [classification.Example(i + 2, "the cat", None, "1") for i in range(5)]
  features, _ = classification.convert_examples(examples, tokenizer, 6)
  labels = np.arange(5, dtype=np.int32)
  batches = list(classification.make_dataset(features, labels, batch_size=2))
  assert [len(b[1]) for b in batches] == [2, 2, 1]
  train = classification.make_dataset(features, labels, batch_size=2, shuffle=True, seed=1,
                                      repeat=True, drop_remainder=True)
  assert [len(b[1]) for b in train.take(4)] == [2, 2, 2, 2]
