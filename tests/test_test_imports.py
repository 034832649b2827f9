"""The tests' own layout: a test module imports shared code from the
`helpers` package only, never another test module, and no two test modules
share a basename (pytest's default import mode puts each test folder on
sys.path, where two modules of one name would clash)."""

import ast
import collections
import os

TESTS = os.path.dirname(os.path.abspath(__file__))
HELPERS = os.path.join(TESTS, "helpers")


def _test_modules():
  for root, dirs, files in os.walk(TESTS):
    dirs[:] = [d for d in dirs if d not in ("fixtures", "helpers", "__pycache__")]
    for name in files:
      if name.endswith(".py"):
        yield os.path.join(root, name)


def _local_module_names():
  """Names a test could import from a test folder put on sys.path."""
  return {os.path.splitext(os.path.basename(p))[0] for p in _test_modules()}


def test_tests_import_shared_code_from_helpers_only():
  local = _local_module_names()
  wrong = []
  for path in list(_test_modules()) + [os.path.join(HELPERS, f) for f in os.listdir(HELPERS)
                                       if f.endswith(".py")]:
    with open(path, encoding="utf-8") as f:
      tree = ast.parse(f.read())
    for node in ast.walk(tree):
      names = ([a.name for a in node.names] if isinstance(node, ast.Import)
               else [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
      wrong += [f"{os.path.relpath(path, TESTS)}:{node.lineno} imports {n}"
                for n in names if n.split(".")[0] in local]
  assert not wrong, "; ".join(wrong)


def test_test_module_basenames_are_unique():
  seen = collections.defaultdict(list)
  for path in _test_modules():
    if os.path.basename(path) != "conftest.py":
      seen[os.path.basename(path)].append(os.path.relpath(path, TESTS))
  assert not {k: v for k, v in seen.items() if len(v) > 1}
