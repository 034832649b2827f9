"""bert_tf.downstream.registry: the task kinds by name, and the rule that
the rest of the package uses them only through the interface.

"Names a task kind in code" (measured from the source, no module imported):
a module under a bert_tf/ subfolder other than bert_tf/downstream/ that
  - has a string literal (not a docstring; comments are not code) equal to
    a kind's registry name or one of the `task_type`s its results carry
    ("tsv", "squad", "conll", "classification", "regression", "tagging"),
    or to a kind's folder name ("span", "features"), or
  - imports a module of a kind's folder (bert_tf.downstream.classification,
    .span, .tagging, .features and below).
Importing bert_tf.downstream.registry, .task or the shared fine-tuning
module is using the interface, not naming a kind.
"""

import ast
import pathlib
import sys

import pytest

from bert_tf.downstream import registry
from bert_tf.downstream import task as task_lib
from bert_tf.experiments import plan

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "bert_tf"
KIND_FOLDERS = ("classification", "span", "tagging", "features")
# At most this many modules outside downstream/ may name a task kind (27
# before the package existed). The two below use transformers' own
# vocabulary: a config.json's problem_type "regression".
MAX_NAMING_MODULES = 3
ALLOWED = {"models/hf_checkpoint.py", "models/hf_config.py"}


def _kind_names():
  names = set(KIND_FOLDERS)
  for kind in registry.KINDS.values():
    names.add(kind.name)
    names.update(kind.result_types)
  return names


def _docstring_nodes(tree):
  out = set()
  for node in ast.walk(tree):
    if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
      first = node.body[0] if node.body else None
      if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
          and isinstance(first.value.value, str)):
        out.add(id(first.value))
  return out


def naming_modules():
  """{module path under bert_tf/: sorted reasons} of the modules outside
  bert_tf/downstream/ (in subfolders) that name a task kind in code."""
  names = _kind_names()
  packages = tuple(f"bert_tf.downstream.{folder}" for folder in KIND_FOLDERS)
  found = {}
  for path in sorted(PACKAGE.rglob("*.py")):
    rel = path.relative_to(PACKAGE)
    if len(rel.parts) < 2 or rel.parts[0] == "downstream":
      continue
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    docstrings = _docstring_nodes(tree)
    reasons = set()
    for node in ast.walk(tree):
      if (isinstance(node, ast.Constant) and isinstance(node.value, str)
          and id(node) not in docstrings and node.value in names):
        reasons.add(repr(node.value))
      elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        modules = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        reasons.update(m for m in modules if m.startswith(packages))
      elif isinstance(node, ast.Import):
        reasons.update(a.name for a in node.names if a.name.startswith(packages))
    if reasons:
      found[rel.as_posix()] = sorted(reasons)
  return found


def test_task_kinds_are_named_only_inside_downstream():
  found = naming_modules()
  assert len(found) <= MAX_NAMING_MODULES, found
  assert set(found) <= ALLOWED, {k: v for k, v in found.items() if k not in ALLOWED}


def test_the_measure_sees_a_kind_named_in_code(tmp_path, monkeypatch):
  # The rule cannot pass by seeing nothing: a module that branches on a
  # kind's name, or imports a kind's module, is found; a docstring is not.
  folder = tmp_path / "bert_tf" / "experiments"
  folder.mkdir(parents=True)
  (folder / "branches.py").write_text('"""squad"""\n\ndef f(task):\n'
                                      '  return task.kind == "squad"\n')
  (folder / "imports.py").write_text("from bert_tf.downstream.tagging import conll\n")
  (folder / "clean.py").write_text('"""conll and squad in words only."""\n'
                                   "from bert_tf.downstream import registry\n")
  monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "bert_tf")
  assert naming_modules() == {"experiments/branches.py": ["'squad'"],
                              "experiments/imports.py": ["bert_tf.downstream.tagging",
                                                          "bert_tf.downstream.tagging.conll"]}


def test_every_kind_is_a_task_kind_under_its_name():
  assert set(registry.KINDS) == {"tsv", "squad", "conll", "features"}
  for name, kind in registry.KINDS.items():
    assert isinstance(kind, task_lib.TaskKind) and kind.name == name
    assert registry.get(name) is kind
    if kind.compared:
      assert "{}" in kind.file_pattern and kind.metric_keys
  assert registry.DEFAULT == "tsv" and registry.get(registry.DEFAULT).named_columns
  # features has no fine-tuning: no --task spec names it.
  assert [k.name for k in registry.named_kinds()] == ["squad", "conll"]
  with pytest.raises(ValueError, match=r"task kind 'mcq' is not one of tsv, squad, conll"):
    registry.get("mcq")


def test_each_tool_finds_its_kind():
  # The tools name no kind: finetune picks one by --task_type, the others
  # have one each; the --task_type flag's values are the kinds' in order.
  assert registry.tool_task_types("finetune") == ["auto", "classification", "regression",
                                                   "tagging"]
  assert registry.for_tool("finetune", "auto").name == "tsv"
  assert registry.for_tool("finetune", "regression").name == "tsv"
  assert registry.for_tool("finetune", "tagging").name == "conll"
  assert registry.for_tool("run_squad").name == "squad"
  assert registry.for_tool("extract_features").name == "features"
  with pytest.raises(ValueError, match=r"task_type='mcq': choose one of auto, "):
    registry.for_tool("finetune", "mcq")
  heads = {k.name: k.hf_head for k in registry.KINDS.values()}
  assert heads == {"tsv": "ForSequenceClassification", "conll": "ForTokenClassification",
                   "squad": "ForQuestionAnswering", "features": ""}


def test_a_tools_kind_makes_its_config():
  tagger = registry.for_tool("finetune", "tagging").config_for(
      {"train_file": "t.txt", "task_type": "tagging"}, frozen_encoder=True, window_stride=5)
  assert (tagger.frozen_encoder, tagger.window_stride, tagger.train_file) == (True, 5, "t.txt")
  with pytest.raises(ValueError, match=r"task_type=auto: frozen_encoder and window_stride "
                     r"are for task_type=tagging"):
    registry.for_tool("finetune", "auto").config_for({"task_type": "auto"}, window_stride=5)
  features = registry.for_tool("extract_features")
  config = features.config_for({"input_file": "in.txt", "layers": "-1"})
  assert (config.input_file, config.layers, config.max_seq_length) == ("in.txt", "-1", 128)
  assert features.summary_lines(config, {"init": "read x", "num_examples": 3}) == [
      "read x", "wrote 3 examples to "]
  # It exports nothing: an --export_dir is refused, naming the kind.
  with pytest.raises(ValueError, match=r"task kind features: no --export_dir or --hf_out"):
    features.check_outputs(config, None, "/tmp/out", "")


def test_a_task_reads_its_kinds_files():
  squad = plan.Task.parse("qa=squad:/data/qa")
  conll = plan.Task.parse("ner=conll:/data/ner")
  tsv = plan.Task.parse("sst=/data/sst,sentence,label")
  assert (squad.file("train"), conll.file("dev"), tsv.file("dev")) == (
      "/data/qa/train.json", "/data/ner/dev.txt", "/data/sst/dev.tsv")
  assert [name for name, _ in conll.kind_of.jobs(conll)] == ["ner", "frozen_ner"]
  assert squad.kind_of.jobs(squad) == [("qa", False)]
  # A TSV task's results stay filed under the key they always had (no kind).
  assert "kind" not in tsv.kind_of.task_key(tsv) and squad.kind_of.task_key(squad)["kind"]
  with pytest.raises(ValueError, match=r"NAME=squad:DIR or NAME=conll:DIR"):
    plan.Task.parse("bad=nothing")


def test_a_results_metrics_come_from_its_kind():
  assert registry.metric_keys({"task_type": "squad"}) == ("f1", "exact_match")
  assert registry.metric_keys({"task_type": "tagging"}) == ("entity_f1",)
  assert registry.metric_keys({"task_type": "regression"}) == ("pearson",)
  assert registry.metric_keys({"task_type": "classification"}) == ("accuracy",)
  assert registry.metric_keys({}) == ("accuracy",)
