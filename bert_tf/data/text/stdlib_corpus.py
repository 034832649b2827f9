"""The bundled sample corpus, from the Python standard library's docstrings.

Every machine with Python has the standard library's docstrings: real English
prose about one subject per module, with no download. Each module becomes a
document; its docstrings (module, classes, functions) are cut into sentences,
one a line, in the original BERT input format (a blank line between
documents). Code examples, doctest lines and tables are left out. The tool is
bert_tf.sample_corpus.
"""

import contextlib
import io
import importlib
import inspect
import os
import pkgutil
import re
import sys
import sysconfig
import warnings

from bert_tf.io import file_io as files

# Modules that start things, print, or are platform-specific on import.
_SKIP = re.compile(r"^(__main__|antigravity|this|idlelib|tkinter|turtle|turtledemo|"
                   r"test.*|lib2to3|ensurepip|venv|msilib|winreg|winsound|_.*)($|\.)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'])")
_CODE_LINE = re.compile(r"^\s*(>>>|\.\.\.|[-=~+*#|]{3,}|\$ |%)")


def _sentences(docstring):
  """Prose sentences of a docstring, whitespace-normalized."""
  out = []
  for paragraph in re.split(r"\n\s*\n", inspect.cleandoc(docstring)):
    lines = paragraph.splitlines()
    if not lines or any(_CODE_LINE.match(l) for l in lines):
      continue
    # Indented paragraphs are code or argument tables, not prose.
    if all(l.startswith((" ", "\t")) for l in lines):
      continue
    text = " ".join(l.strip() for l in lines)
    if len(text) < 20 or sum(c.isalpha() for c in text) < 0.6 * len(text):
      continue
    for sentence in _SENTENCE_END.split(text):
      # Any Unicode whitespace (form feeds, U+2028, ...) becomes one space:
      # a sentence stays on its line.
      sentence = " ".join(sentence.split())
      if len(sentence.split()) >= 3:
        out.append(sentence)
  return out


def _module_names():
  names = set(sys.builtin_module_names)
  # walk_packages imports every package it descends into (some print): only
  # the standard library's folders, not site-packages, whose packages log
  # warnings on import and take seconds each.
  stdlib = sysconfig.get_paths()["stdlib"]
  folders = [p for p in (stdlib, os.path.join(stdlib, "lib-dynload")) if os.path.isdir(p)]
  with contextlib.redirect_stdout(io.StringIO()):
    for info in pkgutil.walk_packages(path=folders, onerror=lambda name: None):
      names.add(info.name)
  stdlib = getattr(sys, "stdlib_module_names", None)
  keep = []
  for name in sorted(names):
    if _SKIP.match(name):
      continue
    if stdlib is not None and name.split(".")[0] not in stdlib:
      continue
    keep.append(name)
  return keep


def _documents():
  # Docstrings and sentences already used, compared by value: an object's
  # id() is its address, which a freed docstring's successor can reuse (the
  # corpus then changed from run to run).
  seen_docs, seen = set(), set()
  for name in _module_names():
    saved_argv = sys.argv
    try:
      # Some modules print or parse sys.argv on import: keep them quiet.
      sys.argv = [saved_argv[0]]
      with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
          contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        module = importlib.import_module(name)
    except BaseException:  # noqa: BLE001 - any module that won't import is skipped
      continue
    finally:
      sys.argv = saved_argv
    lines = []
    docs = [module.__doc__]
    for attr in sorted(vars(module)):
      obj = getattr(module, attr, None)
      if getattr(obj, "__module__", None) != name:
        continue
      if inspect.isclass(obj):
        docs.append(obj.__doc__)
        for member in sorted(vars(obj)):
          docs.append(getattr(vars(obj)[member], "__doc__", None))
      elif inspect.isfunction(obj):
        docs.append(obj.__doc__)
    for doc in docs:
      if not isinstance(doc, str) or doc in seen_docs:
        continue
      seen_docs.add(doc)
      for sentence in _sentences(doc):
        if sentence not in seen:
          seen.add(sentence)
          lines.append(sentence)
    if len(lines) >= 2:
      yield lines


def corpus_text(min_bytes=1 << 20):
  """The corpus as text: (text, documents, lines)."""
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    documents = list(_documents())
  text = "\n\n".join("\n".join(doc) for doc in documents) + "\n"
  if len(text.encode("utf-8")) < min_bytes:
    raise RuntimeError(f"sample corpus has only {len(text.encode('utf-8'))} bytes (< "
                       f"{min_bytes}); this Python's standard library has too few docstrings")
  return text, len(documents), sum(len(d) for d in documents)


def write_corpus(path, min_bytes=1 << 20):
  """Writes the corpus to `path`; returns (documents, lines, bytes)."""
  text, documents, lines = corpus_text(min_bytes)
  data = text.encode("utf-8")
  files.atomic_write(path, data)  # through file_io: the corpus may go to gs:// too
  return documents, lines, len(data)
