"""The recipe flag files in configs/ (RoBERTa, ALBERT, ELECTRA-Small,
DistilBERT): each parses with the tool it is for (absl --flagfile refuses
flags a tool does not define), holds the published figures, and the new ones
run a few steps on a tiny config (flags after --flagfile override)."""

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


def _train_config(flag_values, objective=None):
  """The TrainConfig of the flags, its objective's options from its option
  flags (as run_pretraining builds them)."""
  objective = objective or flag_values.objective
  values = {f.name: flag_values[f.name].value for f in
            train_config.dataclasses.fields(train_config.TrainConfig)
            if f.name in flag_values and f.name != "objective"}
  config = train_config.TrainConfig(
      **{k: ("" if v is None else v) for k, v in values.items()}, objective=objective,
      objective_options=cli.objective_options(objective, flag_values))
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
  options = config.objective_options
  assert (options.generator_hidden_size, options.generator_layers,
          options.discriminator_weight) == (0.25, 1.0, 50.0)
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
  config = _train_config(f, objective="distill")
  options = config.objective_options
  # Hugging Face's distiller (train.py defaults, distiller.py's AdamW) and
  # the README's launch command; Sanh et al. Section 3.
  assert (options.alpha_ce, options.alpha_mlm, options.alpha_cos, options.temperature) == (
      5.0, 2.0, 1.0, 2.0)
  assert (config.optimizer, config.adam_beta1, config.adam_beta2, config.adam_epsilon,
          config.weight_decay, config.clip_norm) == ("adamw", 0.9, 0.98, 1e-6, 0.0, 5.0)
  assert config.learning_rate == 5e-4 and options.student_init == "teacher"
  assert options.kl_tokens == "all"
  assert config.num_warmup_steps == 0.05 * config.num_train_steps
  assert config.train_batch_size % config.grad_accum_steps == 0


def _tiny_overrides(tmp_path):
  """Flags after a recipe's --flagfile that make it a seconds-long run."""
  return [f"--output_dir={tmp_path / 'out'}", "--max_seq_length=32",
          "--max_predictions_per_seq=5", "--train_batch_size=8", "--grad_accum_steps=1",
          "--num_train_steps=2", "--num_warmup_steps=1", "--save_checkpoints_steps=2",
          "--iterations_per_loop=1", "--do_eval=false"]


def _records(tmp_path, **options):
  """Records of a small corpus (helpers/pretraining.py's vocab of 100 ids) and their vocab."""
  import random  # pylint: disable=g-import-not-at-top
  from bert_tf.data.pretraining import writer  # pylint: disable=g-import-not-at-top
  rng = random.Random(0)
  words = [f"w{i}" for i in range(90)]
  vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words + [".", ",", "##s", "##ed"]
  (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
  docs = ["\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(4, 12))) + " ."
                    for _ in range(6)) for _ in range(30)]
  (tmp_path / "corpus.txt").write_text("\n\n".join(docs) + "\n")
  writer.create_pretraining_data(
      str(tmp_path / "corpus.txt"), writer.Outputs(directory=str(tmp_path / "rec"),
                                                   num_shards=1),
      str(tmp_path / "vocab.txt"),
      writer.DataOptions(max_seq_length=32, max_predictions_per_seq=5, dupe_factor=1,
                         **options))
  return str(tmp_path / "rec" / "*.tfrecord"), len(vocab)


def _tiny_config_file(tmp_path, vocab_size, name, **fields):
  config = BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2,
                      num_attention_heads=2, intermediate_size=64,
                      max_position_embeddings=64, **fields)
  path = tmp_path / name
  config.to_json_file(str(path))
  return str(path)


def test_electra_small_recipe_runs_on_a_tiny_config(tmp_path, monkeypatch):
  records, vocab_size = _records(tmp_path, sentence_task="none", packing="full_sentences",
                                 dynamic_masking=True)
  config = _tiny_config_file(tmp_path, vocab_size, "electra.json", embedding_size=16)
  argv = ["run_pretraining", "--flagfile=configs/electra_small.flags",
          f"--bert_config_file={config}", f"--input_file={records}"] + _tiny_overrides(tmp_path)
  monkeypatch.chdir(REPO)
  monkeypatch.setattr(run_pretraining, "FLAGS", cli.parse(run_pretraining.define_flags, argv))
  assert cli.call(run_pretraining.main, argv) == 0
  assert (tmp_path / "out" / "ckpt-2.index").exists()


def test_distilbert_recipe_runs_on_a_tiny_config(tmp_path, monkeypatch):
  from bert_tf import distill  # pylint: disable=g-import-not-at-top
  from bert_tf.training import loop  # pylint: disable=g-import-not-at-top
  records, vocab_size = _records(tmp_path, sentence_task="none", packing="full_sentences",
                                 dynamic_masking=True)
  teacher = _tiny_config_file(tmp_path, vocab_size, "teacher.json")
  loop.run(train_config.TrainConfig(
      input_file=records, output_dir=str(tmp_path / "teacher"), do_train=True,
      max_seq_length=32, max_predictions_per_seq=5, train_batch_size=8, num_train_steps=2,
      num_warmup_steps=1, save_checkpoints_steps=2, iterations_per_loop=1),
      BertConfig.from_json_file(teacher))
  argv = ["distill", "--flagfile=configs/distilbert.flags", f"--teacher_config_file={teacher}",
          f"--teacher_checkpoint={tmp_path / 'teacher'}", f"--input_file={records}"
          ] + _tiny_overrides(tmp_path)
  monkeypatch.chdir(REPO)
  monkeypatch.setattr(distill, "FLAGS", cli.parse(distill.define_flags, argv))
  assert cli.call(distill.main, argv) == 0
  assert BertConfig.from_json_file(str(tmp_path / "out" / "bert_config.json")).num_hidden_layers == 1


def test_albert_data_recipe_runs_on_a_small_corpus(tmp_path, monkeypatch):
  _records(tmp_path)  # the corpus and vocab
  argv = ["create_pretraining_data", "--flagfile=configs/data/albert_base.flags",
          f"--input_file={tmp_path / 'corpus.txt'}", f"--output_dir={tmp_path / 'albert'}",
          f"--vocab_file={tmp_path / 'vocab.txt'}", "--num_output_shards=2",
          "--max_seq_length=32", "--max_predictions_per_seq=5", "--dupe_factor=1",
          "--num_workers=1"]
  monkeypatch.chdir(REPO)
  monkeypatch.setattr(create_pretraining_data, "FLAGS",
                      cli.parse(create_pretraining_data.define_flags, argv))
  cli.call(create_pretraining_data.main, argv[:1])  # the flags are parsed above
  import json  # pylint: disable=g-import-not-at-top
  manifest = json.loads((tmp_path / "albert" / "manifest.json").read_text())
  assert manifest["flags"]["do_whole_word_mask"] and manifest["flags"]["sentence_task"] == "sop"
  assert manifest["counts"]["instances"] > 0
