"""A lexical-entailment sentence-pair task built from WordNet 3.0.

Each row is a premise, one of WordNet's example sentences for a noun
synset (written by WordNet's lexicographers: text no arm of a comparison
pretrains on), and a hypothesis, the same sentence with the synset's word
replaced:

  label 1  by a word of a hypernym of the synset ("a dog chased the ball"
           -> "an animal chased the ball"): the hypothesis follows
  label 0  by a word of a co-hyponym, another synset under the same
           hypernym ("a dog chased the ball" -> "a cat chased the ball"):
           it does not

Every sentence that gives a row gives exactly one of each, so the labels
are balanced in every split and sentence1 alone says nothing about the
label. Both replacements take the same care: the word is replaced where the
sentence writes it in its base form (the lemma's words, whole words, case
of the first letter kept), and a preceding "a"/"an" is set by the new
word's first letter. Hypernym substitution keeps the truth only where a
word sits in an upward-monotone place; sentences with a negation or a
universal quantifier ("not", "no", "never", "every", "all", "without",
...) are left out, and other downward contexts (conditionals, "only",
...) remain as label noise.

Splits are 80/10/10 by the SHA-256 of the sentence's first synset (the
smallest key of the synsets whose examples hold it), so no sentence is in
two splits and a synset's sentences stay together; the same word pair can
still occur in two splits through different synsets. The replacements are
chosen by hash among the hypernyms, co-hyponyms and their words: the rows
are a pure function of the WordNet files.

TSV with a header (synset, lemma, sentence1, sentence2, label), as
`downstream.classification.tsv` reads: --task=NAME=DIR,sentence1,sentence2,label.
"""

import hashlib
import json
import os
import re

from bert_tf.downstream.builders import wordnet as wordnet_lib
from bert_tf.io import file_io as files

HEADER = ("synset", "lemma", "sentence1", "sentence2", "label")
HYPERNYM_POINTERS = ("@", "@i")  # hypernym, instance hypernym (wninput(5WN))
# Words that make the hypernym's sentence not follow (downward-monotone
# places): a sentence holding one gives no row.
DOWNWARD = frozenset(("not", "no", "never", "none", "nobody", "nothing", "nor", "neither",
                      "every", "all", "each", "any", "without", "cannot", "n't",
                      "don't", "doesn't", "didn't", "isn't", "wasn't", "aren't", "weren't",
                      "won't", "can't", "couldn't", "shouldn't", "wouldn't", "hasn't",
                      "haven't", "hadn't", "few"))
_WORD = re.compile(r"[a-z0-9']+")


def _hash(*parts):
  return int.from_bytes(hashlib.sha256("\t".join(parts).encode("utf-8")).digest()[:8], "big")


def hypernyms_of_line(line, where=""):
  """The hypernym offsets (noun pointers "@" and "@i") of one data.noun line.

  Raises:
    ValueError: naming `where` when the pointer fields do not follow wndb(5WN).
  """
  fields = line.partition(" | ")[0].split()
  try:
    w_cnt = int(fields[3], 16)
    start = 4 + 2 * w_cnt
    p_cnt = int(fields[start])
    pointers = [fields[start + 1 + 4 * i:start + 5 + 4 * i] for i in range(p_cnt)]
    out = tuple(int(p[1]) for p in pointers
                if p[0] in HYPERNYM_POINTERS and p[2] == "n")
  except (ValueError, IndexError) as e:
    raise ValueError(f"{where}: not a WordNet data line ({e}): {line[:80]!r}") from None
  if any(len(p) != 4 for p in pointers):
    raise ValueError(f"{where}: not a WordNet data line (pointers cut short): {line[:80]!r}")
  return out


def read_hypernyms(wordnet_dir):
  """dict noun offset -> tuple of its hypernyms' offsets, from data.noun."""
  path = os.path.join(wordnet_dir, "data.noun")
  hypernyms = {}
  for number, line in enumerate(files.read_text(path, "WordNet", errors="replace")
                                .splitlines(), start=1):
    if not line.strip() or line.startswith("  "):
      continue
    hypernyms[int(line.split(None, 1)[0])] = hypernyms_of_line(line, f"{path}:{number}")
  return hypernyms


def _clean(text):
  return " ".join(text.split())  # no tabs or newlines inside a TSV field


def _phrase(word):
  return word.replace("_", " ")


def _pattern(lemma):
  """The lemma's words as written in its base form, whole words, any case."""
  words = [re.escape(w) for w in lemma.replace("-", " ").replace("_", " ").split()]
  return re.compile(r"(?<![\w'-])" + r"[\s-]+".join(words) + r"(?![\w'-])", re.IGNORECASE)


def _article(word):
  return "an" if word[:1].lower() in "aeiou" else "a"


def replace(sentence, lemma, new_word):
  """`sentence` with the first base-form occurrence of `lemma` replaced by
  `new_word` (its first letter upper-cased where the original's was), a
  preceding "a"/"an" agreeing with it; None when the lemma is not there."""
  match = _pattern(lemma).search(sentence)
  if match is None:
    return None
  new = _phrase(new_word)
  if match.group(0)[:1].isupper():
    new = new[:1].upper() + new[1:]
  before, after = sentence[:match.start()], sentence[match.end():]
  article = re.search(r"(?<![\w'-])(a|an|A|An)(\s+)$", before)
  if article:
    word = _article(new)
    if article.group(1)[:1].isupper():
      word = word.capitalize()
    before = before[:article.start()] + word + article.group(2)
  return before + new + after


def is_upward(sentence):
  """False when the sentence holds a word of DOWNWARD (its places may not
  keep a hypernym's truth)."""
  return not DOWNWARD.intersection(_WORD.findall(sentence.lower()))


def _words(synset):
  """The synset's words and their tokens, lower-case."""
  return {w.lower() for w in synset.words} | {
      t for w in synset.words for t in _phrase(w).lower().split()}


def _pick_word(synset, excluded, *key):
  """The synset's word (by hash) that shares no word with `excluded` (lower-case
  words and their tokens), or None."""
  def clashes(word):
    tokens = set(_phrase(word).lower().split())
    return word.lower() in excluded or bool(tokens & excluded)
  words = [w for w in synset.words if not clashes(w)]
  if not words:
    return None
  return min(words, key=lambda w: _hash("word", *key, w))


def synset_rows(synset, sentence, hypernyms, nouns, hyponyms):
  """The two rows of one example sentence of `synset`, or () when the
  sentence is not usable or no hypernym or co-hyponym word fits:
  ((synset, lemma, sentence, hypernym version, "1"),
   (synset, lemma, sentence, co-hyponym version, "0"))."""
  if not is_upward(sentence):
    return ()
  for lemma in sorted(synset.words, key=lambda w: _hash("lemma", synset.key, sentence, w)):
    if _pattern(lemma).search(sentence) is None:
      continue
    own = _words(synset)
    for parent in sorted(hypernyms.get(synset.offset, ()),
                         key=lambda o: _hash("parent", synset.key, sentence, str(o))):
      if parent not in nouns:
        continue
      up = _pick_word(nouns[parent], own, synset.key, sentence, "up")
      siblings = [o for o in hyponyms.get(parent, ()) if o != synset.offset and o in nouns]
      excluded = own | _words(nouns[parent])
      across = None
      for sibling in sorted(siblings, key=lambda o: _hash("sibling", synset.key, sentence,
                                                           str(o))):
        across = _pick_word(nouns[sibling], excluded, synset.key, sentence, "across")
        if across is not None:
          break
      if up is None or across is None:
        continue
      name = _phrase(lemma)
      return ((synset.key, name, sentence, replace(sentence, lemma, up), "1"),
              (synset.key, name, sentence, replace(sentence, lemma, across), "0"))
  return ()


def entailment_rows(wordnet, hypernyms):
  """Rows by split: dict split -> list of (synset, lemma, sentence1,
  sentence2, label), in a hashed order.

  Args:
    wordnet: a `wordnet.WordNet` (`wordnet.load`).
    hypernyms: `read_hypernyms` of the same folder.
  """
  nouns = wordnet.synsets["noun"]
  hyponyms = {}
  for offset in sorted(hypernyms):
    for parent in hypernyms[offset]:
      hyponyms.setdefault(parent, []).append(offset)
  first_synset = {}
  for offset in sorted(nouns):
    for example in nouns[offset].examples:
      first_synset.setdefault(_clean(example), nouns[offset].key)
  rows = {split: [] for split in wordnet_lib.SPLITS}
  seen = set()
  for offset in sorted(nouns):
    synset = nouns[offset]
    for example in synset.examples:
      sentence = _clean(example)
      if sentence in seen:
        continue
      pair = synset_rows(synset, sentence, hypernyms, nouns, hyponyms)
      if pair:
        seen.add(sentence)
        rows[wordnet_lib.split_of(f"lexical_entailment\t{first_synset[sentence]}")] += pair
  for split in wordnet_lib.SPLITS:
    rows[split].sort(key=lambda row: _hash("rows", *row))
  return rows


def write_task(wordnet_dir, output_dir):
  """Writes train.tsv, dev.tsv, test.tsv (each atomically, after all are
  built) and summary.json into `output_dir`.

  Returns:
    {split: {label: count}}.

  Raises:
    ValueError: no rows (a WordNet without noun examples or hypernyms), or a
      malformed data line (naming file and line).
  """
  net = wordnet_lib.load(wordnet_dir)
  rows = entailment_rows(net, read_hypernyms(wordnet_dir))
  if not any(rows.values()):
    raise ValueError(f"{wordnet_dir}: no lexical_entailment examples (no noun example "
                     "sentence whose synset has a hypernym and a co-hyponym)")
  counts = wordnet_lib.label_counts(rows)
  outputs = [(os.path.join(output_dir, f"{split}.tsv"), wordnet_lib.to_tsv(HEADER, rows[split]))
             for split in wordnet_lib.SPLITS]
  for path, text in outputs:
    files.atomic_write(path, text)
  files.atomic_write(os.path.join(output_dir, "summary.json"),
                     json.dumps({"wordnet_dir": wordnet_dir, "label_counts": counts},
                                indent=2, sort_keys=True) + "\n")
  return counts


def describe_counts(counts):
  """A line per split: its examples and labels (the tool prints them)."""
  return wordnet_lib.describe_counts({"lexical_entailment": counts})
