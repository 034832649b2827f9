"""The RoBERTa and ALBERT recipe flag files in configs/: each parses with the
tool it is for (absl --flagfile refuses flags a tool does not define) and
holds the published figures."""

import os

import pytest

from bert_tf import cli
from bert_tf import create_pretraining_data
from bert_tf import run_pretraining
from bert_tf.models.config import BertConfig
from bert_tf.training import train_config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = os.path.join(REPO, "configs")


def _parse(define_flags, name, monkeypatch):
  monkeypatch.chdir(REPO)  # the files name configs/... relative to the repo root
  return cli.parse(define_flags, ["tool", f"--flagfile={os.path.join(CONFIGS, name)}"])


def _train_config(flag_values):
  values = {f.name: flag_values[f.name].value for f in
            train_config.dataclasses.fields(train_config.TrainConfig) if f.name in flag_values}
  config = train_config.TrainConfig(**{k: ("" if v is None else v) for k, v in values.items()})
  config.validate()
  return config


def test_roberta_base_flags(monkeypatch):
  f = _parse(run_pretraining.define_flags, "roberta_base.flags", monkeypatch)
  config = _train_config(f)
  # RoBERTa, Table 9 (BASE) and Section 3.1.
  assert (config.train_batch_size, config.num_train_steps, config.num_warmup_steps) == (
      8192, 500000, 24000)
  assert config.learning_rate == 6e-4 and config.max_seq_length == 512
  assert (config.optimizer, config.adam_beta1, config.adam_beta2, config.adam_epsilon,
          config.weight_decay) == ("adamw", 0.9, 0.98, 1e-6, 0.01)
  assert config.train_batch_size % config.grad_accum_steps == 0
  assert config.max_predictions_per_seq >= 0.15 * config.max_seq_length
  bert_config = BertConfig.from_json_file(os.path.join(REPO, f.bert_config_file))
  assert (bert_config.num_hidden_layers, bert_config.hidden_size) == (12, 768)
  assert not bert_config.is_albert


def test_albert_base_flags(monkeypatch):
  f = _parse(run_pretraining.define_flags, "albert_base.flags", monkeypatch)
  config = _train_config(f)
  # ALBERT Section 4.1 and google-research/albert's README / flag defaults.
  assert (config.train_batch_size, config.num_train_steps, config.num_warmup_steps) == (
      4096, 125000, 3125)
  assert config.learning_rate == 0.00176 and config.optimizer == "lamb"
  assert (config.max_seq_length, config.max_predictions_per_seq) == (512, 20)
  assert (config.adam_beta1, config.adam_beta2, config.adam_epsilon, config.weight_decay) == (
      0.9, 0.999, 1e-6, 0.01)
  bert_config = BertConfig.from_json_file(os.path.join(REPO, f.bert_config_file))
  assert bert_config.is_albert and bert_config.embedding_size == 128


def test_electra_small_flags(monkeypatch):
  f = _parse(run_pretraining.define_flags, "electra_small.flags", monkeypatch)
  config = _train_config(f)
  # google-research/electra configure_pretraining.py and the paper's Table 6.
  assert config.objective == "electra"
  assert (config.train_batch_size, config.num_train_steps, config.num_warmup_steps) == (
      128, 1000000, 10000)
  assert config.learning_rate == 5e-4 and config.weight_decay == 0.01
  assert config.lr_schedule == "electra"
  assert (config.max_seq_length, config.max_predictions_per_seq) == (128, 19)
  assert (config.generator_hidden_size, config.generator_layers,
          config.discriminator_weight) == (0.25, 1.0, 50.0)
  assert (config.adam_beta1, config.adam_beta2, config.adam_epsilon) == (0.9, 0.999, 1e-6)
  bert_config = BertConfig.from_json_file(os.path.join(REPO, f.bert_config_file))
  assert (bert_config.hidden_size, bert_config.num_hidden_layers,
          bert_config.num_attention_heads, bert_config.intermediate_size,
          bert_config.embedding_size) == (256, 12, 4, 1024, 128)


def test_electra_small_builds_its_published_shape():
  """ELECTRA-Small: 13.5M parameters in the paper's Table 6 (the
  discriminator; ours adds the generator, 1/4 of the hidden size)."""
  from bert_tf.training import objectives  # pylint: disable=g-import-not-at-top
  bert_config = BertConfig.from_json_file(os.path.join(CONFIGS, "electra_small.json"))
  model = objectives.get("electra").build_model(bert_config)
  disc = sum(int(w.shape.num_elements()) for w in model.encoder.weights
             if "pooled_dense" not in w.path)
  assert 13.4e6 < disc < 13.7e6, disc


@pytest.mark.parametrize("name,expected", [
    ("data/roberta_base.flags", {"sentence_task": "none", "packing": "full_sentences",
                                 "dynamic_masking": True, "max_seq_length": 512}),
    ("data/albert_base.flags", {"sentence_task": "sop", "max_ngram": 3,
                                "max_predictions_per_seq": 20, "dupe_factor": 40,
                                "do_whole_word_mask": True}),
])
def test_data_flags_parse_with_create_pretraining_data(name, expected, monkeypatch):
  defined = cli.parse(create_pretraining_data.define_flags, ["tool"])
  missing = sorted(k for k in expected if k not in defined)
  if missing:
    pytest.skip(f"create_pretraining_data does not define {missing} yet (the data "
                f"variants branch adds them); {name} cannot be parsed here")
  f = _parse(create_pretraining_data.define_flags, name, monkeypatch)
  for key, value in expected.items():
    assert f[key].value == value, key


def test_distilbert_flags(monkeypatch):
  from bert_tf import distill  # pylint: disable=g-import-not-at-top
  f = _parse(distill.define_flags, "distilbert.flags", monkeypatch)
  config = _train_config(f)
  # Hugging Face's distiller (train.py defaults, distiller.py's AdamW) and
  # the README's launch command; Sanh et al. Section 3.
  assert (config.alpha_ce, config.alpha_mlm, config.alpha_cos, config.temperature) == (
      5.0, 2.0, 1.0, 2.0)
  assert (config.optimizer, config.adam_beta1, config.adam_beta2, config.adam_epsilon,
          config.weight_decay, config.clip_norm) == ("adamw", 0.9, 0.98, 1e-6, 0.0, 5.0)
  assert config.learning_rate == 5e-4 and config.student_init == "teacher"
  assert config.kl_tokens == "all"
  assert config.num_warmup_steps == 0.05 * config.num_train_steps
  assert config.train_batch_size % config.grad_accum_steps == 0
