"""Tests of bert_tf.training.objectives.electra: ELECTRA's loss, options,
checkpoint and training through the loop."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models.config import BertConfig
from bert_tf.training import objectives
from bert_tf.training import run_identity
from bert_tf.training import train_config

from helpers.objective_batches import BATCH, SEQ, random_batch as _batch
from helpers.pretraining import tiny_bert_config


def _electra_batch(vocab_size, seed=0):
  features = _batch(vocab_size, with_labels=True, seed=seed)
  mask = np.ones((BATCH, SEQ), np.int32)
  mask[:, SEQ - 5:] = 0  # padding: no discriminator loss there
  mask[0, SEQ - 9:] = 0
  features["input_mask"] = mask
  return features


def _bce(logits, labels):
  return np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))


def test_electra_loss_is_generator_mlm_plus_50_times_mean_bce_over_real_tokens():
  objective = objectives.resolve("electra", "nsp", options=train_config.TrainConfig())
  assert objective.discriminator_weight == 50.0
  assert objective.options.mask_rule == "electra"
  # The [MASK] id comes from the records (none here); ours is 4.
  objective = objectives.ElectraObjective(
      dataclasses.replace(objective.options, mask_token_id=4))
  config = tiny_bert_config(dropout=0.0)
  model = objective.build_model(config)
  features = _electra_batch(config.vocab_size)
  outputs = model(features)
  sums = objective.loss_sums(outputs, features)
  assert tuple(sums) == objective.sum_keys
  metrics = objective.metrics(sums)
  assert tuple(metrics) == objective.metric_keys
  # The original's loss from the outputs, in numpy (float64).
  logits = outputs["mlm_logits"].numpy().astype(np.float64)
  log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  ce = -np.take_along_axis(log_probs, features["masked_lm_ids"][..., None], -1)[..., 0]
  w = features["masked_lm_weights"]
  mlm = (w * ce).sum() / (w.sum() + 1e-6)
  d_logits = outputs["discriminator_logits"].numpy().astype(np.float64)
  labels = outputs["replaced_labels"].numpy()
  m = features["input_mask"]
  disc = (m * _bce(d_logits, labels)).sum() / (m.sum() + 1e-6)
  np.testing.assert_allclose(float(metrics["loss"]), mlm + 50 * disc, rtol=1e-5)
  np.testing.assert_allclose(float(metrics["discriminator_loss"]), disc, rtol=1e-5)
  counts = objective.global_counts(features)
  np.testing.assert_allclose(float(objective.replica_loss(sums, counts)), mlm + 50 * disc,
                             rtol=1e-5)
  # Accuracy, precision and recall over real tokens only.
  pred = d_logits > 0
  real = m.astype(bool)
  np.testing.assert_allclose(float(metrics["discriminator_accuracy"]),
                             (pred == labels)[real].mean(), rtol=1e-6)
  if labels[real].sum():
    np.testing.assert_allclose(float(metrics["discriminator_recall"]),
                               (pred & (labels == 1))[real].sum() / labels[real].sum(),
                               rtol=1e-6)
  # No label on padding; the replaced share is over real tokens.
  assert labels[~real].sum() == 0
  np.testing.assert_allclose(float(metrics["replaced_share"]), labels[real].mean(), rtol=1e-6)
  # The kept share is that of sampled == original.
  sampled = outputs["sampled_ids"].numpy()
  np.testing.assert_allclose(float(metrics["sampled_masked_lm_accuracy"]),
                             (w * (sampled == features["masked_lm_ids"])).sum() / w.sum(),
                             rtol=1e-6)


def test_electra_replica_shares_add_up_to_the_loss_of_the_whole_batch():
  objective = objectives.ElectraObjective(objectives.ElectraSettings(mask_token_id=4))
  config = tiny_bert_config(dropout=0.0)
  model = objective.build_model(config)
  features = _electra_batch(config.vocab_size, seed=5)
  outputs = model(features)  # one forward, so the samples are the same
  whole = objective.metrics(objective.loss_sums(outputs, features))["loss"]
  counts = objective.global_counts(features)
  shares = 0.0
  for part in (slice(0, 1), slice(1, BATCH)):
    shares += objective.replica_loss(
        objective.loss_sums({k: v[part] for k, v in outputs.items()},
                            {k: v[part] for k, v in features.items()}), counts)
  np.testing.assert_allclose(float(shares), float(whole), rtol=1e-5)


def test_electra_options_come_from_the_config_and_travel_with_the_checkpoint(tmp_path):
  config = train_config.TrainConfig(objective="electra", seed=3, objective_options=(
      objectives.ElectraOptions(generator_hidden_size=0.5, discriminator_weight=20.0,
                                mask_rule="bert")))
  objective = objectives.resolve("electra", None, options=config)
  assert objective.options.generator_hidden_size == 0.5
  assert objective.options.mask_rule == "bert" and objective.discriminator_weight == 20.0
  model = objective.build_model(tiny_bert_config())
  assert model.generator_config.hidden_size == 16
  assert objectives.of_model(model).options == objective.options
  tf.train.Checkpoint(**objectives.checkpoint_variables(objective)).save(
      str(tmp_path / "ckpt"))
  assert objectives.from_checkpoint(tf.train.latest_checkpoint(str(tmp_path))).options == (
      objective.options)
  objectives.check_objective(str(tmp_path), objective)
  with pytest.raises(ValueError, match="trained for objective electra with another generator"):
    objectives.check_objective(str(tmp_path), objectives.resolve("electra", None))
  assert objective.options.seed == 3


def test_every_mask_rule_the_flag_accepts_is_one_the_model_implements():
  from bert_tf.models import electra
  from bert_tf.training.objectives import electra_options
  assert electra_options.MASK_RULES == tuple(electra.MASK_RULES)
  assert objectives.ElectraOptions().mask_rule == electra.DEFAULT_MASK_RULE


def test_electra_settings_are_typed_and_checked():
  options = objectives.ElectraSettings()
  assert (options.generator_hidden_size, options.generator_layers,
          options.discriminator_weight, options.mask_rule) == (0.25, 1.0, 50.0, "electra")
  with pytest.raises(dataclasses.FrozenInstanceError):
    options.seed = 1  # frozen: a resolved objective's options cannot drift
  with pytest.raises(ValueError, match="electra_mask_rule='half' is not one of electra, bert, "
                     "records"):
    objectives.ElectraSettings(mask_rule="half")
  with pytest.raises(ValueError, match=r"unknown ElectraSettings field\(s\) \['colour'\]"):
    objectives.ElectraSettings.from_dict({"colour": 1})
  # The settings as data: a dict of the fields, and back.
  changed = objectives.ElectraSettings(generator_layers=0.5, mask_token_id=7, seed=2)
  assert objectives.ElectraSettings.from_dict(changed.to_dict()) == changed


def test_a_generator_config_file_is_read_into_the_settings(tmp_path):
  path = tmp_path / "generator.json"
  path.write_text(BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1,
                             num_attention_heads=2, intermediate_size=32).to_json_string())
  config = train_config.TrainConfig(objective="electra", objective_options=(
      objectives.ElectraOptions(generator_config_file=str(path))))
  settings = objectives.resolve("electra", None, options=config).options
  assert settings.generator_config["hidden_size"] == 16
  assert settings.generator_config_file == "" and "generator_config_file" not in (
      settings.to_dict())


def test_the_held_out_figures_are_the_discriminators(tmp_path):
  objective = objectives.ElectraObjective(objectives.ElectraSettings(mask_token_id=4))
  config = tiny_bert_config(dropout=0.0)
  model = objective.build_model(config)
  features = _electra_batch(config.vocab_size)
  sums = objective.heldout_sums(model(features), features)
  assert tuple(sums) == objective.sum_keys  # every loss sum, the discriminator's included
  totals = {k: float(v) for k, v in sums.items()}
  figures = objective.heldout_figures(totals)
  share = totals["disc_replaced"] / totals["disc_token_count"]
  np.testing.assert_allclose(figures["replaced_share"], share, rtol=1e-6)
  entropy = -(share * np.log(share) + (1 - share) * np.log(1 - share))
  np.testing.assert_allclose(figures["discriminator_loss_vs_prior"],
                             figures["discriminator_loss"] - entropy, rtol=1e-5)
  assert figures["tokens"] == totals["disc_token_count"] == float(features["input_mask"].sum())
  # BERT's objectives report the masked-LM figures alone.
  assert objectives.get("mlm_nsp").heldout_figures(totals) == {}


def test_electra_trains_evaluates_and_resumes_through_the_loop(tmp_path):
  from bert_tf.training import loop
  from helpers.pretraining import tiny_train_config, write_records
  write_records(tmp_path / "train.tfrecord", 48, seed=1)
  write_records(tmp_path / "heldout.tfrecord", 16, seed=2)
  config = tiny_train_config(tmp_path, objective="electra", do_eval=True,
                             eval_input_file=str(tmp_path / "heldout.tfrecord"),
                             num_train_steps=4, save_checkpoints_steps=4, max_eval_steps=2)
  first = loop.run(config, tiny_bert_config())
  model = first["model"]
  assert objectives.of_model(model).options.mask_token_id == 4  # read from the records
  assert int(model.sample_step.numpy()) == 4
  for key in ("loss", "masked_lm_accuracy", "discriminator_accuracy", "gradient_norm"):
    assert np.isfinite(first["train"][key]), key
  with tf.io.gfile.GFile(str(tmp_path / "out/eval_results.txt")) as f:
    keys = [line.split(" = ")[0] for line in f.read().splitlines()]
  assert keys == sorted(("global_step",) + objectives.ElectraObjective.metric_keys)
  assert 0 <= first["eval"]["discriminator_recall"] <= 1
  # The same command resumes every weight, the generator's and the noise
  # counter included; eval draws the same masks and samples again.
  second = loop.run(config, tiny_bert_config())
  for a, b in zip(model.weights, second["model"].weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
  assert second["eval"] == first["eval"]
  # A BERT run cannot resume into it: the run directory names both
  # objectives (and, for a directory without run_identity.json, the
  # checkpoint's own tag refuses it).
  with pytest.raises(ValueError, match="holds another run .objective electra -> mlm_nsp"):
    loop.run(tiny_train_config(tmp_path, num_train_steps=6), tiny_bert_config())
  tf.io.gfile.remove(str(tmp_path / "out" / run_identity.IDENTITY_NAME))
  with pytest.raises(ValueError, match="trained for objective electra"):
    loop.run(tiny_train_config(tmp_path, num_train_steps=6), tiny_bert_config())


def _narrow_records(path, n, seed):
  """Records whose text uses only ids 5..19 of the 100 (BERT-masked as
  helpers/pretraining.py), so a token from 20..99 can only be a replacement."""
  import random
  from helpers import reference_records
  from helpers.pretraining import SEQ as seq, PREDS as preds, VOCAB as vocab
  rng = random.Random(seed)
  encoder = reference_records.RecordEncoder(seq, preds)
  with tf.io.TFRecordWriter(str(path)) as writer:
    for _ in range(n):
      length = rng.randint(16, seq)
      ids = [rng.randrange(5, 20) for _ in range(length)]
      positions = sorted(rng.sample(range(1, length), preds))
      targets = [ids[p] for p in positions]
      for p in positions:
        ids[p] = 4
      writer.write(encoder.encode(ids, [0] * length, positions, targets, 0))


def test_electra_discriminator_learns_replacements_its_input_gives_away(tmp_path, monkeypatch):
  """A control of the whole ELECTRA path (corrupted input, labels, the
  discriminator's loss, its gradients, the eval metrics): with the
  generator's samples swapped for tokens the text never uses, a token's
  identity tells whether it was replaced, and the discriminator must find
  most replacements within a few hundred steps. (With the real generator a
  tiny discriminator on a real corpus stays near the prior for thousands of
  steps; docs/bert_family.md.)"""
  from bert_tf.models import electra
  from bert_tf.training import loop
  from helpers.pretraining import tiny_train_config
  def foreign_tokens(logits, seed):
    del seed
    return tf.random.uniform(tf.shape(logits)[:-1], 20, tf.shape(logits)[-1], dtype=tf.int32)

  monkeypatch.setattr(electra, "sample_tokens", foreign_tokens)
  _narrow_records(tmp_path / "train.tfrecord", 64, seed=1)
  _narrow_records(tmp_path / "heldout.tfrecord", 32, seed=2)
  config = tiny_train_config(tmp_path, objective="electra", do_eval=True,
                             eval_input_file=str(tmp_path / "heldout.tfrecord"),
                             num_train_steps=150, num_warmup_steps=10, learning_rate=3e-3,
                             save_checkpoints_steps=150, iterations_per_loop=50,
                             log_steps=50, max_eval_steps=4)
  result = loop.run(config, tiny_bert_config(dropout=0.0))
  ev = result["eval"]
  assert ev["discriminator_recall"] > 0.9, ev
  assert ev["discriminator_precision"] > 0.9, ev
  assert ev["discriminator_loss"] < 0.1, ev


def test_electra_on_dynamically_masked_records_draws_positions_each_visit(tmp_path):
  """ELECTRA's per-step positions: on --dynamic_masking records the input
  pipeline draws each example's positions anew every time it is read (the
  original draws them every step); the [MASK] id is the manifest's, and the
  run trains."""
  import random  # pylint: disable=g-import-not-at-top
  from bert_tf.data.input import pipeline  # pylint: disable=g-import-not-at-top
  from bert_tf.data.pretraining import writer  # pylint: disable=g-import-not-at-top
  from bert_tf.models.config import BertConfig  # pylint: disable=g-import-not-at-top
  from bert_tf.training import loop  # pylint: disable=g-import-not-at-top
  rng = random.Random(0)
  words = "the lord said unto moses and light day night was god earth heaven in of".split()
  vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words + ["."]
  (tmp_path / "v.txt").write_text("\n".join(vocab) + "\n")
  docs = ["\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(5, 14))) + " ."
                    for _ in range(8)) for _ in range(30)]
  (tmp_path / "c.txt").write_text("\n\n".join(docs) + "\n")
  writer.create_pretraining_data(
      str(tmp_path / "c.txt"), writer.Outputs(directory=str(tmp_path / "rec"), num_shards=1),
      str(tmp_path / "v.txt"), writer.DataOptions(
          max_seq_length=32, max_predictions_per_seq=5, dupe_factor=1, sentence_task="none",
          packing="full_sentences", dynamic_masking=True))
  data = pipeline.check_data(str(tmp_path / "rec" / "*.tfrecord"), 32, 5)
  assert data.masking is not None
  objective = objectives.resolve("electra", data=data)
  assert objective.options.mask_token_id == vocab.index("[MASK]")
  config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                      num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
  result = loop.run(train_config.TrainConfig(
      input_file=str(tmp_path / "rec" / "*.tfrecord"), output_dir=str(tmp_path / "out"),
      do_train=True, max_seq_length=32, max_predictions_per_seq=5, train_batch_size=8,
      num_train_steps=3, num_warmup_steps=1, save_checkpoints_steps=3, iterations_per_loop=1,
      objective="electra"), config)
  assert np.isfinite(float(result["train"]["loss"]))
  assert 0.0 < float(result["train"]["replaced_share"]) < 1.0
