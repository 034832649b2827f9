"""Tests of bert_tf.downstream.tagging.conlleval: counts of a handmade file, derived by
hand from conlleval's documented chunk rules (each chunk explained beside
its lines), and the scores that follow from them."""

import pytest

from bert_tf.downstream.tagging import conlleval

# token gold guessed; a blank line between sentences. The comments name
# each chunk as conlleval reads it: gold chunks G, guessed chunks P.
HANDMADE = """\
-DOCSTART- -X- O O

w1 B-PER B-PER
w2 I-PER I-PER
w3 O I-LOC
w4 I-LOC I-LOC
w5 B-ORG I-ORG
w6 I-MISC I-ORG
w7 O O

x1 S-PER S-PER
x2 B-LOC B-LOC
x3 E-LOC I-LOC
x4 O E-LOC
x5 S-ORG S-ORG
x6 S-ORG E-ORG

y1 O O
y2 I-PER B-PER

z1 I-PER I-PER
"""
# Sentence w:
#   w1-w2: G PER[w1-w2], P PER[w1-w2]: same span and type, correct (1).
#   w3: P: I-LOC after O starts a chunk, LOC[w3-w4] (w4's I-LOC continues it).
#   w4: G: I-LOC after O starts LOC[w4]: a different span from P's, not correct.
#   w5: G: B-ORG starts ORG[w5]; P: I-ORG after I-LOC, the type changes: ORG[w5-w6].
#   w6: G: I-MISC after B-ORG, the type changes: MISC[w6]; P's ORG continues.
#   G: 4 chunks, P: 3, correct: 1.
# Sentence x (IOBES):
#   x1: G and P S-PER: PER[x1] both, correct (2).
#   x2-x4: G LOC[x2-x3] (E ends it), P LOC[x2-x4] (B I E): not correct.
#   x5: G and P S-ORG: ORG[x5] both, correct (3).
#   x6: G S-ORG after S-ORG: a new chunk ORG[x6]; P E-ORG after S-ORG starts
#       one too (E after S), ended by the sentence's end: ORG[x6], correct (4).
#   G: 4 chunks, P: 4, correct: 3.
# Sentence y: G I-PER after O starts PER[y2]; P B-PER starts PER[y2]: correct (5).
# Sentence z: the blank line ended y's chunks; I-PER after it starts a new
#   chunk in both: PER[z1], correct (6), ended by the end of the file.
# Totals: gold 4 + 4 + 1 + 1 = 10, guessed 3 + 4 + 1 + 1 = 9, correct 6.
# Tokens 16 (DOCSTART not counted), equal labels: w1 w2 w4 w7, x1 x2 x5, y1, z1 = 9.


def test_handmade_file_counts_as_conlleval(tmp_path):
  path = tmp_path / "pred.conll"
  path.write_text(HANDMADE, encoding="utf-8")
  sentences = conlleval.read_predictions(str(path))
  assert len(sentences) == 4
  counts = conlleval.count(sentences)
  assert (counts.gold_chunks, counts.guessed_chunks, counts.correct_chunks) == (10, 9, 6)
  assert (counts.tokens, counts.correct_tokens) == (16, 9)
  scores = counts.scores()
  assert scores["entity_precision"] == pytest.approx(6 / 9)
  assert scores["entity_recall"] == pytest.approx(6 / 10)
  assert scores["entity_f1"] == pytest.approx(2 * 6 / (9 + 10))
  assert scores["token_accuracy"] == pytest.approx(9 / 16)


@pytest.mark.parametrize("gold,guess,expected", [
    # IOB1: B- only between two adjacent chunks of one type: two chunks, both right.
    (("I-PER", "I-PER", "B-PER", "O"), ("I-PER", "I-PER", "B-PER", "O"), (2, 2, 2)),
    # The same guess read as one chunk: the B- is lost, neither gold chunk matches.
    (("I-PER", "I-PER", "B-PER", "O"), ("I-PER", "I-PER", "I-PER", "O"), (2, 1, 0)),
    # A type change inside a guessed run splits it: LOC[0] and ORG[1].
    (("B-LOC", "I-LOC"), ("B-LOC", "I-ORG"), (1, 2, 0)),
    # IOBES S S: two chunks of one token each.
    (("S-PER", "S-PER"), ("S-PER", "S-PER"), (2, 2, 2)),
    # E- then B- of one type: two chunks.
    (("B-PER", "E-PER", "B-PER", "E-PER"), ("B-PER", "E-PER", "B-PER", "E-PER"), (2, 2, 2)),
    # Nothing but O: no chunks, scores 0 (conlleval's for an empty count).
    (("O", "O"), ("O", "O"), (0, 0, 0)),
])
def test_chunk_rules(gold, guess, expected):
  counts = conlleval.count([(gold, guess)])
  assert (counts.gold_chunks, counts.guessed_chunks, counts.correct_chunks) == expected


def test_no_guessed_chunks_scores_zero_not_an_error():
  scores = conlleval.evaluate([(("B-PER", "O"), ("O", "O"))])
  assert scores["entity_precision"] == 0.0 and scores["entity_f1"] == 0.0
  assert scores["token_accuracy"] == 0.5


def test_a_short_line_names_file_and_line(tmp_path):
  path = tmp_path / "bad.conll"
  path.write_text("a B-PER B-PER\nb O\n", encoding="utf-8")
  with pytest.raises(ValueError, match=r"bad\.conll:2: 2 column"):
    conlleval.read_predictions(str(path))
