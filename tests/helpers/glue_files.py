"""Tiny task directories in each GLUE task's own file layout (as the GLUE
download writes them): headers, column order, CoLA's header-less train and
dev files, MNLI's two dev files with their extra label columns."""

import random

from helpers.finetune_task import FILLER, NEGATIVE, POSITIVE

# Per task: (train/dev header or None, test header, row(text_a, text_b, label) -> fields,
# test row(index, text_a, text_b) -> fields, labels (None: a 0-5 score)).
LAYOUTS = {
    "CoLA": (None, "index\tsentence",
             lambda a, b, y: ["gj04", y, "", a], lambda i, a, b: [str(i), a], ("0", "1")),
    "SST-2": ("sentence\tlabel", "index\tsentence",
              lambda a, b, y: [a, y], lambda i, a, b: [str(i), a], ("0", "1")),
    "MRPC": ("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String",
             "index\t#1 ID\t#2 ID\t#1 String\t#2 String",
             lambda a, b, y: [y, "101", "102", a, b],
             lambda i, a, b: [str(i), "101", "102", a, b], ("0", "1")),
    "QQP": ("id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate", "id\tquestion1\tquestion2",
            lambda a, b, y: ["7", "1", "2", a, b, y], lambda i, a, b: [str(i), a, b],
            ("0", "1")),
    "STS-B": ("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t"
              "sentence2\tscore",
              "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2",
              lambda a, b, y: ["0", "main-news", "f", "2012", "1", "none", "none", a, b, y],
              lambda i, a, b: [str(i), "main-news", "f", "2012", "1", "none", "none", a, b],
              None),
    "MNLI": ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\t"
             "sentence2_binary_parse\tsentence1_parse\tsentence2_parse\tsentence1\t"
             "sentence2\tlabel1\tgold_label",
             "index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\t"
             "sentence2_binary_parse\tsentence1_parse\tsentence2_parse\tsentence1\tsentence2",
             lambda a, b, y: ["0", "1", "1n", "gov", "( x )", "( y )", "(S x)", "(S y)", a, b,
                              y, y],
             lambda i, a, b: [str(i), "1", "1n", "gov", "( x )", "( y )", "(S x)", "(S y)",
                              a, b],
             ("contradiction", "entailment", "neutral")),
    "QNLI": ("index\tquestion\tsentence\tlabel", "index\tquestion\tsentence",
             lambda a, b, y: ["0", a, b, y], lambda i, a, b: [str(i), a, b],
             ("entailment", "not_entailment")),
    "RTE": ("index\tsentence1\tsentence2\tlabel", "index\tsentence1\tsentence2",
            lambda a, b, y: ["0", a, b, y], lambda i, a, b: [str(i), a, b],
            ("entailment", "not_entailment")),
    "WNLI": ("index\tsentence1\tsentence2\tlabel", "index\tsentence1\tsentence2",
             lambda a, b, y: ["0", a, b, y], lambda i, a, b: [str(i), a, b], ("0", "1")),
}


def _write(path, header, rows):
  lines = ([header] if header else []) + ["\t".join(r) for r in rows]
  path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def examples(n, seed, labels):
  """n (text_a, text_b, label) of a separable task over helpers.finetune_task's
  words: the label follows the positive/negative word in text_a."""
  rng = random.Random(seed)
  out = []
  for _ in range(n):
    k = rng.randrange(len(labels) if labels else 2)
    word = rng.choice(POSITIVE if k % 2 else NEGATIVE)
    a = " ".join(rng.sample(FILLER, 3) + [word])
    b = " ".join(rng.sample(FILLER, 2))
    out.append((a, b, labels[k] if labels else f"{k * 4 + rng.random():.3f}"))
  return out


def write_task_dir(directory, name, n_train=64, n_dev=24, n_test=5):
  """Writes `name`'s train, dev (MNLI: dev_matched, dev_mismatched) and test
  files into directory (created); returns {file name: [(a, b, label)]}."""
  header, test_header, row, test_row, labels = LAYOUTS[name]
  directory.mkdir(parents=True, exist_ok=True)
  dev_names = ["dev_matched.tsv", "dev_mismatched.tsv"] if name == "MNLI" else ["dev.tsv"]
  written = {}
  for i, (file, n) in enumerate([("train.tsv", n_train)] + [(d, n_dev) for d in dev_names]):
    rows = examples(n, i, labels)
    dev_header = header
    fields = [row(*r) for r in rows]
    if name == "MNLI" and file != "train.tsv":  # dev: label1..label5, then gold_label
      dev_header = header.replace("label1\tgold_label",
                                  "label1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label")
      fields = [f[:-1] + [f[-1]] * 4 + [f[-1]] for f in fields]
    _write(directory / file, dev_header, fields)
    written[file] = rows
  test_file = "test_matched.tsv" if name == "MNLI" else "test.tsv"
  rows = examples(n_test, 9, labels)
  _write(directory / test_file, test_header, [test_row(i, a, b) for i, (a, b, _) in
                                              enumerate(rows)])
  written[test_file] = rows
  return written
