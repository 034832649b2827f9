"""Downstream tasks built from WordNet 3.0's database files.

Reads the documented `wndb(5WN)` files of a WordNet dict folder (Debian's
`wordnet-base` installs them in /usr/share/wordnet):

- data.{noun,verb,adj,adv}: one synset a line,
    synset_offset lex_filenum ss_type w_cnt word lex_id [word lex_id ...]
    p_cnt [ptr ...] [frames ...] | gloss
  w_cnt is 2 hex digits, p_cnt 3 decimal digits, each pointer 4 fields; an
  adjective may carry a syntactic marker "(a)", "(p)" or "(ip)"; the gloss is
  a definition followed by example sentences in double quotes. Lines starting
  with two spaces are the license header.
- index.{noun,verb,adj,adv}: one lemma a line,
    lemma pos synset_cnt p_cnt [ptr_symbol ...] sense_cnt tagsense_cnt
    synset_offset [synset_offset ...]
  the offsets in sense-number order.
- {noun,verb,adj,adv}.exc (optional): "inflected base [base ...]", the
  irregular forms (verb.exc: "ran run").
- lexnames (optional; Debian does not ship it): "number name category". The
  45 names of `lexnames(5WN)` are built in.

Two tasks (TSV with a header, as `data.classification` reads):

- wic: word in context, after SuperGLUE's WiC (which drew its sentences from
  WordNet's examples, among others). Each row is a lemma with two of
  WordNet's example sentences that both contain it; label 1 when both come
  from the same synset (same sense), 0 when from two synsets of the lemma.
  Per lemma, every same-synset pair and as many different-synset pairs
  (chosen by a hash, so deterministic), so the labels are balanced.
- gloss: a synset's definition -> its lexicographer file (noun.animal,
  verb.motion, ...: 45 classes, unbalanced as WordNet is).

Splits are by a SHA-256 hash: of the lemma for wic (no lemma is in two
splits, so a model cannot memorize a word's senses from train), of the
synset for gloss. 10% test, 10% dev, 80% train. Everything is a pure
function of the files: the same input gives byte-identical TSVs.
"""

import collections
import dataclasses
import hashlib
import itertools
import json
import os
import re

from bert_tf.io import file_io as files
from bert_tf.data.text import split as split_lib

POS_FILES = ("noun", "verb", "adj", "adv")
# lexnames(5WN): lexicographer file number -> name.
LEXNAMES = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal",
    "noun.artifact", "noun.attribute", "noun.body", "noun.cognition",
    "noun.communication", "noun.event", "noun.feeling", "noun.food", "noun.group",
    "noun.location", "noun.motive", "noun.object", "noun.person", "noun.phenomenon",
    "noun.plant", "noun.possession", "noun.process", "noun.quantity", "noun.relation",
    "noun.shape", "noun.state", "noun.substance", "noun.time", "verb.body",
    "verb.change", "verb.cognition", "verb.communication", "verb.competition",
    "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather",
    "adj.ppl")
SPLITS = ("train", "dev", "test")
WIC_HEADER = ("lemma", "pos", "sentence1", "sentence2", "label")
GLOSS_HEADER = ("synset", "words", "definition", "label")
_MARKER = re.compile(r"\((a|p|ip)\)$")
_EXAMPLE = re.compile(r'"([^"]+)"')
_WORD = re.compile(r"[a-z0-9']+")


@dataclasses.dataclass(frozen=True)
class Synset:
  """One line of a data file.

  offset: synset_offset (int); pos: the file ("noun", ...); ss_type: n v a s r;
  lex_filenum: int; words: lemmas as written (underscores for spaces, markers
  removed); definition: the gloss without its examples; examples: the quoted
  example sentences.
  """
  offset: int
  pos: str
  ss_type: str
  lex_filenum: int
  words: tuple
  definition: str
  examples: tuple

  @property
  def key(self):
    return f"{self.pos}.{self.offset:08d}"


def parse_data_line(line, pos, where=""):
  """Parses a data.{pos} line into a Synset.

  Raises:
    ValueError: naming `where` (file:line) when the fields do not follow wndb(5WN).
  """
  try:
    fields_part, _, gloss = line.partition(" | ")
    fields = fields_part.split()
    offset, lex_filenum, ss_type = int(fields[0]), int(fields[1]), fields[2]
    w_cnt = int(fields[3], 16)
    words = []
    for i in range(w_cnt):
      word = _MARKER.sub("", fields[4 + 2 * i])
      int(fields[5 + 2 * i], 16)  # lex_id: checks the layout
      words.append(word)
    p_cnt = int(fields[4 + 2 * w_cnt])
    if len(fields) < 5 + 2 * w_cnt + 4 * p_cnt or ss_type not in "nvasr" or w_cnt < 1:
      raise ValueError("too few fields")
  except (ValueError, IndexError) as e:
    raise ValueError(f"{where}: not a WordNet data line ({e}): {line[:80]!r}") from None
  gloss = gloss.strip()
  examples = tuple(s.strip() for s in _EXAMPLE.findall(gloss) if s.strip())
  definition = gloss.split('"', 1)[0].strip().rstrip(";").strip()
  return Synset(offset, pos, ss_type, lex_filenum, tuple(words), definition, examples)


def _read_lines(path):
  return files.read_text(path, "WordNet", errors="replace").splitlines()


def read_data_file(path, pos):
  """All synsets of data.{pos}: dict offset -> Synset (license lines skipped)."""
  synsets = {}
  for number, line in enumerate(_read_lines(path), start=1):
    if not line.strip() or line.startswith("  "):
      continue
    synset = parse_data_line(line, pos, f"{path}:{number}")
    synsets[synset.offset] = synset
  return synsets


def read_index_file(path):
  """index.{pos}: dict lemma -> tuple of synset offsets in sense order."""
  index = {}
  for number, line in enumerate(_read_lines(path), start=1):
    if not line.strip() or line.startswith("  "):
      continue
    fields = line.split()
    try:
      synset_cnt, p_cnt = int(fields[2]), int(fields[3])
      offsets = tuple(int(x) for x in fields[4 + p_cnt + 2:])
    except (ValueError, IndexError):
      raise ValueError(f"{path}:{number}: not a WordNet index line: {line[:80]!r}") from None
    if len(offsets) != synset_cnt:
      raise ValueError(f"{path}:{number}: synset_cnt {synset_cnt} but "
                       f"{len(offsets)} offsets: {line[:80]!r}")
    index[fields[0]] = offsets
  return index


def read_exceptions(path):
  """{pos}.exc: dict base form -> set of irregular forms (empty when absent)."""
  forms = collections.defaultdict(set)
  if not files.exists(path):
    return forms
  for line in _read_lines(path):
    fields = line.split()
    for base in fields[1:]:
      forms[base].add(fields[0])
  return forms


def read_lexnames(wordnet_dir):
  """Lexicographer file names: the folder's `lexnames` if present, else lexnames(5WN)."""
  path = os.path.join(wordnet_dir, "lexnames")
  if not files.exists(path):
    return LEXNAMES
  names = {}
  for number, line in enumerate(_read_lines(path), start=1):
    fields = line.split()
    if len(fields) < 2 or not fields[0].isdigit():
      raise ValueError(f"{path}:{number}: not a lexnames line: {line!r}")
    names[int(fields[0])] = fields[1]
  return tuple(names.get(i, f"lexfile.{i:02d}") for i in range(max(names) + 1))


@dataclasses.dataclass(frozen=True)
class WordNet:
  """synsets: dict pos -> {offset: Synset}; index: dict pos -> {lemma:
  offsets}; exceptions: dict pos -> {base: forms}; lexnames: tuple."""
  synsets: dict
  index: dict
  exceptions: dict
  lexnames: tuple


def load(wordnet_dir):
  """Reads the data, index and exception files of a WordNet dict folder.

  Raises:
    FileNotFoundError: naming the first missing data/index file.
  """
  synsets, index, exceptions = {}, {}, {}
  for pos in POS_FILES:
    synsets[pos] = read_data_file(os.path.join(wordnet_dir, f"data.{pos}"), pos)
    index[pos] = read_index_file(os.path.join(wordnet_dir, f"index.{pos}"))
    exceptions[pos] = read_exceptions(os.path.join(wordnet_dir, f"{pos}.exc"))
  return WordNet(synsets, index, exceptions, read_lexnames(wordnet_dir))


# ------------------------------------------------------------------------------
# Finding a lemma in a sentence
# ------------------------------------------------------------------------------


def _regular_forms(word, pos):
  """Regular inflections of one word (English spelling rules, a superset)."""
  forms = {word}
  if pos == "noun" or pos == "verb":
    forms |= {word + "s", word + "es"}
    if word.endswith("y"):
      forms.add(word[:-1] + "ies")
  if pos == "verb":
    forms |= {word + "ed", word + "d", word + "ing"}
    if word.endswith("e"):
      forms.add(word[:-1] + "ing")
    if word.endswith("y"):
      forms.add(word[:-1] + "ied")
    if len(word) >= 3 and word[-1] not in "aeiouwxy" and word[-2] in "aeiou":
      forms |= {word + word[-1] + "ed", word + word[-1] + "ing"}
  if pos == "adj":
    forms |= {word + "er", word + "est", word + "r", word + "st"}
  return forms


def lemma_forms(lemma, pos, exceptions):
  """Token sequences that count as `lemma` in a sentence: its regular and
  irregular (exception list) forms, inflecting the last word of a multiword
  lemma. Returns a set of tuples of lower-case words."""
  words = lemma.lower().replace("-", " ").split("_")
  words = [w for part in words for w in part.split()]
  last = words[-1]
  endings = _regular_forms(last, pos) | exceptions.get(last, set())
  whole = exceptions.get(lemma.lower(), set())
  forms = {tuple(words[:-1]) + (ending,) for ending in endings}
  forms |= {tuple(form.replace("-", " ").replace("_", " ").split()) for form in whole}
  return forms


def contains(sentence, forms):
  """Whether the lower-cased word sequence of `sentence` contains one of `forms`."""
  tokens = _WORD.findall(sentence.lower())
  for form in forms:
    n = len(form)
    if any(tuple(tokens[i:i + n]) == form for i in range(len(tokens) - n + 1)):
      return True
  return False


# ------------------------------------------------------------------------------
# The tasks
# ------------------------------------------------------------------------------


def _hash(*parts):
  return int.from_bytes(hashlib.sha256("\t".join(parts).encode("utf-8")).digest()[:8], "big")


def split_of(key):
  """"train" (80%), "dev" (10%) or "test" (10%), by the SHA-256 of key."""
  return split_lib.split_by_hash("split\t" + key)


def _clean(text):
  return " ".join(text.split())  # no tabs or newlines inside a TSV field


def wic_rows(wordnet, max_positive_per_lemma=4):
  """WiC-like rows: dict split -> list of (lemma, pos, sentence1, sentence2, label).

  For each lemma with two or more synsets in a part of speech, the example
  sentences of its synsets that contain it; positives are pairs of such
  sentences of one synset (at most max_positive_per_lemma, chosen by hash),
  negatives as many pairs of sentences of two different synsets (by hash).
  The order of the two sentences is decided by hash too.
  """
  rows = {split: [] for split in SPLITS}
  for pos in POS_FILES:
    for lemma in sorted(wordnet.index[pos]):
      offsets = wordnet.index[pos][lemma]
      if len(offsets) < 2:
        continue
      forms = lemma_forms(lemma, pos, wordnet.exceptions[pos])
      by_synset = []
      for offset in offsets:
        synset = wordnet.synsets[pos].get(offset)
        if synset is None:
          raise ValueError(f"index.{pos}: lemma {lemma!r} names synset {offset:08d}, "
                           f"which data.{pos} does not have")
        sentences = sorted({_clean(s) for s in synset.examples if contains(s, forms)})
        if sentences:
          by_synset.append(sentences)
      positives = [pair for sentences in by_synset
                   for pair in itertools.combinations(sentences, 2)]
      negatives = [(a, b) for s1, s2 in itertools.combinations(by_synset, 2)
                   for a in s1 for b in s2]
      rank = lambda pair: _hash(lemma, pos, *pair)  # pylint: disable=cell-var-from-loop
      positives = sorted(positives, key=rank)[:max_positive_per_lemma]
      negatives = sorted(negatives, key=rank)[:len(positives)]
      if len(negatives) < len(positives):
        positives = positives[:len(negatives)]
      split = split_of(f"wic\t{lemma}")
      for label, pairs in (("1", positives), ("0", negatives)):
        for a, b in pairs:
          if _hash("order", a, b) % 2:
            a, b = b, a
          rows[split].append((lemma.replace("_", " "), pos, a, b, label))
  for split in SPLITS:
    rows[split].sort(key=lambda row: _hash("rows", *row))
  return rows


def gloss_rows(wordnet):
  """Gloss rows: dict split -> list of (synset key, words, definition, lexname)."""
  rows = {split: [] for split in SPLITS}
  for pos in POS_FILES:
    for offset in sorted(wordnet.synsets[pos]):
      synset = wordnet.synsets[pos][offset]
      if not synset.definition:
        continue
      if synset.lex_filenum >= len(wordnet.lexnames):
        raise ValueError(f"data.{pos}: synset {offset:08d} has lex_filenum "
                         f"{synset.lex_filenum}, beyond the {len(wordnet.lexnames)} lexnames")
      rows[split_of(f"gloss\t{synset.key}")].append(
          (synset.key, " ".join(w.replace("_", " ") for w in synset.words),
           _clean(synset.definition), wordnet.lexnames[synset.lex_filenum]))
  for split in SPLITS:
    rows[split].sort(key=lambda row: _hash("rows", *row))
  return rows


def to_tsv(header, rows):
  """TSV text: the header, then one row a line."""
  return "".join("\t".join(row) + "\n" for row in [header] + list(rows))


def label_counts(rows):
  """dict split -> {label: count} (the label is each row's last field)."""
  return {split: dict(sorted(collections.Counter(r[-1] for r in split_rows).items()))
          for split, split_rows in rows.items()}


def write_tasks(wordnet_dir, output_dir, tasks=("wic", "gloss")):
  """Writes the tasks' TSVs (each atomically) and summary.json.

  Returns:
    dict task -> {split: {label: count}}.
  """
  unknown = [t for t in tasks if t not in ("wic", "gloss")]
  if unknown:
    raise ValueError(f"--tasks: unknown task(s) {', '.join(unknown)}; choose from "
                     f"wic, gloss, names")
  net = load(wordnet_dir)
  built = {}
  outputs = []
  for task in tasks:
    rows = wic_rows(net) if task == "wic" else gloss_rows(net)
    header = WIC_HEADER if task == "wic" else GLOSS_HEADER
    if not any(rows.values()):
      raise ValueError(f"{wordnet_dir}: no {task} examples (too few synsets?)")
    for split in SPLITS:
      outputs.append((os.path.join(output_dir, task, f"{split}.tsv"),
                      to_tsv(header, rows[split])))
    built[task] = label_counts(rows)
  for path, text in outputs:  # everything built before anything is written
    files.atomic_write(path, text)
  files.atomic_write(os.path.join(output_dir, "summary.json"),
                     json.dumps({"wordnet_dir": wordnet_dir, "label_counts": built},
                                indent=2, sort_keys=True) + "\n")
  return built



# The sentence-pair tasks of WordNet (labels 0/1, counted label by label).
PAIR_TASKS = ("wic", "lexical_entailment")


def describe_counts(built):
  """A line per task and split: its examples and labels (the tool prints them)."""
  lines = []
  for task, counts in built.items():
    for split, labels in counts.items():
      total = sum(labels.values())
      if not total:
        detail = "empty: too few lemmas or synsets for this split"
      elif task in PAIR_TASKS:
        detail = ", ".join(f"label {k}: {v}" for k, v in labels.items())
      else:
        top = sorted(labels.items(), key=lambda kv: -kv[1])
        detail = (f"{len(labels)} classes, largest {top[0][0]} {top[0][1] / total:.1%}, "
                  f"smallest {top[-1][0]} {top[-1][1]}")
      lines.append(f"{task}/{split}.tsv: {total} examples ({detail})")
  return lines
