"""The tf.distribute strategy a run trains under, by name, and which task is
the chief.

"one_device" (one GPU, else the CPU), "mirrored" (the GPUs of one host),
"multi_worker_mirrored" (several hosts, from TF_CONFIG) and "tpu" (a Cloud
TPU by name, or the TPU VM's own). "" chooses "mirrored" with several GPUs,
else "one_device".
"""

import tensorflow as tf

from bert_tf.training.train_config import STRATEGIES


def make_strategy(name="", tpu_name="", tpu_zone="", gcp_project=""):
  """Returns the tf.distribute.Strategy named `name` ("" chooses "mirrored"
  with several GPUs, else "one_device"). Raises ValueError when a TPU is
  asked for but none is reachable (within a second for tpu_name "" or
  "local")."""
  gpus = tf.config.list_physical_devices("GPU")
  if not name:
    name = "mirrored" if len(gpus) > 1 else "one_device"
  if name == "one_device":
    return tf.distribute.OneDeviceStrategy("/gpu:0" if gpus else "/cpu:0")
  if name == "mirrored":
    return tf.distribute.MirroredStrategy()
  if name == "multi_worker_mirrored":
    return tf.distribute.MultiWorkerMirroredStrategy()
  if name == "tpu":
    # "local" (a TPU VM) when no name is given: an unnamed resolver would
    # query the GCE metadata server, which can take minutes to time out.
    target = tpu_name or "local"
    try:
      resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
          tpu=target, zone=tpu_zone or None, project=gcp_project or None)
      if target != "local":
        tf.config.experimental_connect_to_cluster(resolver)
      tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, tf.errors.OpError, RuntimeError) as e:
      first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
      raise ValueError(f"--strategy=tpu: no TPU found (tpu_name={target!r}): {first_line[:200]}; "
                       "name a reachable TPU with --tpu_name or choose another --strategy"
                       ) from e
    return tf.distribute.TPUStrategy(resolver)
  raise ValueError(f"strategy={name!r} is not one of {', '.join(STRATEGIES)}")


def is_chief(strategy):
  """Whether this task is the chief (the one that writes summaries, eval
  results and the kept checkpoints): the "chief" task, else worker 0 of a
  cluster without one, else the only task."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not resolver.task_type:
    return True
  if resolver.task_type == "chief":
    return True
  has_chief = "chief" in resolver.cluster_spec().as_dict()
  return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief
