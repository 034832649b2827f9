"""Tests of bert_tf.data.tokenizers.vocab_learning and the bert_tf.build_vocab tool: layout,
coverage of the corpus, bad input, the model config with the vocab's size."""

import json
import os
import random
import subprocess
import sys

import pytest

from bert_tf.data.tokenizers import vocab_learning as bv
from bert_tf.data.tokenizers import tokenization as tk
from bert_tf.data.tokenizers import wordpiece_vocab

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _corpus(path, n_lines=400, seed=0):
  """A small generated corpus: Zipf-like words, case, accents, punctuation,
  CJK and a long word, so that the vocab must cover every character."""
  rng = random.Random(seed)
  stems = ["run", "walk", "talk", "king", "house", "light", "dark", "water",
           "Caf\u00e9", "na\u00efve", "Stra\u00dfe", "\u00dcber", "\u00e9cole",
           "\u043c\u0438\u0440", "\u0394\u039f\u03a3", "emoji\U0001f600"]
  suffixes = ["", "", "", "s", "ing", "ed", "er", "ly"]
  lines = []
  for _ in range(n_lines):
    words = []
    for _ in range(rng.randint(3, 12)):
      stem = stems[min(int(rng.paretovariate(1.0)) - 1, len(stems) - 1)]
      words.append(stem + rng.choice(suffixes) + rng.choice(["", "", ",", "."]))
    if rng.random() < 0.1:
      words.append("\u4e2d\u6587\u5b57")
    lines.append(" ".join(words))
    if rng.random() < 0.1:
      lines.append("")  # document boundary, as in the BERT input format
  lines.append("x" * 60 + "\u0416")  # longer than max_token_length
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
  return lines


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_vocab_layout_and_every_word_covered(tmp_path, do_lower_case):
  lines = _corpus(tmp_path / "a.txt")
  tokens = bv.build_vocab(str(tmp_path / "*.txt"), vocab_size=120,
                          do_lower_case=do_lower_case, num_unused=3)
  assert tokens[:8] == SPECIALS + ["[unused0]", "[unused1]", "[unused2]"]
  assert len(tokens) == 120 == len(set(tokens))
  # Single characters come right after the reserved tokens, sorted.
  n_chars = sum(1 for t in tokens if len(t) == 1)
  chars = tokens[8:8 + n_chars]
  assert chars == sorted(chars) and all(len(c) == 1 for c in chars)
  assert "\u0436" in chars if do_lower_case else "\u0416" in chars
  assert ("\u00e9" in chars) == (not do_lower_case)  # accents stripped
  # Learned pieces: frequent words whole, "##" continuations present.
  assert "run" in tokens and any(t.startswith("##") and len(t) > 3 for t in tokens)
  vocab_path = str(tmp_path / "out" / "vocab.txt")
  bv.write_vocab(tokens, vocab_path)
  vocab = wordpiece_vocab.load_vocab(vocab_path)
  assert vocab.tokens == tokens
  tokenizer = tk.BatchTokenizer(vocab, do_lower_case)
  values, _ = tokenizer.tokenize_to_ids(lines)
  assert len(values) > 1000
  assert vocab.unk_id not in values.tolist()


def test_small_request_is_cut_by_count_and_large_one_is_not_padded(tmp_path):
  _corpus(tmp_path / "a.txt")
  full = bv.build_vocab(str(tmp_path / "a.txt"), vocab_size=100000,
                        do_lower_case=True)
  assert len(full) < 1000  # every token of the corpus, no padding
  assert not any(t.startswith("[unused") for t in full)
  small = bv.build_vocab(str(tmp_path / "a.txt"), vocab_size=len(full) // 2,
                         do_lower_case=True)
  assert len(small) == len(full) // 2  # filled up to the request
  mandatory = [t for t in full if len(t.lstrip("#")) == 1 or t in SPECIALS]
  assert set(mandatory) <= set(small)


def test_max_lines_and_several_patterns(tmp_path):
  (tmp_path / "a.txt").write_text("alpha beta\n", encoding="utf-8")
  (tmp_path / "b.txt").write_text("gamma\ndelta\n", encoding="utf-8")
  counts = bv.count_words(f"{tmp_path}/a.txt,{tmp_path}/b.txt", True)
  assert counts == {"alpha": 1, "beta": 1, "gamma": 1, "delta": 1}
  counts = bv.count_words([str(tmp_path / "*.txt")], True, max_lines=2)
  assert counts == {"alpha": 1, "beta": 1, "gamma": 1}


def test_bad_input(tmp_path):
  with pytest.raises(FileNotFoundError, match="nothing-here"):
    bv.build_vocab(str(tmp_path / "nothing-here*.txt"), 100, True)
  empty = tmp_path / "empty.txt"
  empty.write_text("\n  \n\x00\n", encoding="utf-8")
  with pytest.raises(ValueError, match="no words"):
    bv.build_vocab(str(empty), 100, True)
  _corpus(tmp_path / "a.txt")
  with pytest.raises(ValueError, match=r"--vocab_size=20 is smaller"):
    bv.build_vocab(str(tmp_path / "a.txt"), 20, True)


def test_write_vocab_is_atomic(tmp_path, monkeypatch):
  path = str(tmp_path / "vocab.txt")
  bv.write_vocab(SPECIALS + ["a"], path)
  assert open(path, encoding="utf-8").read() == "\n".join(SPECIALS + ["a"]) + "\n"

  class Boom(Exception):
    pass

  def failing_rename(*args, **kwargs):
    raise Boom()

  monkeypatch.setattr(bv.tf.io.gfile, "rename", failing_rename)
  with pytest.raises(Boom):
    bv.write_vocab(SPECIALS + ["b"], path)
  assert os.listdir(tmp_path) == ["vocab.txt"]  # no temp file left behind
  assert open(path, encoding="utf-8").read().endswith("\na\n")


def _start_cli(*args):
  return subprocess.Popen([sys.executable, "-m", "bert_tf.build_vocab", *args],
                          cwd=_ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


def test_cli(tmp_path):
  _corpus(tmp_path / "a.txt")
  out = tmp_path / "vocab.txt"
  config_out = tmp_path / "model" / "new" / "bert_config.json"
  # All runs at once: most of their time is importing TensorFlow.
  runs = {
      "ok": _start_cli(f"--input_file={tmp_path}/a.txt", f"--vocab_file={out}",
                       "--vocab_size=150", "--do_lower_case=True", "--num_unused=2"),
      # Asks for more tokens than the corpus has: the config gets the real size.
      "config": _start_cli(f"--input_file={tmp_path}/a.txt",
                           f"--vocab_file={tmp_path}/small.txt", "--vocab_size=100000",
                           "--bert_config_template=configs/bert_tiny.json",
                           f"--bert_config_out={config_out}"),
      "no_config": _start_cli(f"--input_file={tmp_path}/a.txt",
                              f"--vocab_file={tmp_path}/small2.txt", "--vocab_size=100000"),
      "bad": _start_cli(f"--input_file={tmp_path}/missing*.txt",
                        f"--vocab_file={tmp_path}/bad/bad.txt"),
      "bad_template": _start_cli(f"--input_file={tmp_path}/a.txt",
                                 f"--vocab_file={tmp_path}/bad2.txt",
                                 f"--bert_config_template={tmp_path}/missing.json",
                                 f"--bert_config_out={tmp_path}/bad_config/c.json"),
  }
  err = {}
  for name, proc in runs.items():
    _, err[name] = proc.communicate(timeout=300)
  assert runs["ok"].returncode == 0, err["ok"]
  tokens = out.read_text(encoding="utf-8").split("\n")[:-1]
  assert tokens[:7] == SPECIALS + ["[unused0]", "[unused1]"]
  assert len(tokens) == 150
  assert "MB/s" in err["ok"]  # progress with rate
  assert "use vocab_size" not in err["ok"]

  assert runs["config"].returncode == 0, err["config"]
  size = len((tmp_path / "small.txt").read_text(encoding="utf-8").splitlines())
  assert 150 < size < 100000
  written = json.loads(config_out.read_text())
  template = json.loads(open(os.path.join(_ROOT, "configs", "bert_tiny.json")).read())
  assert written == dict(template, vocab_size=size)
  assert os.listdir(config_out.parent) == ["bert_config.json"]  # no temp file
  assert "use vocab_size" not in err["config"]  # done already: no advice

  assert runs["no_config"].returncode == 0, err["no_config"]
  assert f"use vocab_size={size} in the model's bert_config.json" in err["no_config"]

  for name, code in (("bad", 1), ("bad_template", 2)):
    assert runs[name].returncode == code, err[name]
    lines = err[name].splitlines()
    assert len(lines) == 1 and lines[0].startswith("bert_tf.build_vocab: error:"), err[name]
  assert "missing*.txt" in err["bad"] and "missing.json" in err["bad_template"]
  for left in ("bad", "bad2.txt", "bad_config"):  # no output, no empty folder
    assert not os.path.exists(tmp_path / left), left


def test_write_bert_config_sets_the_vocab_size(tmp_path):
  from bert_tf import build_vocab
  out = str(tmp_path / "c.json")
  config = build_vocab.write_bert_config(os.path.join(_ROOT, "configs", "bert_tiny.json"), 1234,
                                         out, max_position_embeddings=64)
  assert config.vocab_size == 1234 and config.max_position_embeddings == 64
  assert json.loads(open(out).read())["vocab_size"] == 1234
  with pytest.raises(ValueError, match="unknown BERT config key"):
    build_vocab.write_bert_config(out, 10, str(tmp_path / "d.json"), vocab_sise=3)
  assert not os.path.exists(tmp_path / "d.json")
