"""Tests of bert_tf.training.objectives.ltr (BERT's "LTR & No NSP"): the
causal mask, the next-token loss against a numpy restatement, the undoing
of the records' masking, the registry, training under XLA, the checkpoint
tag and the export."""

import json
import logging

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import flops
from bert_tf.serving import export
from bert_tf.training import loop
from bert_tf.training import objectives
from bert_tf.training.objectives import ltr

from helpers.checkpoints import optimizer_iterations
from helpers.objective_batches import BATCH, SEQ, random_batch
from helpers.pretraining import tiny_bert_config, tiny_train_config, write_records
from helpers.serving_model import CONFIG, MAX_SEQ_LENGTH, TOP_K, write_vocab


def _model():
  config = tiny_bert_config(dropout=0.0)
  return objectives.get("ltr").build_model(config), config


def _log_softmax(logits):
  logits = logits.astype(np.float64)
  top = logits.max(-1, keepdims=True)
  return logits - top - np.log(np.exp(logits - top).sum(-1, keepdims=True))


def test_each_position_reads_only_itself_and_what_comes_before():
  model, config = _model()
  features = random_batch(config.vocab_size, with_labels=False)
  del features["masked_lm_ids"], features["masked_lm_weights"]
  before = model(features)["sequence_output"].numpy()
  changed = dict(features, input_ids=features["input_ids"].copy())
  changed["input_ids"][:, 9] = (changed["input_ids"][:, 9] + 1) % config.vocab_size
  after = model(changed)["sequence_output"].numpy()
  np.testing.assert_allclose(after[:, :9], before[:, :9], atol=1e-6)
  assert np.abs(after[:, 9:] - before[:, 9:]).max(axis=-1).min() > 1e-4
  # The same weights read bidirectionally (what `encode` serves) differ.
  both = model.encoder({"token_ids": features["input_ids"], "segment_ids": features["segment_ids"],
                        "padding_mask": features["input_mask"]})["sequence_output"].numpy()
  assert np.abs(both[:, :9] - before[:, :9]).max() > 1e-4


def test_the_loss_is_the_next_tokens_cross_entropy_over_real_tokens():
  objective = objectives.get("ltr")
  model, config = _model()
  features = random_batch(config.vocab_size, with_labels=False)
  features["input_mask"][:, SEQ - 4:] = 0  # padding: no target there
  outputs = model(features)
  sums = objective.loss_sums(outputs, features)
  assert tuple(sums) == objective.sum_keys
  loss = float(objective.replica_loss(sums, objective.global_counts(features)))
  # The text as written: the records' masked positions hold their labels.
  original = features["input_ids"].copy()
  for b in range(BATCH):
    for p, i, w in zip(features["masked_lm_positions"][b], features["masked_lm_ids"][b],
                       features["masked_lm_weights"][b]):
      if w > 0:
        original[b, p] = i
  np.testing.assert_array_equal(outputs["original_ids"].numpy(), original)
  log_probs = _log_softmax(outputs["lm_logits"].numpy())
  ce = -np.take_along_axis(log_probs[:, :-1], original[:, 1:, None], -1)[..., 0]
  weights = features["input_mask"][:, 1:].astype(np.float64)
  expected = (weights * ce).sum() / weights.sum()
  np.testing.assert_allclose(loss, expected, rtol=1e-5)
  metrics = objective.metrics(sums)
  assert tuple(metrics) == objective.metric_keys
  hits = log_probs[:, :-1].argmax(-1) == original[:, 1:]
  np.testing.assert_allclose(float(metrics["lm_accuracy"]), (weights * hits).sum() / weights.sum(),
                             rtol=1e-6)
  # The masked-LM logits at a position are the previous position's: the
  # token there predicted from the tokens before it.
  mlm = outputs["mlm_logits"].numpy()
  for b in range(BATCH):
    for j, p in enumerate(features["masked_lm_positions"][b]):
      np.testing.assert_allclose(mlm[b, j], outputs["lm_logits"].numpy()[b, p - 1], rtol=1e-6)


def test_the_records_masking_is_undone_so_masked_and_plain_text_read_the_same():
  model, config = _model()
  features = random_batch(config.vocab_size, with_labels=False)
  plain = model(features)
  masked = dict(features, input_ids=features["input_ids"].copy())
  for b in range(BATCH):
    masked["input_ids"][b, features["masked_lm_positions"][b][:2]] = 4  # [MASK]
  restored = features["input_ids"].copy()
  for b in range(BATCH):
    restored[b, features["masked_lm_positions"][b][:2]] = features["masked_lm_ids"][b][:2]
  np.testing.assert_allclose(model(dict(features, input_ids=restored))["lm_logits"].numpy(),
                             model(masked)["lm_logits"].numpy(), atol=1e-5)
  assert plain["lm_logits"].shape == (BATCH, SEQ, config.vocab_size)


def test_ltr_resolves_on_any_records_and_registers():
  for task in ("nsp", "sop", "none", None):
    resolved = objectives.resolve("ltr", task)
    assert resolved is objectives.get("ltr") and resolved.family == "bert"
  assert objectives.resolve("bert", "none").name == "mlm"  # the family's default is unchanged
  assert ltr.LTR.record_options == {"sentence_task": "none", "packing": "full_sentences"}
  config = tiny_bert_config()
  assert ltr.LTR.train_flops(config, 8, 64, 10) == flops.bert_step_flops(
      config, 8, 64, 64, sentence_head=False)
  with pytest.raises(ValueError, match="no sentence-pair head"):
    from bert_tf.models import modeling  # pylint: disable=g-import-not-at-top
    modeling.BertPretrainer(config, causal=True)


@pytest.mark.slow  # 30-60 s on 2 cores: three compiled steps, then an export
def test_ltr_trains_under_xla_saves_its_tag_and_exports(tmp_path, caplog):
  write_records(tmp_path / "train.tfrecord", 48, seed=1, vocab_size=CONFIG.vocab_size)
  config = tiny_train_config(tmp_path, objective="ltr", jit_compile=True, num_train_steps=3,
                             num_warmup_steps=1, iterations_per_loop=3,
                             save_checkpoints_steps=3)
  with caplog.at_level(logging.INFO, logger="absl"):
    result = loop.run(config, CONFIG)
  assert not any("compiling the forward/backward only" in r.getMessage()
                 for r in caplog.records)
  assert result["global_step"] == 3 and optimizer_iterations(config.output_dir) == 3
  assert np.isfinite(result["train"]["loss"]) and "lm_accuracy" in result["train"]
  saved = objectives.from_checkpoint(str(tmp_path / "out"))
  assert saved is objectives.get("ltr")
  (tmp_path / "bert_config.json").write_text(json.dumps(CONFIG.to_dict()))
  options = export.ExportOptions(
      bert_config_file=str(tmp_path / "bert_config.json"), checkpoint=str(tmp_path / "out"),
      vocab_file=write_vocab(tmp_path / "vocab.txt"), export_dir=str(tmp_path / "export"),
      max_seq_length=MAX_SEQ_LENGTH, top_k=TOP_K)
  export.run_export(options)
  loaded = tf.saved_model.load(options.export_dir)
  assert set(saved.text_signatures) == {"fill_mask"} <= set(loaded.signatures)
  ids = tf.constant([[2, 7, 8, 3]], tf.int32)
  out = loaded.signatures["pretraining"](input_ids=ids, input_mask=tf.ones_like(ids),
                                         segment_ids=tf.zeros_like(ids),
                                         masked_lm_positions=tf.constant([[2]], tf.int32))
  want = result["model"]({"input_ids": ids, "input_mask": tf.ones_like(ids),
                          "segment_ids": tf.zeros_like(ids),
                          "masked_lm_positions": tf.constant([[2]], tf.int32)})["mlm_logits"]
  np.testing.assert_allclose(out["masked_lm_log_probs"].numpy(),
                             tf.nn.log_softmax(want).numpy(), atol=1e-5)
