"""A name-tagging task (CoNLL, BIO) built from a cased corpus, with no annotator.

BERT's Table 8 measures its masking rule on named-entity recognition,
fine-tuned and feature-based. A user's corpus has no entity annotation, but a
cased corpus marks its names itself: a word written capitalized wherever it
stands inside a sentence is a name ("Josiah", "Jerusalem", "LORD"), a word
seen capitalized only at the start of a sentence or of a quotation ("Then",
"Have") is not. The rule, applied to an uncased model's input, leaves the
model to tell names from words by what it learned in pretraining:

- Words are runs of letters and digits (with an inner apostrophe: "father's"),
  each other non-space character a token of its own, as CoNLL files split.
- A word type (lower-cased) is a name when it has at least `min_count`
  occurrences after a lower-case word (inside a sentence, where
  capitalization is the writer's choice), at least `min_share` of them
  capitalized, and two or more characters ("I" and "O" are not names).
- Every occurrence of a name type is tagged, wherever it stands; adjacent name
  words are one entity ("Jesus Christ": B-NAME I-NAME).

Sentences (lines) go to train, dev or test (80/10/10) by the SHA-256 of
their text, so a repeated line stays in one split. The functions here are pure:
the same text gives the same task.
"""

import collections
import json
import os
import re

from bert_tf.io import file_io as files
from bert_tf.data.text import split

ENTITY = "NAME"
SPLITS = ("train", "dev", "test")
_TOKEN = re.compile(r"\w+(?:'\w+)?|[^\w\s]")


def tokenize(line):
  """The line's tokens (CoNLL's split: words and each punctuation mark)."""
  return _TOKEN.findall(line)


def _is_lower_word(token):
  return token[:1].isalpha() and token[:1].islower()


def name_types(lines, min_count=3, min_share=0.95):
  """The lower-cased word types the corpus writes as names.

  Args:
    lines: the corpus's sentences (str).
    min_count: occurrences after a lower-case word a type needs to be judged.
    min_share: the share of those that must be capitalized.

  Returns:
    frozenset of lower-cased types.
  """
  seen = collections.Counter()
  capitalized = collections.Counter()
  for line in lines:
    tokens = tokenize(line)
    for previous, token in zip(tokens, tokens[1:]):
      if _is_lower_word(previous) and token[:1].isalpha():
        key = token.lower()
        seen[key] += 1
        capitalized[key] += token[0].isupper()
  return frozenset(t for t, n in seen.items()
                   if len(t) >= 2 and n >= min_count and capitalized[t] >= min_share * n)


def tag_line(line, names):
  """(tokens, BIO labels) of one line, tagging each run of name words."""
  tokens = tokenize(line)
  labels = []
  for i, token in enumerate(tokens):
    if token.lower() not in names:
      labels.append("O")
    elif i and tokens[i - 1].lower() in names:
      labels.append("I-" + ENTITY)
    else:
      labels.append("B-" + ENTITY)
  return tokens, labels


def split_of(line):
  """"train" (80%), "dev" (10%) or "test" (10%), by the SHA-256 of the line."""
  return split.split_by_hash("names\t" + line)


def entities(tokens, labels):
  """The entities of a tagged line, each as its lower-cased text."""
  found, current = [], []
  for token, label in zip(tokens, labels):
    if label.startswith("B-") or label == "O":
      if current:
        found.append(" ".join(current))
      current = [token.lower()] if label != "O" else []
    else:
      current.append(token.lower())
  if current:
    found.append(" ".join(current))
  return found


def build(lines, names):
  """Tags `lines` and splits them.

  Returns:
    dict split -> list of (tokens, labels), in corpus order; lines with no
    token are left out (they hold nothing to tag).
  """
  rows = {split: [] for split in SPLITS}
  for line in lines:
    tokens, labels = tag_line(line, names)
    if tokens:
      rows[split_of(line.strip())].append((tokens, labels))
  return rows


def to_conll(rows):
  """CoNLL text: `token label` a line, a blank line after each sentence."""
  return "".join("".join(f"{t} {l}\n" for t, l in zip(tokens, labels)) + "\n"
                 for tokens, labels in rows)


def summary(rows):
  """Per split: sentences, tokens, entities, and for dev and test the share of
  entities whose text never occurs as an entity in train."""
  train_entities = {e for tokens, labels in rows["train"] for e in entities(tokens, labels)}
  out = {}
  for split, split_rows in rows.items():
    found = [e for tokens, labels in split_rows for e in entities(tokens, labels)]
    out[split] = {"sentences": len(split_rows),
                  "tokens": sum(len(tokens) for tokens, _ in split_rows),
                  "entities": len(found)}
    if split != "train":
      unseen = sum(e not in train_entities for e in found)
      out[split]["unseen_in_train"] = round(unseen / len(found), 4) if found else 0.0
  return out


def write_task(corpus, output_dir, heldout_every=0, min_count=3, min_share=0.95):
  """Builds the task from the corpus file and writes train.txt, dev.txt,
  test.txt and summary.json under output_dir (each atomically, all built
  before any is written).

  Name types are judged on the whole corpus; with heldout_every=N only every
  N-th document (data/text/split.py's held-out documents) is tagged.

  Returns:
    summary(): dict split -> counts.

  Raises:
    FileNotFoundError, ValueError: naming the corpus (no name type, no line).
  """
  text = files.read_text(corpus, "corpus")
  names = name_types(text.splitlines(), min_count, min_share)
  if not names:
    raise ValueError(f"{corpus}: no word is written capitalized inside its sentences "
                     f"{min_count}+ times ({min_share:.0%} of them): is the corpus cased?")
  documents = split.split_documents(text, heldout_every)[1] if heldout_every else [text]
  rows = build([line for d in documents for line in d.splitlines()], names)
  empty = [s for s in SPLITS if not rows[s]]
  if empty:
    raise ValueError(f"{corpus}: the names task has no {empty[0]} sentence "
                     f"(too few lines{' held out' if heldout_every else ''})")
  counts = summary(rows)
  outputs = [(os.path.join(output_dir, f"{s}.txt"), to_conll(rows[s])) for s in SPLITS]
  outputs.append((os.path.join(output_dir, "summary.json"), json.dumps(
      {"corpus": corpus, "heldout_every": heldout_every, "min_count": min_count,
       "min_share": min_share, "name_types": len(names), "splits": counts},
      indent=2, sort_keys=True) + "\n"))
  for path, content in outputs:
    files.atomic_write(path, content)
  return counts


def describe_counts(counts):
  """A line per split of summary()'s counts (the tool prints them)."""
  lines = []
  for split, c in counts.items():
    unseen = (f", {c['unseen_in_train']:.1%} of them unseen in train"
              if "unseen_in_train" in c else "")
    lines.append(f"names/{split}.txt: {c['sentences']} sentences, {c['tokens']} tokens, "
                 f"{c['entities']} names{unseen}")
  return lines
