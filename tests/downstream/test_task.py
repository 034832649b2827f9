"""bert_tf.downstream.task: the TaskKind interface, on the worked example of
docs/architecture.md ("Adding a task kind"): its module run as the page
shows it, registered as the page says, read, sized and fine-tuned through
a comparison's task, so the page cannot go stale."""

import json
import os
import random
import re
import sys
import types

import pytest

from bert_tf.downstream import registry
from bert_tf.downstream import task as task_lib
from bert_tf.experiments import plan

from helpers.compare_options import tiny_options
from helpers.finetune_task import NEGATIVE, POSITIVE, tiny_config, write_vocab

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "architecture.md")


def _example_code():
  with open(DOC, encoding="utf-8") as f:
    page = f.read()
  section = page[page.index("### Adding a task kind"):]
  (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
  return code


@pytest.fixture(name="choice")
def _choice(monkeypatch):
  """The page's module, as bert_tf.downstream.choice.kind, with its line in
  registry.KINDS."""
  name = "bert_tf.downstream.choice.kind"
  module = types.ModuleType(name)
  monkeypatch.setitem(sys.modules, name, module)
  exec(compile(_example_code(), "docs/architecture.md", "exec"), module.__dict__)  # pylint: disable=exec-used
  monkeypatch.setitem(registry.KINDS, module.KIND.name, module.KIND)
  return module


def _write_questions(directory, n, seed, bad_line=None):
  """Questions whose answer is the one positive word among negative ones."""
  rng = random.Random(seed)
  os.makedirs(directory, exist_ok=True)
  for split, count in (("train", n), ("dev", n // 2)):
    lines = []
    for _ in range(count):
      choices = rng.sample(NEGATIVE, 3)
      answer = rng.randrange(4)
      choices.insert(answer, rng.choice(POSITIVE))
      lines.append(json.dumps({"question": "which is good", "choices": choices,
                               "answer": answer}))
    if bad_line is not None and split == "dev":
      lines[bad_line] = json.dumps({"question": "q", "choices": ["a", "b"], "answer": 2})
    with open(os.path.join(directory, f"{split}.jsonl"), "w", encoding="utf-8") as f:
      f.write("\n".join(lines) + "\n")
  return directory


def test_the_worked_example_is_a_registered_task_kind(choice, tmp_path):
  assert isinstance(choice.KIND, task_lib.TaskKind)
  task = plan.Task.parse(f"quiz=choice:{_write_questions(tmp_path / 'quiz', 24, 1)}")
  assert task.kind == "choice" and task.kind_of is choice.KIND
  assert task.file("dev") == str(tmp_path / "quiz" / "dev.jsonl")
  task.check_files()
  assert task.kind_of.sizes(task) == ({"train": 24, "dev": 12}, [])
  assert task.kind_of.jobs(task) == [("quiz", False)]
  assert registry.metric_keys({"task_type": "choice"}) == ("accuracy",)
  rows = choice.pairs_tsv(choice.read_questions(task.file("train"))).splitlines()
  assert rows[0] == "question\tchoice\tlabel" and len(rows) == 1 + 24 * 4
  assert sum(r.endswith("\t1") for r in rows) == 24
  # compare_objectives takes the kind by its registry name.
  options = tiny_options(tmp_path, tasks=(task,))
  assert options.tasks[0].kind_of is choice.KIND


def test_a_bad_answer_is_named_with_its_file_and_line(choice, tmp_path):
  task = plan.Task.parse(f"quiz=choice:{_write_questions(tmp_path / 'q', 8, 2, bad_line=2)}")
  with pytest.raises(ValueError, match=r"dev\.jsonl:3: answer 2 is not a choice"):
    task.kind_of.sizes(task)


def test_an_unregistered_kind_is_a_column_spec_error(tmp_path):
  # Without its registry line, NAME=choice:DIR is not a kind's spec.
  with pytest.raises(ValueError, match=r"expected NAME=DIR,TEXT_A"):
    plan.Task.parse(f"quiz=choice:{tmp_path}")


def test_the_worked_example_fine_tunes_over_the_seeds(choice, tmp_path):
  task = plan.Task.parse(f"quiz=choice:{_write_questions(tmp_path / 'quiz', 24, 3)}")
  options = tiny_options(tmp_path, tasks=(task,), seeds=2, finetune_epochs=1.0)
  vocab = write_vocab(tmp_path / "vocab.txt")
  out = str(tmp_path / "out")
  os.makedirs(out)
  results = task.kind_of.finetune(options, task, out, vocab, tiny_config(), "")
  assert results["task_type"] == "choice" and results["num_seeds"] == 2
  assert (results["num_train_examples"], results["num_dev_examples"]) == (24, 12)
  for seed in (options.seed, options.seed + 1):
    assert results[f"seed_{seed}_accuracy"] in [i / 12 for i in range(13)]
  assert 0 <= results["accuracy"] <= 1 and "accuracy_sd" in results
  assert choice.KIND.report_lines(options)[0].startswith("<task>_accuracy")
