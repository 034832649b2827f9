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
"""

import math
import os

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
  from bert_tf.data import manifest as manifest_lib  # pylint: disable=g-import-not-at-top
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
    from bert_tf.data import stats  # pylint: disable=g-import-not-at-top
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
  for name, pairs in pair_sets.items():
    check(f"pairs {name} (held-out segment pairs, dev)", len(pairs.dev_labels), hint)
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
