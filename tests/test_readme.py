"""The README's commands run as written after its install (a `.venv` that is
not activated): each names the install's interpreter, an existing tool and
only flags that tool defines, with values its flags accept.

The README is read when the test runs, so a command added to it, or a flag
renamed in a tool, is checked the next time the tests run."""

import importlib
import os
import re
import shlex

import pytest
from absl import flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(REPO, "README.md")
# What the README's install makes: `python3 -m venv .venv` with the system's
# Python, then everything through .venv/bin (the venv is never activated).
INTERPRETER = ".venv/bin/python"
BARE_INTERPRETERS = ("python", "python3")
# absl's own flags, which every tool accepts (app.run and absl.logging's).
ABSL_FLAGS = {"flagfile", "undefok", "verbosity", "v", "logtostderr", "alsologtostderr",
              "stderrthreshold", "log_dir", "showprefixforinfo"}


def _join_continuations(lines):
  """Lines with a trailing backslash joined to the next."""
  out, current = [], ""
  for line in lines:
    if line.rstrip().endswith("\\"):
      current += line.rstrip()[:-1] + " "
    else:
      out.append(current + line.strip())
      current = ""
  if current:
    out.append(current)
  return out


def split_blocks(text):
  """(code blocks, prose): the lines of each code block (indented by 4
  spaces after a blank line, or fenced with ```), and the other lines."""
  blocks, prose, current, fenced, previous_blank = [], [], None, False, True
  for line in text.splitlines():
    if line.startswith("```"):
      if fenced:
        blocks.append(current)
        current, fenced = None, False
      else:
        current, fenced = [], True
      continue
    if fenced:
      current.append(line)
    elif line.startswith("    ") and (previous_blank or current is not None):
      current = [] if current is None else current
      current.append(line[4:])
    elif current is not None and not line.strip():
      current.append("")
    else:
      if current is not None:
        blocks.append(current)
      current = None
      prose.append(line)
    previous_blank = not line.strip()
  if current:
    blocks.append(current)
  return blocks, "\n".join(prose)


def inline_commands(prose):
  """Inline code spans of the prose (over line breaks too) that start with
  an interpreter."""
  spans = (" ".join(m.group(1).split()) for m in re.finditer(r"`([^`]+)`", prose))
  return [s for s in spans  # an interpreter alone (`python`) is a name, not a command
          if s.split()[0] in BARE_INTERPRETERS + (INTERPRETER,) and len(s.split()) > 1]


def commands(text):
  """Every command line of the README's code blocks and inline spans, each
  `a && b` split in two. Lines that are not commands of a shell (Python code,
  the data-flow diagram, a tool's output) are left out: a command begins with
  a program name (a word of letters, digits, ., /, _ and -) followed by a
  space, or is the program alone."""
  found = []
  blocks, prose = split_blocks(text)
  for block in blocks:
    for line in _join_continuations(block):
      found += [part.strip() for part in line.split("&&")]
  found += inline_commands(prose)
  shell = re.compile(r"^(\.venv/bin/|[a-z0-9_]+)[\w./-]*( |$)")
  python_code = re.compile(r"^(import|from|print|[a-z_]+ = |out|nsp|bert)\b")
  return [c for c in found if c and shell.match(c) and not python_code.match(c)
          and not c.startswith(("->", "raw text", "--"))]


def python_commands(text):
  return [c for c in commands(text) if c.split()[0].endswith(BARE_INTERPRETERS)]


def check_command(command):
  """Problems of one interpreter command (a list of one-line strings)."""
  argv = [a for a in shlex.split(command) if a not in ("[", "]")]
  argv = [a[1:] if a.startswith("[") else a for a in argv]
  argv = [a[:-1] if a.endswith("]") else a for a in argv]
  interpreter, args = argv[0], argv[1:]
  if args[:2] == ["-m", "venv"] and interpreter == "python3":
    return []  # the install itself: the system's Python makes the venv
  problems = []
  if interpreter != INTERPRETER:
    problems.append(f"{command!r}: runs {interpreter!r}, which the install does not make "
                    f"available (the venv is not activated): use {INTERPRETER}")
  if args[:1] != ["-m"]:
    script = args[0]
    return problems + ([] if os.path.isfile(os.path.join(REPO, script)) else [
        f"{command!r}: no file {script}"])
  module_name, tool_args = args[1], args[2:]
  if not module_name.startswith("bert_tf."):
    return problems  # pytest, pip: not ours
  if re.fullmatch(r"bert_tf\.[A-Z]+", module_name) and not tool_args:
    return problems  # `bert_tf.NAME`: any tool
  try:
    module = importlib.import_module(module_name)
  except ImportError as e:
    return problems + [f"{command!r}: no tool {module_name} ({e})"]
  if not (callable(getattr(module, "define_flags", None))
          and callable(getattr(module, "run", None))):
    return problems + [f"{command!r}: {module_name} is not a tool (no define_flags and run)"]
  flag_values = flags.FlagValues()
  module.define_flags(flag_values)
  for name in ABSL_FLAGS - {"flagfile", "undefok"}:
    flags.DEFINE_string(name, None, "absl's", flag_values=flag_values)
  if "--" in tool_args:  # what follows goes to another program (Beam's runner)
    tool_args = tool_args[:tool_args.index("--")]
  for arg in tool_args:
    if not arg.startswith("-"):
      problems.append(f"{command!r}: {module_name} takes no argument {arg!r}")
  try:
    flag_values([module_name] + [a for a in tool_args if a.startswith("-")])
  except flags.Error as e:
    problems.append(f"{command!r}: {module_name}: {e}")
  return problems


def _modules(text):
  return {shlex.split(c)[2] for c in python_commands(text) if shlex.split(c)[1:2] == ["-m"]}


def test_the_readme_commands_are_found():
  text = open(README, encoding="utf-8").read()
  # The README: the quickstart, the tests, the own-corpus path, a comparison.
  assert {"bert_tf.quickstart", "pytest", "bert_tf.split_corpus", "bert_tf.build_vocab",
          "bert_tf.create_pretraining_data", "bert_tf.run_pretraining",
          "bert_tf.export_saved_model", "bert_tf.predict",
          "bert_tf.compare_objectives"} <= _modules(text), _modules(text)
  assert not [c for c in commands(text) if c.startswith(("import ", "print("))]


def test_the_tools_page_has_a_command_per_tool():
  text = open(os.path.join(REPO, "docs", "tools.md"), encoding="utf-8").read()
  assert {"bert_tf.split_corpus", "bert_tf.build_vocab", "bert_tf.create_pretraining_data",
          "bert_tf.inspect_records", "bert_tf.run_pretraining", "bert_tf.distill",
          "bert_tf.export_saved_model", "bert_tf.predict", "bert_tf.finetune",
          "bert_tf.tasks", "bert_tf.compare_objectives",
          "bert_tf.sample_corpus"} <= _modules(text), _modules(text)
  assert not [c for c in commands(text) if c.startswith(("import ", "print("))]


def test_every_readme_command_runs_as_written():
  text = open(README, encoding="utf-8").read()
  cwd = os.getcwd()
  os.chdir(REPO)  # --flagfile paths are the clone's
  try:
    problems = [p for c in python_commands(text) for p in check_command(c)]
  finally:
    os.chdir(cwd)
  assert not problems, "\n".join(problems)


@pytest.mark.parametrize("command, expected", [
    ("python -m bert_tf.build_vocab --input_file=a.txt", "which the install does not make"),
    ("python3 -m bert_tf.build_vocab --input_file=a.txt", "which the install does not make"),
    (".venv/bin/python -m bert_tf.build_vocab --input_fil=a.txt", "input_fil"),
    (".venv/bin/python -m bert_tf.finetune --task_type=sometimes", "task_type"),
    (".venv/bin/python -m bert_tf.no_such_tool --x=1", "no tool bert_tf.no_such_tool"),
    (".venv/bin/python -m bert_tf.cli", "is not a tool"),
    (".venv/bin/python bench/no_such_bench.py", "no file bench/no_such_bench.py"),
])
def test_a_wrong_command_is_a_problem(command, expected):
  problems = check_command(command)
  assert len(problems) == 1 and expected in problems[0], problems


def test_right_commands_pass_the_check():
  assert check_command(".venv/bin/python -m bert_tf.run_pretraining --do_train --nodo_eval "
                       "--input_file='a/*.tfrecord' -v=1") == []
  assert check_command("python3 -m venv .venv") == []
  assert check_command(".venv/bin/python -m pytest -q") == []
  # A command in the README's format, continuation lines and optional flags.
  text = ("Run:\n\n    .venv/bin/python -m bert_tf.export_saved_model --export_dir=e \\\n"
          "      [--overwrite] && .venv/bin/python -m bert_tf.predict --saved_model=e "
          "--text='a [MASK] .'\n\nand `.venv/bin/python -m bert_tf.split_corpus\n"
          "--heldout_every=3`.\n")
  found = python_commands(text)
  assert len(found) == 3 and [p for c in found for p in check_command(c)] == []


DOCS = sorted(os.path.join(REPO, "docs", f) for f in os.listdir(os.path.join(REPO, "docs"))
              if f.endswith(".md"))


@pytest.mark.parametrize("page", DOCS, ids=os.path.basename)
def test_every_docs_command_runs_as_written(page):
  """The docs/ pages' commands too: the install's interpreter, existing tools
  and flags."""
  text = open(page, encoding="utf-8").read()
  cwd = os.getcwd()
  os.chdir(REPO)
  try:
    problems = [p for c in python_commands(text) for p in check_command(c)]
  finally:
    os.chdir(cwd)
  assert not problems, "\n".join(problems)


# A commit hash: 7-40 hex digits with both a digit and a letter (so neither
# numbers nor words such as "defaced"), not a checksum: "sha256" (or
# "sha256:") just before it marks a file's digest, which the docs give so a
# reader can check a corpus.
_HEX = re.compile(r"(?<![\w.-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])")
_CHECKSUM_BEFORE = re.compile(r"sha-?256:?\s*$", re.IGNORECASE)
_COMMIT_WORD = re.compile(r"\bat commit\b|\bcommits?\s+[0-9a-f]{7,40}\b", re.IGNORECASE)


def history_references(text):
  """The commit hashes and "at commit"s in `text`, as "line N: ..." lines."""
  found = []
  for number, line in enumerate(text.splitlines(), 1):
    hits = [m.group(0) for m in _COMMIT_WORD.finditer(line)]
    hits += [m.group(0) for m in _HEX.finditer(line)
             if not _CHECKSUM_BEFORE.search(line[:m.start()])]
    found += [f"line {number}: {hit!r} in {line.strip()[:100]}" for hit in hits]
  return found


def test_the_history_rule():
  assert history_references("measured at commit 358fc70 on 2 cores") == [
      "line 1: 'at commit' in measured at commit 358fc70 on 2 cores",
      "line 1: '358fc70' in measured at commit 358fc70 on 2 cores"]
  assert len(history_references("a\n| bert_tf at 967150c (contiguous blocks) |")) == 1
  assert history_references("(commits 1234567 and 7654321)") != []
  # Checksums, numbers, words and file names are not commits.
  assert history_references(
      "Python 3.11.7 (sha256 abbdaa6c2d33, 1.15 MB); corpus sha256: 9f86d081884c7d65; "
      "220,190 instances, 36445102080000 FLOPs; defaced; ckpt-1000.index; "
      "the outputs are committed beside it") == []


@pytest.mark.parametrize("page", [README] + DOCS, ids=os.path.basename)
def test_docs_carry_no_commit_hashes(page):
  """The README and docs/ say what is true now: a figure carries the command
  that remakes it, its date and machine, never a commit (history belongs in
  CHANGELOG.md and git)."""
  with open(page, encoding="utf-8") as f:
    found = history_references(f.read())
  assert not found, (f"{os.path.relpath(page, REPO)}: commit hashes or 'at commit' (give the "
                     "figure's date instead: git log -1 --format=%cs HASH):\n" + "\n".join(found))
