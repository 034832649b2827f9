"""Vocab files: the special tokens, and a file of lines."""


SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def write_lines(path, lines):
  with open(path, "w", encoding="utf-8") as f:
    f.write("".join(line + "\n" for line in lines))
  return str(path)
