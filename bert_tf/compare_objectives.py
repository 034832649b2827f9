"""Compare pretraining objectives, or any variant of one, at equal compute
on your own corpus, over several pretraining runs.

    python -m bert_tf.compare_objectives --corpus=corpus.txt --output_dir=runs/compare \\
        --objectives=mlm_nsp,mlm,mlm_sop,electra --num_train_steps=2000 --budget=flops \\
        --pretrain_seeds=3 --task=wic=tasks/wic,sentence1,sentence2,label

    python -m bert_tf.compare_objectives --corpus=corpus.txt --output_dir=runs/mask \\
        --arm=bert:objective=mlm_nsp --arm=mask100:objective=mlm_nsp,masked_token_share=1.0 \\
        --pretrain_seeds=3

An arm (--arm=NAME:objective=OBJ,flag=value,... or a JSON --arms_file) is an
objective plus any writer flags (masked_lm_prob, masked_token_share,
random_token_share, kept_token_share, do_whole_word_mask, max_ngram,
dynamic_masking, dupe_factor, ...), training flags (learning_rate,
num_train_steps, ...) and its objective's options (the flags run_pretraining
takes for it, e.g. ELECTRA's generator size): bert_tf.experiments.arms.
--objectives=a,b is one arm per objective, named after it (used alone, or
beside --arm when given explicitly).

For each arm and pretraining seed: its records (BERT's segment pairs with NSP, RoBERTa's
full sentences with dynamic masking, ALBERT's sentence order; ELECTRA reads
BERT's), the same model pretrained on the same batch x tokens for the same
steps (--budget=steps) or the same training FLOPs (--budget=flops: the
first objective's --num_train_steps), held-out masked-LM accuracy on one
shared set of records (and the objective's own held-out figures, such as
ELECTRA's discriminator's), the model's own NSP/SOP head on held-out
segment pairs (random-document and same-document negatives, swapped
order), frozen linear probes on the encoder for those pairs and each
TSV --task, and the pair tasks (--probes: sentence pairs from the held-out
text) and each --task fine-tuned over --seeds (a SQuAD task: F1 and exact
match; a CoNLL task: entity F1, also with the encoder frozen). Every metric is the mean and
sd over the pretraining runs, each example's dev outcome kept. An arm
random_init (--random_init, on by default) is the same encoder never
pretrained, through the same instruments and fine-tuning. Writes results.md
(a verdict first, then the table with 95% intervals and which differences
are beyond noise: the multi-bootstrap over pretraining runs and dev
examples, Holm-corrected over the table, docs/statistics.md; and how the
table was made: commit, versions, corpus sha256, machine, wall times,
command), results.csv, provenance.json, plots/ and hparams/ (TensorBoard's
HPARAMS tab). --reuse_runs_from=DIR reads finished pretraining runs of the
same arm, seed and settings from another comparison's folder. A rerun skips finished
stages; a rerun with another corpus, split, vocab or length on the same
--output_dir is refused, printing the command for a folder of its own (a
run refused by its preflight claims nothing: rerun it there with other
flags).

How large a corpus: before anything is written, the run prints the dev
rows each instrument gets and, for one short of its minimum, the corpus
size or --heldout_every that meets it. Every --heldout_every-th document
is held out, and every evaluation set needs at least 20 dev rows (below 200, a warning says
which differences it cannot tell apart); all of it is checked, and every
shortfall named in one message, before any pretraining:
  held-out masked LM   one masked-LM prediction in the held-out documents
  pair tasks           a row per pair of consecutive sentences of 3+ words;
    (probe_*)          dev is every 5th held-out document, so 20 dev rows
                       need about 100 such pairs held out (more for
                       nsp_same_doc in documents of under 5 such
                       sentences), 200 rows about 1,000
  heads, frozen probes a segment pair fills --max_seq_length tokens: 20 dev
    (head_*, frozen_*) pairs need about 100 x max_seq_length held-out tokens
                       (6,400 at the default 64)
  --task               2 train rows and 20 dev rows (a squad task's questions,
                       a conll task's sentences)
At the defaults (--heldout_every=10, --max_seq_length=64) that is a corpus
of at least 64,000 tokens in documents of several sentences each, and ten
times that for evaluation sets without a warning.
"""

import os
import sys

from absl import flags
from absl import logging

from bert_tf import cli
from bert_tf.cli import shared_flags

_TINY_CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "configs", "bert_tiny.json")


def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  f = flag_values
  flags.DEFINE_string("corpus", None, "Raw text: one sentence a line, a blank line between "
                      "documents.", flag_values=f)
  flags.DEFINE_string("output_dir", None, "Everything is written here; a rerun continues.",
                      flag_values=f)
  flags.DEFINE_string("bert_config_file", _TINY_CONFIG, "Model size (vocab_size is set to the "
                      "vocab's).", flag_values=f)
  flags.DEFINE_multi_string("arm", [], "An arm: NAME:objective=OBJECTIVE[,flag=value,...] "
                            "with writer and training flags (bert_tf.experiments.arms). "
                            "Repeat for several.", flag_values=f)
  flags.DEFINE_string("arms_file", "", "A JSON list of arms, each {\"name\": ..., "
                      "\"objective\": ..., flag: value, ...}.", flag_values=f)
  flags.DEFINE_integer("pretrain_seeds", 1, "Pretraining runs of each arm (seeds --seed, "
                       "--seed + 1, ...): every metric's mean and sd are over them.",
                       flag_values=f)
  flags.DEFINE_list("objectives", ["mlm_nsp", "mlm", "mlm_sop"],
                    "Objectives to compare (training.objectives): mlm_nsp (BERT), mlm "
                    "(RoBERTa: full sentences, dynamic masking), mlm_sop (ALBERT), electra "
                    "(ELECTRA, on BERT's records; fine-tuned from its discriminator).",
                    flag_values=f)
  flags.DEFINE_string("vocab_file", "", "WordPiece vocab; empty builds one from the training "
                      "documents.", flag_values=f)
  flags.DEFINE_integer("vocab_size", 8000, "Size of the vocab built.", flag_values=f)
  shared_flags.define_do_lower_case(f)
  flags.DEFINE_integer("heldout_every", 10, "Every N-th document is held out.", flag_values=f)
  flags.DEFINE_integer("max_seq_length", 64, "Tokens per instance.", flag_values=f)
  flags.DEFINE_integer("dupe_factor", 5, "Masked copies of the training text.", flag_values=f)
  flags.DEFINE_integer("num_train_steps", 1000, "Pretraining steps of every objective "
                       "(--budget=steps) or of the first one (--budget=flops).", flag_values=f)
  flags.DEFINE_enum("budget", "steps", ["steps", "flops"], "Equal pretraining budget: steps "
                    "(--num_train_steps each), or flops (--num_train_steps of the first "
                    "objective, the same training FLOPs for the others: "
                    "bert_tf/models/flops.py).", flag_values=f)
  shared_flags.define_train_batch_size(f, 32)
  shared_flags.define_learning_rate(f, 1e-3)
  flags.DEFINE_list("probes", ["nsp_random", "nsp_same_doc", "sop"],
                    "Pair tasks built from the held-out text (bert_tf/data/pair_tasks.py), "
                    "fine-tuned from each model (metrics probe_<task>_accuracy); their "
                    "segment-pair versions feed the heads and frozen probes.", flag_values=f)
  flags.DEFINE_multi_string(
      "task", [], "A downstream task, fine-tuned from each model over --seeds. "
      "NAME=DIR,TEXT_A[,TEXT_B],LABEL: a TSV task (DIR holds train.tsv and dev.tsv; columns "
      "by header name or 0-based index; metric NAME_accuracy or NAME_pearson, and a frozen "
      "linear probe frozen_NAME_*). NAME=squad:DIR: SQuAD span answers (DIR holds train.json "
      "and dev.json, 1.1 or 2.0 by the file's version / is_impossible; metrics NAME_f1 and "
      "NAME_exact_match, the official script's on dev.json, as fractions; windows of "
      "--squad_max_query_length and --squad_doc_stride). NAME=conll:DIR: CoNLL token "
      "tagging (DIR holds train.txt and dev.txt; metrics NAME_entity_f1 fine-tuned and "
      "frozen_NAME_entity_f1 with the encoder frozen, as BERT's Table 7). Repeat for "
      "several.", flag_values=f)
  flags.DEFINE_integer("squad_max_query_length", 16, "Question pieces kept in a SQuAD "
                       "task's windows (fits --max_seq_length=64).", flag_values=f)
  flags.DEFINE_integer("squad_doc_stride", 16, "Document pieces between the starts of a "
                       "SQuAD task's windows.", flag_values=f)
  flags.DEFINE_integer("seeds", 3, "Fine-tuning seeds per task.", flag_values=f)
  flags.DEFINE_float("finetune_epochs", 3.0, "Fine-tuning epochs.", flag_values=f)
  flags.DEFINE_float("finetune_learning_rate", 1e-4, "Fine-tuning learning rate.",
                     flag_values=f)
  flags.DEFINE_float("frozen_learning_rate", 1e-3, "Learning rate of a CoNLL task's tagger "
                     "on the frozen encoder (frozen_<task>_entity_f1): its head trains "
                     "alone, and wants more than --finetune_learning_rate.", flag_values=f)
  flags.DEFINE_integer("max_probe_examples", 4000, "At most this many train (and dev) rows "
                       "per pair task and per segment-pair set.", flag_values=f)
  flags.DEFINE_integer("seed", 12345, "Seed of data, initialization and fine-tuning.",
                       flag_values=f)
  flags.DEFINE_integer("bootstrap_samples", 1000, "Samples of the multi-bootstrap over "
                       "pretraining runs and dev examples that says which differences are "
                       "beyond noise (bert_tf/util/bootstrap.py; seeded by --seed).",
                       flag_values=f)
  flags.DEFINE_bool("random_init", True, "Add the arm random_init: the encoder as "
                    "initialized (each pretraining seed), never pretrained, through the same "
                    "held-out reading, probes and fine-tuning. An arm leads a metric only "
                    "beyond noise above it (--norandom_init leaves it out).", flag_values=f)
  flags.DEFINE_string("reuse_runs_from", "", "Another comparison's --output_dir: its "
                      "finished pretraining runs of the same arm, seed and settings (the "
                      "same run key, on the same corpus, split, vocab and model: checked) "
                      "are read from there instead of trained again.", flag_values=f)
  flags.DEFINE_multi_string("paper_figure", [], "ARM:METRIC=VALUE: what a paper reports for "
                            "the setting ARM stands for, in METRIC's units (0.905 for 90.5%); "
                            "results.md shows it beside ours and says whether the paper's "
                            "direction between two arms reproduces. Repeat for several "
                            "(configs/experiments/*.flags carry them).", flag_values=f)


def main(argv):
  del argv
  from absl import app  # pylint: disable=g-import-not-at-top
  from bert_tf.experiments import compare  # pylint: disable=g-import-not-at-top
  from bert_tf.experiments import plan  # pylint: disable=g-import-not-at-top
  from bert_tf.experiments import stages  # pylint: disable=g-import-not-at-top
  for name in ("corpus", "output_dir"):
    if not flags.FLAGS[name].value:
      raise app.UsageError(f"--{name} is required")
  from bert_tf.experiments import arms  # pylint: disable=g-import-not-at-top
  from bert_tf.experiments import paper_figures  # pylint: disable=g-import-not-at-top
  fv = flags.FLAGS
  try:
    tasks = tuple(plan.Task.parse(spec) for spec in fv.task)
    arm_list = [arms.Arm.parse(spec) for spec in fv.arm]
    if fv.arms_file:
      arm_list += arms.parse_arms_file(fv.arms_file)
    if arm_list and fv["objectives"].present:
      arm_list = [arms.Arm.preset(name) for name in fv.objectives] + arm_list
    options = cli.options_from_flags(
        plan.CompareOptions, objectives=tuple(fv.objectives), arms=tuple(arm_list),
        pair_tasks=tuple(fv.probes), tasks=tasks,
        paper_figures=tuple(paper_figures.PaperFigure.parse(s) for s in fv.paper_figure))
    options.validate()
  except (ValueError, FileNotFoundError) as e:
    raise app.UsageError(str(e)) from None
  try:
    compare.run_comparison(options)
  except stages.RunStopped as e:
    raise cli.Error(str(e)) from None
  except plan.PlanMismatch as e:
    raise cli.Error(f"{e}. The command: {command_with_output_dir(e.suggested_dir)}") from None


def command_with_output_dir(output_dir, argv=None):
  """This run's command line with --output_dir=output_dir (any other
  --output_dir dropped; the one added last wins over a --flagfile's)."""
  import shlex  # pylint: disable=g-import-not-at-top
  args, rest = [], list(sys.argv[1:] if argv is None else argv)
  while rest:
    arg = rest.pop(0)
    name = arg.lstrip("-").split("=", 1)[0]
    if arg.startswith("-") and name == "output_dir":
      if "=" not in arg and rest:
        rest.pop(0)  # --output_dir DIR
      continue
    args.append(arg)
  return " ".join(shlex.quote(a) for a in [sys.executable, "-m", "bert_tf.compare_objectives",
                                           *args, f"--output_dir={output_dir}"])


def run():
  logging.set_verbosity(logging.WARNING)
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
