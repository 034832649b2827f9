"""Export of an ELECTRA checkpoint: the discriminator as the encoder, the
generator for fill_mask, the replaced_token_detection signature, ELECTRA's
TF1 names in --tf1_checkpoint_out, and the keras-hub ElectraBackbone preset."""

import json

import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import electra
from bert_tf.models import tf1_checkpoint
from bert_tf.serving import export
from bert_tf.serving import saved_model
from bert_tf.training import objectives

from helpers.serving_model import CONFIG, MAX_SEQ_LENGTH, TOP_K, VOCAB, write_vocab


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  root = tmp_path_factory.mktemp("electra_export")
  vocab_file = write_vocab(root / "vocab.txt")
  config_file = root / "bert_config.json"
  config_file.write_text(json.dumps(CONFIG.to_dict()))
  objective = objectives.ElectraObjective(
      objectives.ElectraSettings(generator_hidden_size=0.5, mask_token_id=4))
  model = objective.build_model(CONFIG)
  tf.train.Checkpoint(model=model, **objectives.checkpoint_variables(objective)).save(
      str(root / "train" / "ckpt"))
  options = export.ExportOptions(
      bert_config_file=str(config_file), checkpoint=str(root / "train"), vocab_file=vocab_file,
      export_dir=str(root / "saved_model"), max_seq_length=MAX_SEQ_LENGTH, top_k=TOP_K,
      tf1_checkpoint_out=str(root / "tf1" / "model.ckpt"),
      keras_hub_preset_out=str(root / "preset"))
  export.run_export(options)
  return {"model": model, "options": options,
          "loaded": tf.saved_model.load(options.export_dir)}


def _ids(texts_tokens):
  width = max(len(t) for t in texts_tokens)
  ids = np.zeros((len(texts_tokens), width), np.int32)
  for i, tokens in enumerate(texts_tokens):
    ids[i, :len(tokens)] = [VOCAB.index(t) for t in tokens]
  return ids, (ids > 0).astype(np.int32)



def test_the_text_signatures_are_declared_by_the_export_objective(exported):
  from helpers.pretraining import tiny_bert_config  # pylint: disable=g-import-not-at-top
  config = tiny_bert_config()
  for name, expected in (("mlm", ("fill_mask",)), ("mlm_nsp", ("fill_mask", "next_sentence")),
                         ("mlm_sop", ("fill_mask", "sentence_order"))):
    objective = objectives.get(name)
    assert objective.text_signatures == expected
  # A distilled student exports as its own objective.
  student = objectives.get("distill_mlm_sop").export_objective
  assert student.text_signatures == (
      "fill_mask", "sentence_order")
  # ELECTRA: the generator's fill_mask and the discriminator's detection.
  electra_objective = objectives.get("electra")
  assert electra_objective.text_signatures == (
      "fill_mask", "replaced_token_detection")
  assert {"fill_mask", "replaced_token_detection"} <= set(exported["loaded"].signatures)
  assert "next_sentence" not in exported["loaded"].signatures

def test_signatures_are_the_discriminator_and_the_generator(exported):
  loaded, model = exported["loaded"], exported["model"]
  assert set(loaded.signatures) == {"serving_default", "pretraining", "encode", "fill_mask",
                                    "replaced_token_detection"}
  ids, mask = _ids([["[CLS]", "the", "day", "[MASK]", "long", "[SEP]"],
                    ["[CLS]", "water", "[SEP]"]])
  segments = np.zeros_like(ids)
  positions = np.array([[3, 1], [1, 0]], np.int32)
  out = loaded.signatures["pretraining"](
      input_ids=tf.constant(ids), input_mask=tf.constant(mask),
      segment_ids=tf.constant(segments), masked_lm_positions=tf.constant(positions))
  gen = model.generator_logits(ids, segments, mask, positions)
  np.testing.assert_allclose(out["masked_lm_log_probs"], tf.nn.log_softmax(gen), atol=1e-5)
  disc_logits, sequence = model.discriminate(ids, segments, mask)
  np.testing.assert_allclose(out["replaced_probability"], tf.sigmoid(disc_logits), atol=1e-5)
  enc = loaded.signatures["encode"](input_ids=tf.constant(ids), input_mask=tf.constant(mask),
                                    segment_ids=tf.constant(segments))
  np.testing.assert_allclose(enc["sequence_output"], sequence, atol=1e-5)
  np.testing.assert_allclose(enc["pooled_output"], sequence[:, 0], atol=1e-5)  # no pooler

  fill = loaded.signatures["fill_mask"](text=tf.constant(["the day [MASK] long"]))
  expected = tf.math.top_k(tf.nn.softmax(gen[0, 0]), TOP_K).indices.numpy()
  np.testing.assert_array_equal(fill["top_k_ids"][0, 0].numpy(), expected)


def test_replaced_token_detection_gives_a_probability_per_token(exported):
  loaded, model = exported["loaded"], exported["model"]
  long_text = " ".join(["water"] * 30)
  out = loaded.signatures["replaced_token_detection"](
      text=tf.constant(["The day was long", "", long_text]))
  tokens = out["tokens"].numpy().astype(str)
  assert tokens.shape == (3, MAX_SEQ_LENGTH)
  assert tokens[0, :6].tolist() == ["[CLS]", "the", "day", "was", "long", "[SEP]"]
  assert set(tokens[0, 6:]) == {""}
  ids, mask = _ids([tokens[0, :6].tolist()])
  logits, _ = model.discriminate(ids, np.zeros_like(ids), mask)
  probability = out["replaced_probability"].numpy()
  np.testing.assert_allclose(probability[0, :6], tf.sigmoid(logits)[0], atol=1e-5)
  assert np.all(probability[0, 6:] == 0)
  assert out["error"].numpy().astype(str).tolist() == ["", saved_model.ERROR_EMPTY_TEXT, ""]
  assert out["truncated"].numpy().tolist() == [False, False, True]


def test_tf1_checkpoint_out_has_electras_names(exported):
  prefix = exported["options"].tf1_checkpoint_out
  names = set(tf.train.list_variables(prefix) and dict(tf.train.list_variables(prefix)))
  assert "electra/embeddings/word_embeddings" in names
  assert "generator/encoder/layer_0/attention/self/query/kernel" in names
  assert "discriminator_predictions/dense_1/kernel" in names
  assert not any(n.startswith(("bert/", "cls/")) for n in names)
  # The same weights read back by name into a model of the same settings.
  model = exported["model"]
  fresh = objectives.from_checkpoint(tf.train.latest_checkpoint(
      str(exported["options"].checkpoint))).build_model(CONFIG)
  assert fresh.generator_config.hidden_size == 8
  tf1_checkpoint.load_tf1_checkpoint(fresh, prefix)
  for a, b in zip(fresh.weights, model.weights):
    if "sample_step" not in a.path and "pooled_dense" not in a.path:  # no TF1 names
      np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)


def test_keras_hub_electra_backbone_preset(exported):
  preset = exported["options"].keras_hub_preset_out
  backbone = keras_hub.models.ElectraBackbone.from_preset(preset)
  inputs = {"token_ids": np.array([[2, 10, 11, 4, 3, 0]], np.int32),
            "segment_ids": np.zeros([1, 6], np.int32),
            "padding_mask": np.array([[1, 1, 1, 1, 1, 0]], np.int32)}
  np.testing.assert_allclose(backbone(inputs)["sequence_output"],
                             exported["model"].encoder(inputs)["sequence_output"], atol=1e-6)
  tokenizer = keras_hub.models.ElectraTokenizer.from_preset(preset)
  assert np.asarray(tokenizer("The day")).tolist() == [VOCAB.index("the"), VOCAB.index("day")]
  assert isinstance(exported["model"], electra.ElectraPretrainer)
