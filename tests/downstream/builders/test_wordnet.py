"""Tests of bert_tf.downstream.builders.wordnet on a few lines in WordNet's documented
wndb(5WN) format (written here, so no WordNet install is needed)."""

import pytest

from bert_tf.downstream.builders import wordnet

from helpers.wordnet_files import DATA, INDEX, write_wordnet


def test_parse_data_line():
  s = wordnet.parse_data_line(DATA["noun"][0], "noun")
  assert (s.offset, s.lex_filenum, s.ss_type) == (8420278, 14, "n")
  assert s.words == ("depository_financial_institution", "bank", "banking_concern")
  assert s.definition == "a financial institution that accepts deposits"
  assert s.examples == ("he cashed a check at the bank", "that bank holds the mortgage on my home")
  verb = wordnet.parse_data_line(DATA["verb"][0], "verb")  # with a verb frame
  assert verb.words == ("run", "scat") and len(verb.examples) == 2
  adj = wordnet.parse_data_line(DATA["adj"][0], "adj")
  assert adj.words == ("able",)  # the (a) marker removed
  assert adj.definition.startswith("(usually followed by `to') having")
  with pytest.raises(ValueError, match=r"data.noun:7: not a WordNet data line"):
    wordnet.parse_data_line("08420278 14 n 03 bank 0 | x", "noun", "data.noun:7")


def test_lexnames_are_the_45_documented():
  assert len(wordnet.LEXNAMES) == 45
  assert wordnet.LEXNAMES[3] == "noun.Tops" and wordnet.LEXNAMES[38] == "verb.motion"
  assert wordnet.LEXNAMES[44] == "adj.ppl"


def test_lemma_forms_regular_and_irregular():
  exc = {"run": {"ran"}}
  assert wordnet.contains("She ran to the store", wordnet.lemma_forms("run", "verb", exc))
  assert wordnet.contains("the road runs along", wordnet.lemma_forms("run", "verb", exc))
  assert not wordnet.contains("the runner", wordnet.lemma_forms("run", "verb", exc))
  forms = wordnet.lemma_forms("ice_cream", "noun", {})
  assert wordnet.contains("two ice creams", forms) and not wordnet.contains("ice", forms)


def test_wic_pairs_balanced_and_split_by_lemma(tmp_path):
  net = wordnet.load(write_wordnet(tmp_path))
  rows = wordnet.wic_rows(net)
  all_rows = [r for split in wordnet.SPLITS for r in rows[split]]
  # Each of bank, run, able: one same-sense pair per synset (2), as many
  # different-sense pairs; one-synset lemmas (scat) give none.
  assert len(all_rows) == 12
  assert sum(r[-1] == "1" for r in all_rows) == 6
  for lemma in ("bank", "run", "able"):
    splits = {split for split in wordnet.SPLITS for r in rows[split] if r[0] == lemma}
    assert len(splits) == 1, lemma
  positives = {frozenset(r[2:4]) for r in all_rows if r[-1] == "1"}
  assert frozenset(("She ran to the store", "the children run in the park")) in positives
  for row in all_rows:
    lemma, pos, a, b, label = row
    forms = wordnet.lemma_forms(lemma.replace(" ", "_"), pos, net.exceptions[pos])
    assert wordnet.contains(a, forms) and wordnet.contains(b, forms)
  assert wordnet.wic_rows(wordnet.load(str(tmp_path))) == rows  # deterministic


def test_gloss_rows(tmp_path):
  rows = wordnet.gloss_rows(wordnet.load(write_wordnet(tmp_path)))
  by_key = {r[0]: r for split in wordnet.SPLITS for r in rows[split]}
  assert len(by_key) == 6
  assert by_key["noun.08420278"] == (
      "noun.08420278", "depository financial institution bank banking concern",
      "a financial institution that accepts deposits", "noun.group")
  assert by_key["verb.01926311"][-1] == "verb.motion"
  assert by_key["adj.00001740"][-1] == "adj.all"
  assert wordnet.split_of("gloss\tnoun.08420278") in wordnet.SPLITS


def test_index_naming_a_missing_synset_is_an_error(tmp_path):
  index = dict(INDEX, noun=["bank n 2 0 2 0 08420278 99999999  "])
  net = wordnet.load(write_wordnet(tmp_path, index=index))
  with pytest.raises(ValueError, match="lemma 'bank' names synset 99999999"):
    wordnet.wic_rows(net)
  (tmp_path / "index.adv").unlink()
  with pytest.raises(FileNotFoundError, match="WordNet file not found: .*index.adv"):
    wordnet.load(str(tmp_path))
