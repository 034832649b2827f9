"""The module map of docs/architecture.md ("## Every module") lists every
module of bert_tf/, one line each, and no module that is gone; the README's
development tree names every folder of the package, and no other.

Both are read from the source tree and the pages when the test runs. After
moving or adding modules, regenerate the map (purposes of listed modules are
kept, a new module's is the first sentence of its docstring):

    .venv/bin/python tests/test_module_map.py --write
"""

import ast
import pathlib
import re
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = REPO / "bert_tf"
ARCHITECTURE = REPO / "docs" / "architecture.md"
README = REPO / "README.md"
HEADING = "## Every module"
INTRO = """\
One line per module of `bert_tf/` (every `.py` file but an `__init__.py`
holding only a docstring), by folder. `tests/test_module_map.py` fails
when a module is missing here or a listed one is gone;
`.venv/bin/python tests/test_module_map.py --write` rewrites this section
from the source tree, keeping the purposes written here.
"""
LINE = re.compile(r"^- `(bert_tf/[\w/]+\.py)`: (.*)$")


def package_modules():
  """The modules of bert_tf/ as repository paths, by folder, then by name."""
  found = []
  for path in sorted(PACKAGE.rglob("*.py")):
    if "__pycache__" in path.parts:
      continue
    if path.name == "__init__.py":
      body = ast.parse(path.read_text(encoding="utf-8")).body
      if all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) for s in body):
        continue
    found.append(path.relative_to(REPO).as_posix())
  return sorted(found, key=lambda p: tuple(p.rsplit("/", 1)))


def docstring_purpose(path):
  """The first sentence of a module's docstring, cut near 120 characters."""
  doc = ast.get_docstring(ast.parse((REPO / path).read_text(encoding="utf-8"))) or ""
  paragraph = " ".join(doc.split("\n\n")[0].split())
  sentence = re.match(r"(.+?(?<!\bal)(?<!e\.g)(?<!i\.e)\.)(\s|$)", paragraph)
  text = sentence.group(1) if sentence else paragraph
  if len(text) > 120:
    cut = max(text.rfind("; ", 30, 120), text.rfind(", ", 30, 120), text.rfind(" (", 30, 120))
    text = text[:cut] if cut > 0 else text[:120].rsplit(" ", 1)[0]
  return text.rstrip(" :;,.") or "(no docstring: say what it is for)"


def section_bounds(text):
  """(start, end) of the module map's body in architecture.md's text."""
  start = text.index(HEADING + "\n") + len(HEADING) + 1
  following = text.find("\n## ", start)
  return start, len(text) if following < 0 else following + 1


def listed_modules(text):
  """{path: purpose} of the module map's lines, and the paths listed twice."""
  start, end = section_bounds(text)
  listed, twice = {}, []
  for line in text[start:end].splitlines():
    match = LINE.match(line)
    if match:
      if match.group(1) in listed:
        twice.append(match.group(1))
      listed[match.group(1)] = match.group(2).strip()
  return listed, twice


def section(listed):
  """The module map's body for the current source tree."""
  out, folder = ["", INTRO.rstrip("\n")], None
  for path in package_modules():
    parent = path.rsplit("/", 1)[0] + "/"
    if parent != folder:
      folder = parent
      out.append(f"\n### `{folder}`\n")
    out.append(f"- `{path}`: {listed.get(path) or docstring_purpose(path)}")
  return "\n".join(out) + "\n"


def readme_folders():
  """The folders of bert_tf/ that the README's development tree names."""
  text = README.read_text(encoding="utf-8")
  tree = text[text.index("```\nbert_tf/"):]
  tree = tree[:tree.index("```", 3)]
  return sorted(m.group(1) for m in re.finditer(r"^  (\w+)/ ", tree, re.M))


def test_every_module_is_in_the_module_map():
  text = ARCHITECTURE.read_text(encoding="utf-8")
  assert HEADING in text, f"docs/architecture.md has no '{HEADING}' section"
  listed, twice = listed_modules(text)
  modules = package_modules()
  missing = [p for p in modules if p not in listed]
  gone = sorted(set(listed) - set(modules))
  blank = [p for p, purpose in listed.items() if not purpose]
  assert not (missing or gone or twice or blank), (
      "docs/architecture.md's module map is out of date; run "
      "`.venv/bin/python tests/test_module_map.py --write` (and edit the new lines' purposes)."
      + "".join(f"\n  missing: - `{p}`: {docstring_purpose(p)}" for p in missing)
      + "".join(f"\n  gone: {p}" for p in gone)
      + "".join(f"\n  listed twice: {p}" for p in twice)
      + "".join(f"\n  no purpose: {p}" for p in blank))


def test_the_readme_tree_names_every_folder():
  folders = sorted(p.name for p in PACKAGE.iterdir()
                   if p.is_dir() and any(p.glob("*.py")))
  assert readme_folders() == folders, (
      f"README.md's development tree names the folders {readme_folders()}; bert_tf/ has "
      f"{folders} (one line each: '  NAME/  what it holds')")


def test_the_map_rules_on_a_made_up_page():
  page = (f"# A\n\n{HEADING}\n\n- `bert_tf/a.py`: one\n- `bert_tf/a.py`: again\n"
          "- `bert_tf/x/b.py`: two\n\n## Next\n\n- `bert_tf/c.py`: not in the map\n")
  listed, twice = listed_modules(page)
  assert listed == {"bert_tf/a.py": "again", "bert_tf/x/b.py": "two"} and twice == ["bert_tf/a.py"]
  assert docstring_purpose("bert_tf/io/file_io.py")


def main(argv):
  text = ARCHITECTURE.read_text(encoding="utf-8")
  if HEADING not in text:
    text = text.rstrip("\n") + f"\n\n{HEADING}\n"
  start, end = section_bounds(text)
  body = section(listed_modules(text)[0])
  if "--write" in argv:
    ARCHITECTURE.write_text(text[:start] + body + ("\n" if end < len(text) else "") + text[end:],
                            encoding="utf-8")
    print(f"wrote {len(package_modules())} modules to {ARCHITECTURE.relative_to(REPO)}")
  else:
    print(HEADING + body, end="")


if __name__ == "__main__":
  main(sys.argv[1:])
