"""Tests of bert_tf.downstream.builders.lexical_entailment on a small noun
hierarchy written here in WordNet's wndb(5WN) format."""

import collections

import pytest

from bert_tf.downstream.builders import lexical_entailment as le
from bert_tf.downstream.builders import wordnet
from bert_tf.downstream.classification import tsv as classification

from helpers.wordnet_files import write_wordnet


def _line(offset, words, hypernyms, gloss):
  pointers = "".join(f" @ {h:08d} n 0000" for h in hypernyms)
  word_fields = " ".join(f"{w} 0" for w in words)
  return (f"{offset:08d} 05 n {len(words):02x} {word_fields} {len(hypernyms):03d}"
          f"{pointers} | {gloss}  ")


# animal > {dog, cat, owl}; vehicle > {car, bicycle}; a hypernym with no
# example, and a noun without hypernym.
NOUNS = [
    (100, ("animal", "animate_being"), (), 'a living organism; "animals need food"'),
    (101, ("dog", "domestic_dog"), (100,),
     'a domesticated canid; "a dog chased the ball"; "The dog barked at night"; '
     '"the dog did not bark"; "every dog has its day"'),
    (102, ("cat",), (100,), 'a feline; "the cat sat on the mat"'),
    (103, ("owl",), (100,), 'a night bird; "an owl hooted"'),
    (200, ("vehicle",), (), 'a conveyance; "the vehicle stopped"'),
    (201, ("car", "motorcar"), (200,), 'a motor vehicle; "she parked the car outside"'),
    (202, ("bicycle", "bike"), (200,), 'a two-wheeled vehicle; "he rode a bicycle to work"'),
    (300, ("idea",), (), 'a thought; "a good idea"'),
]


def _write(root, nouns=NOUNS):
  data = {"noun": [_line(*n) for n in nouns], "verb": [], "adj": [], "adv": []}
  lemmas = collections.defaultdict(list)
  for offset, words, _, _ in nouns:
    for w in words:
      lemmas[w.lower()].append(offset)
  index = {"noun": [f"{l} n {len(o)} 0 {len(o)} 0 " + " ".join(f"{x:08d}" for x in o) + "  "
                    for l, o in sorted(lemmas.items())], "verb": [], "adj": [], "adv": []}
  return write_wordnet(root, data, index)


def _all(rows):
  return [r for split in wordnet.SPLITS for r in rows[split]]


def test_hypernym_entailed_co_hyponym_not(tmp_path):
  folder = _write(tmp_path)
  rows = _all(le.entailment_rows(wordnet.load(folder), le.read_hypernyms(folder)))
  by_premise = collections.defaultdict(dict)
  for synset, lemma, premise, hypothesis, label in rows:
    by_premise[premise][label] = (synset, lemma, hypothesis)
  # Each usable sentence: one row of each label (balanced by construction).
  assert sorted(by_premise) == sorted([
      "a dog chased the ball", "The dog barked at night", "the cat sat on the mat",
      "an owl hooted", "she parked the car outside", "he rode a bicycle to work"])
  assert all(sorted(labels) == ["0", "1"] for labels in by_premise.values())
  # The hypernym's word replaces the lemma (article set to "an"); the
  # negative is a sibling's word, never the hypernym's or the lemma's own.
  synset, lemma, entailed = by_premise["a dog chased the ball"]["1"]
  assert (synset, lemma) == ("noun.00000101", "dog")
  assert entailed in ("an animal chased the ball", "an animate being chased the ball")
  assert by_premise["a dog chased the ball"]["0"][2] in ("a cat chased the ball",
                                                         "an owl chased the ball")
  assert by_premise["The dog barked at night"]["1"][2] in (
      "The animal barked at night", "The animate being barked at night")
  assert by_premise["she parked the car outside"]["1"][2] == "she parked the vehicle outside"
  assert by_premise["she parked the car outside"]["0"][2] in (
      "she parked the bicycle outside", "she parked the bike outside")
  assert by_premise["he rode a bicycle to work"]["0"][2] in ("he rode a car to work",
                                                             "he rode a motorcar to work")
  # Negation and universal quantifiers give no row; nor do nouns without a
  # hypernym (animal, vehicle, idea).
  assert "the dog did not bark" not in by_premise and "every dog has its day" not in by_premise


def test_splits_deterministic_and_no_sentence_in_two(tmp_path):
  folder = _write(tmp_path)
  rows = le.entailment_rows(wordnet.load(folder), le.read_hypernyms(folder))
  assert le.entailment_rows(wordnet.load(folder), le.read_hypernyms(folder)) == rows
  for split in wordnet.SPLITS:
    labels = collections.Counter(r[-1] for r in rows[split])
    assert labels["0"] == labels["1"], split
  premises = [{r[2] for r in rows[split]} for split in wordnet.SPLITS]
  assert not (premises[0] & premises[1]) and not (premises[0] & premises[2])
  assert not (premises[1] & premises[2])
  # A synset's sentences stay in one split.
  splits_of = collections.defaultdict(set)
  for split in wordnet.SPLITS:
    for r in rows[split]:
      splits_of[r[0]].add(split)
  assert all(len(s) == 1 for s in splits_of.values())


def test_replace_keeps_case_and_articles():
  assert le.replace("An apple fell", "apple", "fruit") == "A fruit fell"
  assert le.replace("she ate an apple today", "apple", "edible_fruit") == (
      "she ate an edible fruit today")
  assert le.replace("a bank and a banker", "banker", "financier") == "a bank and a financier"
  assert le.replace("the ice cream melted", "ice_cream", "dessert") == "the dessert melted"
  assert le.replace("Dog days", "dog", "animal") == "Animal days"
  assert le.replace("pineapples", "apple", "fruit") is None
  assert not le.is_upward("she doesn't own a car") and le.is_upward("she owns a car")


def test_write_task_reads_as_a_pair_task_and_refuses_bad_input(tmp_path):
  (tmp_path / "wn").mkdir()
  folder = _write(tmp_path / "wn")
  counts = le.write_task(folder, str(tmp_path / "le"))
  total = 0
  for split in (s for s in wordnet.SPLITS if counts[s]):  # a split may be empty here
    examples = classification.read_tsv(str(tmp_path / "le" / f"{split}.tsv"),
                                       "sentence1", "sentence2", "label")
    assert len(examples) == sum(counts[split].values())
    total += len(examples)
  assert total == 12
  assert "lexical_entailment/train.tsv:" in "\n".join(le.describe_counts(counts))
  bare = tmp_path / "bare"
  bare.mkdir()
  _write(bare, nouns=[n for n in NOUNS if not n[2]])  # no hypernyms at all
  with pytest.raises(ValueError, match="no lexical_entailment examples"):
    le.write_task(str(bare), str(tmp_path / "none"))
  assert not (tmp_path / "none").exists()
  with pytest.raises(ValueError, match=r"data.noun:3: not a WordNet data line"):
    le.hypernyms_of_line("00000101 05 n 01 dog 0 002 @ 00000100 n 0000 | x", "data.noun:3")
