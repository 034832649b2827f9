"""The task interface: what a downstream task kind gives the code around it.

A TASK KIND (sentence classification and regression on TSVs, SQuAD span
answers, CoNLL token tagging, ...) is one folder of bert_tf/downstream/
that owns everything about it: reading its files into features, its head,
loss and metric, decoding predictions, its SavedModel signature, its
transformers head class, and the `TaskKind` below, which is how the rest of
the package (compare_objectives' plan, stages, preflight and report) uses
it without naming it. `registry.KINDS` lists the kinds by name; adding one
is its module plus one line there (docs/architecture.md, "Adding a task
kind", works an example through).

The tools use a kind the same way: `finetune` (classification and tagging,
picked by --task_type), `run_squad` (span answers) and `extract_features`
(features) find theirs with `registry.for_tool`, then call its `config_for`,
`check_outputs`, `run`, `summary_lines`, `export_saved_model` and
`write_hf`: the kind owns its config, its SavedModel signature and its
transformers head class (`hf_head`); a kind a tool does not run leaves them
unimplemented.

A comparison's task is an `experiments.plan.Task`: its name, its folder,
its kind's name and (for kinds whose spec names them) its columns. The
kind reads the folder's `file_pattern` files, train and dev.
"""

import dataclasses
import os


class TaskKind:
  """One kind of downstream task, as a comparison fine-tunes and reports it.

  Class attributes a kind sets:
    name: its registry name, as `--task NAME=<name>:DIR` spells it.
    file_pattern: its folder's files, "{}" standing for the split ("train",
      "dev"); e.g. "{}.json".
    result_types: the `task_type` values its fine-tuning results carry.
    metric_keys: the metrics those results report, in table order.
    named_columns: its --task spec names columns (NAME=DIR,TEXT_A[,TEXT_B],
      LABEL) instead of NAME=<name>:DIR.
    frozen_probe: the comparison fits a linear probe on the frozen
      encoder's features of its rows (`frozen_data` reads them).
    size_unit: what its `sizes` count ("rows", "questions", "sentences").
    compared: compare_objectives can fine-tune it (a --task spec may name
      it); False for a kind only a tool runs (features).

  What a tool reads of it:
    tool: the tool (top-level module) that runs it: "finetune", "run_squad",
      "extract_features"; "" for a kind no tool runs.
    task_types: the values of that tool's --task_type that pick it (in the
      flag's order); () for a tool without the flag.
    hf_head: the transformers head task (models.hf_config's
      SEQUENCE_CLASSIFICATION, TOKEN_CLASSIFICATION, QUESTION_ANSWERING) its
      --hf_out writes; "" for none.
  """
  name = ""
  file_pattern = ""
  result_types = ()
  metric_keys = ("accuracy",)
  named_columns = False
  frozen_probe = False
  size_unit = "rows"
  compared = True
  tool = ""
  task_types = ()
  hf_head = ""

  def file(self, task, split_name):
    """The path of `task`'s `split_name` file in its folder."""
    return os.path.join(task.directory, self.file_pattern.format(split_name))

  def files_help(self):
    """Its folder's files, for messages: "train.json and dev.json"."""
    return f"{self.file_pattern.format('train')} and {self.file_pattern.format('dev')}"

  def sizes(self, task):
    """({"train": n, "dev": n} in size_units, the dev labels or []) of
    `task`'s files; ValueError / FileNotFoundError naming the file."""
    raise NotImplementedError(f"task kind {self.name}: sizes")

  def check(self, task, options):
    """Raises ValueError (naming --task and the flags) when compare's
    `options` cannot run `task`; nothing by default."""

  def settings(self, options):
    """What its fine-tuning depends on beyond compare's fine-tuning options
    (part of its results' key); {} by default."""
    del options
    return {}

  def jobs(self, task):
    """The fine-tunings of `task` per pretrained model: [(metric prefix,
    frozen encoder)]; one, fine-tuned, by default."""
    return [(task.name, False)]

  def finetune(self, options, task, output_dir, vocab_file, bert_config, init_checkpoint,
               frozen=False):
    """Fine-tunes `task` from `init_checkpoint` over options.seeds seeds in
    `output_dir`; returns the results dict (its metric_keys' means, `_sd`
    and `seed_<s>_` values, num_seeds, num_train_examples,
    num_dev_examples, task_type one of result_types)."""
    raise NotImplementedError(f"task kind {self.name}: finetune")

  def frozen_data(self, options, task, vocab_file, output_dir):
    """What the frozen linear probe reads of `task`, when frozen_probe: an
    object with train, train_labels, dev, dev_labels (features and labels)
    and space (its labels)."""
    raise NotImplementedError(f"task kind {self.name}: frozen_data")

  def report_lines(self, options):
    """The lines results.md's notes give its metrics (once per kind)."""
    del options
    return []

  def task_key(self, task):
    """A task's part of its results' key: its fields."""
    return dataclasses.asdict(task)

  def metrics_of(self, result):
    """The metric names (without the task's) a fine-tuning result reports."""
    del result
    return self.metric_keys

  # What a tool calls (see the module doc); a kind implements those of the
  # tool that runs it.

  def default_config(self):
    """Its tool's config with every default (the flags' defaults)."""
    raise NotImplementedError(f"task kind {self.name}: default_config")

  def preset_fields(self, preset, data_dir, given, need_train=True, need_dev=True):
    """The config fields a named task `preset` (the finetune tool's
    --task_name: a GLUE task) in data_dir fills, checked against the
    fields `given` explicitly; {} without a preset. ValueError naming it."""
    del data_dir, given, need_train, need_dev
    if preset:
      raise ValueError(f"task kind {self.name}: no preset {preset!r}")
    return {}

  def config_for(self, values, **options):
    """Its tool's config of `values` (the config's fields, from the tool's
    flags) and `options` (the tool's flags that only some kinds take);
    ValueError naming the field."""
    raise NotImplementedError(f"task kind {self.name}: config_for")

  def check_outputs(self, config, bert_config, export_dir, hf_out, overwrite=False):
    """Refuses, before any training, an export_dir (--export_dir) or hf_out
    (--hf_out) that the run could not write after it (FileExistsError,
    ValueError: one line naming the flag). Nothing when both are empty."""
    if export_dir or hf_out:
      raise ValueError(f"task kind {self.name}: no --export_dir or --hf_out")

  def run(self, config, bert_config):
    """Runs `config` (trains and evaluates, or evaluates a model as it is)
    and returns its results dict."""
    raise NotImplementedError(f"task kind {self.name}: run")

  def summary_lines(self, config, results):
    """What its tool prints of `run`'s results."""
    raise NotImplementedError(f"task kind {self.name}: summary_lines")

  def export_saved_model(self, config, bert_config, results, export_dir, overwrite=False):
    """Writes the model `run` saved as a SavedModel with its signatures in
    export_dir; returns the line saying what was written."""
    raise NotImplementedError(f"task kind {self.name}: export_saved_model")

  def write_hf(self, config, bert_config, results, out_dir, overwrite=False):
    """Writes the model `run` saved as a transformers folder of its hf_head
    in out_dir, prints where; nothing for an empty out_dir. Returns the
    architecture or None."""
    if out_dir:
      raise NotImplementedError(f"task kind {self.name}: write_hf")
    return None
