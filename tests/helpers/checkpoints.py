"""Checkpoints for tests: a pretrainer read back from one as export reads
it, and an original TF1 checkpoint written as run_pretraining.py writes it."""

import numpy as np
import tensorflow as tf

from bert_tf.training import checkpoints
from bert_tf.training import objectives


def load_recorded(bert_config, checkpoint):
  """checkpoints.load_pretrainer with the objective the checkpoint records:
  (pretrainer, prefix read)."""
  return checkpoints.load_pretrainer(bert_config, checkpoint,
                                     objectives.from_checkpoint(checkpoint))


def write_tf1_checkpoint(prefix, weights, with_optimizer_state=True):
  """Writes `weights` with a TF1 graph and tf.compat.v1.train.Saver, as the
  original run_pretraining.py does, with Adam slots and global_step.

  Returns the prefix written (`prefix-<global_step>`).
  """
  graph = tf.Graph()
  with graph.as_default():
    for name, value in weights.items():
      tf.compat.v1.get_variable(name, initializer=tf.constant(value))
      if with_optimizer_state:
        tf.compat.v1.get_variable(name + "/adam_m", initializer=tf.constant(np.full_like(value, 7.0)))
        tf.compat.v1.get_variable(name + "/adam_v", initializer=tf.constant(np.full_like(value, 9.0)))
    tf.compat.v1.train.get_or_create_global_step()
    saver = tf.compat.v1.train.Saver()
    with tf.compat.v1.Session(graph=graph) as session:
      session.run(tf.compat.v1.global_variables_initializer())
      return saver.save(session, prefix, global_step=123456 if with_optimizer_state else 0)


def optimizer_state(checkpoint):
  """The optimizer's variables in a training checkpoint (a prefix, or a
  directory for its latest), by checkpoint key: its step counter and slots."""
  if tf.io.gfile.isdir(checkpoint):
    checkpoint = tf.train.latest_checkpoint(checkpoint)
  reader = tf.train.load_checkpoint(checkpoint)
  return {key: reader.get_tensor(key) for key in reader.get_variable_to_shape_map()
          if key.startswith("optimizer/")}


def optimizer_iterations(checkpoint):
  """The optimizer's own step counter in a training checkpoint (see
  optimizer_state): the schedule position a resumed run continues from."""
  return int(optimizer_state(checkpoint)["optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE"])


def write_random_release(bert_config, directory, seed=0):
  """A BertPretrainer of bert_config with normal random weights, saved as
  an original TF1 release (directory/bert_model.ckpt); the model."""
  from bert_tf.models import modeling  # pylint: disable=g-import-not-at-top
  from bert_tf.models import tf1_checkpoint  # pylint: disable=g-import-not-at-top
  source = modeling.BertPretrainer(bert_config)
  rng = np.random.default_rng(seed)
  for w in source.weights:
    w.assign(rng.normal(size=w.shape).astype("float32"))
  tf1_checkpoint.save_tf1_checkpoint(source, str(directory / "bert_model.ckpt"))
  return source
