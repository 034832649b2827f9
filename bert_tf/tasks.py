"""Builds corpus-made task folders (the task builders of
bert_tf/downstream/builders/) from an installed WordNet 3.0 or from a cased
corpus; fine-tuning on them is the finetune and run_squad tools' job.

    apt-get install wordnet-base      # Debian/Ubuntu: WordNet's files, offline
    python -m bert_tf.tasks --wordnet_dir=/usr/share/wordnet --output_dir=tasks
    python -m bert_tf.tasks --wordnet_dir=/usr/share/wordnet --lexical_entailment --output_dir=tasks
    python -m bert_tf.tasks --corpus=topics.txt --heldout_every=5 --output_dir=tasks

From WordNet (--wordnet_dir), each with train.tsv, dev.tsv and test.tsv
(header row):

  wic/    word in context (after SuperGLUE's WiC): lemma, pos, sentence1,
          sentence2, label (1: the two WordNet example sentences use the lemma
          in the same sense, 0: in different senses). Balanced labels; split
          by lemma (no lemma in two splits).
  gloss/  synset, words, definition, label (its lexicographer file, e.g.
          noun.animal: 45 classes).
  lexical_entailment/ (with --lexical_entailment or --tasks=lexical_entailment)
          synset, lemma, sentence1, sentence2, label: a noun's example
          sentence and the same with the noun replaced, 1 by a hypernym's
          word (entailed), 0 by a co-hyponym's (not); balanced; no sentence
          in two splits (bert_tf/downstream/builders/lexical_entailment.py).

From a cased corpus (--corpus, one sentence a line, a blank line between
documents):

  names/  train.txt, dev.txt, test.txt: name tagging in CoNLL (`token label`,
          BIO, one entity type NAME): a word the corpus writes capitalized
          inside its sentences is a name (bert_tf/downstream/builders/name_tagging.py). With
          --heldout_every=N only the documents compare_objectives holds out
          at that setting are used, so no task sentence was pretrained on.
  name_cloze/
          train.json, dev.json, test.json (SQuAD 1.1): a span task, which
          name of a passage (up to 3 sentences) fills the blank in the next
          sentence (bert_tf/downstream/builders/name_cloze.py); names and --heldout_every
          as the names task's.

Splits are 80/10/10 by a SHA-256 hash: the same input gives the same
files. The counts of every split are printed and written to summary.json.
Fine-tune on them with bert_tf.finetune, e.g. --text_a_column=sentence1
--text_b_column=sentence2 (wic), --text_a_column=definition (gloss),
--task_type=tagging (names), bert_tf.run_squad (name_cloze); or compare
objectives on one with compare_objectives --task=names=conll:tasks/names or
--task=name_cloze=squad:tasks/name_cloze.
"""

import importlib
import os

from absl import app
from absl import flags

from bert_tf import cli

FLAGS = flags.FLAGS
WORDNET_TASKS = ("wic", "gloss")
CORPUS_TASKS = ("names", "name_cloze")
CORPUS_MODULES = {"names": "bert_tf.downstream.builders.name_tagging",
                  "name_cloze": "bert_tf.downstream.builders.name_cloze"}
ENTAILMENT = "lexical_entailment"  # from --wordnet_dir, when asked for
TASKS = WORDNET_TASKS + CORPUS_TASKS + (ENTAILMENT,)


def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  f = flag_values
  flags.DEFINE_string("wordnet_dir", None, "WordNet's dict folder (data.noun, index.noun, "
                      "...; Debian: /usr/share/wordnet).", flag_values=f)
  flags.DEFINE_bool("lexical_entailment", False, "With --wordnet_dir: also build "
                    "lexical_entailment/ (a noun replaced by a hypernym: entailed; by a "
                    "co-hyponym: not).", flag_values=f)
  flags.DEFINE_string("corpus", None, "A cased corpus (one sentence a line, a blank line "
                      "between documents) for the names and name_cloze tasks.", flag_values=f)
  flags.DEFINE_integer("heldout_every", 0, "With --corpus: tag only every N-th document, "
                       "those compare_objectives --heldout_every=N holds out (0: all).",
                       flag_values=f)
  flags.DEFINE_integer("min_name_count", 3, "A word type is judged a name on at least this "
                       "many occurrences after a lower-case word.", flag_values=f)
  flags.DEFINE_float("min_name_share", 0.95, "... at least this share of them capitalized.",
                     flag_values=f)
  flags.DEFINE_string("output_dir", None, "Where the tasks' folders are written.",
                      flag_values=f)
  flags.DEFINE_list("tasks", [], "Which tasks to build (default: those the given "
                    f"sources make: {', '.join(WORDNET_TASKS)} from --wordnet_dir, "
                    f"{', '.join(CORPUS_TASKS)} from --corpus).", flag_values=f)


def main(argv):
  del argv
  if not FLAGS.output_dir:
    raise app.UsageError("--output_dir is required")
  tasks = FLAGS.tasks or ((WORDNET_TASKS if FLAGS.wordnet_dir else ()) +
                          (CORPUS_TASKS if FLAGS.corpus else ()))
  tasks = list(tasks) + ([ENTAILMENT] if FLAGS.lexical_entailment and ENTAILMENT not in tasks
                         else [])
  if not tasks:
    raise app.UsageError("give --wordnet_dir (wic, gloss) or --corpus (names, name_cloze)")
  for task in tasks:
    source = "corpus" if task in CORPUS_TASKS else "wordnet_dir"
    if task in TASKS and not FLAGS[source].value:
      raise app.UsageError(f"--tasks={task} needs --{source}")
  wordnet_tasks = [t for t in tasks if t not in CORPUS_TASKS + (ENTAILMENT,)]
  if wordnet_tasks:
    from bert_tf.downstream.builders import wordnet  # pylint: disable=g-import-not-at-top
    built = wordnet.write_tasks(FLAGS.wordnet_dir, FLAGS.output_dir, wordnet_tasks)
    print("\n".join(wordnet.describe_counts(built)))
    print(f"wrote {os.path.join(FLAGS.output_dir, 'summary.json')}")
  if ENTAILMENT in tasks:
    builder = importlib.import_module("bert_tf.downstream.builders.lexical_entailment")
    folder = os.path.join(FLAGS.output_dir, ENTAILMENT)
    counts = builder.write_task(FLAGS.wordnet_dir, folder)
    print("\n".join(builder.describe_counts(counts)))
    print(f"wrote {os.path.join(folder, 'summary.json')}")
  for task in (t for t in CORPUS_TASKS if t in tasks):
    module = importlib.import_module(CORPUS_MODULES[task])
    folder = os.path.join(FLAGS.output_dir, task)
    counts = module.write_task(FLAGS.corpus, folder, FLAGS.heldout_every,
                               FLAGS.min_name_count, FLAGS.min_name_share)
    print("\n".join(module.describe_counts(counts)))
    print(f"wrote {os.path.join(folder, 'summary.json')}")
  return 0


def run():
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
