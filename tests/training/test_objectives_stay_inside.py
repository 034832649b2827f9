"""No module outside training/objectives/ and models/ branches on an
objective's name: what differs by objective is a member the objective
declares (docs/architecture.md, "What an objective declares"). Read from the
source (AST): a comparison with an objective's or family's name (a literal,
or a name constant of training/objective_names such as `names.ELECTRA`), or
a table keyed by one, in a module outside those packages fails."""

import ast
import pathlib

from bert_tf.training import objective_names

PACKAGE = pathlib.Path(__file__).resolve().parent.parent.parent / "bert_tf"
INSIDE = ("training/objectives/", "models/", "training/objective_names.py")
NAMES = set(objective_names.FAMILIES + objective_names.OBJECTIVE_NAMES)
CONSTANTS = {k for k, v in vars(objective_names).items()
             if k.isupper() and (v in NAMES if isinstance(v, str) else False)}
# Not objective names, so compared through constants of their own (which
# this test does not count): --lr_schedule's values "bert" and "electra"
# name schedule shapes (the papers'; any objective trains with either):
# optimization.WARMUP_THEN_DECAY and DECAY_TIMES_WARMUP; and transformers'
# model family of a network (config.json's model_type, which weight names it
# has: tf1_checkpoint.model_type): hf_config.BERT_MODEL_TYPE,
# ALBERT_MODEL_TYPE, ELECTRA_MODEL_TYPE. A network's generator is its own
# member (`generator_config`), the SavedModel's heads the objective's
# (`has_discriminator`, `has_pooler`). A literal "electra" or "bert" is
# still counted.
# Known exceptions, as ceilings of findings so they cannot grow: none.
PENDING = {}


def _is_name(node):
  """An objective's name as a literal, or a name constant (`names.ELECTRA`)."""
  return ((isinstance(node, ast.Constant) and node.value in NAMES)
          or (isinstance(node, ast.Attribute) and node.attr in CONSTANTS))


def _names_in(node):
  elements = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
  return [e for e in elements if _is_name(e)]


def findings(path):
  """Comparisons with an objective's name (==, !=, in) and tables keyed by
  one: each a branch on the objective."""
  tree = ast.parse(path.read_text(encoding="utf-8"))
  found = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Compare):
      named = [n for operand in [node.left, *node.comparators] for n in _names_in(operand)]
    elif isinstance(node, ast.Dict):
      named = [k for k in node.keys if k is not None and _is_name(k)]
    else:
      continue
    found += [f"{n.lineno}: {ast.unparse(n)}" for n in named]
  return found


def _outside():
  for path in sorted(PACKAGE.rglob("*.py")):
    rel = path.relative_to(PACKAGE).as_posix()
    if not rel.startswith(INSIDE):
      yield rel, path


def test_the_names_are_known():
  assert {"electra", "distill", "mlm_nsp", "electra_15"} <= NAMES
  assert {"ELECTRA", "DISTILL", "ELECTRA_15"} <= CONSTANTS


def test_no_module_outside_the_objectives_names_one():
  leaks = {rel: found for rel, path in _outside() if (found := findings(path))
           and len(found) > PENDING.get(rel, 0)}
  assert not leaks, ("modules naming an objective (declare it on the objective "
                     f"instead): {leaks}")


def test_the_export_members_agree_with_the_network():
  # What the export serves is declared by the objective; the network each
  # objective builds has the heads it declares.
  from bert_tf.training import objectives  # pylint: disable=g-import-not-at-top
  from helpers.pretraining import tiny_bert_config  # pylint: disable=g-import-not-at-top
  seen = set()
  for objective in objectives.OBJECTIVES.values():
    export = objective.export_objective
    if export.name in seen:
      continue
    seen.add(export.name)
    network = export.export_model(export.build_model(tiny_bert_config()))
    assert export.has_pooler == getattr(network, "has_pooler", True), export.name
    assert export.has_discriminator == (
        getattr(network, "discriminator_output", None) is not None), export.name
  assert {"mlm_nsp", "electra", "replace_mlm"} <= seen
