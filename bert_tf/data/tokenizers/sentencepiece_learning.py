"""Training an ALBERT-style SentencePiece model from raw text (`build_vocab
--spm_model_file`).

google-research/albert's README trains its 30k-clean.model with spm_train
--vocab_size=30000 --pad_id=0 --unk_id=1 --eos_id=-1 --bos_id=-1
--control_symbols=[CLS],[SEP],[MASK] --user_defined_symbols="(,),\\",-,.,–,£,€"
--shuffle_input_sentence=true --input_sentence_size=10000000
--character_coverage=0.99995 --model_type=unigram. We train with the same
settings on the text as the data writer will see it. The user-defined symbols go to the trainer as a list:
the same string through sentencepiece's Python API parses the quote as
quoting and keeps only "(" and ")" (checked), and each line goes through
`sentencepiece_vocab.preprocess_text` (accents stripped, lower-cased with
do_lower_case), blank lines dropped, so the model's pieces are the ones the
writer's tokenization asks for.
"""

import os
import re
import tempfile

from absl import logging

from bert_tf.io import file_io as files_lib
from bert_tf.data.tokenizers import sentencepiece_vocab
from bert_tf.data.tokenizers import vocab_learning

# google-research/albert README.md, "SentencePiece".
ALBERT_TRAINER_SETTINGS = dict(
    pad_id=0, unk_id=1, eos_id=-1, bos_id=-1, control_symbols="[CLS],[SEP],[MASK]",
    user_defined_symbols=["(", ")", '"', "-", ".", "\u2013", "\u00a3", "\u20ac"],
    shuffle_input_sentence=True,
    input_sentence_size=10_000_000, character_coverage=0.99995, model_type="unigram")


def _train(sentencepiece, text, prefix, vocab_size):
  sentencepiece.SentencePieceTrainer.train(input=text, model_prefix=prefix,
                                           vocab_size=vocab_size, minloglevel=2,
                                           **ALBERT_TRAINER_SETTINGS)


def train_sentencepiece(input_patterns, model_file, vocab_size, do_lower_case, max_lines=None):
  """Trains a SentencePiece model with ALBERT's settings and writes
  `model_file` (.model) and, beside it, the .vocab listing (local or gs://,
  each written whole under a temporary name and renamed).

  Returns:
    the trained model as a sentencepiece_vocab.SentencePieceVocab.

  A text too small for vocab_size gives the largest model it can (the
  trainer says how large), with a warning, as a WordPiece vocab is then
  smaller too.

  Raises:
    ValueError: no text, or the trainer's failure (its last line).
  """
  import sentencepiece  # pylint: disable=g-import-not-at-top
  paths = files_lib.expand_patterns(input_patterns)
  # A local temporary folder: the SentencePiece trainer reads and writes
  # local paths only. Every file goes through file_io all the same, and
  # the input and the model's final place may be gs:// paths.
  with tempfile.TemporaryDirectory(prefix="spm_train_") as tmp:
    text = os.path.join(tmp, "text.txt")
    lines = 0
    with files_lib.open_file(text, "w") as f:
      for batch, _ in vocab_learning.line_batches(paths, max_lines, 8192):
        for raw in batch:
          line = sentencepiece_vocab.preprocess_text(raw.decode("utf-8", "ignore"),
                                                     do_lower_case)
          if line:
            f.write(line + "\n")
            lines += 1
    if not lines:
      raise ValueError(f"no text in {input_patterns}: nothing to train a SentencePiece model on")
    prefix = os.path.join(tmp, "spm")
    try:
      _train(sentencepiece, text, prefix, vocab_size)
    except RuntimeError as e:
      # A small corpus cannot fill a large vocab; the trainer names the
      # largest it can, which we take (as build_vocab's WordPiece vocab is
      # then smaller too).
      largest = re.search(r"value <= (\d+)", str(e))
      if not largest:
        raise ValueError(f"SentencePiece training failed: {str(e).splitlines()[-1]}") from None
      logging.warning("the text fills at most %s pieces, fewer than vocab_size=%d: training "
                      "%s", largest.group(1), vocab_size, largest.group(1))
      vocab_size = int(largest.group(1))
      _train(sentencepiece, text, prefix, vocab_size)
    with files_lib.open_file(prefix + ".model", "rb") as f:
      model = f.read()
    with files_lib.open_file(prefix + ".vocab", "rb") as f:
      listing = f.read()
  vocab_path = os.path.splitext(model_file)[0] + ".vocab"
  files_lib.atomic_write(model_file, model)
  files_lib.atomic_write(vocab_path, listing)
  logging.info("Trained a SentencePiece model of %d pieces on %d lines: %s (and %s)",
               vocab_size, lines, model_file, vocab_path)
  return sentencepiece_vocab.SentencePieceVocab(model, path=model_file)
