"""Tests of bert_tf.training.objectives.bert: what each BERT-family objective
(mlm_nsp, mlm_sop, mlm) builds and computes."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training import losses
from bert_tf.training import objectives

from helpers.objective_batches import BATCH, random_batch as _batch
from helpers.pretraining import tiny_bert_config


def test_mlm_alone_has_no_sentence_head_and_its_loss_is_the_masked_lm_loss():
  config = tiny_bert_config(dropout=0.0)
  mlm = objectives.get("mlm")
  model = mlm.build_model(config)
  assert model.nsp_head is None
  assert not any("nsp_head" in w.path for w in model.weights)
  features = _batch(config.vocab_size, with_labels=False)
  outputs = model(features)
  assert "nsp_logits" not in outputs
  sums = mlm.loss_sums(outputs, features)
  assert tuple(sums) == losses.MLM_SUM_KEYS
  metrics = mlm.metrics(sums)
  assert tuple(sorted(metrics)) == tuple(sorted(mlm.metric_keys))
  # The masked-LM loss computed directly: weighted mean of the cross-entropy.
  logits = outputs["mlm_logits"].numpy().astype(np.float64)
  log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  ce = -np.take_along_axis(log_probs, features["masked_lm_ids"][..., None], -1)[..., 0]
  w = features["masked_lm_weights"]
  expected = (w * ce).sum() / (w.sum() + losses.MLM_EPSILON)
  np.testing.assert_allclose(float(metrics["loss"]), expected, rtol=1e-5)
  np.testing.assert_allclose(float(metrics["masked_lm_loss"]), expected, rtol=1e-5)
  assert [label for label, _ in mlm.progress_fields()] == ["loss", "mlm", "mlm_acc"]


def test_sentence_order_reports_under_its_own_name_with_the_same_loss():
  config = tiny_bert_config(dropout=0.0)
  sop, nsp = objectives.get("mlm_sop"), objectives.get("mlm_nsp")
  model = sop.build_model(config)
  features = _batch(config.vocab_size)
  outputs = model(features)
  sop_metrics = sop.metrics(sop.loss_sums(outputs, features))
  nsp_metrics = nsp.metrics(nsp.loss_sums(outputs, features))
  assert set(sop_metrics) == {"loss", "masked_lm_loss", "masked_lm_accuracy",
                              "sentence_order_loss", "sentence_order_accuracy"}
  np.testing.assert_allclose(float(sop_metrics["sentence_order_loss"]),
                             float(nsp_metrics["next_sentence_loss"]))
  np.testing.assert_allclose(float(sop_metrics["loss"]), float(nsp_metrics["loss"]))
  assert ("sop_acc", "sentence_order_accuracy") in sop.progress_fields()
  assert objectives.of_model(model) is sop


@pytest.mark.parametrize("name", ["mlm_nsp", "mlm"])
def test_replica_shares_add_up_to_the_loss_of_the_whole_batch(name):
  objective = objectives.get(name)
  config = tiny_bert_config(dropout=0.0)
  model = objective.build_model(config)
  features = _batch(config.vocab_size, with_labels=name != "mlm", seed=3)
  whole = objective.metrics(objective.loss_sums(model(features), features))["loss"]
  counts = objective.global_counts(features)  # outside a strategy: the whole batch
  shares = 0.0
  for part in (slice(0, 1), slice(1, BATCH)):
    piece = {k: v[part] for k, v in features.items()}
    shares += objective.replica_loss(objective.loss_sums(model(piece), piece), counts)
  np.testing.assert_allclose(float(shares), float(whole), rtol=1e-5)


def test_mlm_alone_does_not_train_the_unused_pooler():
  config = tiny_bert_config(dropout=0.0)
  mlm, nsp = objectives.get("mlm"), objectives.get("mlm_nsp")
  model = mlm.build_model(config)
  trained = mlm.trainable_variables(model)
  left_out = {v.path for v in model.trainable_variables} - {v.path for v in trained}
  assert left_out == {"pooled_dense/kernel", "pooled_dense/bias"}
  features = _batch(config.vocab_size, with_labels=False)
  with tf.GradientTape() as tape:
    loss = mlm.metrics(mlm.loss_sums(model(features), features))["loss"]
  assert all(g is not None for g in tape.gradient(loss, trained))
  with_head = nsp.build_model(config)
  assert len(nsp.trainable_variables(with_head)) == len(with_head.trainable_variables)
