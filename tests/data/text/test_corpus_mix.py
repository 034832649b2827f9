"""Tests of bert_tf.data.text.corpus_mix: two corpora mixed document by document,
every held-out split drawing from both."""

import pytest

from bert_tf.data.text import corpus_mix
from bert_tf.data.text import split


def test_interleave_keeps_each_order_and_mixes_every_split():
  first = [f"a{i}" for i in range(200)]
  second = [f"b{i}" for i in range(150)]
  mixed = corpus_mix.interleave(first, second)
  assert len(mixed) == 300
  assert [d for d in mixed if d[0] == "a"] == first[:150]
  assert [d for d in mixed if d[0] == "b"] == second
  assert corpus_mix.interleave(first, second) == mixed  # seeded
  # Every N-th document, the held-out split, holds both corpora alike
  # (strict alternation would hold out one corpus for any even N).
  for every in (2, 4, 5, 10):
    held = mixed[every - 1::every]
    share = sum(d[0] == "a" for d in held) / len(held)
    assert 0.3 < share < 0.7, (every, share)
  assert len(corpus_mix.interleave(first, second, documents=10)) == 20
  with pytest.raises(ValueError, match="--mix_documents=151: the corpora hold 200 and 150"):
    corpus_mix.interleave(first, second, documents=151)


def test_mix_into_writes_a_corpus_of_both(tmp_path):
  other = tmp_path / "other.txt"
  other.write_text("In the beginning.\nAnd the earth.\n\nThe second one.\nIt ends.\n")
  out = tmp_path / "mixed.txt"
  count, size = corpus_mix.mix_into("Return a list.\nOf items.\n\nOpen a file.\nRead it.\n",
                                    str(other), str(out))
  text = out.read_text()
  assert count == 4 and size == len(text.encode())
  documents = split.documents_of(text)
  assert sorted(documents) == sorted(["Return a list.\nOf items.", "Open a file.\nRead it.",
                                      "In the beginning.\nAnd the earth.",
                                      "The second one.\nIt ends."])
  with pytest.raises(FileNotFoundError, match="--mix_with=.*nowhere.txt: no such file"):
    corpus_mix.mix_into("x", str(tmp_path / "nowhere.txt"), str(out))
