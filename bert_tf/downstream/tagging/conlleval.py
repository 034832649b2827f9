"""Entity-level scores of a tagging, counted as conlleval (the CoNLL-2000
shared task's perl script) counts them.

A label is split at its hyphens into a tag and a type ("B-PER": tag B, type
PER; "O": tag O, no type; the second hyphen-separated piece is the type, as
the script's `split /-/`). Chunks are read from the tags with conlleval's
rules:

- a chunk ends before a token when the previous tag is B or I and this one
  is B, S or O; after every E or S; and whenever the previous tag is not O
  and the type changes;
- a chunk starts at every B or S; at an I or E that follows O, E or S (so
  I- after O starts a chunk, as IOB1 needs); and at any non-O tag whose
  type differs from the previous token's.

The perl script predates IOBES: its rules name B, I, O and E (for IOE) and
no S. The S rules here, and E- followed by B- ending a chunk, are the ones
the script's IOBES-aware ports use; on BIO, IOB1 and IOE labels (no S, no
E-B) the two sets of rules agree case by case, so the counts are the
script's.

A sentence boundary ends every chunk (the script reads a blank line as a
token tagged O, not counted). A guessed chunk is correct when it starts
and ends at the same tokens as a gold chunk of the same type; the script
also drops a chunk pair from "correct" when, inside them, a token's gold
and guessed types differ. Precision = correct / guessed chunks, recall =
correct / gold chunks, F1 their harmonic mean (0 when undefined); token
accuracy = tokens whose guessed label equals the gold one / all tokens (O
included). conlleval prints percentages; these are fractions.
"""

import dataclasses

from bert_tf.io import file_io

OUTSIDE = "O"


def split_label(label):
  """(tag, type) of a label as conlleval splits it: "B-PER" -> ("B", "PER"),
  "O" -> ("O", "")."""
  parts = label.split("-")
  return parts[0], (parts[1] if len(parts) > 1 else "")


def ends_chunk(prev_tag, tag, prev_type, type_):
  """Whether a chunk ends between a token (prev_*) and the next."""
  if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
    return True
  if prev_tag in ("E", "S"):
    return True
  return prev_tag != OUTSIDE and prev_type != type_


def starts_chunk(prev_tag, tag, prev_type, type_):
  """Whether a chunk starts at a token (tag, type_) after prev_*."""
  if tag in ("B", "S"):
    return True
  if prev_tag in ("E", "S", OUTSIDE) and tag in ("I", "E"):
    return True
  return tag != OUTSIDE and prev_type != type_


@dataclasses.dataclass
class Counts:
  """conlleval's counters: chunks correct, gold (found correct) and
  guessed, and tokens correct of all tokens."""
  correct_chunks: int = 0
  gold_chunks: int = 0
  guessed_chunks: int = 0
  correct_tokens: int = 0
  tokens: int = 0

  def scores(self):
    """{entity_precision, entity_recall, entity_f1, token_accuracy} as fractions."""
    precision = self.correct_chunks / self.guessed_chunks if self.guessed_chunks else 0.0
    recall = self.correct_chunks / self.gold_chunks if self.gold_chunks else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"entity_precision": precision, "entity_recall": recall, "entity_f1": f1,
            "token_accuracy": self.correct_tokens / self.tokens if self.tokens else 0.0}


def count(sentences):
  """conlleval's counts over sentences.

  Args:
    sentences: iterable of (gold labels, guessed labels), two equally long
      sequences of label strings per sentence.

  Returns:
    Counts.
  """
  counts = Counts()
  in_correct = False
  last_gold = last_guess = (OUTSIDE, "")
  for gold_labels, guessed_labels in sentences:
    if len(gold_labels) != len(guessed_labels):
      raise ValueError(f"{len(gold_labels)} gold labels but {len(guessed_labels)} guessed")
    # A boundary after each sentence: a token tagged O that is not counted.
    items = list(zip(gold_labels, guessed_labels)) + [None]
    for item in items:
      gold, guess = ((split_label(item[0]), split_label(item[1])) if item is not None
                     else ((OUTSIDE, ""), (OUTSIDE, "")))
      gold_ends = ends_chunk(last_gold[0], gold[0], last_gold[1], gold[1])
      guess_ends = ends_chunk(last_guess[0], guess[0], last_guess[1], guess[1])
      if in_correct:
        if gold_ends and guess_ends and last_gold[1] == last_guess[1]:
          in_correct = False
          counts.correct_chunks += 1
        elif gold_ends != guess_ends or gold[1] != guess[1]:
          in_correct = False
      gold_starts = starts_chunk(last_gold[0], gold[0], last_gold[1], gold[1])
      guess_starts = starts_chunk(last_guess[0], guess[0], last_guess[1], guess[1])
      if gold_starts and guess_starts and gold[1] == guess[1]:
        in_correct = True
      counts.gold_chunks += gold_starts
      counts.guessed_chunks += guess_starts
      if item is not None:
        counts.correct_tokens += item[0] == item[1]
        counts.tokens += 1
      last_gold, last_guess = gold, guess
  if in_correct:
    counts.correct_chunks += 1
  return counts


def evaluate(sentences):
  """conlleval's scores (fractions) of (gold, guessed) label sequences."""
  return count(sentences).scores()


def read_predictions(path):
  """(gold, guessed) label tuples of each sentence of a file in conlleval's
  input format: `token ... gold guessed` a line (the last two columns), a
  blank line between sentences, `-DOCSTART-` lines skipped.

  Raises:
    ValueError: a line of fewer than three columns (naming file and line).
  """
  sentences, gold, guessed = [], [], []
  for number, line in enumerate(file_io.read_text(path, "predictions").splitlines(), start=1):
    columns = line.split()
    if not columns or columns[0] == "-DOCSTART-":
      if gold:
        sentences.append((tuple(gold), tuple(guessed)))
        gold, guessed = [], []
      continue
    if len(columns) < 3:
      raise ValueError(f"{path}:{number}: {len(columns)} column(s): conlleval's input needs "
                       f"the token, the gold label and the guessed one")
    gold.append(columns[-2])
    guessed.append(columns[-1])
  if gold:
    sentences.append((tuple(gold), tuple(guessed)))
  return sentences
