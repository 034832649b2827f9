"""The task kinds by name: the one list the rest of the package reads.

Adding a kind is its module (a `task.TaskKind` subclass and its instance)
plus its line in KINDS below; docs/architecture.md ("Adding a task kind")
works one through.
"""

from bert_tf.downstream.classification import kind as classification_kind
from bert_tf.downstream.span import kind as span_kind
from bert_tf.downstream.tagging import kind as tagging_kind

KINDS = {
    classification_kind.KIND.name: classification_kind.KIND,
    span_kind.KIND.name: span_kind.KIND,
    tagging_kind.KIND.name: tagging_kind.KIND,
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
  return [k for k in KINDS.values() if not k.named_columns]

