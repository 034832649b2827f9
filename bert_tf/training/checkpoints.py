"""Checkpoints of a BertPretrainer: finding them and reading weights from them.

The one place that turns a user's checkpoint argument into a prefix
(`resolve_checkpoint`) and fills a model from it (`read_weights`), for
training (warm start, resume) and export alike. Three formats are read:

- bert_tf's own, written by training: `tf.train.Checkpoint(model=pretrainer,
  optimizer=..., step=...)`, matched by object path (model/encoder/...);
- the original TF1 BERT's name-based checkpoints (`bert/...`, `cls/...`),
  through `models.tf1_checkpoint`'s name map;
- Hugging Face transformers folders (config.json + model.safetensors),
  through `models.hf_checkpoint`'s renaming of those names.

Either way a variable present in both with different shapes is an error
naming the variable and both shapes, raised before anything is assigned.
"""

import collections
import dataclasses
import os

import keras
import tensorflow as tf
from absl import logging
from tensorflow.core.protobuf import trackable_object_graph_pb2

from bert_tf.io import file_io
from bert_tf.models import hf_checkpoint
from bert_tf.models import tf1_checkpoint

# The file name of the original's released checkpoints, whose directories
# have no "checkpoint" state file.
RELEASE_NAME = "bert_model.ckpt"
_OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
# How messages name each format ReadReport.format has.
FORMAT_NAMES = {"bert_tf": "checkpoint", "tf1": "original TF1 checkpoint",
                "transformers": "transformers folder"}
# Where a training checkpoint keeps the pretrainer: tf.train.Checkpoint(model=...).
# A distillation run's model holds it one level down (model/student).
MODEL_ROOT = ("model",)


@dataclasses.dataclass(frozen=True)
class ReadReport:
  """What `read_weights` did.

  prefix: the checkpoint prefix read (a transformers folder: the folder);
  format: "bert_tf", "tf1" or "transformers";
  initialized: names of the model's weights filled from it (sorted);
  missing: the model's weights the checkpoint does not hold (left as
    they were); unused: weights in the checkpoint the model has no place for
    (optimizer slots and step counters are not counted).
  Names are the original TF1 names for a TF1 checkpoint and a transformers
  folder (whose unused tensors are named as transformers names them), and
  Keras weight paths (e.g. mlm_head/intermediate_dense/kernel) for ours.
  """
  prefix: str
  format: str
  initialized: tuple
  missing: tuple
  unused: tuple


def resolve_checkpoint(checkpoint):
  """Returns the checkpoint prefix that `checkpoint` names.

  Args:
    checkpoint: a training output directory (its latest checkpoint), a
      directory of an original release (holding bert_model.ckpt), a
      checkpoint prefix (ours, e.g. .../ckpt-1000, or an original TF1 one),
      or a transformers folder (config.json + model.safetensors: returned
      as it is).

  Raises:
    FileNotFoundError: naming the path, when no checkpoint is there.
  """
  if hf_checkpoint.is_hf_folder(checkpoint):
    return checkpoint
  if file_io.isdir(checkpoint):
    latest = tf.train.latest_checkpoint(checkpoint)
    if latest:
      return latest
    release = os.path.join(checkpoint, RELEASE_NAME)
    if file_io.exists(release + ".index"):
      return release
    raise FileNotFoundError(
        f"no checkpoint in directory {checkpoint} (no 'checkpoint' file naming "
        f"the latest one, no {RELEASE_NAME}.index, and no transformers "
        f"{hf_checkpoint.CONFIG_NAME} + {hf_checkpoint.WEIGHTS_NAME})")
  if not file_io.exists(checkpoint + ".index"):
    raise FileNotFoundError(
        f"no checkpoint at {checkpoint} (no file {checkpoint}.index); pass a "
        f"checkpoint prefix such as .../ckpt-1000 or .../{RELEASE_NAME}, or a "
        f"training output directory")
  return checkpoint


def restore_training_state(checkpoint, directory):
  """Resume: restores `checkpoint` (a tf.train.Checkpoint of model,
  optimizer and step) from the latest checkpoint training saved in
  `directory`, all of it (optimizer slots included).

  Returns:
    The prefix restored, or None when `directory` holds no checkpoint.

  Raises:
    ValueError: one line, when the saved state does not fit the objects
      (another model or optimizer in the same output_dir) or cannot be read
      (e.g. a shard its index lists is missing).
  """
  latest = tf.train.latest_checkpoint(directory)
  if latest:
    # The objective's tag is checked by `objectives.check_objective`, not restored:
    # checkpoints of older bert_tf runs do not have it.
    state = tf.train.Checkpoint(model=checkpoint.model, optimizer=checkpoint.optimizer,
                                step=checkpoint.step)
    check_readable(latest)
    try:
      state.restore(latest).assert_existing_objects_matched()
    except (AssertionError, ValueError, tf.errors.OpError) as e:
      raise ValueError(
          f"cannot resume from {latest}: {_first_line(e)}; {directory} may hold another run "
          "(use a new --output_dir, or --init_checkpoint to start from its weights)") from None
  return latest


def _first_line(error):
  message = getattr(error, "message", None) or str(error)
  return (message.strip().splitlines() or [type(error).__name__])[0][:300]


def check_readable(prefix):
  """Raises ValueError in one line naming `prefix` and what is wrong when
  its checkpoint cannot be read, e.g. a data shard its index lists is
  missing (a copy or a save that did not finish)."""
  advice = ("(a damaged or partly copied checkpoint: remove it, and its 'checkpoint' entry, "
            "to resume from the one before)")
  try:
    tf.train.load_checkpoint(prefix)  # reads the index only
  except (tf.errors.OpError, ValueError) as e:
    raise ValueError(f"cannot resume from {prefix}: {_first_line(e)} {advice}") from None
  # The data shards are opened only when a tensor is read: check their names.
  shards = file_io.glob(prefix + ".data-*-of-*")
  total = int(shards[0].rsplit("-of-", 1)[1]) if shards else 1
  for k in range(total):
    name = f"{prefix}.data-{k:05d}-of-{total:05d}"
    if name not in shards:
      raise ValueError(f"cannot resume from {prefix}: its data shard {name} is missing {advice}")



def load_pretrainer(bert_config, checkpoint, objective, require_heads=True):
  """Builds the pretrainer an objective exports and fills every weight from
  a checkpoint.

  Args:
    bert_config: a config.BertConfig.
    checkpoint: see `resolve_checkpoint`: a training output directory, a
      checkpoint prefix, or an original TF1 BERT checkpoint.
    objective: a training.objectives Objective, usually the one the
      checkpoint records (`objectives.from_checkpoint(prefix)`): its
      `export_objective` builds the network (a BertPretrainer, or an
      ElectraPretrainer for ELECTRA; a distillation run's student), read
      from the checkpoint at its `checkpoint_root`.
    require_heads: False lets the heads a TF1 checkpoint or transformers
      folder lacks keep their initialization (fine-tuning reads only the
      encoder); every encoder weight is still required.

  Returns:
    (pretrainer, prefix): the built pretrainer and the checkpoint prefix
    actually read.

  Raises:
    FileNotFoundError: no checkpoint there.
    ValueError: the checkpoint does not match the config (a shape names the
      variable and both shapes; a weight count names num_hidden_layers).
  """
  pretrainer = objective.export_objective.build_model(bert_config)  # creates every weight
  report = read_weights(pretrainer, checkpoint, require_all=require_heads,
                        root=objective.checkpoint_root)
  logging.info("Read %d weights from %s %s", len(report.initialized),
               FORMAT_NAMES[report.format], report.prefix)
  return pretrainer, report.prefix


def write_config_beside(bert_config, output_dir, source):
  """Writes `output_dir`/bert_config.json (for export and fine-tuning): a
  run whose config came from `source`, a transformers folder's config.json,
  has no file of its own. Returns its path."""
  file_io.makedirs(output_dir)
  path = os.path.join(output_dir, "bert_config.json")
  file_io.atomic_write(path, bert_config.to_json_string())
  logging.info("Model config (from %s): %s", source, path)
  return path


# ------------------------------------------------------------------------------
# bert_tf checkpoints: matched by object path
# ------------------------------------------------------------------------------


# Keras's own lists of a functional model's layers: their indices follow the
# graph, so the same index can name another layer in a model of another depth.
_INDEX_LISTS = ("_operations", "_layers", "_self_tracked_trackables")
_MAX_PATHS = 16  # per variable; a variable has a handful (tied embeddings: 3)


def _paths_to_variables(root, children, is_variable, key):
  """Every path (tuple of names from "model") to each variable below root.

  Args:
    root: the model object (or object-graph node).
    children: node -> list of (local name, child).
    is_variable: child -> bool.
    key: object -> hashable identity.

  Returns:
    dict key(variable) -> (variable, [paths]), the paths through named
    attributes first, then those through Keras's index lists, shortest first.
  """
  found = {}
  stack = [(root, ("model",), frozenset([key(root)]))]
  while stack:
    node, path, on_path = stack.pop()
    for name, child in children(node):
      child_path = path + (name,)
      if is_variable(child):
        paths = found.setdefault(key(child), (child, []))[1]
        if len(paths) < _MAX_PATHS:
          paths.append(child_path)
      elif key(child) not in on_path:
        stack.append((child, child_path, on_path | {key(child)}))
  for _, paths in found.values():
    paths.sort(key=lambda p: (any(n in _INDEX_LISTS for n in p), len(p), p))
  return found


def _checkpoint_variable_paths(reader, root=MODEL_ROOT):
  """dict path -> checkpoint key of every variable under the checkpoint's
  object at `root` (its `model`, or e.g. model/student), and dict
  checkpoint key -> its preferred path; paths start with ("model",)."""
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(reader.get_tensor(_OBJECT_GRAPH_KEY))
  value_keys = {i: a.checkpoint_key for i, node in enumerate(graph.nodes)
                for a in node.attributes if a.name == "VARIABLE_VALUE"}
  by_path, by_key = {}, {}
  nodes = [0]
  for name in root:
    nodes = [c.node_id for n in nodes for c in graph.nodes[n].children if c.local_name == name]
  for model_node in nodes:
    found = _paths_to_variables(
        model_node,
        lambda i: [(c.local_name, c.node_id) for c in graph.nodes[i].children],
        lambda i: i in value_keys, lambda i: i)
    for node_id, (_, paths) in found.items():
      by_key[value_keys[node_id]] = paths[0]
      by_path.update((p, value_keys[node_id]) for p in paths)
  return by_path, by_key


def _model_variable_paths(model):
  """The same for our model: dict id(weight) -> (weight, [paths])."""
  view = tf.train.TrackableView(model)
  return _paths_to_variables(
      model, lambda obj: list(view.children(obj).items()),
      lambda obj: isinstance(obj, (keras.Variable, tf.Variable)), id)


def _weight_name(weight):
  return getattr(weight, "path", None) or weight.name


def _read_bert_tf_weights(model, prefix, require_all, root=MODEL_ROOT):
  reader = tf.train.load_checkpoint(prefix)
  saved, saved_paths = _checkpoint_variable_paths(reader, root)
  if not saved:
    raise ValueError(
        f"checkpoint {prefix} holds no `{'/'.join(root)}` weights: expected a bert_tf training "
        f"checkpoint (tf.train.Checkpoint(model=...)) or an original TF1 BERT checkpoint")
  shapes = reader.get_variable_to_shape_map()
  plan, missing, used_keys = [], [], set()
  model_paths = _model_variable_paths(model)
  weights = list({id(w): w for w in model.weights}.values())  # in the model's order
  for weight in weights:
    paths = model_paths[id(weight)][1] if id(weight) in model_paths else []
    key = next((saved[p] for p in paths if p in saved), None)
    if key is None or key in used_keys:
      missing.append(_weight_name(weight))
      continue
    have, want = tuple(shapes[key]), tuple(weight.shape)
    if have != want:
      raise ValueError(
          f"checkpoint {prefix} does not match the bert_config: variable "
          f"{_weight_name(weight)} has shape {have} in the checkpoint but the model "
          f"needs {want}")
    plan.append((weight, key))
    used_keys.add(key)
  unused = sorted("/".join(p) for k, p in saved_paths.items() if k not in used_keys)
  if require_all and (missing or unused):
    raise ValueError(
        f"checkpoint {prefix} does not match the bert_config: it holds "
        f"{len(saved_paths)} model weights but the model of this config has "
        f"{len(plan) + len(missing)} (check num_hidden_layers)"
        + (f"; not in the checkpoint: {_first(missing)}" if missing else ""))
  for weight, key in plan:
    weight.assign(reader.get_tensor(key))
  return ReadReport(prefix, "bert_tf", tuple(sorted(_weight_name(w) for w, _ in plan)),
                    tuple(sorted(missing)), tuple(unused))


def _first(names, count=3):
  names = sorted(names)
  more = f" and {len(names) - count} more" if len(names) > count else ""
  return ", ".join(names[:count]) + more


# ------------------------------------------------------------------------------
# Either format
# ------------------------------------------------------------------------------


def read_weights(model, checkpoint, require_all=True, root=MODEL_ROOT):
  """Fills `model`'s weights from a checkpoint (no optimizer state, no step).

  Args:
    model: a modeling.BertPretrainer (its weights built).
    checkpoint: anything `resolve_checkpoint` takes.
    require_all: True (export): every weight of the model must come from
      the checkpoint and every model weight of the checkpoint must be used.
      False (warm start, as the original's init_from_checkpoint): what both
      hold is read, the rest of the model keeps its initialization (a TF1
      checkpoint may lack only the cls/ heads, e.g. an encoder-only one).
    root: where a bert_tf checkpoint holds the pretrainer (MODEL_ROOT, or
      the objective's `checkpoint_root`, e.g. model/student); not used for
      a TF1 checkpoint.

  Returns:
    ReadReport.

  Raises:
    FileNotFoundError: no checkpoint there.
    ValueError: a shape that differs (naming the variable and both shapes),
      or with require_all a weight count that differs; nothing is assigned.
  """
  prefix = resolve_checkpoint(checkpoint)
  if hf_checkpoint.is_hf_folder(prefix):
    result = hf_checkpoint.load_hf_weights(model, prefix, require_heads=require_all)
    if require_all and result["unused"]:
      raise ValueError(
          f"{prefix} does not match the model: it holds tensors the model has no place "
          f"for: {_first(result['unused'])}")
    return ReadReport(prefix, "transformers", tuple(sorted(result["loaded"])),
                      tuple(sorted(result["missing_heads"])), tuple(result["unused"]))
  if tf1_checkpoint.is_tf1_checkpoint(prefix):
    result = tf1_checkpoint.load_tf1_checkpoint(model, prefix, require_heads=require_all)
    if require_all and result["unused"]:
      raise ValueError(
          f"checkpoint {prefix} does not match the bert_config: it holds weights the "
          f"model of this config has no place for (check num_hidden_layers): "
          f"{_first(result['unused'])}")
    return ReadReport(prefix, "tf1", tuple(sorted(result["loaded"])),
                      tuple(sorted(result["missing_heads"])), tuple(result["unused"]))
  return _read_bert_tf_weights(model, prefix, require_all, root)


def warm_start(model, init_checkpoint):
  """--init_checkpoint: reads what the checkpoint and the model both hold
  (read_weights with require_all=False) and logs what was and was not read.

  Returns:
    ReadReport.
  """
  report = read_weights(model, init_checkpoint, require_all=False)
  total = len(report.initialized) + len(report.missing)
  message = (f"Warm start: initialized {len(report.initialized)} of {total} variables "
             f"from {FORMAT_NAMES[report.format]} {report.prefix}")
  if report.missing:
    message += f"; not in the checkpoint (left as initialized): {_first(report.missing)}"
  if report.unused:
    message += f"; in the checkpoint but not in the model: {_first(report.unused)}"
  logging.info(message)
  return report
