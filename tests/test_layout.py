"""The package's shape, read from the source (no module is imported): short
functions, data flowing one way (data -> models -> training -> serving ->
downstream -> experiments -> the top-level tools) without import cycles,
absl flags only in the tools, and tool modules that map flags to library calls."""

import ast
import io
import pathlib
import tokenize

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "bert_tf"
MAX_FUNCTION_LINES = 120
# Lower layers may not import higher ones; the top-level modules (tools, cli,
# quickstart_stages) may import anything.
LAYERS = {"data": 0, "models": 1, "training": 2, "serving": 3, "downstream": 4,
          "experiments": 5}
TOP_LEVEL = len(LAYERS)
# Package-wide utilities below every layer: any module may import them, and
# they import nothing of ours (test_leaf_modules).
FOUNDATION = ("bert_tf.io.file_io", "bert_tf.util.statistics", "bert_tf.util.bootstrap")
# Lines of code of a tool module, its docstrings, comments and flag
# definitions (`define_flags`) not counted: what is left is the mapping of
# flags to library calls, and it should stay that.
TOOL_CODE_LINES = 60
# Known exceptions, as ceilings (measured when the budget was set), so they
# cannot grow; what should move out of them is listed beside each.
TOOL_EXCEPTIONS = {}
# Modules side by side in one folder (its .py files but __init__.py): past
# this a folder is split by concept, as data/ is by stage.
MAX_FOLDER_MODULES = 15
# Known exceptions, as ceilings so they cannot grow (none now);
# test_folder_exceptions_are_still_needed says when one can go.
FOLDER_EXCEPTIONS = {}


def _modules():
  """{dotted module name: (path, ast tree)} of every bert_tf module."""
  out = {}
  for path in sorted(PACKAGE.rglob("*.py")):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    if parts[-1] == "__init__":
      parts = parts[:-1]
    out[".".join(parts)] = (path, ast.parse(path.read_text(encoding="utf-8"), str(path)))
  return out


MODULES = _modules()


def _imports(tree):
  """The bert_tf modules a tree imports, at the top or inside functions."""
  deps = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
      # `from bert_tf.data.pretraining import writer` imports bert_tf.data.pretraining.writer.
      names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES
               else node.module for a in node.names]
    else:
      continue
    deps.update(n for n in names if n.split(".")[0] == "bert_tf")
  return deps


GRAPH = {name: _imports(tree) for name, (_, tree) in MODULES.items()}


def _layer(module):
  if module in FOUNDATION:
    return -1
  parts = module.split(".")
  return LAYERS.get(parts[1], TOP_LEVEL) if len(parts) > 2 else TOP_LEVEL


def test_the_source_is_found():
  assert {"bert_tf.io.file_io", "bert_tf.data.pretraining.writer", "bert_tf.models.config",
          "bert_tf.training.loop", "bert_tf.serving.export", "bert_tf.cli"} <= set(MODULES)
  assert "bert_tf.io.file_io" in GRAPH["bert_tf.data.pretraining.writer"]
  assert "bert_tf.data.pretraining.passes" in GRAPH["bert_tf.data.pretraining.writer"]


def test_no_function_longer_than_the_limit():
  too_long = []
  for name, (_, tree) in MODULES.items():
    for node in ast.walk(tree):
      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        lines = node.end_lineno - node.lineno + 1
        if lines > MAX_FUNCTION_LINES:
          too_long.append(f"{name}.{node.name}:{node.lineno} ({lines} lines)")
  assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines: {too_long}"


def test_data_stages_are_the_data_layer():
  stages = {name.split(".")[2] for name in MODULES
            if name.startswith("bert_tf.data.") and name.count(".") == 3}
  assert {"text", "tokenizers", "pretraining", "records", "input"} <= stages
  assert {_layer(name) for name in MODULES if name.startswith("bert_tf.data.")} == {0}


def _folder_module_counts():
  counts = {}
  for folder in [PACKAGE] + sorted(p for p in PACKAGE.rglob("*")
                                   if p.is_dir() and p.name != "__pycache__"):
    modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
    if modules:
      counts[folder.relative_to(PACKAGE.parent).as_posix()] = len(modules)
  return counts


FOLDER_MODULES = _folder_module_counts()


def test_no_folder_holds_more_than_the_limit():
  assert "bert_tf/data/pretraining" in FOLDER_MODULES
  crowded = {folder: n for folder, n in FOLDER_MODULES.items()
             if n > FOLDER_EXCEPTIONS.get(folder, MAX_FOLDER_MODULES)}
  assert not crowded, (f"folders over {MAX_FOLDER_MODULES} modules (or over their "
                       f"ceiling in FOLDER_EXCEPTIONS): {crowded}; split them by concept")


def test_folder_exceptions_are_still_needed():
  stale = [folder for folder in FOLDER_EXCEPTIONS
           if FOLDER_MODULES.get(folder, 0) <= MAX_FOLDER_MODULES]
  assert not stale, f"back under {MAX_FOLDER_MODULES} modules: remove {stale} from FOLDER_EXCEPTIONS"


def test_no_upward_imports():
  upward = [f"{m} imports {d}" for m, deps in GRAPH.items() for d in sorted(deps)
            if _layer(d) > _layer(m)]
  assert not upward, upward


def test_no_import_cycles():
  # Depth-first search; an edge back to a module on the stack closes a cycle.
  state, cycles = {}, []

  def visit(module, stack):
    state[module] = "open"
    for dep in sorted(GRAPH.get(module, ())):
      if state.get(dep) == "open":
        cycles.append(" -> ".join(stack[stack.index(dep):] + [dep]))
      elif dep not in state:
        visit(dep, stack + [dep])
    state[module] = "done"

  for module in sorted(GRAPH):
    if module not in state:
      visit(module, [module])
  assert not cycles, cycles


def test_leaf_modules():
  # file_io and statistics: imported from every layer, so they import
  # nothing of ours; serving.predict: the standalone client (tensorflow + tensorflow-text only).
  assert all(GRAPH[name] == set() for name in FOUNDATION)
  assert GRAPH["bert_tf.serving.predict"] == set()


def test_absl_flags_only_in_top_level_modules():
  offenders = []
  for name, (_, tree) in MODULES.items():
    # serving.predict is the standalone client: a whole tool in one file, to
    # be copied without the package (bert_tf.predict runs it).
    if _layer(name) == TOP_LEVEL or name == "bert_tf.serving.predict":
      continue
    for node in ast.walk(tree):
      if (isinstance(node, ast.ImportFrom) and node.module == "absl"
          and any(a.name == "flags" for a in node.names)) or (
              isinstance(node, ast.Import) and any(a.name == "absl.flags" for a in node.names)):
        offenders.append(name)
  assert not offenders, offenders


def tool_code_lines(path, tree):
  """Lines holding code, docstrings and the body of define_flags left out."""
  source = path.read_text(encoding="utf-8")
  skip = set()
  for node in ast.walk(tree):
    body = getattr(node, "body", None)
    if (isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and body
        and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)):
      skip.update(range(body[0].lineno, body[0].end_lineno + 1))
    if isinstance(node, ast.FunctionDef) and node.name == "define_flags":
      skip.update(range(node.lineno, node.end_lineno + 1))
  code = set()
  ignored = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
             tokenize.DEDENT, tokenize.ENDMARKER)
  for tok in tokenize.generate_tokens(io.StringIO(source).readline):
    if tok.type not in ignored:
      code.update(range(tok.start[0], tok.end[0] + 1))
  return len(code - skip)


def test_tool_code_lines_counts_code_only(tmp_path):
  path = tmp_path / "tool.py"
  path.write_text('"""Doc\nstring."""\n\nimport os  # why\n\n\ndef define_flags(f):\n'
                  '  f.a = 1\n  f.b = 2\n\n\ndef main(argv):\n  """Doc."""\n  # note\n'
                  '  return (argv,\n          os.sep)\n')
  # import, `def main`, and the two lines of its return statement.
  assert tool_code_lines(path, ast.parse(path.read_text())) == 4


TOOLS = sorted(name for name, (_, tree) in MODULES.items()
               if name.count(".") == 1 and any(
                   isinstance(n, ast.FunctionDef) and n.name == "define_flags"
                   for n in tree.body))


def test_the_tools_are_found():
  assert {"bert_tf.quickstart", "bert_tf.run_pretraining", "bert_tf.sample_corpus"} <= set(TOOLS)


@pytest.mark.parametrize("name", TOOLS)
def test_tool_modules_are_thin(name):
  path, tree = MODULES[name]
  budget = TOOL_EXCEPTIONS.get(name.split(".")[-1], TOOL_CODE_LINES)
  lines = tool_code_lines(path, tree)
  assert lines <= budget, (f"{name}: {lines} lines of code outside its flag definitions "
                           f"(budget {budget}): move the logic into the library")


MAX_MODULE_LINES = 600
# Known exceptions, as ceilings so they cannot grow (none now).
MODULE_LINE_EXCEPTIONS = {}


def test_no_module_longer_than_the_limit():
  too_long = []
  for name, (path, _) in MODULES.items():
    lines = len(path.read_text(encoding="utf-8").splitlines())
    if lines > MODULE_LINE_EXCEPTIONS.get(name, MAX_MODULE_LINES):
      too_long.append(f"{name} ({lines} lines)")
  assert not too_long, f"modules over {MAX_MODULE_LINES} lines: {too_long}"


MAX_TOP_LEVEL_MODULES = 15
# Modules allowed at the top level beside the tools while they move (none now).
TOP_LEVEL_PENDING = set()


def test_the_top_level_holds_the_tools():
  # Users run `python -m bert_tf.<tool>`: the top level is the tools; what
  # they share lives in bert_tf/cli/, foundations in bert_tf/util/.
  top = {name for name, (path, _) in MODULES.items()
         if path.parent == PACKAGE and path.name != "__init__.py"} - TOP_LEVEL_PENDING
  assert len(top) <= MAX_TOP_LEVEL_MODULES, sorted(top)
  # predict runs the standalone client (serving/predict.py), which defines its flags.
  assert top - set(TOOLS) <= {"bert_tf.predict"}, sorted(top - set(TOOLS))
