"""Tests of the name_cloze span task's rules (bert_tf/downstream/builders/name_cloze.py)."""

import json

import pytest

from bert_tf.downstream.builders import name_cloze
from bert_tf.downstream.span import squad

NAMES = frozenset({"josiah", "hilkiah", "jerusalem", "jesus", "christ", "moab"})
DOCUMENT = "\n".join([
    "And Josiah went up to Jerusalem with Hilkiah.",
    "Then the king sent for Hilkiah the priest.",
    "And Hilkiah said unto Josiah, I have found the book.",
    "Then the people went unto Jesus Christ and to Moab.",
])


def _questions(document=DOCUMENT, **limits):
  return [(s, p) for s, p in name_cloze.questions_of_document(document, NAMES, "d", **limits)]


def test_the_blank_is_a_name_of_the_passage_and_the_answer_points_at_it():
  made = _questions()
  by_question = {q["question"]: (p["context"], q) for _, p in made for q in p["qas"]}
  # Sentence 1 after sentence 0 (Josiah, Jerusalem, Hilkiah): Hilkiah is asked.
  context, qa = by_question["Then the king sent for _ the priest ."]
  assert context == "And Josiah went up to Jerusalem with Hilkiah."
  answer = qa["answers"][0]
  assert answer["text"] == "Hilkiah"
  assert context[answer["answer_start"]:].startswith("Hilkiah")
  # Sentence 2: both of its names are in the passage, each asked with the
  # other left in the question.
  asked = {q["answers"][0]["text"]: q["question"] for q in made[1][1]["qas"]}
  assert asked == {"Hilkiah": "And _ said unto Josiah , I have",
                   "Josiah": "And Hilkiah said unto _ , I have found the book"}
  for _, paragraph in made:
    for qa in paragraph["qas"]:
      assert name_cloze.BLANK in qa["question"].split()
      assert qa["answers"][0]["text"] not in qa["question"]


def test_no_question_without_a_second_name_or_with_a_name_the_passage_lacks():
  # Sentence 3's names (Jesus Christ, Moab) are in no passage: nothing asked.
  made = _questions()
  assert [s for s, _ in made] == [DOCUMENT.splitlines()[1], DOCUMENT.splitlines()[2]]
  # A passage with one name only gives the answer away: no question.
  one_name = "And Josiah went up.\nThen the king sent for Josiah."
  assert _questions(one_name) == []
  # A name twice in the question sentence is not blanked (the other would tell).
  twice = "Josiah and Hilkiah came.\nThen Josiah saw Josiah."
  assert _questions(twice) == []


def test_the_passage_keeps_the_nearest_sentences_within_its_word_limit():
  lines = DOCUMENT.splitlines()
  contexts = {s: p["context"] for s, p in _questions(passage_words=60)}
  assert contexts[lines[2]] == " ".join(lines[:2])
  # Sentence 2's two predecessors have 8 + 8 words: over 12, the nearest
  # alone, which holds one name (Hilkiah): no question.
  contexts = {s: p["context"] for s, p in _questions(passage_words=12)}
  assert lines[2] not in contexts and contexts[lines[1]] == lines[0]
  # One sentence at most: the same.
  assert lines[2] not in {s for s, _ in _questions(passage_sentences=1)}


def test_the_question_is_cut_around_the_blank():
  document = ("Josiah and Hilkiah came.\n"
              "one two three four five six seven Hilkiah eight nine ten eleven twelve")
  (_, paragraph), = _questions(document, question_words=3)
  assert paragraph["qas"][0]["question"] == "five six seven _ eight nine ten"


def test_the_files_are_squad_1_1_that_the_squad_reader_reads(tmp_path):
  documents = [f"And Josiah went to Moab with Hilkiah {i}.\nThen Hilkiah the priest saw it {i}."
               for i in range(80)]
  corpus = tmp_path / "corpus.txt"
  corpus.write_text("\n\n".join(documents) + "\n")
  counts = name_cloze.write_task(str(corpus), str(tmp_path / "cloze"), min_count=2)
  assert set(counts) == {"train", "dev", "test"}
  total = sum(c["questions"] for c in counts.values())
  # Names: Moab and Hilkiah (Josiah follows a capital word only, never
  # judged). Each document asks Hilkiah in its second sentence.
  assert total == 80
  # Readers that ignore the question: a random one of the passage's two
  # names is right half the time; its most frequent (a tie: Moab, first) never.
  assert {(c["uniform_choice"], c["most_frequent_name"]) for c in counts.values()} == {(0.5, 0.0)}
  for split in ("train", "dev"):
    read = squad.read_examples(str(tmp_path / "cloze" / f"{split}.json"), split == "train")
    assert not read.skipped and len(read.examples) == counts[split]["questions"]
    for example in read.examples:
      assert example.answers == ("Hilkiah",)
      if split == "train":
        assert example.doc_tokens[example.start_position] == "Hilkiah"
  summary = json.loads((tmp_path / "cloze" / "summary.json").read_text())
  assert summary["splits"] == counts
  # The same corpus gives the same files.
  before = (tmp_path / "cloze" / "dev.json").read_text()
  name_cloze.write_task(str(corpus), str(tmp_path / "cloze"), min_count=2)
  assert (tmp_path / "cloze" / "dev.json").read_text() == before


def test_a_corpus_with_no_question_in_a_split_is_refused_naming_it(tmp_path):
  corpus = tmp_path / "few.txt"
  corpus.write_text("And Josiah went to Moab with Hilkiah.\nThen Hilkiah saw it.\n")
  with pytest.raises(ValueError, match=r"few.txt: the name_cloze task has no \w+ question"):
    name_cloze.write_task(str(corpus), str(tmp_path / "out"), min_count=1)
  assert not (tmp_path / "out").exists()
