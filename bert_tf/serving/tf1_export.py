"""The original TF1 checkpoint layout of a pretrained BERT: what an original
release directory holds (bert_model.ckpt.*, bert_config.json, vocab.txt),
for the original's tools and Hugging Face's converter."""

import os

from absl import logging

from bert_tf.io import file_io as files_lib
from bert_tf.data.tokenizers import sentencepiece_vocab
from bert_tf.data.tokenizers import wordpiece_vocab
from bert_tf.models import activations
from bert_tf.models import tf1_checkpoint


# Names of the released layout (e.g. uncased_L-12_H-768_A-12/): the config and
# vocab lie beside bert_model.ckpt.*.
TF1_CONFIG_NAME = "bert_config.json"
TF1_VOCAB_NAME = "vocab.txt"


def tf1_checkpoint_files(prefix, spm_model_file=None):
  """The files `write_tf1_checkpoint(prefix)` writes, index last.

  Returns:
    list of paths: bert_config.json and vocab.txt (with spm_model_file: the
    SentencePiece model under its own name, as ALBERT's releases hold
    30k-clean.model) in the prefix's directory, then
    prefix.data-00000-of-00001 and prefix.index.
  """
  parent = os.path.dirname(prefix)
  vocab_name = os.path.basename(spm_model_file) if spm_model_file else TF1_VOCAB_NAME
  return [os.path.join(parent, TF1_CONFIG_NAME), os.path.join(parent, vocab_name),
          prefix + ".data-00000-of-00001", prefix + ".index"]


def write_tf1_checkpoint(pretrainer, prefix, vocab_file, overwrite=False, spm_model_file=None):
  """Writes the model as an original release is laid out.

  `prefix.index` and `prefix.data-00000-of-00001` hold the weights under the
  original TF1 names; `bert_config.json` (the model's config, keys it does
  not use included) and `vocab.txt` (a copy of `vocab_file`) are written
  beside them, so the directory is what the original's tools (and
  HuggingFace's converter) take. Everything is written under temporary names
  first and renamed at the end, the index last: an existing `prefix.index`
  means a complete directory.

  Args:
    pretrainer: a modeling.BertPretrainer.
    prefix: checkpoint prefix, e.g. `.../bert_model.ckpt`; local or gs://.
    vocab_file: the vocab the model was trained with.
    overwrite: replace the checkpoint, config and vocab if they exist.
    spm_model_file: the SentencePiece model the model was trained with
      instead (copied beside under its own name; vocab_file is not read).

  Raises:
    FileExistsError: one of the four files exists and overwrite is false.
    ValueError: the vocab's size is not the config's vocab_size.
  """
  files = tf1_checkpoint_files(prefix, spm_model_file)
  for path in files:
    files_lib.check_absent(path, overwrite, "tf1_checkpoint_out file")
  if spm_model_file:
    vocab, vocab_file = sentencepiece_vocab.load_sentencepiece(spm_model_file).vocab, spm_model_file
  else:
    vocab = wordpiece_vocab.load_vocab(vocab_file)
  if vocab.size != pretrainer.config.vocab_size:
    raise ValueError(
        f"vocab file {vocab_file} has {vocab.size} tokens but the bert_config's "
        f"vocab_size is {pretrainer.config.vocab_size}")
  if pretrainer.config.hidden_act == activations.EXACT:
    logging.warning("tf1_checkpoint_out: hidden_act \"gelu_exact\" (a model from transformers) "
                    "is not a name the original BERT code reads (it knows only the tanh "
                    "\"gelu\")")
  tmp_prefix = files_lib.temp_path(prefix)
  tmp_config, tmp_vocab = files_lib.temp_path(files[0]), files_lib.temp_path(files[1])
  temps = [tmp_config, tmp_vocab] + [tmp_prefix + p[len(prefix):] for p in files[2:]]
  with files_lib.atomic_paths(files, temps):  # renamed in files' order, the index last
    with files_lib.open_file(tmp_config, "w") as f:
      f.write(pretrainer.config.to_json_string())
    files_lib.copy(vocab_file, tmp_vocab, overwrite=True)
    tf1_checkpoint.save_tf1_checkpoint(pretrainer, tmp_prefix)
  logging.info("Wrote TF1 checkpoint %s with %s and %s beside it", prefix,
               TF1_CONFIG_NAME, TF1_VOCAB_NAME)
