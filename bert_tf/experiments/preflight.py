"""What every instrument of a comparison needs, checked before the first
pretraining starts, and said in one message.

  held-out masked LM    at least one masked-LM prediction in the held-out
                        records (every --heldout_every-th document)
  pair tasks (probe_*)  at least MIN_EVAL_EXAMPLES dev rows each (a warning
                        below WARN_EVAL_EXAMPLES) and 2 train rows. A row is
                        a pair of consecutive sentences of 3+ words, and dev
                        is every DEV_EVERY-th held-out document: 20 dev rows
                        need about 100 such sentence pairs held out (more
                        for nsp_same_doc, whose negatives need documents
                        of 5+ usable sentences), 200 rows about 1,000
  heads and frozen      the same per segment-pair set; a pair fills
    probes (head_*,     --max_seq_length tokens, so 20 dev pairs need about
    frozen_*)           DEV_EVERY x 20 x max_seq_length tokens held out
  --task                at least 2 train rows and MIN_EVAL_EXAMPLES dev rows
                        (a warning below WARN_EVAL_EXAMPLES); a squad task's
                        rows are its questions, a conll task's its sentences

`needs` writes this for the options at hand; a refusal lists every
instrument that falls short at once, with those needs, so one rerun with a
larger corpus or held-out share is enough. compare_objectives --help says
the same.

Two counts: `check_corpus`, before anything is written, from the corpus
alone (the pair tasks' rows exactly as they will be made, the segment
pairs estimated from words and punctuation before the vocab exists), with
what meets each minimum (a corpus like this one of so many documents and
bytes, the largest --heldout_every that is enough, the --probes that fit);
and `preflight`, after the split and the vocab, exact for every set.
"""

import dataclasses
import math
import os
import re

from bert_tf.data import pair_tasks

# Below MIN_EVAL_EXAMPLES rows a metric cannot separate anything (a binomial
# standard error above 0.11): refused before any pretraining; below
# WARN_EVAL_EXAMPLES a warning says which differences it cannot tell apart.
MIN_EVAL_EXAMPLES = 20
WARN_EVAL_EXAMPLES = 200
# Pair tasks and segment pairs put every DEV_EVERY-th held-out document in dev.
DEV_EVERY = 5


def eval_size_note(what, n, hint):
  """None when `n` evaluation rows can separate differences a comparison
  cares about; a warning line when they are few; ValueError (before any
  pretraining) when they are too few to separate anything."""
  if n < MIN_EVAL_EXAMPLES:
    raise ValueError(f"{what}: {n} evaluation rows, fewer than {MIN_EVAL_EXAMPLES}: its "
                     f"accuracy could not separate anything; {hint}")
  if n < WARN_EVAL_EXAMPLES:
    # Two arms' accuracies near 0.5 differ beyond 2 standard errors of the
    # difference only by more than 2 x sqrt(2 x 0.25 / n).
    return (f"{what}: only {n} evaluation rows; differences below "
            f"{2 * math.sqrt(0.5 / n):.2f} cannot be told apart")
  return None


def needs(options):
  """What each instrument needs, for `options` (one line)."""
  parts = ["held-out masked LM: one masked-LM prediction in the held-out documents "
           f"(every {options.heldout_every}th, --heldout_every)"]
  if options.pair_tasks:
    parts.append(
        f"pair tasks ({', '.join('probe_' + t for t in options.pair_tasks)}): "
        f"{MIN_EVAL_EXAMPLES} dev rows each ({WARN_EVAL_EXAMPLES} to avoid a warning), "
        f"about {DEV_EVERY * MIN_EVAL_EXAMPLES} held-out pairs of consecutive sentences of "
        f"{pair_tasks.MIN_WORDS}+ words (more for nsp_same_doc in documents of under 5 "
        "such sentences)")
    tokens = DEV_EVERY * MIN_EVAL_EXAMPLES * options.max_seq_length
    parts.append(f"heads and frozen probes (head_*, frozen_*): {MIN_EVAL_EXAMPLES} dev "
                 f"segment pairs each, about {tokens:,} held-out tokens at "
                 f"--max_seq_length={options.max_seq_length}")
  if options.tasks:
    parts.append(f"each --task: 2 train rows and {MIN_EVAL_EXAMPLES} dev rows (a squad "
                 f"task's questions, a conll task's sentences; {WARN_EVAL_EXAMPLES} to avoid "
                 "a warning)")
  return "; ".join(parts)


def _read_sizes(task):
  """({"train": rows, "dev": rows}, the dev labels) of a task's files, as
  its kind counts them (a TSV's rows and labels, a span task's questions, a
  tagging task's sentences; no labels)."""
  return task.kind_of.sizes(task)


def _majority_share(labels):
  """The share of the most common label: what always answering it scores."""
  return max(labels.count(label) for label in set(labels)) / len(labels)


def preflight(options, heldout_records, held_txt, task_list, pair_sets, mask_id):
  """Checks what every stage needs before the first pretraining starts:
  held-out masked-LM predictions, evaluation sets large enough, readable
  tasks. Returns (the warning lines, also printed; {metric: the share of
  its dev set's majority class, for masked_lm_accuracy_at_mask the unigram
  plateau}; {task name: its train rows}). Raises one
  ValueError (one line) naming every instrument that falls short, what
  each needs, and what to change."""
  from bert_tf.data.records import manifest as manifest_lib  # pylint: disable=g-import-not-at-top
  hint = "use a larger corpus or a smaller --heldout_every"
  problems, notes, chance, train_rows = [], [], {}, {}

  def check(what, n, own_hint):
    try:
      notes.append(eval_size_note(what, n, own_hint))
    except ValueError:
      problems.append(f"{what}: {n} dev rows, needs {MIN_EVAL_EXAMPLES}")

  manifest = manifest_lib.Manifest.find(heldout_records)
  if not (manifest.count("predictions") if manifest else None):
    instances = (manifest.count("instances") if manifest else 0) or 0
    problems.append(f"held-out masked LM: {instances} held-out instances and no "
                    "masked-LM prediction")
  else:
    from bert_tf.data.records import stats  # pylint: disable=g-import-not-at-top
    plateau = stats.unigram_plateau(heldout_records, mask_id)
    if plateau is not None:  # what predicting one token at every [MASK] scores
      chance["masked_lm_accuracy_at_mask"] = plateau
  for task in task_list:
    sizes, labels = _read_sizes(task)
    train_rows[task.name] = sizes["train"]
    if labels:
      chance[f"{task.name}_accuracy"] = chance[f"frozen_{task.name}_accuracy"] = (
          _majority_share(labels))
    own = task.name.startswith("probe_")
    if sizes["train"] < 2:
      problems.append(f"{task.name} ({task.file('train')}): {sizes['train']} train rows, "
                      "needs 2")
    check(f"{task.name} (dev {task.file('dev')})", sizes["dev"],
          hint if own else f"give the task a larger {os.path.basename(task.file('dev'))}")
  corpus = None
  for name, pairs in pair_sets.items():
    check(f"pairs {name} (held-out segment pairs, dev)", len(pairs.dev_labels), hint)
    if len(pairs.dev_labels) < MIN_EVAL_EXAMPLES:  # what a corpus like this one needs
      corpus = corpus or _Corpus(options)
      held = max(1, len(corpus.documents) // options.heldout_every)
      problems[-1] += (" (" + _yield_fix(f"pairs {name}", (len(pairs.train_labels) + len(
          pairs.dev_labels)) / held, options.heldout_every, corpus) + ")")
    if len(pairs.dev_labels):
      share = float(pairs.dev_labels.mean())
      chance[f"head_{name}_accuracy"] = chance[f"frozen_{name}_accuracy"] = max(share,
                                                                                1 - share)
    if pairs.seen_labels is not None and len(pairs.seen_labels):
      share = float(pairs.seen_labels.mean())
      chance[f"head_{name}_accuracy_seen"] = max(share, 1 - share)
    if len(pairs.train_labels) < 2:
      problems.append(f"pairs {name}: {len(pairs.train_labels)} train pairs, needs 2")
  if problems:
    raise ValueError(
        f"too few evaluation rows for this comparison ({held_txt} is the held-out share): "
        f"{'; '.join(problems)}. What each instrument needs: {needs(options)}. Fix: {hint} "
        "(or drop a pair task with --probes, or give a --task a larger dev file)")
  notes = [n for n in notes if n]
  for note in notes:
    print(f"warning: {note}", flush=True)
  return notes, chance, train_rows


# ------------------------------------------------------------------------------
# Before any work: what the corpus allows
# ------------------------------------------------------------------------------


@dataclasses.dataclass
class Allowance:
  """What the corpus gives one instrument at the chosen --heldout_every:
  its dev (and train) rows, whether that count is exact (the pair tasks',
  the held-out split's and the --tasks' are; the segment pairs' is an
  estimate until the vocab is built), and, when short of `minimum`, what
  meets it (`fix`)."""
  name: str
  dev: int
  train: int
  exact: bool
  unit: str = "dev rows"
  minimum: int = MIN_EVAL_EXAMPLES
  fix: str = ""
  pair_task: str = ""  # the --probes entry it comes from
  user_task: bool = False  # a --task (its dev file, not the corpus, sets its rows)

  @property
  def short(self):
    return self.dev < self.minimum or (self.unit != "held-out documents" and self.train < 2)


# The held-out documents are read in prefixes of this many, doubling, until
# every instrument reaches --max_probe_examples (what it keeps): a corpus
# 1,000x a test one is not tokenized whole to count a few thousand rows.
_FIRST_DOCUMENTS = 256
_WORD = re.compile(r"\w+|[^\w\s]")


class _Corpus:
  """The corpus's documents, parsed and estimate-tokenized once each."""

  def __init__(self, options):
    from bert_tf.io import file_io as files  # pylint: disable=g-import-not-at-top
    from bert_tf.data.text import split  # pylint: disable=g-import-not-at-top
    text = files.read_text(options.corpus, "--corpus")
    self.documents = split.documents_of(text)
    self.bytes = len(text.encode("utf-8"))
    self.options = options
    self._parsed, self._tokens = {}, {}

  def parsed(self, i):
    if i not in self._parsed:
      self._parsed[i] = [line.strip() for line in self.documents[i].split("\n")
                         if line.strip()]
    return self._parsed[i]

  def tokens(self, i):
    """Document i as sentences of word and punctuation tokens: as many as
    WordPiece gives, or fewer (a word unknown to the vocab is several
    pieces), so a count from them is an estimate on the low side."""
    if i not in self._tokens:
      lower = self.options.do_lower_case
      sentences = [_WORD.findall(s.lower() if lower else s) for s in self.parsed(i)]
      self._tokens[i] = [s for s in sentences if s]
    return self._tokens[i]

  def counts(self, every, indices=None):
    """({instrument: (dev, train)}, held-out documents read) at `every`:
    the pair tasks exactly as stages.pair_task_files makes them, the
    segment pairs as instruments.pair_sets (estimate-tokenized)."""
    from bert_tf.data import segment_pairs  # pylint: disable=g-import-not-at-top
    o = self.options
    held = list(range(every - 1, len(self.documents), every)) if indices is None else indices
    cap, count = o.max_probe_examples, min(_FIRST_DOCUMENTS, len(held))
    while True:
      out = {}
      parsed = [self.parsed(i) for i in held[:count]]
      tokenized = [t for t in (self.tokens(i) for i in held[:count]) if t]
      for task in o.pair_tasks:
        for name, make, split_fn, docs in (
            (f"probe_{task}", lambda d, t: pair_tasks.task_rows(d, t, seed=o.seed),
             pair_tasks.split_rows, parsed),
            (f"pairs {task}", lambda d, t: segment_pairs.segment_pairs(
                d, t, o.max_seq_length - 3, o.seed), segment_pairs.split_pairs, tokenized)):
          try:
            train, dev = split_fn(make(docs, task))
          except ValueError:  # nsp_random over fewer than two documents
            train, dev = [], []
          out[name] = (len(dev), len(train))
      if count >= len(held) or all(min(v) >= cap for v in out.values()):
        return out, count
      count = min(2 * count, len(held))


def _yield_fix(name, rows_per_document, every, corpus):
  """What meets the minimum of an instrument short at --heldout_every=every:
  the documents (and bytes) of a corpus like this one that give it
  MIN_EVAL_EXAMPLES dev rows (WARN_EVAL_EXAMPLES for no warning)."""
  if not rows_per_document:
    what = ("two consecutive sentences (lines) of "
            f"{pair_tasks.MIN_WORDS}+ words" if name.startswith("probe_") else
            "two sentences (lines)")
    return (f"no document of this corpus gives it a row: documents need {what}, and a "
            "blank line between documents")
  per_doc_bytes = corpus.bytes / max(1, len(corpus.documents))

  def documents(rows):
    return every * DEV_EVERY * math.ceil(rows / rows_per_document)

  need, quiet = documents(MIN_EVAL_EXAMPLES), documents(WARN_EVAL_EXAMPLES)
  return (f"a corpus of about {need:,} documents like these ({_size(need * per_doc_bytes)}; "
          f"{quiet:,} documents, {_size(quiet * per_doc_bytes)}, for {WARN_EVAL_EXAMPLES} "
          f"rows) at --heldout_every={every}")


def _size(n):
  for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
    if n >= scale:
      return f"{n / scale:.1f} {unit}"
  return f"{int(n)} bytes"


def corpus_allows(options):
  """Before any work (no file written): [Allowance] of every instrument at
  options.heldout_every, each short one with what meets its minimum (a
  larger corpus like this one, or the largest --heldout_every that does),
  and the header line of the table."""
  corpus = _Corpus(options)
  every, total = options.heldout_every, len(corpus.documents)
  held = total // every
  out = [Allowance("held-out masked LM", held, held, True, "held-out documents", 1)]
  if not held:
    out[0].fix = (f"--heldout_every={total} (the corpus has {total} document(s): none is "
                  "held out)" if total >= 2 else "a corpus of 2+ documents, a blank line "
                  "between documents")
  counts, read = corpus.counts(every)
  # Rows per document, from the held-out documents read (from every
  # document when none is held out): what a larger corpus like it gives.
  sample, sample_docs = (counts, read) if read else corpus.counts(
      every, indices=list(range(total)))
  for name, (dev, train) in counts.items():
    exact = name.startswith("probe_")
    a = Allowance(name if exact else f"{name} (head_, frozen_)", dev, train, exact,
                  "dev rows" if exact else "dev segment pairs",
                  pair_task=name.split(" ")[-1].replace("probe_", ""))
    if a.short:
      a.fix = _yield_fix(name, sum(sample[name]) / max(sample_docs, 1), every, corpus)
    out.append(a)
  for task in options.tasks:
    sizes, _ = _read_sizes(task)
    a = Allowance(f"{task.name} (--task, dev {task.file('dev')})", sizes["dev"],
                  sizes["train"], True, user_task=True)
    if a.short:
      a.fix = f"give the task a larger {os.path.basename(task.file('dev'))}"
    out.append(a)
  _best_every(options, corpus, out)
  header = (f"what the corpus allows: {options.corpus}, {total:,} documents "
            f"({_size(corpus.bytes)}); --heldout_every={every} holds out {held:,}, "
            f"{held // DEV_EVERY:,} of them dev documents of the pair sets (every "
            f"{DEV_EVERY}th); each evaluation set needs {MIN_EVAL_EXAMPLES} dev rows "
            f"({WARN_EVAL_EXAMPLES} for no warning)")
  return out, header


def _best_every(options, corpus, allowances):
  """Adds to each short corpus instrument's fix the largest --heldout_every
  below the chosen one at which every corpus instrument meets its minimum
  (or says that none does)."""
  short = [a for a in allowances if a.short and not a.user_task]
  if not short or options.heldout_every <= 2:
    return
  total = len(corpus.documents)
  for every in range(options.heldout_every - 1, 1, -1):
    if total // every < 1:
      continue
    counts, _ = corpus.counts(every)
    if all(dev >= MIN_EVAL_EXAMPLES and train >= 2 for dev, train in counts.values()):
      for a in short:
        a.fix = f"--heldout_every={every} on this corpus, or {a.fix}"
      return
  for a in short:
    a.fix += "; no --heldout_every from 2 up is enough on this corpus"


def table(allowances, header, cap):
  """The lines printed before any work; `cap`: --max_probe_examples, the
  most rows a pair set keeps."""
  lines = [header]
  width = max(len(a.name) for a in allowances)
  for a in allowances:
    kept = a.dev if a.unit == "held-out documents" or a.user_task else min(a.dev, cap)
    count = f"{kept:,}{'+' if kept < a.dev else ''}"
    count = count if a.exact else f"about {count}"
    if a.short:
      state = f"short of {a.minimum}" + (f": {a.fix}" if a.fix else "")
    elif kept >= WARN_EVAL_EXAMPLES or a.unit == "held-out documents":
      state = "ok"
    else:
      state = f"ok, a warning below {WARN_EVAL_EXAMPLES}"
    lines.append(f"  {a.name:<{width}}  {count} {a.unit}: {state}")
  return lines


def _probes_hint(options, allowances):
  """The --probes that leave out the pair tasks that fall short."""
  short = {a.pair_task for a in allowances if a.short}
  fit = [t for t in options.pair_tasks if t not in short]
  if not options.pair_tasks or len(fit) == len(options.pair_tasks):
    return ""
  if fit:
    return f". Or keep the pair tasks that fit: --probes={','.join(fit)}"
  return (". Or compare without pair tasks: --probes= (the held-out masked LM and any "
          "--task alone)")


def check_corpus(options):
  """Prints what the corpus allows (before any work) and raises one
  ValueError naming every instrument whose exact count is short and what
  meets it; nothing is written. Returns the allowances (the preflight
  after the text stage repeats their fixes when the exact segment pairs
  fall short)."""
  allowances, header = corpus_allows(options)
  for line in table(allowances, header, options.max_probe_examples):
    print(line, flush=True)
  short = [a for a in allowances if a.short and a.exact]
  if short:
    raise ValueError(
        "too few evaluation rows for this comparison at --heldout_every="
        f"{options.heldout_every} (nothing was written): " + "; ".join(
            f"{a.name}: {a.dev} {a.unit}" + (f" and {a.train} train" if a.train < 2 else "")
            + f", needs {a.minimum} (fix: {a.fix})" for a in short)
        + _probes_hint(options, allowances))
  return allowances
