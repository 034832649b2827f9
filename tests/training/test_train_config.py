"""Tests of bert_tf.training.train_config: TrainConfig's defaults and
validation, the TPU flag rule, objective defaults and the setting warnings."""

import dataclasses

import pytest

from bert_tf.training import objectives
from bert_tf.training import train_config
from bert_tf.training.train_config import TrainConfig


def _valid(**kw):
  return TrainConfig(input_file="train.tfrecord", output_dir="out", do_train=True, **kw)


def test_the_defaults_are_the_originals_run_pretraining_flags():
  d = TrainConfig()
  assert (d.max_seq_length, d.max_predictions_per_seq, d.train_batch_size,
          d.eval_batch_size) == (128, 20, 32, 8)
  assert (d.learning_rate, d.num_train_steps, d.num_warmup_steps) == (5e-5, 100000, 10000)
  assert (d.save_checkpoints_steps, d.iterations_per_loop, d.max_eval_steps) == (1000, 1000, 100)
  assert (d.optimizer, d.weight_decay, d.adam_epsilon) == ("adamw_original", 0.01, 1e-6)
  assert d.objective == "bert" and d.mixed_precision == "none" and d.grad_accum_steps == 1
  # The objective's options: its options dataclass's defaults.
  assert d.objective_options is None and d.options() is None
  electra = dataclasses.replace(d, objective="electra").options()
  assert (electra.generator_hidden_size, electra.discriminator_weight, electra.mask_rule) == (
      0.25, 50.0, "electra")
  distill = dataclasses.replace(d, objective="distill_mlm").options()
  assert (distill.alpha_ce, distill.alpha_mlm, distill.alpha_cos, distill.temperature,
          distill.student_init) == (5.0, 2.0, 1.0, 2.0, "teacher")
  with pytest.raises(dataclasses.FrozenInstanceError):
    d.seed = 1
  _valid().validate()


@pytest.mark.parametrize("changes, message", [
    ({"do_train": False}, "at least one of do_train or do_eval must be set"),
    ({"output_dir": ""}, "output_dir is required"),
    ({"input_file": ""}, "input_file is required"),
    ({"strategy": "gpus"}, "strategy='gpus' is not one of one_device, mirrored"),
    ({"optimizer": "sgd"}, "optimizer='sgd' is not one of adamw_original, adamw, lamb"),
    ({"mixed_precision": "fp8"}, "mixed_precision='fp8' is not one of none, bfloat16"),
    ({"objective": "electric"}, "objective='electric' is not one of bert, electra, distill, "
                                "mlm_nsp"),
    ({"objective_options": objectives.ElectraOptions()},
     "objective_options holds ElectraOptions; objective bert takes no options"),
    ({"objective": "electra", "objective_options": objectives.DistillOptions()},
     "objective_options holds DistillOptions; objective electra takes ElectraOptions"),
    ({"train_batch_size": 0}, "train_batch_size must be positive, got 0"),
    ({"num_train_steps": 0}, "num_train_steps must be positive, got 0"),
    ({"adam_beta2": 1.0}, r"adam_beta2 must be in \[0, 1\), got 1.0"),
    ({"adam_epsilon": 0.0}, "adam_epsilon must be positive"),
    ({"num_warmup_steps": -1}, "num_warmup_steps must be >= 0, got -1"),
])
def test_a_bad_setting_is_a_one_line_error_naming_it(changes, message):
  with pytest.raises(ValueError, match=message):
    dataclasses.replace(_valid(), **changes).validate()


def test_eval_alone_needs_only_the_eval_records():
  TrainConfig(output_dir="out", do_eval=True, eval_input_file="heldout.tfrecord").validate()


@pytest.mark.parametrize("options, message", [
    (lambda: objectives.ElectraOptions(mask_rule="half"),
     "electra_mask_rule='half' is not one of electra, bert"),
    (lambda: objectives.ElectraOptions(generator_layers=0.0), "generator_layers=0 must lie in"),
    (lambda: objectives.ElectraOptions(discriminator_weight=-1.0),
     "discriminator_weight must be >= 0, got -1.0"),
    (lambda: objectives.DistillOptions(kl_tokens="some"),
     "kl_tokens='some' is not one of masked, all"),
    (lambda: objectives.DistillOptions(alpha_cos=-1.0), "alpha_cos must be >= 0, got -1.0"),
    (lambda: objectives.DistillOptions(temperature=0.0), "temperature must be positive"),
])
def test_a_bad_objective_option_is_a_one_line_error_naming_its_flag(options, message):
  with pytest.raises(ValueError, match=message):
    options()


def test_the_objective_options_are_checked_again_by_validate():
  # A frozen dataclass can still be changed behind its back (object.__setattr__).
  options = objectives.ElectraOptions()
  object.__setattr__(options, "generator_hidden_size", 2.0)
  with pytest.raises(ValueError, match="generator_hidden_size=2 must lie in"):
    _valid(objective="electra", objective_options=options).validate()


def test_electra_takes_its_learning_rate_unless_one_is_given():
  assert train_config.objective_defaults("electra", given=set()) == {"learning_rate": 5e-4}
  assert train_config.objective_defaults("electra", given={"learning_rate"}) == {}
  assert train_config.objective_defaults("bert", given=set()) == {}


def test_the_tpu_flags_follow_the_originals_rule():
  assert train_config.resolve_strategy() == ("", "", [])
  assert train_config.resolve_strategy(use_tpu=True, tpu_name="my-tpu") == ("tpu", "my-tpu", [])
  assert train_config.resolve_strategy(use_tpu=True, master="grpc://1.2.3.4:8470")[1] == (
      "grpc://1.2.3.4:8470")
  assert train_config.resolve_strategy(use_tpu=True) == ("tpu", "", [])  # this VM's TPU
  strategy, tpu, notes = train_config.resolve_strategy("mirrored", use_tpu=True, tpu_name="x")
  assert (strategy, tpu) == ("mirrored", "")
  assert notes == ["--use_tpu is ignored: --strategy=mirrored is given and wins",
                   "--tpu_name=x is ignored without --use_tpu or --strategy=tpu (as in the "
                   "original)"]
  _, _, notes = train_config.resolve_strategy(use_tpu=True, num_tpu_cores=8)
  assert notes == ["--num_tpu_cores=8 is not used: the TPU strategy replicates over every "
                   "core the TPU reports"]


def test_settings_that_mislead_are_warned_about():
  assert train_config.setting_warnings(_valid()) == []
  never = train_config.setting_warnings(_valid(num_train_steps=100, num_warmup_steps=100))
  assert len(never) == 1 and never[0].startswith(
      "num_warmup_steps=100 >= num_train_steps=100: the learning rate is still warming up")
  late = train_config.setting_warnings(_valid(num_train_steps=100, num_warmup_steps=60))
  assert len(late) == 1 and "more than half of num_train_steps=100" in late[0]
  on_train = train_config.setting_warnings(_valid(do_eval=True))
  assert on_train == ["no --eval_input_file: eval reads the training data (train.tfrecord), "
                      "as the original does, so its figures are on training data, not held out"]
  assert train_config.setting_warnings(_valid(do_eval=True, eval_input_file="h")) == []
