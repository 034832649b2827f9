"""Tests of bert_tf.training.strategy: strategies by name, the chief."""

import pytest
import tensorflow as tf

from bert_tf.training import strategy as strategies


def test_tpu_strategy_without_tpu_fails_clearly():
  # No name means the TPU VM's own ("local"), never a metadata-server query.
  for name in ("", "local"):
    with pytest.raises(ValueError, match=r"--strategy=tpu: no TPU found \(tpu_name='local'\)"):
      strategies.make_strategy("tpu", tpu_name=name)


def test_one_device_is_the_default_on_a_cpu_machine():
  strategy = strategies.make_strategy("")
  assert strategy.num_replicas_in_sync == 1
  assert type(strategy).__name__ == "OneDeviceStrategy"


class _Strategy:  # what is_chief reads of a strategy: its cluster resolver
  def __init__(self, cluster, task_type, task_id):
    self.cluster_resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster), task_type=task_type, task_id=task_id)


def test_the_chief_is_the_chief_task_else_worker_zero():
  with_chief = {"chief": ["h0:1"], "worker": ["h1:1", "h2:1"]}
  assert strategies.is_chief(_Strategy(with_chief, "chief", 0))
  assert not strategies.is_chief(_Strategy(with_chief, "worker", 0))
  workers = {"worker": ["h1:1", "h2:1"]}
  assert strategies.is_chief(_Strategy(workers, "worker", 0))
  assert not strategies.is_chief(_Strategy(workers, "worker", 1))
  # One process without a cluster: the chief.
  assert strategies.is_chief(tf.distribute.get_strategy())
