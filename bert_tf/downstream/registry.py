"""The task kinds by name: the one list the rest of the package reads.

Adding a kind is its module (a `task.TaskKind` subclass and its instance)
plus its line in KINDS below; docs/architecture.md ("Adding a task kind")
works one through.
"""

from bert_tf.downstream.classification import kind as classification_kind
from bert_tf.downstream.features import kind as features_kind
from bert_tf.downstream.span import kind as span_kind
from bert_tf.downstream.tagging import kind as tagging_kind

KINDS = {
    classification_kind.KIND.name: classification_kind.KIND,
    span_kind.KIND.name: span_kind.KIND,
    tagging_kind.KIND.name: tagging_kind.KIND,
    features_kind.KIND.name: features_kind.KIND,
}
# The kind of a task whose spec names columns but no kind.
DEFAULT = classification_kind.KIND.name


def get(name):
  """The TaskKind registered as `name`; ValueError naming the kinds."""
  if name not in KINDS:
    raise ValueError(f"task kind {name!r} is not one of {', '.join(KINDS)}")
  return KINDS[name]


def of_result(result):
  """The kind whose fine-tuning gave `result` (by its task_type); the
  default kind for a result without one."""
  for kind in KINDS.values():
    if result.get("task_type") in kind.result_types:
      return kind
  return KINDS[DEFAULT]


def metric_keys(result):
  """The metric names (without the task's) of a fine-tuning result."""
  return of_result(result).metrics_of(result)


def named_kinds():
  """The kinds a --task spec names (NAME=<kind>:DIR), as opposed to the
  column-spec kind."""
  return [k for k in KINDS.values() if k.compared and not k.named_columns]


def tool_task_types(tool):
  """The --task_type values of `tool` (a top-level module's name), its
  kinds' in registry order."""
  return [t for k in KINDS.values() if k.tool == tool for t in k.task_types]


def for_tool(tool, task_type=None):
  """The kind `tool` runs: the one whose task_types hold `task_type` (for a
  tool with --task_type), else the tool's only kind; ValueError naming the
  task type."""
  kinds = [k for k in KINDS.values() if k.tool == tool]
  if task_type is not None:
    kinds = [k for k in kinds if task_type in k.task_types]
  if len(kinds) != 1:
    raise ValueError(f"task_type={task_type!r}: choose one of "
                     f"{', '.join(tool_task_types(tool))}" if task_type is not None
                     else f"{tool}: {len(kinds)} task kinds run it, not one")
  return kinds[0]

