"""Tests of bert_tf.training.losses: the original reductions, the additive sums
that train and eval share, and the replica split."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training import losses
from helpers import batch_losses


def _np_log_softmax(x):
  x = x - x.max(axis=-1, keepdims=True)
  return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def _random_case(rng, batch=6, preds=5, vocab=30):
  outputs = {"mlm_logits": rng.standard_normal((batch, preds, vocab)).astype(np.float32) * 3,
             "nsp_logits": rng.standard_normal((batch, 2)).astype(np.float32)}
  weights = np.zeros((batch, preds), np.float32)
  counts = [5, 1, 3, 0, 2, 4][:batch]  # uneven: one row has no prediction
  for row, count in enumerate(counts):
    weights[row, :count] = 1.0
  ids = rng.integers(0, vocab, (batch, preds)).astype(np.int32)
  ids[weights == 0] = 0
  features = {"masked_lm_ids": ids, "masked_lm_weights": weights,
              "next_sentence_labels": rng.integers(0, 2, (batch, 1)).astype(np.int32)}
  return outputs, features


def _np_losses(outputs, features):
  """The original reductions, stated in numpy (float64)."""
  lp = _np_log_softmax(outputs["mlm_logits"].astype(np.float64))
  ids, w = features["masked_lm_ids"], features["masked_lm_weights"].astype(np.float64)
  ce = -np.take_along_axis(lp, ids[..., None], axis=-1)[..., 0]
  mlm = (w * ce).sum() / (w.sum() + 1e-5)
  labels = features["next_sentence_labels"].reshape(-1)
  nsp_lp = _np_log_softmax(outputs["nsp_logits"].astype(np.float64))
  nsp = -nsp_lp[np.arange(len(labels)), labels].mean()
  mlm_acc = (w * (lp.argmax(-1) == ids)).sum() / w.sum()
  nsp_acc = (nsp_lp.argmax(-1) == labels).mean()
  return {"mlm_loss": mlm, "nsp_loss": nsp, "total": mlm + nsp,
          "mlm_accuracy": mlm_acc, "nsp_accuracy": nsp_acc, "mlm_weight_sum": w.sum()}


@pytest.mark.parametrize("jit_compile", [False, True])
def test_sparse_cross_entropy_is_the_fused_op_in_value_and_gradient(jit_compile):
  # Large logits too (scale 40): the shift by the row max must keep it exact.
  rng = np.random.default_rng(3)
  for scale in (1.0, 40.0):
    logits = tf.constant(rng.standard_normal((3, 4, 50)) * scale, tf.float32)
    ids = tf.constant(rng.integers(0, 50, (3, 4)), tf.int32)
    upstream = tf.constant(rng.standard_normal((3, 4)), tf.float32)

    @tf.function(jit_compile=jit_compile)
    def both(logits, ids, upstream):
      with tf.GradientTape(persistent=True) as tape:
        tape.watch(logits)
        fused = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=logits)
        ours = losses.sparse_cross_entropy(ids, logits)
        fused_sum, ours_sum = tf.reduce_sum(fused * upstream), tf.reduce_sum(ours * upstream)
      return (fused, ours, tape.gradient(fused_sum, logits), tape.gradient(ours_sum, logits))

    fused, ours, fused_grad, ours_grad = both(logits, ids, upstream)
    assert ours.shape == (3, 4)
    np.testing.assert_allclose(ours, fused, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ours_grad, fused_grad, rtol=0, atol=1e-6)


def test_hit_is_argmax_equals_label_and_has_no_gradient():
  # The accuracy comes from the cross-entropy's own pass (label logit ==
  # row max): argmax == label wherever the maximum is unique.
  rng = np.random.default_rng(5)
  logits = rng.standard_normal((6, 7, 40)).astype(np.float32)
  ids = rng.integers(0, 40, (6, 7))
  ids[::2] = logits[::2].argmax(-1)  # every other row right
  ce, hit = losses.sparse_cross_entropy_and_hit(tf.constant(ids), tf.constant(logits))
  np.testing.assert_array_equal(hit.numpy(), (logits.argmax(-1) == ids).astype(np.float32))
  assert 0.4 < float(tf.reduce_mean(hit)) < 0.7
  np.testing.assert_allclose(ce, losses.sparse_cross_entropy(ids, logits), rtol=0, atol=0)
  # A label tied for the maximum counts as a hit (argmax would take the first).
  tied = np.zeros((1, 5), np.float32)
  _, hit = losses.sparse_cross_entropy_and_hit(tf.constant([3]), tf.constant(tied))
  assert hit.numpy().tolist() == [1.0]
  x = tf.constant(logits)
  with tf.GradientTape() as tape:
    tape.watch(x)
    _, hit = losses.sparse_cross_entropy_and_hit(tf.constant(ids), x)
    total = tf.reduce_sum(hit)
  grad = tape.gradient(total, x)
  assert grad is None or not np.any(grad.numpy())


def test_matches_original_reductions():
  outputs, features = _random_case(np.random.default_rng(0))
  got = batch_losses.pretraining_losses(outputs, features)
  expected = _np_losses(outputs, features)
  assert set(got) == set(expected)
  for key, value in expected.items():
    assert got[key].dtype == tf.float32, key
    np.testing.assert_allclose(float(got[key]), value, rtol=1e-5, err_msg=key)
  # Labels given as [batch] work the same as [batch, 1].
  flat = dict(features, next_sentence_labels=features["next_sentence_labels"].reshape(-1))
  np.testing.assert_allclose(float(batch_losses.pretraining_losses(outputs, flat)["nsp_loss"]),
                             expected["nsp_loss"], rtol=1e-6)


def test_padding_predictions_do_not_count():
  outputs, features = _random_case(np.random.default_rng(1))
  scrambled = {k: v.copy() for k, v in outputs.items()}
  pad = features["masked_lm_weights"] == 0
  scrambled["mlm_logits"][pad] = 100.0 * np.random.default_rng(2).standard_normal(
      scrambled["mlm_logits"][pad].shape)
  a = batch_losses.pretraining_losses(outputs, features)
  b = batch_losses.pretraining_losses(scrambled, features)
  for key in ("mlm_loss", "mlm_accuracy"):
    assert float(a[key]) == pytest.approx(float(b[key]), rel=1e-6)
  # No prediction at all: loss 0 (the 1e-5), not NaN.
  empty = dict(features, masked_lm_weights=np.zeros_like(features["masked_lm_weights"]))
  result = batch_losses.pretraining_losses(outputs, empty)
  assert float(result["mlm_loss"]) == 0.0 and float(result["mlm_accuracy"]) == 0.0


def _split(tree, index):
  return {k: v[index] for k, v in tree.items()}


def test_sums_are_the_original_terms_and_add_across_slices():
  outputs, features = _random_case(np.random.default_rng(6))
  expected = _np_losses(outputs, features)
  sums = losses.loss_sums(outputs, features)
  assert set(sums) == set(losses.SUM_KEYS)
  w = features["masked_lm_weights"]
  assert float(sums["mlm_weight_sum"]) == w.sum() == 15.0
  assert float(sums["num_examples"]) == 6.0
  np.testing.assert_allclose(float(sums["mlm_ce_sum"]) / (w.sum() + 1e-5),
                             expected["mlm_loss"], rtol=1e-6)
  np.testing.assert_allclose(float(sums["sentence_ce_sum"]) / 6, expected["nsp_loss"], rtol=1e-6)
  # Sums of two slices add up to the sums of the whole batch, and the
  # metrics of the added sums are the whole batch's.
  parts = [losses.loss_sums(_split(outputs, s), _split(features, s))
           for s in (slice(0, 2), slice(2, 6))]
  added = {k: parts[0][k] + parts[1][k] for k in losses.SUM_KEYS}
  for key in losses.SUM_KEYS:
    np.testing.assert_allclose(float(added[key]), float(sums[key]), rtol=1e-6, err_msg=key)
  metrics = losses.metrics_from_sums(added)
  for ours, theirs in (("loss", "total"), ("masked_lm_loss", "mlm_loss"),
                       ("next_sentence_loss", "nsp_loss"), ("masked_lm_accuracy", "mlm_accuracy"),
                       ("next_sentence_accuracy", "nsp_accuracy")):
    np.testing.assert_allclose(float(metrics[ours]), expected[theirs], rtol=1e-5, err_msg=ours)


def test_eval_masked_lm_loss_is_the_weighted_mean_without_epsilon():
  # The original's eval metric is tf.metrics.mean(CE, weights=w): no 1e-5.
  outputs, features = _random_case(np.random.default_rng(7))
  sums = {k: tf.cast(v, tf.float64) for k, v in losses.loss_sums(outputs, features).items()}
  w = features["masked_lm_weights"].astype(np.float64)
  weighted_mean = float(sums["mlm_ce_sum"]) / w.sum()
  assert float(losses.metrics_from_sums(sums, mlm_epsilon=0)["masked_lm_loss"]) == (
      pytest.approx(weighted_mean, rel=1e-12))
  with_epsilon = float(losses.metrics_from_sums(sums)["masked_lm_loss"])
  assert with_epsilon == pytest.approx(float(sums["mlm_ce_sum"]) / (w.sum() + 1e-5), rel=1e-12)
  assert with_epsilon < weighted_mean
  # No prediction at all: 0, not NaN.
  empty = dict(sums, mlm_ce_sum=tf.constant(0.0, tf.float64),
               mlm_weight_sum=tf.constant(0.0, tf.float64))
  assert float(losses.metrics_from_sums(empty, mlm_epsilon=0)["masked_lm_loss"]) == 0.0


def test_two_replica_split_sums_to_single_device_loss_and_gradient():
  outputs, features = _random_case(np.random.default_rng(3))
  # Replica 0 gets rows 0-1 (6 predictions), replica 1 rows 2-5 (9): the
  # local weight sums differ, so local means would be wrong.
  parts = [slice(0, 2), slice(2, 6)]
  global_w = features["masked_lm_weights"].sum()
  global_batch = features["masked_lm_ids"].shape[0]

  mlm_var = tf.Variable(outputs["mlm_logits"])
  nsp_var = tf.Variable(outputs["nsp_logits"])
  with tf.GradientTape() as tape:
    single = batch_losses.pretraining_losses({"mlm_logits": mlm_var, "nsp_logits": nsp_var},
                                             features)
  single_grads = tape.gradient(single["total"], [mlm_var, nsp_var])

  shares, grads = [], []
  for part in parts:
    m = tf.Variable(outputs["mlm_logits"][part])
    n = tf.Variable(outputs["nsp_logits"][part])
    with tf.GradientTape() as tape:
      sums = losses.loss_sums({"mlm_logits": m, "nsp_logits": n}, _split(features, part))
      share = losses.replica_loss(sums, global_w, global_batch)
    shares.append(float(share))
    grads.append(tape.gradient(share, [m, n]))

  assert abs(sum(shares) - float(single["total"])) < 1e-6
  # Each replica's gradient is its slice of the single-device gradient, so
  # the optimizer's SUM over replicas gives the single-device update.
  for i, part in enumerate(parts):
    np.testing.assert_allclose(grads[i][0], single_grads[0].numpy()[part], atol=1e-7)
    np.testing.assert_allclose(grads[i][1], single_grads[1].numpy()[part], atol=1e-7)


def test_global_counts_outside_a_strategy():
  _, features = _random_case(np.random.default_rng(4))
  weight_sum, batch_size = losses.global_counts(features)
  assert float(weight_sum) == features["masked_lm_weights"].sum()
  assert float(batch_size) == 6.0


def test_under_a_two_replica_mirrored_strategy(tmp_path):
  # Logical CPU devices must be set before TF initializes, so in a subprocess.
  script = textwrap.dedent("""
    import numpy as np, tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from bert_tf.training import losses
    from helpers import batch_losses
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((4, 3, 11)).astype(np.float32)
    nsp = rng.standard_normal((4, 2)).astype(np.float32)
    feats = {"masked_lm_ids": rng.integers(0, 11, (4, 3)).astype(np.int32),
             "masked_lm_weights": np.array([[1, 1, 1], [1, 0, 0], [1, 1, 0], [0, 0, 0]], np.float32),
             "next_sentence_labels": rng.integers(0, 2, (4, 1)).astype(np.int32)}
    single = batch_losses.pretraining_losses({"mlm_logits": logits, "nsp_logits": nsp}, feats)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    assert strategy.num_replicas_in_sync == 2
    data = dict(feats, mlm_logits=logits, nsp_logits=nsp)
    dataset = tf.data.Dataset.from_tensors(data).unbatch().batch(4)
    batch = next(iter(strategy.experimental_distribute_dataset(dataset)))
    def step(b):
      w, n = losses.global_counts(b)
      return losses.replica_loss(losses.loss_sums(b, b), w, n), w, n
    totals, ws, ns = strategy.run(step, args=(batch,))
    total = strategy.reduce(tf.distribute.ReduceOp.SUM, totals, axis=None)
    assert float(strategy.experimental_local_results(ws)[1]) == 6.0
    assert float(strategy.experimental_local_results(ns)[1]) == 4.0
    print("DIFF", abs(float(total) - float(single["total"])))
  """)
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
             PYTHONPATH=os.pathsep.join([
                 os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                 os.path.dirname(os.path.dirname(os.path.abspath(__file__))),  # tests/: helpers
                 os.environ.get("PYTHONPATH", "")]))
  result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  diff = float(result.stdout.split("DIFF")[-1])
  assert diff < 1e-6


def test_frozen_mlm_sums_are_mlm_sums():
  rng = np.random.default_rng(5)
  logits = tf.constant(rng.normal(0, 4, (3, 4, 700)), tf.float32)
  features = {"masked_lm_ids": tf.constant(rng.integers(0, 700, (3, 4)), tf.int32),
              "masked_lm_weights": tf.constant([[1, 1, 1, 0]] * 3, tf.float32)}
  # One label at its row's maximum: a hit.
  ids = features["masked_lm_ids"].numpy()
  ids[0, 0] = int(tf.argmax(logits[0, 0]))
  features["masked_lm_ids"] = tf.constant(ids)
  frozen, plain = losses.frozen_mlm_sums(logits, features), losses.mlm_sums(logits, features)
  assert sorted(frozen) == sorted(plain)
  for key in plain:
    np.testing.assert_allclose(float(frozen[key]), float(plain[key]), rtol=1e-6, err_msg=key)
  assert float(frozen["mlm_correct"]) >= 1


def test_kind_sums_split_the_hits_by_what_the_input_held():
  rng = np.random.default_rng(7)
  outputs, features = _random_case(rng)
  mask_id, seq = 29, 12
  batch, preds = features["masked_lm_ids"].shape
  positions = np.stack([rng.permutation(seq)[:preds] for _ in range(batch)]).astype(np.int32)
  input_ids = rng.integers(0, 28, (batch, seq)).astype(np.int32)
  kinds = rng.integers(0, 3, (batch, preds))  # 0 [MASK], 1 the label kept, 2 another id
  for b in range(batch):
    for p in range(preds):
      label = features["masked_lm_ids"][b, p]
      input_ids[b, positions[b, p]] = (mask_id, label, (label + 1) % 28)[kinds[b, p]]
  features = dict(features, input_ids=input_ids, masked_lm_positions=positions)
  got = {k: float(v) for k, v in losses.mlm_kind_sums(
      tf.constant(outputs["mlm_logits"]), features, mask_id).items()}
  w = features["masked_lm_weights"]
  hit = outputs["mlm_logits"].argmax(-1) == features["masked_lm_ids"]
  for kind, name in ((0, "at_mask"), (1, "kept")):
    chosen = (kinds == kind) & (w > 0)
    assert got[f"{name}_weight_sum"] == chosen.sum() > 0
    assert got[f"{name}_correct"] == (chosen & hit).sum()
