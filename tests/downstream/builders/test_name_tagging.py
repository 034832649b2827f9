"""Tests of the names task's rules (bert_tf/downstream/builders/name_tagging.py)."""

import json
import re

import pytest

from bert_tf.downstream.tagging import conll
from bert_tf.downstream.builders import name_tagging

LINES = [
    "And Josiah went up to Jerusalem with Hilkiah.",
    "Then the king sent for Josiah, and Josiah came.",
    "Then said Hilkiah, Let us go up; and let us see Jerusalem.",
    "And they went unto Jerusalem, and I saw Jesus Christ there.",
    "The servants of Hilkiah heard it; Then they wept.",
    "then the men went to Jesus Christ and to Josiah.",
    "for the Christ came, and the Christ spoke.",
]


def test_a_name_is_what_the_corpus_capitalizes_inside_its_sentences():
  names = name_tagging.name_types(LINES, min_count=2)
  # Each seen 2+ times after a lower-case word, always capitalized there
  # ("Christ" after "Jesus" is not judged: only after "the").
  assert {"josiah", "jerusalem", "hilkiah", "jesus", "christ"} <= names
  # "Then" is capitalized once after a lower-case word and lower-cased once:
  # under 95%. "Let" follows a comma, not a lower-case word: never judged.
  # "I" is one letter.
  assert not names & {"then", "let", "i", "and", "the"}
  assert "jesus" not in name_tagging.name_types(LINES, min_count=3)


def test_every_occurrence_is_tagged_and_adjacent_names_are_one_entity():
  names = frozenset({"josiah", "jesus", "christ"})
  tokens, labels = name_tagging.tag_line("Josiah saw Jesus Christ, and josiah's son.",
                                         names)
  assert tokens == ["Josiah", "saw", "Jesus", "Christ", ",", "and", "josiah's", "son", "."]
  assert labels == ["B-NAME", "O", "B-NAME", "I-NAME", "O", "O", "O", "O", "O"]
  assert name_tagging.entities(tokens, labels) == ["josiah", "jesus christ"]


def test_the_split_follows_the_line_text_and_is_eighty_ten_ten():
  lines = [f"Line number {i} of Josiah." for i in range(3000)]
  rows = name_tagging.build(lines + lines[:10], frozenset({"josiah"}))
  shares = {s: len(r) / 3010 for s, r in rows.items()}
  assert shares["train"] == pytest.approx(0.8, abs=0.03)
  assert shares["dev"] == pytest.approx(0.1, abs=0.02)
  for line in lines[:10]:  # a repeated line lands where its first copy did
    split = name_tagging.split_of(line)
    assert sum(r[0] == name_tagging.tokenize(line) for r in rows[split]) == 2


def _corpus(tmp_path, documents=20):
  text = "\n\n".join(
      "\n".join(f"And the king of Moab sent {i} men to Jerusalem, and Josiah saw them {j}."
                for j in range(8)) for i in range(documents)) + "\n"
  path = tmp_path / "corpus.txt"
  path.write_text(text)
  return path


def test_written_task_reads_back_as_conll_with_its_counts(tmp_path):
  out = tmp_path / "names"
  counts = name_tagging.write_task(str(_corpus(tmp_path)), str(out))
  summary = json.loads((out / "summary.json").read_text())
  assert summary["splits"] == counts and summary["name_types"] == 3
  total = 0
  for split in name_tagging.SPLITS:
    sentences = conll.read_conll(str(out / f"{split}.txt"))
    assert len(sentences) == counts[split]["sentences"]
    assert sum(l.startswith("B-") for s in sentences for l in s.labels) == \
        counts[split]["entities"]
    total += len(sentences)
  assert total == 160


def test_heldout_every_tags_only_the_documents_compare_holds_out(tmp_path):
  corpus = _corpus(tmp_path)
  counts = name_tagging.write_task(str(corpus), str(tmp_path / "names"), heldout_every=5)
  assert sum(c["sentences"] for c in counts.values()) == 4 * 8  # documents 4, 9, 14, 19
  text = "".join((tmp_path / "names" / f"{s}.txt").read_text()
                 for s in name_tagging.SPLITS)
  sent = {int(n) for n in re.findall(r"^sent O\n(\d+) O$", text, re.M)}
  assert sent == {4, 9, 14, 19}


def test_an_uncased_corpus_is_refused_naming_it(tmp_path):
  path = tmp_path / "lower.txt"
  path.write_text("and josiah went up to jerusalem.\n" * 50)
  with pytest.raises(ValueError, match=r"lower\.txt: no word is written capitalized.*cased"):
    name_tagging.write_task(str(path), str(tmp_path / "names"))
  assert not (tmp_path / "names").exists()
