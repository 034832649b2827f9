"""models/hf_checkpoint.py against tiny models that transformers itself saved
(tests/fixtures/transformers, made by its make_fixtures.py in a torch venv):
our name map gives exactly the tensors transformers writes, a model read
from each folder computes transformers' outputs, and bad folders are
one-line errors that leave the model untouched."""

import json
import math
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.tokenizers import tokenization
from bert_tf.data.tokenizers import wordpiece_vocab
from bert_tf.models import activations
from bert_tf.models import hf_checkpoint as hf
from bert_tf.models import hf_config
from bert_tf.models import hf_names
from bert_tf.models import tf1_checkpoint
from bert_tf.training import checkpoints
from bert_tf.training import objectives

from helpers.hf_fixtures import FIXTURES, MODELS, fixture

TOLERANCE = 1e-4


def load(name, folder=None, require_heads=True):
  """(model read from the folder, its fixture outputs)."""
  folder = folder or fixture(name)
  info = hf.read_hf_model(folder)
  model = objectives.from_checkpoint(folder).build_model(info.bert_config)
  checkpoints.read_weights(model, folder, require_all=require_heads)
  return model, dict(np.load(os.path.join(fixture(name), "outputs.npz")))


def log_softmax(x):
  x = x - x.max(-1, keepdims=True)
  return x - np.log(np.exp(x).sum(-1, keepdims=True))


def bert_outputs(model, o):
  positions = np.tile(np.arange(o["input_ids"].shape[1]), (o["input_ids"].shape[0], 1))
  return {k: v.numpy() for k, v in model(
      {"input_ids": o["input_ids"], "segment_ids": o["token_type_ids"],
       "input_mask": o["attention_mask"], "masked_lm_positions": positions}).items()}


def electra_outputs(model, o):
  ids, types, mask = (tf.constant(o[k], tf.int32)
                      for k in ("input_ids", "token_type_ids", "attention_mask"))
  logits, sequence = model.discriminate(ids, types, mask)
  positions = tf.tile(tf.range(ids.shape[1])[None], (ids.shape[0], 1))
  gen = model.generator_logits(ids, types, mask, positions)
  return {"logits": logits.numpy(), "sequence_output": sequence.numpy(),
          "generator_logits": gen.numpy()}


def real(o):
  return o["attention_mask"].astype(bool)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_config_json_gives_our_config_and_objective(name):
  architecture, objective, act = MODELS[name]
  info = hf.read_hf_model(fixture(name))
  assert info.architecture == architecture
  assert info.bert_config.hidden_act == act
  assert info.bert_config.vocab_size == 79 and info.bert_config.hidden_size == 32
  assert objectives.from_checkpoint(fixture(name)).name == objective
  assert checkpoints.resolve_checkpoint(fixture(name)) == fixture(name)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_our_name_map_gives_exactly_the_tensors_transformers_saved(name):
  """Every tensor transformers wrote, and no other, with its shape, for the
  model our objective builds from the folder's config (both folders of
  ELECTRA)."""
  architecture, _, _ = MODELS[name]
  info = hf.read_hf_model(fixture(name))
  model = objectives.from_checkpoint(fixture(name)).build_model(info.bert_config)
  written = hf_names.to_hf(tf1_checkpoint.tf1_weights_from_model(model),
                     tf1_checkpoint.model_type(model), architecture)
  assert sorted(written) == (["", "generator"] if name.startswith("electra") else [""])
  for sub, weights in written.items():
    saved = hf.read_safetensors(os.path.join(fixture(name), sub))
    assert sorted(weights) == sorted(saved)
    assert {k: v.shape for k, v in weights.items()} == {k: v.shape for k, v in saved.items()}


@pytest.mark.parametrize("name", ["bert_for_pretraining", "bert_for_masked_lm",
                                  "albert_for_pretraining"])
def test_a_model_read_from_a_folder_computes_transformers_outputs(name):
  model, o = load(name)
  ours = bert_outputs(model, o)
  mask = real(o)
  np.testing.assert_allclose(ours["sequence_output"][mask], o["sequence_output"][mask],
                             atol=TOLERANCE)
  logits = o["prediction_logits"] if "prediction_logits" in o else o["logits"]
  np.testing.assert_allclose(log_softmax(ours["mlm_logits"])[mask], log_softmax(logits)[mask],
                             atol=TOLERANCE)
  for key in ("seq_relationship_logits", "sop_logits"):
    if key in o:
      np.testing.assert_allclose(log_softmax(ours["nsp_logits"]), log_softmax(o[key]),
                                 atol=TOLERANCE)
      np.testing.assert_allclose(ours["pooled_output"], o["pooled_output"], atol=TOLERANCE)


def test_electra_discriminator_and_generator_compute_transformers_outputs():
  model, o = load("electra_for_pretraining")
  gen = dict(np.load(os.path.join(fixture("electra_for_pretraining"), "generator",
                                  "outputs.npz")))
  ours = electra_outputs(model, o)
  mask = real(o)
  np.testing.assert_allclose(ours["logits"][mask], o["logits"][mask], atol=TOLERANCE)
  np.testing.assert_allclose(ours["sequence_output"][mask], o["sequence_output"][mask],
                             atol=TOLERANCE)
  np.testing.assert_allclose(log_softmax(ours["generator_logits"])[mask],
                             log_softmax(gen["logits"])[mask], atol=TOLERANCE)


def test_the_exact_gelu_is_what_makes_the_outputs_agree(tmp_path):
  """transformers' "gelu" is the erf GELU: read as our tanh "gelu", the same
  weights miss transformers' outputs by more than the tolerance."""
  folder = tmp_path / "tanh"
  shutil.copytree(fixture("bert_for_pretraining"), folder)
  config = json.loads((folder / "config.json").read_text())
  config["hidden_act"] = "gelu_new"
  (folder / "config.json").write_text(json.dumps(config))
  model, o = load("bert_for_pretraining", str(folder))
  assert model.config.hidden_act == activations.TANH
  ours = bert_outputs(model, o)
  worst = np.abs(log_softmax(ours["mlm_logits"]) - log_softmax(o["prediction_logits"])).max()
  assert worst > 5 * TOLERANCE


def test_gelu_exact_runs_in_every_feedforward_and_head():
  x = tf.constant(np.linspace(-4, 4, 101, dtype=np.float32))
  exact = activations.gelu_exact(x).numpy()
  erf = np.vectorize(math.erf)
  np.testing.assert_allclose(exact, x.numpy() * 0.5 * (1 + erf(x.numpy() / np.sqrt(2))),
                             atol=1e-6)
  model, _ = load("bert_for_pretraining")
  for layer in model.encoder.transformer_layers:
    assert layer._feedforward_intermediate_dense.activation is activations.gelu_exact  # pylint: disable=protected-access
  assert model.mlm_head.intermediate_activation is activations.gelu_exact


def test_a_warm_start_from_an_encoder_only_folder_keeps_the_heads(tmp_path):
  """BertForMaskedLM has no pooler or NSP head: an mlm_nsp model warm-starts
  its encoder and MLM head, and says what it left initialized."""
  info = hf.read_hf_model(fixture("bert_for_masked_lm"))
  model = objectives.get("mlm_nsp").build_model(info.bert_config)
  nsp_before = model.nsp_head.kernel.numpy().copy()
  report = checkpoints.read_weights(model, fixture("bert_for_masked_lm"), require_all=False)
  assert report.format == "transformers"
  assert set(report.missing) == {"bert/pooler/dense/kernel", "bert/pooler/dense/bias",
                                 "cls/seq_relationship/output_weights",
                                 "cls/seq_relationship/output_bias"}
  np.testing.assert_array_equal(model.nsp_head.kernel.numpy(), nsp_before)
  saved = hf.read_safetensors(fixture("bert_for_masked_lm"))
  np.testing.assert_array_equal(model.encoder.token_embedding.embeddings.numpy(),
                                saved["bert.embeddings.word_embeddings.weight"])


def _copy(tmp_path, name="bert_for_pretraining"):
  folder = tmp_path / name
  shutil.copytree(fixture(name), folder)
  return folder


def _write_safetensors(folder, weights):
  (folder / hf.WEIGHTS_NAME).write_bytes(hf.safetensors_bytes(weights))


def test_a_missing_tensor_is_named_and_nothing_is_assigned(tmp_path):
  folder = _copy(tmp_path)
  weights = hf.read_safetensors(str(folder))
  del weights["bert.encoder.layer.1.output.dense.weight"]
  _write_safetensors(folder, weights)
  info = hf.read_hf_model(str(folder))
  model = objectives.get("mlm_nsp").build_model(info.bert_config)
  before = [w.numpy().copy() for w in model.weights]
  with pytest.raises(ValueError, match=r"model.safetensors has no tensor "
                     r"bert.encoder.layer.1.output.dense.weight"):
    checkpoints.read_weights(model, str(folder), require_all=False)
  for w, b in zip(model.weights, before):
    np.testing.assert_array_equal(w.numpy(), b)


def test_a_tensor_of_another_shape_is_named(tmp_path):
  folder = _copy(tmp_path)
  weights = hf.read_safetensors(str(folder))
  weights["bert.encoder.layer.0.intermediate.dense.weight"] = np.zeros((40, 32), np.float32)
  _write_safetensors(folder, weights)
  info = hf.read_hf_model(str(folder))
  model = objectives.get("mlm_nsp").build_model(info.bert_config)
  with pytest.raises(ValueError, match=r"intermediate.dense.weight has shape \[40, 32\] but "
                     r"the model .* needs \[48, 32\]"):
    checkpoints.read_weights(model, str(folder))


@pytest.mark.parametrize("edit, message", [
    ({"architectures": ["BertForMultipleChoice"], "model_type": "bert"},
     r"architectures \['BertForMultipleChoice'\] holds none we read"),
    ({"hidden_act": "silu"}, r"hidden_act='silu' is not supported"),
    ({"layer_norm_eps": 1e-5}, r"layer_norm_eps=1e-05 is not supported"),
    ({"position_embedding_type": "relative_key"}, r"position_embedding_type='relative_key'"),
    ({"vocab_size": 80}, r"tokenizer.json has 79 tokens but .*config.json says vocab_size=80"),
])
def test_bad_config_json_is_a_one_line_error(tmp_path, edit, message):
  folder = _copy(tmp_path)
  config = json.loads((folder / "config.json").read_text())
  config.update(edit)
  (folder / "config.json").write_text(json.dumps(config))
  with pytest.raises(ValueError, match=message) as e:
    hf.read_hf_model(str(folder))
  assert "\n" not in str(e.value)


def test_pytorch_bin_without_safetensors_says_how_to_convert(tmp_path):
  folder = _copy(tmp_path)
  (folder / hf.WEIGHTS_NAME).rename(folder / hf.PYTORCH_NAME)
  assert hf.is_hf_folder(str(folder))
  with pytest.raises(ValueError, match=r"pytorch_model.bin but no model.safetensors.*"
                     r"save_pretrained"):
    checkpoints.read_weights(objectives.get("mlm_nsp").build_model(
        hf_config.bert_config_from_hf(json.loads((folder / "config.json").read_text()))), str(folder))


def test_another_family_than_the_model_is_refused(tmp_path):
  info = hf.read_hf_model(fixture("albert_for_pretraining"))
  model = objectives.get("mlm_sop").build_model(info.bert_config)
  with pytest.raises(ValueError, match=r"holds an BertForPreTraining \(bert\) but the model "
                     r"is albert"):
    hf.load_hf_weights(model, fixture("bert_for_pretraining"))


def test_an_electra_export_needs_its_generator_a_warm_start_does_not(tmp_path):
  folder = tmp_path / "disc"
  shutil.copytree(fixture("electra_for_pretraining"), folder)
  shutil.rmtree(folder / "generator")
  info = hf.read_hf_model(fixture("electra_for_pretraining"))
  model = objectives.from_checkpoint(fixture("electra_for_pretraining")).build_model(
      info.bert_config)
  with pytest.raises(ValueError, match=r"has no generator/ folder"):
    checkpoints.read_weights(model, str(folder), require_all=True)
  report = checkpoints.read_weights(model, str(folder), require_all=False)
  assert report.missing and all(n.startswith(("generator", "generator_predictions"))
                                for n in report.missing)


def test_a_sharded_folder_is_read(tmp_path):
  folder = _copy(tmp_path)
  weights = hf.read_safetensors(str(folder))
  names = sorted(weights)
  halves = {"model-00001-of-00002.safetensors": names[:20],
            "model-00002-of-00002.safetensors": names[20:]}
  for file_name, part in halves.items():
    (folder / file_name).write_bytes(hf.safetensors_bytes({n: weights[n] for n in part}))
  (folder / hf.WEIGHTS_NAME).unlink()
  (folder / hf.INDEX_NAME).write_text(json.dumps(
      {"weight_map": {n: f for f, part in halves.items() for n in part}}))
  assert {k: v.tolist() for k, v in hf.read_safetensors(str(folder)).items()} == {
      k: v.tolist() for k, v in weights.items()}


def test_the_given_config_must_agree_with_the_folder(tmp_path):
  info = hf.read_hf_model(fixture("bert_for_pretraining"))
  path = tmp_path / "bert_config.json"
  info.bert_config.replace(hidden_act="gelu").to_json_file(str(path))
  with pytest.raises(ValueError, match=r"disagrees with .*config.json: hidden_act='gelu' "
                     r"\(folder: 'gelu_exact'\)"):
    hf.config_for(str(path), fixture("bert_for_pretraining"), "bert_config_file")
  info.bert_config.replace(hidden_dropout_prob=0.0, max_position_embeddings=32).to_json_file(
      str(path))
  assert hf.config_for(str(path), fixture("bert_for_pretraining"),
                       "bert_config_file").max_position_embeddings == 32
  assert hf.config_for(None, fixture("bert_for_pretraining"),
                       "bert_config_file") == info.bert_config


def test_the_vocab_of_tokenizer_json_is_vocab_txt():
  """transformers 5 saves tokenizer.json and no vocab.txt: its WordPiece
  vocab, in id order, is the vocab.txt it was made from."""
  tokens, source = hf.vocab_tokens(fixture("bert_for_pretraining"))
  assert source.endswith(hf.TOKENIZER_NAME)
  with open(os.path.join(FIXTURES, "tokenizer", "vocab.txt"), encoding="utf-8") as f:
    assert tokens == f.read().split("\n")[:-1]
  assert wordpiece_vocab.load_vocab(hf.vocab_path(fixture("bert_for_pretraining"))).tokens == (
      tokens)
  assert hf.do_lower_case(fixture("bert_for_pretraining")) is True


@pytest.mark.parametrize("casing", ["uncased", "cased"])
def test_our_tokenizer_gives_transformers_ids(casing):
  with open(os.path.join(FIXTURES, "tokenizer", "tokenizer_ids.json"), encoding="utf-8") as f:
    expected = json.load(f)["ids"][casing]
  vocab = wordpiece_vocab.load_vocab(os.path.join(FIXTURES, "tokenizer", "vocab.txt"))
  tokenizer = tokenization.BatchTokenizer(vocab, do_lower_case=casing == "uncased")
  lines = sorted(expected)
  values, splits = tokenizer.tokenize_to_ids(lines)
  for i, line in enumerate(lines):
    ours = [vocab.cls_id] + values[splits[i]:splits[i + 1]].tolist() + [vocab.sep_id]
    assert ours == expected[line], line


def test_an_encoder_saved_alone_with_old_layer_norm_names_is_read(tmp_path):
  """Many published domain models are a BertModel (no `bert.` prefix, no
  heads), and older files name LayerNorm's parameters gamma and beta."""
  folder = _copy(tmp_path)
  weights = hf.read_safetensors(str(folder))
  old = {}
  for name, value in weights.items():
    if name.startswith("cls."):
      continue
    name = name[len("bert."):].replace("LayerNorm.weight", "LayerNorm.gamma").replace(
        "LayerNorm.bias", "LayerNorm.beta")
    old[name] = value
  _write_safetensors(folder, old)
  config = json.loads((folder / "config.json").read_text())
  config["architectures"] = ["BertModel"]
  (folder / "config.json").write_text(json.dumps(config))
  assert objectives.from_checkpoint(str(folder)).name == "mlm_nsp"
  info = hf.read_hf_model(str(folder))
  model = objectives.get("mlm_nsp").build_model(info.bert_config)
  report = checkpoints.read_weights(model, str(folder), require_all=False)
  assert sorted(report.missing) == sorted(
      ["cls/predictions/output_bias", "cls/predictions/transform/dense/kernel",
       "cls/predictions/transform/dense/bias", "cls/predictions/transform/LayerNorm/gamma",
       "cls/predictions/transform/LayerNorm/beta", "cls/seq_relationship/output_weights",
       "cls/seq_relationship/output_bias"])
  np.testing.assert_array_equal(model.encoder.embeddings_layer_norm.gamma.numpy(),
                                weights["bert.embeddings.LayerNorm.weight"])
  np.testing.assert_array_equal(model.encoder.pooled_dense.kernel.numpy(),
                                weights["bert.pooler.dense.weight"].T)


def test_a_masked_lm_folder_that_keeps_its_nsp_head_is_read_whole(tmp_path):
  """bert-base-uncased's config says BertForMaskedLM, its file holds the
  pooler and the NSP head: the objective is mlm_nsp and nothing is dropped."""
  folder = _copy(tmp_path)
  config = json.loads((folder / "config.json").read_text())
  config["architectures"] = ["BertForMaskedLM"]
  (folder / "config.json").write_text(json.dumps(config))
  assert objectives.from_checkpoint(str(folder)).name == "mlm_nsp"
  assert "cls.seq_relationship.weight" in hf.tensor_names(str(folder))
  model, o = load("bert_for_pretraining", str(folder))
  np.testing.assert_allclose(bert_outputs(model, o)["nsp_logits"], o["seq_relationship_logits"],
                             atol=TOLERANCE)
