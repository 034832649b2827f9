"""Export of an ALBERT model: from an original ALBERT TF1 checkpoint to a
SavedModel, a TF1 checkpoint with ALBERT's names and a keras-hub preset; and
an ALBERT config given a BERT checkpoint."""

import json
import os

import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import modeling
from bert_tf.models.config import BertConfig
from bert_tf.serving import export
from bert_tf.serving import keras_hub_preset
from bert_tf.serving import tf1_export

from helpers import reference_albert
from helpers import reference_bert
from helpers.serving_model import VOCAB, write_vocab
from helpers.checkpoints import write_tf1_checkpoint
from helpers.checkpoints import load_recorded

ALBERT = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=3,
                    num_attention_heads=2, intermediate_size=32,
                    max_position_embeddings=40, type_vocab_size=2,
                    embedding_size=8, num_hidden_groups=1, inner_group_num=1,
                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  root = tmp_path_factory.mktemp("albert_export")
  vocab_file = write_vocab(root / "vocab.txt")
  config_file = str(root / "albert_config.json")
  ALBERT.to_json_file(config_file)
  weights = reference_albert.random_tf1_weights(ALBERT, np.random.default_rng(1))
  prefix = write_tf1_checkpoint(str(root / "orig" / "model.ckpt"), weights)
  options = export.ExportOptions(
      bert_config_file=config_file, checkpoint=prefix, vocab_file=vocab_file,
      export_dir=str(root / "saved_model"), max_seq_length=16, text_signatures=False,
      tf1_checkpoint_out=str(root / "roundtrip" / "model.ckpt"),
      keras_hub_preset_out=str(root / "preset"))
  export.run_export(options)
  return {"root": root, "weights": weights, "options": options, "prefix": prefix,
          "vocab_file": vocab_file}


def _ids():
  return {"input_ids": np.array([[2, 10, 11, 4, 3, 0], [2, 12, 3, 13, 14, 3]], np.int32),
          "input_mask": np.array([[1, 1, 1, 1, 1, 0], [1] * 6], np.int32),
          "segment_ids": np.array([[0] * 6, [0, 0, 0, 1, 1, 1]], np.int32),
          "masked_lm_positions": np.array([[3, 1], [1, 4]], np.int32)}


def test_saved_model_matches_numpy_albert(exported):
  loaded = tf.saved_model.load(exported["options"].export_dir)
  batch = _ids()
  out = loaded.signatures["pretraining"](**{k: tf.constant(v) for k, v in batch.items()})
  expected = reference_albert.reference_forward(exported["weights"], ALBERT, **batch)
  np.testing.assert_allclose(out["masked_lm_log_probs"], expected["mlm_log_probs"], atol=1e-4)
  np.testing.assert_allclose(out["next_sentence_log_probs"], expected["sop_log_probs"],
                             atol=1e-4)


def test_tf1_checkpoint_out_has_albert_names_bit_for_bit(exported):
  out = exported["options"].tf1_checkpoint_out
  reader = tf.train.load_checkpoint(out)
  assert set(reader.get_variable_to_shape_map()) == set(exported["weights"])
  for name, value in exported["weights"].items():
    assert np.array_equal(reader.get_tensor(name), value), name
  config = BertConfig.from_json_file(os.path.join(os.path.dirname(out),
                                                  tf1_export.TF1_CONFIG_NAME))
  assert config == ALBERT and config.is_albert


def test_keras_hub_preset_is_an_albert_backbone(exported):
  preset = exported["options"].keras_hub_preset_out
  backbone = keras_hub.models.AlbertBackbone.from_preset(preset)
  pretrainer, _ = load_recorded(ALBERT, exported["prefix"])
  batch = _ids()
  inputs = {"token_ids": batch["input_ids"], "segment_ids": batch["segment_ids"],
            "padding_mask": batch["input_mask"]}
  ours, theirs = pretrainer.encoder(inputs), backbone(inputs)
  np.testing.assert_allclose(theirs["sequence_output"], ours["sequence_output"], atol=1e-6)
  assert backbone.embedding_dim == 8 and backbone.num_groups == 1
  assert keras_hub_preset.read_preset_bert_config(preset) == ALBERT
  # The tokenizer saved beside it is the WordPiece one the data used.
  with open(os.path.join(preset, "tokenizer.json"), encoding="utf-8") as f:
    assert json.load(f)["class_name"].endswith("BertTokenizer")


@pytest.mark.parametrize("albert_config", [True, False])
def test_mismatched_family_is_one_line_and_writes_nothing(exported, tmp_path, albert_config):
  if albert_config:
    bert = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2,
                      num_attention_heads=2, intermediate_size=32,
                      max_position_embeddings=40, type_vocab_size=2)
    weights = reference_bert.random_tf1_weights(bert, np.random.default_rng(2))
    checkpoint = write_tf1_checkpoint(str(tmp_path / "bert" / "bert_model.ckpt"), weights)
    config = ALBERT
  else:
    checkpoint = exported["prefix"]
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=3,
                        num_attention_heads=2, intermediate_size=32,
                        max_position_embeddings=40, type_vocab_size=2)
  config_file = str(tmp_path / "config.json")
  config.to_json_file(config_file)
  options = export.ExportOptions(
      bert_config_file=config_file, checkpoint=checkpoint,
      vocab_file=exported["vocab_file"], export_dir=str(tmp_path / "out" / "saved_model"),
      tf1_checkpoint_out=str(tmp_path / "out" / "tf1" / "model.ckpt"),
      keras_hub_preset_out=str(tmp_path / "out" / "preset"))
  with pytest.raises(ValueError) as e:
    export.run_export(options)
  message = str(e.value)
  assert "\n" not in message and checkpoint in message
  have, want = ("BERT", "ALBERT") if albert_config else ("ALBERT", "BERT")
  assert f"original {have} checkpoint" in message and f"an {want} config" in message
  assert not os.path.exists(tmp_path / "out")
