"""data/tokenizers/sentencepiece_learning.py: an ALBERT-style SentencePiece model from
text, read back by the writer's tokenizer, and build_vocab --spm_model_file."""

import json
import os
import random
import subprocess
import sys

import pytest

from bert_tf.data.tokenizers import sentencepiece_learning
from bert_tf.data.tokenizers import sentencepiece_vocab

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
         "november oscar papa quebec romeo sierra tango uniform victor whiskey").split()


def _corpus(path, lines=400, seed=0):
  rng = random.Random(seed)
  text = []
  for i in range(lines):
    text.append(" ".join(rng.choice(WORDS).capitalize() if rng.random() < 0.1
                         else rng.choice(WORDS) for _ in range(rng.randint(4, 12))) + ".")
    if i % 20 == 19:
      text.append("")
  text.append("Caf\u00e9 r\u00e9sum\u00e9 (na\u00efve) \u2013 \u00a3 \u20ac, 1,000 items.")
  path.write_text("\n".join(text) + "\n", encoding="utf-8")
  return str(path)


def test_the_model_has_albert_specials_and_tokenizes_its_text(tmp_path):
  corpus = _corpus(tmp_path / "corpus.txt")
  model = sentencepiece_learning.train_sentencepiece(corpus, str(tmp_path / "out" / "m.model"),
                                                     vocab_size=60, do_lower_case=True)
  assert (tmp_path / "out" / "m.model").exists() and (tmp_path / "out" / "m.vocab").exists()
  vocab = model.vocab
  assert vocab.size == 60
  assert vocab.tokens[:5] == ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
  # ALBERT's user-defined symbols are single pieces.
  for symbol in ("(", ")", '"', "-", ".", "\u2013", "\u00a3", "\u20ac"):
    assert symbol in vocab.token_to_id, symbol
  reread = sentencepiece_vocab.load_sentencepiece(str(tmp_path / "out" / "m.model"))
  assert reread.vocab.tokens == vocab.tokens
  ids = reread.tokenize("Alpha bravo, CAF\u00c9.", lower=True)
  assert vocab.unk_id not in ids
  # Trained on preprocessed text: no accented or upper-case piece.
  assert not any(any(c.isupper() or c in "\u00e9\u00ef" for c in t) for t in vocab.tokens
                 if not t.startswith(("<", "[")))


def test_a_small_text_gives_the_largest_model_it_can_and_no_text_is_an_error(tmp_path,
                                                                           caplog):
  corpus = _corpus(tmp_path / "corpus.txt", lines=20)
  model = sentencepiece_learning.train_sentencepiece(corpus, str(tmp_path / "m.model"), 5000,
                                                     True)
  assert 10 < model.vocab.size < 5000
  assert f"fewer than vocab_size=5000: training {model.vocab.size}" in caplog.text
  (tmp_path / "blank.txt").write_text("\n\n  \n")
  with pytest.raises(ValueError, match="no text in"):
    sentencepiece_learning.train_sentencepiece(str(tmp_path / "blank.txt"),
                                               str(tmp_path / "n.model"), 50, True)
  assert not (tmp_path / "n.model").exists()


def test_build_vocab_trains_one_and_writes_the_config(tmp_path):
  corpus = _corpus(tmp_path / "corpus.txt")
  result = subprocess.run(
      [sys.executable, "-m", "bert_tf.build_vocab", f"--input_file={corpus}",
       f"--spm_model_file={tmp_path / 'spm.model'}", "--vocab_size=5000",
       "--bert_config_template=configs/albert_base.json",
       f"--bert_config_out={tmp_path / 'albert_config.json'}"],
      cwd=REPO, capture_output=True, text=True, timeout=300, env={**os.environ,
                                                                  "PYTHONPATH": REPO})
  assert result.returncode == 0, result.stderr[-2000:]
  config = json.loads((tmp_path / "albert_config.json").read_text())
  from bert_tf.data.tokenizers import sentencepiece_vocab as spv  # pylint: disable=g-import-not-at-top
  size = spv.load_sentencepiece(str(tmp_path / "spm.model")).vocab.size
  assert size < 5000 and config["vocab_size"] == size and config["embedding_size"] == 128
  both = subprocess.run(
      [sys.executable, "-m", "bert_tf.build_vocab", f"--input_file={corpus}",
       f"--spm_model_file={tmp_path / 'x.model'}", f"--vocab_file={tmp_path / 'v.txt'}"],
      cwd=REPO, capture_output=True, text=True, timeout=300, env={**os.environ,
                                                                  "PYTHONPATH": REPO})
  assert both.returncode != 0 and "give one of --vocab_file" in both.stderr.splitlines()[-1]
