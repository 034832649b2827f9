"""run_identity: a run directory knows what it is a run of; the same
command resumes, another run's command is refused in one line."""

import json
import logging

import pytest
import tensorflow as tf

from bert_tf.training import loop
from bert_tf.training import run_identity

from helpers.pretraining import VOCAB, tiny_bert_config, write_records
from helpers.pretraining import two_step_train_config as train_config


def bert_config(hidden=32):
  return tiny_bert_config().replace(hidden_size=hidden, num_hidden_layers=1)


@pytest.fixture
def trained(tmp_path):
  write_records(tmp_path / "a.tfrecord", 32, seed=1)
  write_records(tmp_path / "b.tfrecord", 32, seed=2)
  loop.run(train_config(tmp_path), bert_config())
  return tmp_path


def test_the_run_records_its_identity_and_the_same_command_resumes(trained):
  saved = json.loads((trained / "out" / run_identity.IDENTITY_NAME).read_text())
  assert saved["model"]["hidden_size"] == 32 and saved["objective"] == "mlm_nsp"
  assert saved["records"]["inputs"] == str(trained / "a.tfrecord")
  longer = loop.run(train_config(trained, num_train_steps=4), bert_config())
  assert longer["global_step"] == 4  # continued from step 2


def test_other_records_of_the_same_shapes_are_refused(trained):
  with pytest.raises(ValueError) as e:
    loop.run(train_config(trained, records="b.tfrecord", num_train_steps=4), bert_config())
  message = str(e.value)
  assert "\n" not in message
  assert "holds another run" in message and "training records" in message
  assert "a.tfrecord" in message and "b.tfrecord" in message
  assert f"--init_checkpoint={trained / 'out'}" in message
  assert tf.train.latest_checkpoint(str(trained / "out")).endswith("ckpt-2")  # untouched


def test_another_model_config_is_refused_before_tensorflow_restores(trained):
  with pytest.raises(ValueError, match=r"model config hidden_size 32 -> 64"):
    loop.run(train_config(trained, num_train_steps=4), bert_config(hidden=64))


def test_an_eval_only_run_of_the_same_model_on_other_records_is_allowed(trained):
  config = train_config(trained, do_train=False, do_eval=True,
                        eval_input_file=str(trained / "b.tfrecord"))
  assert loop.run(config, bert_config())["eval"]["global_step"] == 2


def test_a_run_dir_without_identity_resumes_as_before_with_a_log_line(trained, caplog):
  (trained / "out" / run_identity.IDENTITY_NAME).unlink()
  with caplog.at_level(logging.INFO, logger="absl"):
    result = loop.run(train_config(trained, num_train_steps=4), bert_config())
  assert result["global_step"] == 4
  assert any("no run_identity.json: resuming them unchecked" in r.getMessage()
             for r in caplog.records)
  assert (trained / "out" / run_identity.IDENTITY_NAME).exists()


def test_a_run_killed_before_its_first_checkpoint_does_not_block_another(tmp_path):
  write_records(tmp_path / "a.tfrecord", 32, seed=1)
  write_records(tmp_path / "b.tfrecord", 32, seed=2)
  identity = run_identity.identity_of(bert_config(hidden=64), loop.resolve_objective(
      train_config(tmp_path), None, None), None)
  identity["records"] = {"inputs": "other", "manifest": None, "digest": "0"}
  (tmp_path / "out").mkdir()
  (tmp_path / "out" / run_identity.IDENTITY_NAME).write_text(json.dumps(identity))
  result = loop.run(train_config(tmp_path, records="b.tfrecord"), bert_config())
  assert result["global_step"] == 2
  saved = json.loads((tmp_path / "out" / run_identity.IDENTITY_NAME).read_text())
  assert saved["model"]["hidden_size"] == 32


def test_a_checkpoint_whose_index_lists_a_missing_shard_is_named(trained):
  prefix = tf.train.latest_checkpoint(str(trained / "out"))
  for data in tf.io.gfile.glob(prefix + ".data-*"):
    tf.io.gfile.remove(data)
  with pytest.raises(ValueError) as e:
    loop.run(train_config(trained, num_train_steps=4), bert_config())
  assert "\n" not in str(e.value)
  assert f"cannot resume from {prefix}" in str(e.value)
  assert ".data-00000-of-00001" in str(e.value)
