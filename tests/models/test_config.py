"""Tests of bert_tf.models.config and the shipped configs/ files."""

import dataclasses
import json
import logging
import os

import pytest

from bert_tf.models.config import BertConfig

_CONFIGS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "configs")

# The keys of the original bert_config.json, exactly.
_ORIGINAL_KEYS = {
    "attention_probs_dropout_prob", "hidden_act", "hidden_dropout_prob",
    "hidden_size", "initializer_range", "intermediate_size",
    "max_position_embeddings", "num_attention_heads", "num_hidden_layers",
    "type_vocab_size", "vocab_size"}

_SIZES = {"tiny": (2, 128), "mini": (4, 256), "small": (4, 512),
          "medium": (8, 512), "base": (12, 768), "large": (24, 1024)}

# run_pretraining's flags that the recipes may set.
_RUN_PRETRAINING_FLAGS = {
    "bert_config_file", "input_file", "output_dir", "init_checkpoint",
    "max_seq_length", "max_predictions_per_seq", "do_train", "do_eval",
    "train_batch_size", "eval_batch_size", "learning_rate", "num_train_steps",
    "num_warmup_steps", "save_checkpoints_steps", "iterations_per_loop",
    "max_eval_steps", "use_tpu", "tpu_name", "tpu_zone", "gcp_project",
    "strategy", "optimizer", "mixed_precision", "jit_compile", "eval_input_file"}


def _tiny_dict(**kw):
  d = {"vocab_size": 100, "hidden_size": 32, "num_hidden_layers": 2,
       "num_attention_heads": 2, "intermediate_size": 64}
  d.update(kw)
  return d


@pytest.mark.parametrize("name", sorted(_SIZES))
def test_shipped_configs_have_original_keys_and_sizes(name):
  path = os.path.join(_CONFIGS, f"bert_{name}.json")
  with open(path, encoding="utf-8") as f:
    raw = json.load(f)
  assert set(raw) == _ORIGINAL_KEYS
  config = BertConfig.from_json_file(path)
  layers, hidden = _SIZES[name]
  assert config.num_hidden_layers == layers
  assert config.hidden_size == hidden
  assert config.num_attention_heads == hidden // 64
  assert config.intermediate_size == 4 * hidden
  assert (config.vocab_size, config.max_position_embeddings, config.type_vocab_size) == (30522, 512, 2)
  assert config.hidden_act == "gelu"
  assert config.hidden_dropout_prob == config.attention_probs_dropout_prob == 0.1
  assert config.initializer_range == 0.02


def test_base_config_is_the_released_bert_base():
  # Released uncased_L-12_H-768_A-12/bert_config.json.
  released = {"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
              "hidden_dropout_prob": 0.1, "hidden_size": 768,
              "initializer_range": 0.02, "intermediate_size": 3072,
              "max_position_embeddings": 512, "num_attention_heads": 12,
              "num_hidden_layers": 12, "type_vocab_size": 2, "vocab_size": 30522}
  assert BertConfig.from_json_file(os.path.join(_CONFIGS, "bert_base.json")).to_dict() == released


# bert-base-multilingual-cased/bert_config.json as released: six keys that
# no BERT code reads (directionality, pooler_*) beside the original eleven.
_RELEASED_MULTILINGUAL = {
    "attention_probs_dropout_prob": 0.1, "directionality": "bidi",
    "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768,
    "initializer_range": 0.02, "intermediate_size": 3072,
    "max_position_embeddings": 512, "num_attention_heads": 12,
    "num_hidden_layers": 12, "pooler_fc_size": 768,
    "pooler_num_attention_heads": 12, "pooler_num_fc_layers": 3,
    "pooler_size_per_head": 128, "pooler_type": "first_token_transform",
    "type_vocab_size": 2, "vocab_size": 119547}
_RELEASED_EXTRA = ["directionality", "pooler_fc_size", "pooler_num_attention_heads",
                   "pooler_num_fc_layers", "pooler_size_per_head", "pooler_type"]


def _messages(caplog, level):
  return [r.getMessage() for r in caplog.records if r.levelno == level]


def test_released_multilingual_config_loads_and_round_trips(tmp_path, caplog):
  caplog.set_level(logging.INFO)
  caplog.set_level(logging.INFO, logger="absl")  # whatever an earlier test left
  path = tmp_path / "bert_config.json"
  # Written as the release writes it (Python 2 json: ", " before newlines).
  path.write_text(json.dumps(_RELEASED_MULTILINGUAL, indent=2, sort_keys=True).replace(",\n", ", \n"))
  config = BertConfig.from_json_file(str(path))
  assert (config.vocab_size, config.hidden_size, config.type_vocab_size) == (119547, 768, 2)
  assert sorted(config.extra) == _RELEASED_EXTRA
  assert config.extra["pooler_type"] == "first_token_transform"
  assert config.to_dict() == _RELEASED_MULTILINGUAL
  out = tmp_path / "out" / "bert_config.json"
  out.parent.mkdir()
  config.to_json_file(str(out))
  assert json.loads(out.read_text()) == _RELEASED_MULTILINGUAL
  assert BertConfig.from_json_file(str(out)) == config
  # One INFO line names the six keys; nothing is a warning.
  info = [m for m in _messages(caplog, logging.INFO) if "not used by the model" in m]
  assert len(info) == 2  # one per file read
  assert all(str(k) in info[0] for k in _RELEASED_EXTRA) and str(path) in info[0]
  assert _messages(caplog, logging.WARNING) == []


def test_misspelled_key_is_a_warning_naming_it(tmp_path, caplog):
  caplog.set_level(logging.INFO)
  caplog.set_level(logging.INFO, logger="absl")  # whatever an earlier test left
  path = tmp_path / "bert_config.json"
  path.write_text(json.dumps(_tiny_dict(hidden_sise=3, type_vocab_sise=3, my_note="x")))
  config = BertConfig.from_json_file(str(path))
  assert config.hidden_size == 32 and config.type_vocab_size == 16
  assert config.extra == {"hidden_sise": 3, "type_vocab_sise": 3, "my_note": "x"}
  warnings = _messages(caplog, logging.WARNING)
  assert len(warnings) == 2
  assert "'hidden_sise'" in warnings[0] and "did you mean 'hidden_size'" in warnings[0]
  assert "'type_vocab_sise'" in warnings[1] and "type_vocab_size=16 is used" in warnings[1]
  assert all(str(path) in w for w in warnings)
  info = [m for m in _messages(caplog, logging.INFO) if "not used by the model" in m]
  assert len(info) == 1 and "my_note" in info[0] and "sise" not in info[0]
  # A misspelled required key is missing: the error names both spellings.
  d = _tiny_dict(hiden_size=32)
  del d["hidden_size"]
  with pytest.raises(ValueError, match=r"missing BERT config key\(s\) \['hidden_size'\] "
                                       r"\(misspelled as \['hiden_size'\]\?\)"):
    BertConfig.from_dict(d, source="c.json")


def test_type_vocab_size_defaults_to_16_as_the_original():
  assert BertConfig.from_dict(_tiny_dict()).type_vocab_size == 16
  assert BertConfig(**_tiny_dict()).type_vocab_size == 16
  assert BertConfig.from_dict(_tiny_dict(type_vocab_size=2)).type_vocab_size == 2


def test_extra_is_keyword_only_copied_and_checked():
  with pytest.raises(TypeError):
    BertConfig(100, 32, 2, 2, 64, "gelu", 0.1, 0.1, 512, 2, 0.02, {"a": 1})  # type: ignore[misc]
  note = {"pooler_type": "first_token_transform"}
  config = BertConfig(**_tiny_dict(), extra=note)
  note["pooler_type"] = "changed"
  assert config.extra == {"pooler_type": "first_token_transform"}
  config.to_dict()["pooler_type"] = "changed too"
  assert config.extra["pooler_type"] == "first_token_transform"
  assert config.replace(hidden_size=64, num_attention_heads=4).extra == config.extra
  assert config != config.replace(extra={})
  assert hash(config) == hash(config.replace(extra={}))
  with pytest.raises(ValueError, match="repeats known key"):
    BertConfig(**_tiny_dict(), extra={"hidden_size": 3})
  with pytest.raises(ValueError, match="JSON values"):
    BertConfig(**_tiny_dict(), extra={"f": object()})


def test_missing_key_and_bad_values():
  d = _tiny_dict()
  del d["intermediate_size"]
  with pytest.raises(ValueError, match="intermediate_size"):
    BertConfig.from_dict(d)
  with pytest.raises(ValueError, match="not a multiple of num_attention_heads"):
    BertConfig.from_dict(_tiny_dict(num_attention_heads=3))
  with pytest.raises(ValueError, match="hidden_dropout_prob"):
    BertConfig.from_dict(_tiny_dict(hidden_dropout_prob=1.5))
  with pytest.raises(ValueError, match="hidden_act"):
    BertConfig.from_dict(_tiny_dict(hidden_act="swish"))
  with pytest.raises(ValueError, match="vocab_size"):
    BertConfig.from_dict(_tiny_dict(vocab_size=0))


def test_missing_file_and_bad_json(tmp_path):
  with pytest.raises(FileNotFoundError, match="nope.json"):
    BertConfig.from_json_file(str(tmp_path / "nope.json"))
  bad = tmp_path / "bad.json"
  bad.write_text("{not json")
  with pytest.raises(ValueError, match="bad.json"):
    BertConfig.from_json_file(str(bad))


def test_round_trip_frozen_and_replace(tmp_path):
  config = BertConfig.from_dict(_tiny_dict(initializer_range=0.05))
  assert BertConfig.from_dict(json.loads(config.to_json_string())) == config
  path = str(tmp_path / "c.json")
  config.to_json_file(path)
  assert BertConfig.from_json_file(path) == config
  assert os.listdir(tmp_path) == ["c.json"]
  with pytest.raises(dataclasses.FrozenInstanceError):
    config.hidden_size = 64  # type: ignore[misc]
  bigger = config.replace(hidden_size=64, num_attention_heads=4)
  assert (bigger.hidden_size, bigger.head_size, config.hidden_size) == (64, 16, 32)
  with pytest.raises(ValueError, match="not a multiple"):
    config.replace(num_attention_heads=5)
  with pytest.raises(ValueError, match="hiden_size"):
    config.replace(hiden_size=3)


def test_integral_floats_and_int_dropouts_accepted():
  config = BertConfig.from_dict(_tiny_dict(hidden_size=32.0, hidden_dropout_prob=0))
  assert config.hidden_size == 32 and isinstance(config.hidden_size, int)
  assert config.hidden_dropout_prob == 0.0 and isinstance(config.hidden_dropout_prob, float)


@pytest.mark.parametrize("phase,seq,preds,steps", [
    ("phase1", 128, 20, 900000), ("phase2", 512, 80, 100000)])
def test_flagfiles(phase, seq, preds, steps):
  path = os.path.join(_CONFIGS, f"base_tpu_v3-8_{phase}.flags")
  flags = {}
  with open(path, encoding="utf-8") as f:
    for line in f:
      line = line.strip()
      if not line or line.startswith("#"):
        continue
      assert line.startswith("--") and "=" in line, line
      key, value = line[2:].split("=", 1)
      assert key not in flags, f"{key} set twice"
      flags[key] = value
  assert set(flags) <= _RUN_PRETRAINING_FLAGS, set(flags) - _RUN_PRETRAINING_FLAGS
  assert int(flags["max_seq_length"]) == seq
  assert int(flags["max_predictions_per_seq"]) == preds
  assert int(flags["num_train_steps"]) == steps
  assert int(flags["train_batch_size"]) == 256
  assert float(flags["learning_rate"]) == 1e-4
  assert int(flags["num_warmup_steps"]) == 10000
  assert flags["input_file"].startswith("gs://") and flags["output_dir"].startswith("gs://")
  config_path = os.path.join(os.path.dirname(_CONFIGS), flags["bert_config_file"])
  assert BertConfig.from_json_file(config_path).hidden_size == 768
  if phase == "phase2":
    assert flags["init_checkpoint"].startswith("gs://")


# The keys of the released ALBERT v2 albert_config.json files.
_ALBERT_KEYS = _ORIGINAL_KEYS | {
    "embedding_size", "num_hidden_groups", "inner_group_num", "down_scale_factor",
    "net_structure_type", "gap_size", "num_memory_blocks"}


@pytest.mark.parametrize("name,layers,hidden,heads", [
    ("base", 12, 768, 12), ("large", 24, 1024, 16)])
def test_shipped_albert_configs_are_the_released_v2(name, layers, hidden, heads):
  path = os.path.join(_CONFIGS, f"albert_{name}.json")
  with open(path, encoding="utf-8") as f:
    raw = json.load(f)
  assert set(raw) == _ALBERT_KEYS
  config = BertConfig.from_json_file(path)
  assert config.is_albert and config.extra == {}
  assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads,
          config.intermediate_size) == (layers, hidden, heads, 4 * hidden)
  assert (config.embedding_size, config.num_hidden_groups, config.inner_group_num) == (128, 1, 1)
  # v2: no dropout; SentencePiece vocab of 30000; 2 segment types.
  assert config.hidden_dropout_prob == config.attention_probs_dropout_prob == 0.0
  assert (config.vocab_size, config.type_vocab_size) == (30000, 2)
  assert config.to_dict() == raw
  assert BertConfig.from_dict(config.to_dict()) == config


def test_albert_keys_round_trip_and_bert_configs_gain_none(tmp_path):
  albert = BertConfig.from_dict(_tiny_dict(embedding_size=16, layers_to_keep=[],
                                           down_scale_factor=1))
  assert albert.is_albert and albert.layers_to_keep == () and hash(albert)
  assert albert.albert_value("num_hidden_groups") == 1
  assert albert.to_dict()["layers_to_keep"] == []
  albert.to_json_file(str(tmp_path / "albert_config.json"))
  assert BertConfig.from_json_file(str(tmp_path / "albert_config.json")) == albert
  bert = BertConfig.from_dict(_tiny_dict())
  assert not bert.is_albert and set(bert.to_dict()) == _ORIGINAL_KEYS


@pytest.mark.parametrize("change,message", [
    ({"num_hidden_groups": 2}, "no embedding_size"),
    ({"embedding_size": 0}, "embedding_size must be a positive integer"),
    ({"embedding_size": 8, "inner_group_num": 1.5}, "inner_group_num must be a positive"),
    ({"embedding_size": 8, "layers_to_keep": "0,1"}, "layers_to_keep must be a list"),
])
def test_bad_albert_keys(change, message):
  with pytest.raises(ValueError, match=message):
    BertConfig.from_dict(_tiny_dict(**change), source="albert_config.json")
