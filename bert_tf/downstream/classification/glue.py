"""The GLUE tasks' file layouts, label lists and official metrics.

`PRESETS[name]` says, for a GLUE task directory as the GLUE download writes
it, which files hold each split, whether they start with a header row,
which 0-based columns hold the texts and the label, the fixed label list
and the metrics the GLUE leaderboard reports. `bert_tf.finetune
--task_name=NAME --data_dir=DIR` fills its column flags from here.

Sources: CoLA, MRPC and MNLI follow the original google-research/bert
run_classifier.py processors (CoLA: train and dev without a header, label
in column 1, sentence in column 3, test with a header and the sentence in
column 1; MRPC: #1 String and #2 String in columns 3 and 4, the label
("Quality") in column 0; MNLI: sentence1 and sentence2 in columns 8 and 9,
the label the last column, dev_matched.tsv as its dev set). The original
has no SST-2, QQP, QNLI, RTE, WNLI or STS-B processor: those follow the
files' own headers in the GLUE download (the layout tensorflow/models'
classifier_data_lib reads): SST-2 `sentence label`; QQP `id qid1 qid2
question1 question2 is_duplicate`; QNLI `index question sentence label`;
RTE and WNLI `index sentence1 sentence2 label`; STS-B sentence1 and
sentence2 in columns 7 and 8, the score in column 9. MNLI's label is read
by its header name `gold_label`, the last column of both train.tsv (12
columns) and the dev files (16).

MNLI is evaluated on dev_matched.tsv (its metrics unprefixed) and on
dev_mismatched.tsv (prefixed `mismatched_`), reported separately as GLUE
does. Labels are the original processors' lists (every list is sorted, so
the ids equal those of `classification.label_space`); F1 is of label "1"
(MRPC, QQP: the paraphrase / duplicate class).
"""

import dataclasses
import os

from bert_tf.io import file_io
from bert_tf.downstream.classification import tsv as classification

# The FinetuneConfig fields a preset sets; an explicit value that differs is an error.
PRESET_FIELDS = ("text_a_column", "text_b_column", "label_column", "task_type")
# What `finetune_fields` reads of the flags given explicitly.
GIVEN_FIELDS = PRESET_FIELDS + ("train_file", "dev_file", "test_file")


@dataclasses.dataclass(frozen=True)
class Layout:
  """One file's layout: has_header, and 0-based columns (text_b None: single
  sentence; label None: an unlabeled test file). label may be a header name."""
  has_header: bool
  text_a: str
  text_b: str | None
  label: str | None


@dataclasses.dataclass(frozen=True)
class Preset:
  """A GLUE task: its files (dev: (name, file) pairs, the first the dev set
  whose metrics are unprefixed), layouts, labels (empty: regression) and the
  official metric keys (as classification/finetune_tsv.compute_metrics names them)."""
  name: str
  train_file: str
  dev_files: tuple
  test_file: str
  layout: Layout
  test_layout: Layout
  labels: tuple
  metrics: tuple

  @property
  def regression(self):
    return not self.labels

  @property
  def task_type(self):
    return "regression" if self.regression else "classification"

  def paths(self, data_dir):
    """(train path, ((dev name, path), ...), test path) under data_dir."""
    return (os.path.join(data_dir, self.train_file),
            tuple((name, os.path.join(data_dir, f)) for name, f in self.dev_files),
            os.path.join(data_dir, self.test_file))


def _pair(a, b, label, has_header=True):
  return Layout(has_header, a, b, label)


_DEV = (("dev", "dev.tsv"),)
_TWO_CLASSES = ("0", "1")
_ENTAILMENT = ("entailment", "not_entailment")

PRESETS = {p.name: p for p in (
    Preset("CoLA", "train.tsv", _DEV, "test.tsv", Layout(False, "3", None, "1"),
           Layout(True, "1", None, None), _TWO_CLASSES, ("mcc",)),
    Preset("SST-2", "train.tsv", _DEV, "test.tsv", Layout(True, "0", None, "1"),
           Layout(True, "1", None, None), _TWO_CLASSES, ("accuracy",)),
    Preset("MRPC", "train.tsv", _DEV, "test.tsv", _pair("3", "4", "0"),
           _pair("3", "4", None), _TWO_CLASSES, ("f1", "accuracy")),
    Preset("QQP", "train.tsv", _DEV, "test.tsv", _pair("3", "4", "5"),
           _pair("1", "2", None), _TWO_CLASSES, ("f1", "accuracy")),
    Preset("STS-B", "train.tsv", _DEV, "test.tsv", _pair("7", "8", "9"),
           _pair("7", "8", None), (), ("pearson", "spearman")),
    Preset("MNLI", "train.tsv",
           (("matched", "dev_matched.tsv"), ("mismatched", "dev_mismatched.tsv")),
           "test_matched.tsv", _pair("8", "9", "gold_label"), _pair("8", "9", None),
           ("contradiction", "entailment", "neutral"), ("accuracy", "mismatched_accuracy")),
    Preset("QNLI", "train.tsv", _DEV, "test.tsv", _pair("1", "2", "3"),
           _pair("1", "2", None), _ENTAILMENT, ("accuracy",)),
    Preset("RTE", "train.tsv", _DEV, "test.tsv", _pair("1", "2", "3"),
           _pair("1", "2", None), _ENTAILMENT, ("accuracy",)),
    Preset("WNLI", "train.tsv", _DEV, "test.tsv", _pair("1", "2", "3"),
           _pair("1", "2", None), _TWO_CLASSES, ("accuracy",)),
)}


def preset(name):
  """The Preset of `name`, case-insensitive ("mnli", "sts-b", "sst2").

  Raises:
    ValueError: an unknown name, listing the known ones.
  """
  key = name.lower().replace("-", "")
  for p in PRESETS.values():
    if p.name.lower().replace("-", "") == key:
      return p
  raise ValueError(f"task_name={name!r} is not a GLUE task: choose one of "
                   f"{', '.join(PRESETS)}")


def read_split(task, path, test=False):
  """The Examples of one file of `task` (a Preset): its layout, or the test
  layout (labels None) when test.

  Raises:
    FileNotFoundError, ValueError: as classification.read_tsv, naming the file.
  """
  layout = task.test_layout if test else task.layout
  return classification.read_tsv(path, layout.text_a, layout.text_b, layout.label,
                                 require_labels=not test, has_header=layout.has_header)


def finetune_fields(task_name, data_dir, given, need_train=True, need_dev=True):
  """The FinetuneConfig fields of GLUE task `task_name` in `data_dir` ({}
  without a task_name).

  Args:
    task_name, data_dir: the finetune tool's --task_name and --data_dir.
    given: {field: value} of the flags given explicitly: a PRESET_FIELDS
      value other than the task's ("auto" for task_type aside) is an error;
      train_file, dev_file, test_file replace the directory's (an explicit
      dev_file drops MNLI's mismatched set).
    need_train, need_dev: whether the run reads the train file (do_train)
      and the dev files (do_eval): those must exist.

  Returns:
    dict: the columns, task_type, task_name, train_file, dev_file,
    extra_dev_files, and test_file when the directory holds the test file.

  Raises:
    ValueError: one line naming the flag or the missing file.
  """
  if not task_name:
    if data_dir:
      raise ValueError("--data_dir needs --task_name (the GLUE task it holds)")
    return {}
  try:
    task = preset(task_name)
  except ValueError as e:
    raise ValueError(f"--{e}") from None
  if not data_dir:
    raise ValueError(f"--task_name={task.name} needs --data_dir (the task's directory)")
  values = {"text_a_column": task.layout.text_a, "text_b_column": task.layout.text_b or "",
            "label_column": task.layout.label, "task_type": task.task_type}
  for name in PRESET_FIELDS:
    if name in given and given[name] not in (values[name], "auto"):
      raise ValueError(f"--{name}={given[name]} contradicts --task_name={task.name} "
                       f"(its {name} is {values[name]!r})")
  train, devs, test = task.paths(data_dir)
  values.update(task_name=task.name, train_file=given.get("train_file") or train,
                dev_file=given.get("dev_file") or devs[0][1],
                extra_dev_files=() if given.get("dev_file") else devs[1:])
  if given.get("test_file") or file_io.exists(test):
    values["test_file"] = given.get("test_file") or test
  needed = ([values["train_file"]] if need_train else []) + (
      [values["dev_file"]] + [p for _, p in values["extra_dev_files"]] if need_dev else [])
  for path in needed:
    if not file_io.exists(path):
      raise ValueError(f"{path}: no such file (--task_name={task.name} --data_dir={data_dir})")
  return values
