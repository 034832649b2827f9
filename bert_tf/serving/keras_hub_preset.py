"""A keras-hub preset of a pretrained encoder and its preprocessor:
`keras_hub.models.BertBackbone.from_preset(dir)` (ElectraBackbone for
ELECTRA) loads it, with our whole BertConfig kept in its metadata."""

import json
import os

from absl import logging
import keras_hub

from bert_tf.io import file_io as files_lib
from bert_tf.models import activations
from bert_tf.models import config as config_lib
from bert_tf.serving import saved_model
from bert_tf.training import objectives


# What the preset's metadata.json holds under this key: the whole BertConfig
# (BertBackbone's config has one dropout rate, so attention_probs_dropout_prob
# and initializer_range would otherwise be lost) and the export's settings.
PRESET_METADATA_KEY = "bert_tf"


def save_keras_hub_preset(pretrainer, vocab_file, do_lower_case, preset_dir,
                          max_seq_length=None, overwrite=False):
  """Saves the encoder and its preprocessor as a keras-hub preset directory.

  keras_hub.models.BertBackbone.from_preset(preset_dir) then gives our
  encoder, and BertTextClassifier.from_preset(preset_dir, num_classes=...)
  a classifier on top of it whose preprocessor packs [CLS] A [SEP] (B [SEP])
  to `max_seq_length` tokens (keras-hub's default, 512, would not fit a
  model with fewer positions).

  BertBackbone takes one dropout rate, `hidden_dropout_prob`; a backbone
  loaded with keras-hub applies it to the attention probabilities too. The
  whole BertConfig (attention_probs_dropout_prob included) is kept in the
  preset's metadata.json under "bert_tf" (see `read_preset_bert_config`).

  Args:
    pretrainer: a modeling.BertPretrainer.
    vocab_file: the vocab the model was trained with.
    do_lower_case: whether the tokenizer lower-cases (uncased models).
    preset_dir: the directory to create.
    max_seq_length: sequence length of the saved preprocessor; None means
      `saved_model.default_max_seq_length(config)`.
    overwrite: replace an existing preset_dir.

  Raises:
    FileExistsError: preset_dir exists and overwrite is false.
    ValueError: max_seq_length out of [5, max_position_embeddings], a
      model with the exact GELU (keras-hub's backbones hard-code the tanh
      one), or an encoder its objective reads causally (a left-to-right
      LM's: a BertBackbone runs bidirectionally).
  """
  if objectives.of_model(pretrainer).export_objective.causal_encoder:
    raise ValueError("keras_hub_preset_out: this encoder is read left to right (its objective, "
                     "a left-to-right LM, trained it under a causal mask) and keras-hub's "
                     "BertBackbone runs it bidirectionally: not written (use --export_dir)")
  config = pretrainer.config
  if config.hidden_act != activations.TANH:
    raise ValueError(f"hidden_act={config.hidden_act!r}: keras-hub's backbones run the tanh "
                     "GELU only, so a preset would not give this model's outputs; use "
                     "--export_dir or --hf_out")
  if max_seq_length is None:
    max_seq_length = saved_model.default_max_seq_length(config)
  if not 5 <= max_seq_length <= config.max_position_embeddings:
    raise ValueError(
        f"max_seq_length={max_seq_length} must lie in [5, max_position_embeddings="
        f"{config.max_position_embeddings}]")

  def write(tmp):
    files_lib.makedirs(tmp)
    pretrainer.encoder.save_to_preset(tmp)
    if isinstance(pretrainer.encoder, keras_hub.models.ElectraBackbone):
      # ELECTRA: the discriminator as an ElectraBackbone and its tokenizer;
      # keras-hub has no ELECTRA task or preprocessor to save with them.
      keras_hub.models.ElectraTokenizer(
          vocabulary=vocab_file, lowercase=bool(do_lower_case)).save_to_preset(tmp)
    else:
      tokenizer = keras_hub.models.BertTokenizer(
          vocabulary=vocab_file, lowercase=bool(do_lower_case))
      # Saves preprocessor.json and the tokenizer (tokenizer.json + vocab asset).
      keras_hub.models.BertTextClassifierPreprocessor(
          tokenizer=tokenizer, sequence_length=max_seq_length).save_to_preset(tmp)
    metadata_path = os.path.join(tmp, "metadata.json")
    with files_lib.open_file(metadata_path, "r") as f:
      metadata = json.load(f)
    metadata[PRESET_METADATA_KEY] = {
        "bert_config": config.to_dict(), "max_seq_length": max_seq_length,
        "do_lower_case": bool(do_lower_case)}
    with files_lib.open_file(metadata_path, "w") as f:
      f.write(json.dumps(metadata, indent=4))
  with files_lib.atomic_dir(preset_dir, overwrite, "keras_hub_preset_out") as tmp:
    write(tmp)
  logging.info("Wrote keras-hub preset %s (sequence length %d)", preset_dir, max_seq_length)


def read_preset_bert_config(preset_dir):
  """The BertConfig that `save_keras_hub_preset` kept in the preset's metadata.

  Raises:
    ValueError: the preset has no bert_tf metadata (not written by bert_tf).
  """
  path = os.path.join(preset_dir, "metadata.json")
  with files_lib.open_file(path, "r") as f:
    metadata = json.load(f)
  if PRESET_METADATA_KEY not in metadata:
    raise ValueError(f"{path} has no {PRESET_METADATA_KEY!r} entry: not a bert_tf preset")
  return config_lib.BertConfig.from_dict(metadata[PRESET_METADATA_KEY]["bert_config"],
                                         source=path)
