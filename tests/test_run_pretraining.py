"""Tests of the run_pretraining entry point: flags (original names and
defaults, --flagfile), one-line errors, SIGTERM and SIGKILL in a subprocess,
and a slow end-to-end run through main() checking TensorBoard scalars and
eval_results.txt."""

import dataclasses
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import cli
from bert_tf import run_pretraining
from bert_tf.training import loop
from bert_tf.training import objectives
from bert_tf.training import optimization
from bert_tf.training.objectives import options
from helpers.pretraining import ORIGINAL_EVAL_KEYS, tiny_bert_config, write_records

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def setup(tmp_path):
  write_records(tmp_path / "train.tfrecord", 64, seed=1)
  write_records(tmp_path / "heldout.tfrecord", 24, seed=2)
  tiny_bert_config().to_json_file(str(tmp_path / "bert_config.json"))
  return tmp_path


@pytest.fixture
def parse(monkeypatch):
  """Parses a command line into run_pretraining's FLAGS, as its run() would."""
  def parse(argv):
    monkeypatch.setattr(run_pretraining, "FLAGS",
                        cli.parse(run_pretraining.define_flags, ["run_pretraining"] + argv))
  return parse


def _common(tmp_path):
  return [f"--bert_config_file={tmp_path / 'bert_config.json'}",
          f"--input_file={tmp_path / 'train.tfrecord'}", f"--output_dir={tmp_path / 'out'}",
          "--max_seq_length=32", "--max_predictions_per_seq=5"]


def test_flags_keep_the_original_names_and_defaults_and_flagfile_works(setup, parse):
  flagfile = setup / "run.flags"
  flagfile.write_text("\n".join(_common(setup) + ["--do_train", "--train_batch_size=16",
                                                  "--optimizer=lamb"]) + "\n")
  parse([f"--flagfile={flagfile}", "--num_train_steps=7"])
  config, bert_config = run_pretraining.config_from_flags()
  assert bert_config == tiny_bert_config()
  assert (config.train_batch_size, config.num_train_steps, config.optimizer) == (16, 7, "lamb")
  # The original's defaults.
  assert (config.eval_batch_size, config.learning_rate, config.num_warmup_steps,
          config.save_checkpoints_steps, config.iterations_per_loop, config.max_eval_steps) == (
              8, 5e-5, 10000, 1000, 1000, 100)
  assert config.strategy == "" and config.mixed_precision == "none" and not config.do_eval
  parse(_common(setup) + ["--do_train", "--use_tpu", "--tpu_name=my-tpu", "--num_tpu_cores=8"])
  config, _ = run_pretraining.config_from_flags()
  assert (config.strategy, config.tpu_name) == ("tpu", "my-tpu")


def test_flag_defaults_are_the_train_config_defaults_and_the_originals():
  from bert_tf.training import train_config
  flag_values = cli.parse(run_pretraining.define_flags, ["run_pretraining"])
  defaults = train_config.TrainConfig()
  shared = [f.name for f in dataclasses.fields(defaults) if f.name in flag_values]
  assert len(shared) >= 25
  for name in shared:
    assert flag_values[name].default in (getattr(defaults, name), None), name
  # The original run_pretraining.py's flags and defaults.
  original = dict(learning_rate=5e-5, num_warmup_steps=10000, train_batch_size=32,
                  eval_batch_size=8, max_seq_length=128, max_predictions_per_seq=20,
                  save_checkpoints_steps=1000, iterations_per_loop=1000, max_eval_steps=100,
                  num_train_steps=100000, do_train=False, do_eval=False, use_tpu=False,
                  num_tpu_cores=8, init_checkpoint=None, tpu_name=None, master=None)
  for name, value in original.items():
    assert flag_values[name].default == value, name
  # The choices are the library's.
  assert flag_values["strategy"].parser.enum_values == list(train_config.STRATEGIES)
  assert flag_values["optimizer"].parser.enum_values == list(optimization.OPTIMIZERS)
  assert train_config.OPTIMIZERS == optimization.OPTIMIZERS


# The objectives' option flags, as run_pretraining and distill define them
# from the options dataclasses: name -> (flag type, default, enum choices).
ELECTRA_FLAGS = {
    "generator_hidden_size": ("float", 0.25, None), "generator_layers": ("float", 1.0, None),
    "generator_config_file": ("string", "", None),
    "discriminator_weight": ("float", 50.0, None),
    "electra_mask_rule": ("string enum", "electra", ["electra", "bert", "records"])}
DISTILL_FLAGS = {
    "teacher_config_file": ("string", None, None), "teacher_checkpoint": ("string", None, None),
    "student_init": ("string enum", "teacher", ["teacher", "scratch"]),
    "alpha_ce": ("float", 5.0, None), "alpha_mlm": ("float", 2.0, None),
    "alpha_cos": ("float", 1.0, None), "alpha_sentence": ("float", 0.0, None),
    "temperature": ("float", 2.0, None),
    "kl_tokens": ("string enum", "masked", ["masked", "all"])}


@pytest.mark.parametrize("tool, expected", [
    ("run_pretraining", ELECTRA_FLAGS), ("distill", {**ELECTRA_FLAGS, **DISTILL_FLAGS})])
def test_the_option_flags_derived_from_the_options_dataclasses(tool, expected):
  import importlib  # pylint: disable=g-import-not-at-top
  module = importlib.import_module(f"bert_tf.{tool}")
  flag_values = cli.parse(module.define_flags, [tool])
  options_flags = {f.name for t in objectives.OPTIONS.values()
                   for f in options.flags_of(t)} & set(flag_values)
  assert options_flags == set(expected)
  for name, (kind, default, choices) in expected.items():
    flag = flag_values[name]
    assert (flag.flag_type(), flag.default, getattr(flag.parser, "enum_values", None)) == (
        kind, default, choices), name
    assert flag.help.endswith(".") and len(flag.help) > 30, name
  # --help lists them with the tools' own flags, not under bert_tf.cli.
  listed = {f.name for m in (module.__name__, "bert_tf.run_pretraining")
            for f in flag_values.get_flags_for_module(m)}
  assert set(expected) <= listed
  assert not flag_values.get_flags_for_module("bert_tf.cli")


@pytest.mark.parametrize("given, expected", [
    # --strategy wins when given.
    (dict(strategy="mirrored", use_tpu=True, tpu_name="t"),
     ("mirrored", "", ["--use_tpu is ignored: --strategy=mirrored is given and wins",
                       "--tpu_name=t is ignored without --use_tpu or --strategy=tpu "
                       "(as in the original)"])),
    (dict(strategy="tpu", tpu_name="t"), ("tpu", "t", [])),
    (dict(strategy="tpu"), ("tpu", "", [])),
    # The original: a TPU only with --use_tpu; --tpu_name, else --master.
    (dict(use_tpu=True, tpu_name="t", master="grpc://m"), ("tpu", "t", [])),
    (dict(use_tpu=True, master="grpc://m"), ("tpu", "grpc://m", [])),
    (dict(use_tpu=True), ("tpu", "", [])),
    (dict(use_tpu=True, num_tpu_cores=32),
     ("tpu", "", ["--num_tpu_cores=32 is not used: the TPU strategy replicates over every "
                  "core the TPU reports"])),
    # Without --use_tpu the original runs on CPU/GPU whatever --tpu_name says.
    (dict(tpu_name="t"), ("", "", ["--tpu_name=t is ignored without --use_tpu or "
                                   "--strategy=tpu (as in the original)"])),
    (dict(), ("", "", [])),
])
def test_strategy_resolution_rule(given, expected):
  from bert_tf.training import train_config
  assert train_config.resolve_strategy(**given) == expected


def test_ignored_tpu_flags_are_warned_about(setup, parse, caplog):
  caplog.set_level(logging.WARNING, logger="absl")
  parse(_common(setup) + ["--do_train", "--tpu_name=my-tpu"])
  config, _ = run_pretraining.config_from_flags()
  assert (config.strategy, config.tpu_name) == ("", "")
  assert "--tpu_name=my-tpu is ignored without --use_tpu" in caplog.text


def test_bad_input_is_one_line_error(setup, parse, capsys):
  def fails(code, pattern):
    with pytest.raises(SystemExit) as info:
      cli.call(run_pretraining.main, ["run_pretraining"])
    assert info.value.code == code
    lines = capsys.readouterr().err.strip().splitlines()
    assert re.match(r"^bert_tf.run_pretraining: error: " + pattern, lines[-1]), lines[-1]

  parse(_common(setup)[:1] + [f"--input_file={setup / 'nothing*.tfrecord'}",
                              f"--output_dir={setup / 'out'}", "--do_train"])
  fails(cli.ERROR_EXIT, r"input pattern .*nothing\*")
  parse(_common(setup))
  fails(cli.USAGE_EXIT, r".*do_train or --do_eval")
  parse(_common(setup) + ["--do_train", "--strategy=tpu", "--tpu_name=local"])
  fails(cli.ERROR_EXIT, r".*--strategy=tpu: no TPU found")


def _start(tmp_path, extra, log_name):
  log = open(tmp_path / log_name, "w")
  env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
  proc = subprocess.Popen(
      [sys.executable, "-m", "bert_tf.run_pretraining"] + _common(tmp_path) + [
          "--do_train", "--num_train_steps=100000", "--train_batch_size=8",
          "--iterations_per_loop=2", "--log_steps=2", "--learning_rate=1e-3"] + extra,
      stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO)
  return proc, tmp_path / log_name


def _wait_for(proc, log, pattern, timeout=120):
  deadline = time.time() + timeout
  while time.time() < deadline:
    text = log.read_text()
    match = re.search(pattern, text)
    if match:
      return match
    if proc.poll() is not None:
      pytest.fail(f"exited {proc.returncode} before {pattern!r}:\n{text[-3000:]}")
    time.sleep(0.2)
  proc.kill()
  pytest.fail(f"timed out waiting for {pattern!r}:\n{log.read_text()[-3000:]}")


def test_sigterm_saves_a_checkpoint_and_exits_cleanly(setup):
  proc, log = _start(setup, ["--save_checkpoints_steps=1000"], "term.log")
  _wait_for(proc, log, r"step 4/100000")
  proc.send_signal(signal.SIGTERM)
  assert proc.wait(timeout=60) == 0, log.read_text()[-3000:]
  step = int(re.search(r"SIGTERM: saved step (\d+)", log.read_text()).group(1))
  assert step >= 4
  assert tf.train.latest_checkpoint(str(setup / "out")).endswith(f"ckpt-{step}")


@pytest.mark.slow
def test_sigkill_loses_at_most_one_save_interval_and_the_command_resumes(setup):
  proc, log = _start(setup, ["--save_checkpoints_steps=4"], "kill.log")
  _wait_for(proc, log, r"Saved checkpoint .*ckpt-8")
  last_logged = max(int(s) for s in re.findall(r"step (\d+)/100000", log.read_text()))
  proc.send_signal(signal.SIGKILL)
  proc.wait(timeout=30)
  latest = tf.train.latest_checkpoint(str(setup / "out"))
  saved = int(latest.rsplit("-", 1)[1])
  assert last_logged - saved <= 4
  # The same command again resumes from that step.
  proc, log = _start(setup, ["--save_checkpoints_steps=4"], "resume.log")
  _wait_for(proc, log, rf"Resumed from .*ckpt-{saved} at step {saved}")
  _wait_for(proc, log, rf"step {saved + 2}/100000")
  proc.send_signal(signal.SIGTERM)
  assert proc.wait(timeout=60) == 0


def _scalar_tags(directory):
  tags = set()
  for path in tf.io.gfile.glob(os.path.join(directory, "events.out.tfevents.*")):
    for event in tf.compat.v1.train.summary_iterator(path):
      tags.update(v.tag for v in event.summary.value)
  return tags


@pytest.mark.slow
def test_main_end_to_end_writes_summaries_and_eval_results(setup, parse):
  parse(_common(setup) + [
      "--do_train", "--do_eval", f"--eval_input_file={setup / 'heldout.tfrecord'}",
      "--train_batch_size=8", "--eval_batch_size=8", "--num_train_steps=4",
      "--num_warmup_steps=1", "--save_checkpoints_steps=2", "--iterations_per_loop=2",
      "--log_steps=2", "--max_eval_steps=2", "--learning_rate=1e-3"])
  assert run_pretraining.main(["run_pretraining"]) == 0
  out = setup / "out"
  train_tags = _scalar_tags(str(out / "train"))
  assert {"loss", "masked_lm_loss", "next_sentence_loss", "masked_lm_accuracy",
          "next_sentence_accuracy", "learning_rate", "gradient_norm",
          "examples_per_second", "tokens_per_second"} <= train_tags
  assert {"loss", "masked_lm_loss", "next_sentence_loss", "masked_lm_accuracy",
          "next_sentence_accuracy"} <= _scalar_tags(str(out / "eval"))
  lines = (out / "eval_results.txt").read_text().splitlines()
  values = dict(line.split(" = ") for line in lines)
  assert sorted(values) == sorted(ORIGINAL_EVAL_KEYS)
  assert values["global_step"] == "4"
  assert 0.0 <= float(values["masked_lm_accuracy"]) <= 1.0
  assert tf.train.latest_checkpoint(str(out)).endswith("ckpt-4")


def _is_distill_recipe(name):
  with open(os.path.join(REPO, "configs", name), encoding="utf-8") as f:
    return "bert_tf_distill --flagfile" in f.read()  # tests/test_recipes.py parses those


@pytest.mark.parametrize("flagfile", sorted(
    f for f in os.listdir(os.path.join(REPO, "configs"))
    if f.endswith(".flags") and not _is_distill_recipe(f)))
def test_recipe_flagfiles_parse(flagfile, monkeypatch, parse):
  monkeypatch.chdir(REPO)
  parse([f"--flagfile=configs/{flagfile}"])
  config, bert_config = run_pretraining.config_from_flags()
  assert config.do_train
  assert bert_config.hidden_size == (256 if flagfile.startswith("electra_small") else 768)
  if "tpu" in flagfile:  # the BERT TPU recipes; RoBERTa/ALBERT's name no hardware
    assert config.strategy == "tpu"


def test_electra_flags_and_a_generator_larger_than_the_discriminator(setup, parse, capsys):
  parse(_common(setup) + ["--do_train", "--objective=electra", "--generator_hidden_size=0.5",
                          "--discriminator_weight=20", "--electra_mask_rule=bert"])
  config, _ = run_pretraining.config_from_flags()
  options = config.objective_options
  assert (config.objective, options.generator_hidden_size, options.discriminator_weight,
          options.mask_rule) == ("electra", 0.5, 20.0, "bert")
  assert config.learning_rate == 5e-4  # ELECTRA's default when none is given
  parse(_common(setup) + ["--do_train", "--objective=electra", "--learning_rate=1e-3"])
  assert run_pretraining.config_from_flags()[0].learning_rate == 1e-3

  def fails(code, pattern):
    with pytest.raises(SystemExit) as info:
      cli.call(run_pretraining.main, ["run_pretraining"])
    assert info.value.code == code
    lines = capsys.readouterr().err.strip().splitlines()
    assert re.match(r"^bert_tf.run_pretraining: error: " + pattern, lines[-1]), lines[-1]

  parse(_common(setup) + ["--do_train", "--objective=electra", "--generator_layers=2"])
  fails(cli.USAGE_EXIT, r"generator_layers=2 must lie in \(0, 1\]")
  # An option of another objective would do nothing: refused.
  parse(_common(setup) + ["--do_train", "--objective=mlm", "--discriminator_weight=20"])
  fails(cli.USAGE_EXIT, r"--discriminator_weight is an option of objective electra; this "
        r"run's objective is mlm")
  big = tiny_bert_config().replace(hidden_size=64)
  big.to_json_file(str(setup / "generator.json"))
  parse(_common(setup) + ["--do_train", "--objective=electra",
                          f"--generator_config_file={setup / 'generator.json'}"])
  fails(cli.ERROR_EXIT, r"the generator \(hidden 64, 2 layers\) is larger than the "
        r"discriminator \(hidden 32, 2 layers\)")
  assert not (setup / "out").exists()


@pytest.mark.slow  # 30-80 s on 2 cores: all_tokens_mlm trains two steps
def test_electras_variants_train_from_the_command_line_with_its_flags(setup, parse, capsys):
  # all_tokens_mlm: ELECTRA's generator flags, BERT's records, two steps.
  parse(_common(setup) + ["--do_train", "--objective=all_tokens_mlm",
                          "--generator_hidden_size=0.5", "--train_batch_size=8",
                          "--num_train_steps=2", "--num_warmup_steps=1",
                          "--save_checkpoints_steps=2", "--iterations_per_loop=2",
                          "--log_steps=2"])
  assert cli.call(run_pretraining.main, ["run_pretraining"]) == 0
  assert tf.train.latest_checkpoint(str(setup / "out")).endswith("ckpt-2")
  # replace_mlm has no discriminator: its weight is refused in one line.
  parse(_common(setup) + ["--do_train", "--objective=replace_mlm",
                          f"--output_dir={setup / 'out2'}", "--discriminator_weight=20"])
  with pytest.raises(SystemExit) as info:
    cli.call(run_pretraining.main, ["run_pretraining"])
  assert info.value.code == cli.ERROR_EXIT
  last = capsys.readouterr().err.strip().splitlines()[-1]
  assert re.match(r"^bert_tf.run_pretraining: error: discriminator_weight=20: replace_mlm "
                  r"has no discriminator", last), last
  assert not (setup / "out2").exists()


def test_continued_pretraining_from_a_transformers_folder_and_back(tmp_path, parse, caplog):
  """The domain-adaptive recipe: start from a transformers folder (no
  --bert_config_file: its config.json), train, export back with --hf_out."""
  from bert_tf.models import hf_checkpoint as hf  # pylint: disable=g-import-not-at-top
  from bert_tf.serving import export  # pylint: disable=g-import-not-at-top
  from helpers.hf_fixtures import fixture  # pylint: disable=g-import-not-at-top
  folder = fixture("bert_for_pretraining")
  write_records(tmp_path / "train.tfrecord", 32, seed=3, vocab_size=79)
  parse([f"--init_checkpoint={folder}", f"--input_file={tmp_path / 'train.tfrecord'}",
         f"--output_dir={tmp_path / 'out'}", "--max_seq_length=32",
         "--max_predictions_per_seq=5", "--do_train", "--train_batch_size=8",
         "--num_train_steps=2", "--num_warmup_steps=1", "--learning_rate=1e-4",
         "--save_checkpoints_steps=2", "--iterations_per_loop=2", "--log_steps=2"])
  with caplog.at_level(logging.INFO, logger="absl"):
    assert run_pretraining.main(["run_pretraining"]) == 0
  assert f"Warm start: initialized 46 of 46 variables from transformers folder {folder}" in (
      caplog.text)
  from bert_tf.models.config import BertConfig  # pylint: disable=g-import-not-at-top
  written = BertConfig.from_json_file(str(tmp_path / "out" / "bert_config.json"))
  assert written == hf.read_hf_model(folder).bert_config  # gelu_exact included
  written_files = export.run_export(export.ExportOptions(
      bert_config_file=str(tmp_path / "out" / "bert_config.json"),
      checkpoint=str(tmp_path / "out"), vocab_file=hf.vocab_path(folder),
      hf_out=str(tmp_path / "hf")))
  assert written_files == {"hf_out": str(tmp_path / "hf")}
  out = json.loads((tmp_path / "hf" / "config.json").read_text())
  assert out["architectures"] == ["BertForPreTraining"] and out["hidden_act"] == "gelu"
  before, after = hf.read_safetensors(folder), hf.read_safetensors(str(tmp_path / "hf"))
  assert sorted(before) == sorted(after)
  moved = [k for k in before if not np.array_equal(before[k], after[k])]
  assert "bert.encoder.layer.0.attention.self.query.weight" in moved  # it trained
