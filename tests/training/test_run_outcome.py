"""What a run says when its inputs or its result are wrong: a damaged
record file in training or evaluation is named with its offset in one
line; a final masked-LM loss no better than a uniform guess is a warning
with the settings to change."""

import logging
import math

import pytest

from bert_tf.data.records import damaged_records
from bert_tf.training import chance_level
from bert_tf.training import loop

from helpers.pretraining import VOCAB, tiny_bert_config, write_records
from helpers.pretraining import two_step_train_config as train_config


def bert_config():
  return tiny_bert_config().replace(num_hidden_layers=1)


def cut_inside_a_record(path):
  data = path.read_bytes()
  path.write_bytes(data[:len(data) // 2 + 40])


@pytest.fixture
def records(tmp_path):
  write_records(tmp_path / "a.tfrecord", 32, seed=1)
  write_records(tmp_path / "b.tfrecord", 32, seed=2)
  return tmp_path


def test_a_truncated_training_file_is_named_with_its_offset(records):
  cut_inside_a_record(records / "b.tfrecord")
  config = train_config(records, records="*.tfrecord", num_train_steps=40,
                        iterations_per_loop=40, log_steps=40, save_checkpoints_steps=40)
  with pytest.raises(damaged_records.DamagedRecordsError) as e:
    loop.run(config, bert_config())
  message = str(e.value)
  assert "\n" not in message
  assert message.startswith(f"{records / 'b.tfrecord'}: truncated record at ")
  assert "(training records:" in message


def test_a_truncated_eval_file_is_named_with_its_offset(records):
  cut_inside_a_record(records / "b.tfrecord")
  config = train_config(records, do_eval=True, eval_input_file=str(records / "b.tfrecord"),
                        max_eval_steps=100)
  with pytest.raises(damaged_records.DamagedRecordsError,
                     match=r"b\.tfrecord: truncated record at \d+ \(eval records:"):
    loop.run(config, bert_config())


def test_a_loss_above_a_uniform_guess_is_a_warning_naming_what_to_change(records, caplog):
  # Two steps at a tiny rate with a long warmup from wide initial weights
  # (confident random logits): worse than a uniform guess.
  config = train_config(records, do_eval=True, eval_input_file=str(records / "b.tfrecord"),
                        learning_rate=1e-6, num_warmup_steps=2)
  with caplog.at_level(logging.WARNING):
    result = loop.run(config, bert_config().replace(initializer_range=0.5))
  loss = result["eval"]["masked_lm_loss"]
  assert loss >= math.log(VOCAB)
  line = result["chance_warning"]
  assert line in [r.getMessage() for r in caplog.records]
  assert f"held-out masked-LM loss {loss:.2f} at step 2 is not below 4.61 = ln(vocab_size 100)" in line
  assert "shorten the warmup (--num_warmup_steps=2 of 2 steps" in line
  assert "raise --learning_rate=1e-06" in line


def test_chance_level_lines():
  config = loop.TrainConfig(input_file="x", output_dir="y", num_train_steps=1000,
                            num_warmup_steps=100, learning_rate=1e-3)
  assert chance_level.warning({"masked_lm_loss": 7.0, "global_step": 1000}, 1285, config) is None
  line = chance_level.warning({"masked_lm_loss": 9.41, "global_step": 1000}, 1285, config)
  assert line.startswith("eval (on the training data) masked-LM loss 9.41 at step 1000 is not "
                         "below 7.16 = ln(vocab_size 1,285)")
  assert "train longer (more than --num_train_steps=1000)" in line
  assert "warmup" not in line and "learning_rate" not in line
  assert chance_level.warning({"loss": 9.0}, 1285, config) is None  # no masked LM
