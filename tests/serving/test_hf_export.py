"""serving/hf_export.py (`--hf_out`): the folder transformers loads.

transformers itself is not here (no torch in CI); what it loads is pinned by
the folders it saved (tests/fixtures/transformers): a model read from each
of them and written back gives the same tensors, bit for bit, and the same
config values. tests/fixtures/transformers/check_export.py runs transformers
on our exports by hand (docs/interchange.md has its figures).
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from bert_tf.models import hf_checkpoint as hf
from bert_tf.serving import hf_export
from bert_tf.training import checkpoints
from bert_tf.training import objectives

from helpers.hf_fixtures import FIXTURES, MODELS, fixture

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB = os.path.join(FIXTURES, "tokenizer", "vocab.txt")
# Keys of transformers' config.json that are its own bookkeeping, not the model.
_BOOKKEEPING = {"transformers_version"}


def read_and_write(name, out):
  folder = fixture(name)
  objective = objectives.from_checkpoint(folder)
  model, _ = checkpoints.load_pretrainer(hf.read_hf_model(folder).bert_config, folder, objective)
  return hf_export.write_hf_folder(model, objective, VOCAB, True, str(out))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_folder_read_and_written_back_is_what_transformers_saved(name, tmp_path):
  out = tmp_path / "out"
  assert read_and_write(name, out) == MODELS[name][0]
  subs = ["", "generator"] if name.startswith("electra") else [""]
  for sub in subs:
    ours, theirs = out / sub, os.path.join(fixture(name), sub)
    written, saved = hf.read_safetensors(str(ours)), hf.read_safetensors(theirs)
    assert sorted(written) == sorted(saved)
    for key, value in saved.items():
      np.testing.assert_array_equal(written[key], value, err_msg=key)
      assert written[key].dtype == np.float32
    our_config = json.loads((ours / "config.json").read_text())
    with open(os.path.join(theirs, "config.json"), encoding="utf-8") as f:
      their_config = json.load(f)
    for key in sorted(set(our_config) & set(their_config) - _BOOKKEEPING):
      assert our_config[key] == their_config[key], key
    assert sorted(os.listdir(ours)) == sorted(
        (["generator"] if sub == "" and len(subs) == 2 else [])
        + ["config.json", "model.safetensors", "special_tokens_map.json",
           "tokenizer_config.json", "vocab.txt"])
    tokenizer = json.loads((ours / "tokenizer_config.json").read_text())
    assert tokenizer["do_lower_case"] is True and tokenizer["model_max_length"] == 40
    assert (ours / "vocab.txt").read_text() == open(VOCAB, encoding="utf-8").read()


def test_our_tanh_gelu_is_transformers_gelu_new_and_reads_back_the_same(tmp_path):
  """A model trained here (the original's tanh GELU) is written with
  hidden_act "gelu_new", and read back gives the same outputs."""
  from bert_tf.models.config import BertConfig  # pylint: disable=g-import-not-at-top
  config = BertConfig(vocab_size=79, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=48, max_position_embeddings=40, type_vocab_size=2)
  objective = objectives.get("mlm_nsp")
  model = objective.build_model(config)
  hf_export.write_hf_folder(model, objective, VOCAB, False, str(tmp_path / "out"))
  written = json.loads((tmp_path / "out" / "config.json").read_text())
  assert written["hidden_act"] == "gelu_new"
  assert written["architectures"] == ["BertForPreTraining"]
  assert json.loads((tmp_path / "out" / "tokenizer_config.json").read_text())[
      "do_lower_case"] is False
  back, _ = checkpoints.load_pretrainer(hf.read_hf_model(str(tmp_path / "out")).bert_config,
                                        str(tmp_path / "out"), objective)
  assert back.config.hidden_act == "gelu"
  for a, b in zip(model.weights, back.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_an_existing_folder_is_kept_without_overwrite(tmp_path):
  out = tmp_path / "out"
  out.mkdir()
  (out / "keep").write_text("x")
  with pytest.raises(FileExistsError):
    read_and_write("bert_for_masked_lm", out)
  assert os.listdir(out) == ["keep"]


def _tool(*args):
  return subprocess.run([sys.executable, "-m", "bert_tf.export_saved_model", *args],
                        capture_output=True, text=True, cwd=REPO, timeout=600,
                        env={**os.environ, "PYTHONPATH": REPO})


def test_export_tool_reads_a_folder_with_no_config_or_vocab_flags(tmp_path):
  """--checkpoint=<transformers folder>: config.json and the vocab of
  tokenizer.json stand in for --bert_config_file and --vocab_file; every
  output is written; a given config that disagrees is a one-line error."""
  result = _tool(f"--checkpoint={fixture('albert_for_pretraining')}",
                 f"--export_dir={tmp_path / 'sm'}", f"--hf_out={tmp_path / 'hf'}",
                 f"--tf1_checkpoint_out={tmp_path / 'tf1' / 'model.ckpt'}")
  assert result.returncode == 0, result.stderr[-2000:]
  assert f"hf_out: {tmp_path / 'hf'}" in result.stdout
  assert "Read 32 weights from transformers folder" in result.stderr
  assert json.loads((tmp_path / "hf" / "config.json").read_text())["architectures"] == [
      "AlbertForPreTraining"]
  assert (tmp_path / "sm" / "saved_model.pb").exists()
  config = hf.read_hf_model(fixture("albert_for_pretraining")).bert_config
  config.replace(num_hidden_layers=3).to_json_file(str(tmp_path / "c.json"))
  result = _tool(f"--checkpoint={fixture('albert_for_pretraining')}",
                 f"--bert_config_file={tmp_path / 'c.json'}", f"--hf_out={tmp_path / 'hf2'}")
  assert result.returncode != 0
  last = result.stderr.strip().splitlines()[-1]
  assert "disagrees with" in last and "num_hidden_layers=3 (folder: 2)" in last
  assert not (tmp_path / "hf2").exists()


def test_a_keras_hub_preset_of_an_exact_gelu_model_is_refused(tmp_path):
  """keras-hub's backbones hard-code the tanh GELU: a preset would not give
  the model's outputs."""
  from bert_tf.serving import keras_hub_preset  # pylint: disable=g-import-not-at-top
  folder = fixture("bert_for_pretraining")
  objective = objectives.from_checkpoint(folder)
  model, _ = checkpoints.load_pretrainer(hf.read_hf_model(folder).bert_config, folder, objective)
  with pytest.raises(ValueError, match=r"hidden_act='gelu_exact': keras-hub's backbones run "
                     r"the tanh GELU only"):
    keras_hub_preset.save_keras_hub_preset(model, VOCAB, True, str(tmp_path / "preset"))
  assert not (tmp_path / "preset").exists()
