"""Hugging Face transformers folders: finding them, reading their files, and
filling our models from them.

transformers 5 reads no TensorFlow format: a model leaves for it, and arrives
from it, as a folder of `config.json` and `model.safetensors` (plain arrays
under PyTorch module names; large models shard them with an index). This
module reads those (with the `safetensors` package's numpy API: no PyTorch),
the folder's WordPiece vocab (vocab.txt, or tokenizer.json's, which is all
transformers 5 saves), and fills a model through `tf1_checkpoint`'s map of
the original names, which `hf_names` renames; `hf_config` translates
config.json. An ELECTRA discriminator's folder holds its generator in
`generator/`.
"""

import dataclasses
import json
import os

from absl import logging
import numpy as np
from safetensors import numpy as st_numpy

from bert_tf.io import file_io
from bert_tf.data.tokenizers import sentencepiece_vocab
from bert_tf.data.tokenizers import tokenizer_json
from bert_tf.data.tokenizers import wordpiece_vocab
from bert_tf.models import hf_config
from bert_tf.models import hf_names
from bert_tf.models import tf1_checkpoint
from bert_tf.models.config import BertConfig
# The architectures, for callers of this module (see hf_config).
from bert_tf.models.hf_config import (  # pylint: disable=unused-import
    ALBERT_MASKED_LM, ALBERT_PRETRAINING, BERT_MASKED_LM, BERT_PRETRAINING, ELECTRA_MASKED_LM,
    ELECTRA_PRETRAINING, HEAD_ARCHITECTURES, HEAD_MODULES, MODEL_TYPES, QUESTION_ANSWERING,
    SEQUENCE_CLASSIFICATION, TOKEN_CLASSIFICATION)
from bert_tf.models.hf_names import GENERATOR_DIR

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
INDEX_NAME = "model.safetensors.index.json"
PYTORCH_NAME = "pytorch_model.bin"
VOCAB_NAME = "vocab.txt"
SPIECE_NAME = "spiece.model"
TOKENIZER_NAME = "tokenizer.json"
TOKENIZER_CONFIG_NAME = "tokenizer_config.json"


@dataclasses.dataclass(frozen=True)
class HfModel:
  """What a transformers folder's config.json says.

  folder: the folder; architecture: one of MODEL_TYPES' keys;
  bert_config: our BertConfig of the model (of the discriminator, for
    ELECTRA); generator_config: ELECTRA: the generator's BertConfig, from
    `generator/config.json` (None when the folder has no generator).
  """
  folder: str
  architecture: str
  bert_config: BertConfig
  generator_config: BertConfig | None = None

  @property
  def has_pooler(self):
    return self.architecture not in hf_config.NO_POOLER


# ------------------------------------------------------------------------------
# Folders and files
# ------------------------------------------------------------------------------


def is_hf_folder(path):
  """True when `path` is a directory holding a transformers `config.json`
  (with model.safetensors, a safetensors index or pytorch_model.bin)."""
  if not path or not file_io.isdir(path) or not file_io.exists(os.path.join(path, CONFIG_NAME)):
    return False
  return any(file_io.exists(os.path.join(path, name))
             for name in (WEIGHTS_NAME, INDEX_NAME, PYTORCH_NAME))


def _read_json(path):
  if not file_io.exists(path):
    raise FileNotFoundError(f"no {os.path.basename(path)} in {os.path.dirname(path)}")
  with file_io.open_file(path, "r") as f:
    try:
      return json.load(f)
    except json.JSONDecodeError as e:
      raise ValueError(f"{path} is not JSON: {e}") from None


def _architecture(d, source):
  names = d.get("architectures") or []
  known = [a for a in names if a in MODEL_TYPES]
  if not known:
    raise ValueError(
        f"{source}: architectures {names} holds none we read ({', '.join(MODEL_TYPES)}); "
        f"model_type {d.get('model_type')!r}")
  return known[0]


def read_hf_model(folder):
  """The HfModel of a transformers folder (its generator's too).

  Raises:
    FileNotFoundError: no config.json.
    ValueError: an architecture or setting we do not read, pytorch_model.bin
      without safetensors, or a vocab.txt whose size is not vocab_size.
  """
  source = os.path.join(folder, CONFIG_NAME)
  d = _read_json(source)
  architecture = _architecture(d, source)
  if not (file_io.exists(os.path.join(folder, WEIGHTS_NAME))
          or file_io.exists(os.path.join(folder, INDEX_NAME))):
    raise ValueError(
        f"{folder} has {PYTORCH_NAME} but no {WEIGHTS_NAME}: bert_tf reads safetensors only "
        f"(no PyTorch); convert it where torch is installed with "
        f"`AutoModelForPreTraining.from_pretrained(DIR).save_pretrained(DIR)` "
        f"(transformers writes safetensors by default)")
  config = hf_config.bert_config_from_hf(d, source)
  tokens, vocab_source = vocab_tokens(folder)
  spiece = spm_path(folder) if tokens is None else None
  if spiece:
    tokens, vocab_source = sentencepiece_vocab.load_sentencepiece(spiece).vocab.tokens, spiece
  if tokens is not None and len(tokens) != config.vocab_size:
    raise ValueError(f"{vocab_source} has {len(tokens)} tokens but {source} says vocab_size="
                     f"{config.vocab_size}")
  generator = None
  gen_folder = os.path.join(folder, GENERATOR_DIR)
  if architecture == ELECTRA_PRETRAINING and is_hf_folder(gen_folder):
    gen_source = os.path.join(gen_folder, CONFIG_NAME)
    gen_d = _read_json(gen_source)
    if _architecture(gen_d, gen_source) != ELECTRA_MASKED_LM:
      raise ValueError(f"{gen_source}: an ELECTRA generator is an {ELECTRA_MASKED_LM}")
    generator = hf_config.bert_config_from_hf(gen_d, gen_source)
    width = config.embedding_size or config.hidden_size
    if gen_d.get("embedding_size", gen_d.get("hidden_size")) != width:
      raise ValueError(f"{gen_source}: embedding_size={gen_d.get('embedding_size')} is not "
                       f"the discriminator's {width}: ELECTRA's networks share embeddings")
  return HfModel(folder, architecture, config, generator)


def vocab_tokens(folder):
  """(tokens in id order, the file read) of a folder's WordPiece vocab:
  vocab.txt, or the WordPiece model of tokenizer.json (transformers 5 saves
  no vocab.txt); (None, None) when it has neither.

  Raises:
    ValueError: WordPiece ids with gaps.
  """
  path = os.path.join(folder, VOCAB_NAME)
  if file_io.exists(path):
    with file_io.open_file(path, "r") as f:
      return [line.rstrip("\n").rstrip("\r") for line in f], path
  path = os.path.join(folder, TOKENIZER_NAME)
  if not file_io.exists(path):
    return None, None
  parsed, _ = tokenizer_json.read_tokenizer_json(path)
  if tokenizer_json.model_type(parsed) != tokenizer_json.WORDPIECE:
    return None, None  # SentencePiece (ALBERT's Unigram): spm_path
  return tokenizer_json.wordpiece_tokens(parsed, path), path


def spm_path(folder):
  """The folder's SentencePiece model when it has no WordPiece vocab:
  spiece.model, else a tokenizer.json with a Unigram model (transformers 5
  saves ALBERT's so); None otherwise."""
  if file_io.exists(os.path.join(folder, VOCAB_NAME)):
    return None
  if file_io.exists(os.path.join(folder, SPIECE_NAME)):
    return os.path.join(folder, SPIECE_NAME)
  path = os.path.join(folder, TOKENIZER_NAME)
  if file_io.exists(path):
    parsed, _ = tokenizer_json.read_tokenizer_json(path)
    if tokenizer_json.model_type(parsed) == tokenizer_json.UNIGRAM:
      return path
  return None


def vocab_path(folder):
  """A vocab.txt path of the folder's WordPiece vocab: its own, or one
  written from tokenizer.json to a local temporary folder
  (`wordpiece_vocab.vocab_txt_path`).

  Raises:
    ValueError: no WordPiece vocab there (see `vocab_tokens`).
  """
  tokens, source = vocab_tokens(folder)
  if tokens is None and spm_path(folder):
    raise ValueError(f"{folder} has a SentencePiece model, no WordPiece vocab: give "
                     f"--spm_model_file={spm_path(folder)}")
  if tokens is None:
    raise ValueError(f"{folder} has no {VOCAB_NAME} or {TOKENIZER_NAME}: give --vocab_file")
  return wordpiece_vocab.vocab_txt_path(source)


def do_lower_case(folder):
  """The folder's tokenizer casing (tokenizer_config.json's do_lower_case,
  else tokenizer.json's normalizer), or None when it does not say."""
  path = os.path.join(folder, TOKENIZER_CONFIG_NAME)
  if file_io.exists(path):
    value = _read_json(path).get("do_lower_case")
    if value is not None:
      return bool(value)
  path = os.path.join(folder, TOKENIZER_NAME)
  if file_io.exists(path):
    value = (_read_json(path).get("normalizer") or {}).get("lowercase")
    if value is not None:
      return bool(value)
  return None


def _weight_files(folder):
  if file_io.exists(os.path.join(folder, WEIGHTS_NAME)):
    return [WEIGHTS_NAME]
  index = _read_json(os.path.join(folder, INDEX_NAME))
  return sorted(set(index["weight_map"].values()))


def _normalized(name, prefix):
  """transformers' current name of a stored tensor: an encoder saved alone
  (BertModel, ...) lacks `prefix`; older files (bert-base-uncased's) name
  LayerNorm's parameters gamma and beta, as transformers still reads."""
  if prefix and not name.startswith(prefix):
    name = prefix + name
  if name.endswith(".gamma"):
    return name[:-len("gamma")] + "weight"
  if name.endswith(".beta"):
    return name[:-len("beta")] + "bias"
  return name


def read_safetensors(folder, prefix=""):
  """dict name -> np.ndarray of a folder's model.safetensors (or its
  shards), under transformers' current names (`_normalized`)."""
  weights = {}
  for name in _weight_files(folder):
    with file_io.open_file(os.path.join(folder, name), "rb") as f:
      weights.update((_normalized(k, prefix), v) for k, v in st_numpy.load(f.read()).items())
  return weights


def tensor_names(folder, prefix=""):
  """The names of the tensors a folder holds, from the safetensors headers
  alone (the 8-byte length, then JSON): no weight is read."""
  names = set()
  for name in _weight_files(folder):
    with file_io.open_file(os.path.join(folder, name), "rb") as f:
      length = int.from_bytes(f.read(8), "little")
      header = json.loads(f.read(length))
    names.update(_normalized(k, prefix) for k in header if k != "__metadata__")
  return names


def safetensors_bytes(weights):
  """The bytes of a model.safetensors holding `weights` (name -> array),
  with the metadata transformers writes ({"format": "pt"})."""
  return st_numpy.save({k: np.ascontiguousarray(v) for k, v in sorted(weights.items())},
                       metadata={"format": "pt"})


# ------------------------------------------------------------------------------
# Reading into a model
# ------------------------------------------------------------------------------


def load_hf_weights(model, folder, require_heads=True):
  """Fills a BertPretrainer (or ElectraPretrainer) from a transformers folder.

  Args:
    model: a model whose config is the folder's (`read_hf_model`).
    folder: the folder (local or gs://).
    require_heads: False (a warm start) lets the heads the folder lacks
      (a masked-LM model's sentence head, an ELECTRA discriminator without
      its generator/) keep their initialization. A masked-LM architecture
      has no pooler: ours keeps its initialization either way (as in a
      masked-LM run, no loss trains it).

  Returns:
    tf1_checkpoint.load_tf1_checkpoint's dict ("loaded", "missing_heads",
    "unused" in TF1 names) plus "architecture".

  Raises:
    ValueError: another architecture than the model's, a missing tensor
      (named as transformers names it), or a shape that does not fit;
      nothing is assigned then.
  """
  info = read_hf_model(folder)
  have, want = MODEL_TYPES[info.architecture], tf1_checkpoint.model_type(model)
  if have != want:
    raise ValueError(f"{folder} holds an {info.architecture} ({have}) but the model is "
                     f"{want}: use the config and objective of the folder's model")
  if want == "electra" and info.generator_config is None and require_heads:
    raise ValueError(f"{folder} has no {GENERATOR_DIR}/ folder (an {ELECTRA_MASKED_LM}): "
                     "the ELECTRA model needs its generator here (a warm start may do "
                     "without)")
  weights = {"": read_safetensors(folder, hf_config.BASE_MODELS.get(info.architecture, ""))}
  if info.generator_config is not None:
    weights[GENERATOR_DIR] = read_safetensors(os.path.join(folder, GENERATOR_DIR))
  shapes = tf1_checkpoint.tf1_shapes(model)
  tf1 = hf_names.from_hf(shapes, want, weights)
  optional = () if info.has_pooler else ("bert/pooler/",)
  for name, places in hf_names.transformers_names(shapes, want).items():
    folder_key, hf_name, _ = places[0]
    if name in tf1 or name.startswith(optional):
      continue
    head = name.startswith(tf1_checkpoint.HEAD_PREFIXES)
    if head and not require_heads:
      continue
    where = os.path.join(folder, folder_key, WEIGHTS_NAME)
    raise ValueError(f"{where} has no tensor {hf_name}"
                     + (" (the model's heads are needed here)" if head else ""))
  if want == "electra" and GENERATOR_DIR in weights:
    for name, places in hf_names.transformers_names([n for n in shapes if n.startswith("electra/embeddings/")],
                                 want).items():
      gen = weights[GENERATOR_DIR].get(places[1][1])
      if gen is not None and not np.array_equal(gen, weights[""].get(places[1][1])):
        logging.warning("%s: the generator's %s differs from the discriminator's; ELECTRA "
                        "shares its embeddings, the discriminator's are used", folder,
                        places[1][1])
        break
  result = tf1_checkpoint.load_tf1_weights(model, tf1, require_heads=require_heads,
                                           optional=optional, source=folder)
  used = set()
  for places in hf_names.transformers_names(result["loaded"], want).values():
    used.update((f, n) for f, n, _ in places)
  result["unused"] = sorted(os.path.join(f, n) for f, w in weights.items() for n in w
                            if (f, n) not in used and not _tied(n))
  result["architecture"] = info.architecture
  return result


@dataclasses.dataclass(frozen=True)
class HfHead:
  """A fine-tuned folder's head, as our Dense layers hold it.

  task: SEQUENCE_CLASSIFICATION, QUESTION_ANSWERING or TOKEN_CLASSIFICATION;
  kernel: [hidden, num_outputs]; bias: [num_outputs]; labels: the names of
  the outputs in order (config.json's id2label; None for question
  answering); regression: problem_type "regression".
  """
  task: str
  kernel: np.ndarray
  bias: np.ndarray
  labels: list | None
  regression: bool = False


def read_hf_head(folder):
  """The HfHead of a folder of a fine-tuned class (BertForSequenceClassification,
  BertForQuestionAnswering, ...).

  Raises:
    ValueError: another architecture, an ELECTRA sequence classifier (its
      two-layer head is not ours), or a missing head tensor.
  """
  info = read_hf_model(folder)
  if info.architecture not in HEAD_ARCHITECTURES:
    raise ValueError(f"{folder} holds an {info.architecture}, not a fine-tuned model "
                     f"(one of {', '.join(sorted(HEAD_ARCHITECTURES))})")
  model_type, task = HEAD_ARCHITECTURES[info.architecture]
  if model_type == "electra" and task == SEQUENCE_CLASSIFICATION:
    raise ValueError(f"{folder}: ElectraForSequenceClassification's head (dense, GELU, "
                     "out_proj) is not bert_tf's (one dense layer on the [CLS] vector): "
                     "its encoder reads as --init_checkpoint, its head does not")
  weights = read_safetensors(folder)
  module = HEAD_MODULES[task]
  names = (f"{module}.weight", f"{module}.bias")
  missing = [n for n in names if n not in weights]
  if missing:
    raise ValueError(f"{os.path.join(folder, WEIGHTS_NAME)} has no tensor {missing[0]}")
  d = _read_json(os.path.join(folder, CONFIG_NAME))
  labels = None
  if task != QUESTION_ANSWERING:
    id2label = d.get("id2label") or {}
    count = weights[names[0]].shape[0]
    labels = [str(id2label.get(str(i), id2label.get(i, f"LABEL_{i}"))) for i in range(count)]
  return HfHead(task, np.asarray(weights[names[0]]).T, np.asarray(weights[names[1]]), labels,
                d.get("problem_type") == "regression")


def load_hf_head(layer, folder, task, labels=None):
  """Fills our head (a Dense `layer`) from a fine-tuned folder of `task`
  when `folder` is one; its outputs reordered to `labels` (names) by the
  folder's id2label.

  Returns:
    A line saying what was read, or None: not a folder of that task, or
    one whose labels (or outputs) are not the task's (logged); the head
    keeps its initialization then, as a new task's does.
  """
  if not (folder and is_hf_folder(folder)):
    return None
  architecture = read_hf_model(folder).architecture
  if HEAD_ARCHITECTURES.get(architecture, (None, None))[1] != task:
    return None
  head = read_hf_head(folder)
  kernel, bias = head.kernel, head.bias
  if labels is not None and not head.regression:
    labels = [str(label) for label in labels]
    if sorted(head.labels) != sorted(labels):
      logging.warning("%s: its head's labels %s (config.json id2label) are not the task's %s: "
                      "the head starts new", folder, head.labels, labels)
      return None
    order = [head.labels.index(label) for label in labels]
    kernel, bias = kernel[:, order], bias[order]
  if tuple(layer.kernel.shape) != kernel.shape:
    logging.warning("%s: its %s head has shape %s, the model's %s: the head starts new",
                    folder, architecture, list(kernel.shape), list(layer.kernel.shape))
    return None
  layer.kernel.assign(kernel)
  layer.bias.assign(bias)
  return f"its {architecture} head from {folder}"


def _tied(name):
  """Tensors transformers ties to others (some files store them)."""
  return name.endswith(("predictions.decoder.weight", "predictions.decoder.bias",
                        "generator_lm_head.weight")) or name.endswith("position_ids")


def config_for(bert_config_file, checkpoint, flag):
  """The BertConfig of `bert_config_file`, or, when `checkpoint` is a
  transformers folder, of its config.json when no file is given; both: they
  must agree on every key that shapes the weights.

  Raises:
    ValueError: one line naming `flag`: no config, a bad file, or a
      disagreement (naming the keys and both values).
  """
  hf_folder = checkpoint if checkpoint and is_hf_folder(checkpoint) else None
  folder_config = read_hf_model(hf_folder).bert_config if hf_folder else None
  if not bert_config_file:
    if folder_config is None:
      raise ValueError(f"--{flag} is required (the checkpoint is not a transformers folder)")
    return folder_config
  try:
    config = BertConfig.from_json_file(bert_config_file)
  except (ValueError, OSError) as e:
    raise ValueError(f"--{flag}={bert_config_file}: {e}") from None
  if folder_config is not None:
    keys = hf_config.differing_keys(config, folder_config)
    if keys:
      values = ", ".join(f"{k}={getattr(config, k)!r} (folder: {getattr(folder_config, k)!r})"
                         for k in keys)
      raise ValueError(f"--{flag}={bert_config_file} disagrees with {hf_folder}/"
                       f"{CONFIG_NAME}: {values}; leave --{flag} out to use "
                       "the folder's")
  return config


def model_files(checkpoint, bert_config_file, vocab_file, spm_model_file="",
                config_flag="bert_config_file"):
  """(BertConfig, vocab file, SentencePiece model, casing) of a tool that
  reads `checkpoint`: the files given, or for a transformers folder its
  config.json and tokenizer in the place of those not given. The tokenizer
  is one of the two: a WordPiece vocab.txt (the SentencePiece model "") or a
  SentencePiece model (spiece.model, or a Unigram tokenizer.json; the vocab
  ""), as google-research/albert reads --spm_model_file in the place of
  --vocab_file. casing is the folder's tokenizer's do_lower_case (None: not
  a folder, or it does not say).

  Raises:
    ValueError: one line naming the flag: a file missing that no folder
      stands in for, a bad config, or a given config that disagrees with the
      folder's.
  """
  folder = checkpoint if checkpoint and is_hf_folder(checkpoint) else None
  config = config_for(bert_config_file, checkpoint, config_flag)
  casing = do_lower_case(folder) if folder else None
  if spm_model_file:  # the SentencePiece model is the vocabulary; vocab_file is not read
    return config, "", spm_model_file, casing
  if not vocab_file:
    if folder is None:
      raise ValueError("--vocab_file (or --spm_model_file) is required (the checkpoint is "
                       "not a transformers folder)")
    spiece = spm_path(folder)
    if spiece:
      return config, "", spiece, casing
    vocab_file = vocab_path(folder)
  else:  # a tokenizer.json, or a folder, given as --vocab_file
    vocab_file = wordpiece_vocab.vocab_txt_path(vocab_file)
  return config, vocab_file, "", casing
