"""The whole training step under XLA (--jit_compile) for every objective.

A TPU compiles each replica's step with XLA; on CPU jit_compile is the
closest check that every op has an XLA kernel and every shape is static.
mlm_nsp in bfloat16 is test_loop's; here the others train 3 steps each:
mlm_sop, mlm on dynamically masked records, gradient accumulation, ELECTRA
and its Table 5 variants, and distillation. Each asserts the optimizer ran
every step and that the step compiled whole (no fallback to a compiled
forward/backward only).
"""

import logging

import numpy as np
import pytest

from bert_tf.training import loop
from bert_tf.training import objectives

from helpers.checkpoints import optimizer_iterations
from helpers.pretraining import tiny_bert_config, tiny_train_config, write_records, writer_records

FALLBACK = "compiling the forward/backward only"


def _run_compiled(config, bert_config, caplog):
  with caplog.at_level(logging.INFO, logger="absl"):
    result = loop.run(config, bert_config)
  assert not any(FALLBACK in r.getMessage() for r in caplog.records)
  assert result["global_step"] == config.num_train_steps
  assert optimizer_iterations(config.output_dir) == config.num_train_steps
  assert np.isfinite(result["train"]["loss"])
  return result


def _xla_config(tmp_path, **kw):
  return tiny_train_config(tmp_path, jit_compile=True, num_train_steps=3, num_warmup_steps=1,
                           iterations_per_loop=3, save_checkpoints_steps=3, **kw)


@pytest.mark.parametrize("changes, objective", [
    ({"sentence_task": "sop"}, "mlm_sop"),
    ({"sentence_task": "none", "packing": "full_sentences", "dynamic_masking": True}, "mlm"),
])
def test_writer_records_objectives_train_under_xla(tmp_path, caplog, changes, objective):
  files, bert_config = writer_records(tmp_path, **changes)
  result = _run_compiled(_xla_config(tmp_path, input_file=files), bert_config, caplog)
  from bert_tf.training import objectives  # pylint: disable=g-import-not-at-top
  assert objectives.of_model(result["model"]).name == objective


@pytest.fixture
def records(tmp_path):
  write_records(tmp_path / "train.tfrecord", 48, seed=1)
  return tmp_path


def test_gradient_accumulation_trains_under_xla(records, caplog):
  _run_compiled(_xla_config(records, grad_accum_steps=2), tiny_bert_config(), caplog)


@pytest.mark.slow  # 90 s on 2 cores: XLA compiles two bfloat16 encoders on CPU
def test_electra_trains_under_xla_in_bfloat16(records, caplog):
  result = _run_compiled(_xla_config(records, objective="electra", mixed_precision="bfloat16"),
                         tiny_bert_config(), caplog)
  assert int(result["model"].sample_step.numpy()) == 3


@pytest.mark.slow  # 60-90 s each on 2 cores, as ELECTRA's
@pytest.mark.parametrize("name", ("electra_15", "replace_mlm", "all_tokens_mlm"))
def test_electra_variants_train_under_xla_in_bfloat16(records, caplog, name):
  result = _run_compiled(_xla_config(records, objective=name, mixed_precision="bfloat16"),
                         tiny_bert_config(), caplog)
  assert objectives.of_model(result["model"]).name == name
  assert np.isfinite(result["train"]["main_mlm_loss" if "mlm" in name else "discriminator_loss"])


@pytest.mark.slow  # 30 s on 2 cores: a teacher run, then the compiled student step
def test_distillation_trains_under_xla(records, caplog):
  teacher_config = tiny_bert_config().replace(num_hidden_layers=4)
  teacher_config.to_json_file(str(records / "teacher_config.json"))
  loop.run(tiny_train_config(records, output_dir=str(records / "teacher"), num_train_steps=1,
                             num_warmup_steps=0, save_checkpoints_steps=1), teacher_config)
  config = _xla_config(records, objective="distill", output_dir=str(records / "student"),
                       objective_options=objectives.DistillOptions(
                           teacher_config_file=str(records / "teacher_config.json"),
                           teacher_checkpoint=str(records / "teacher")))
  result = _run_compiled(config, tiny_bert_config(), caplog)
  assert np.isfinite(result["train"]["kl_loss"])
