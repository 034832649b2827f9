"""tf.data input pipeline over pretraining TFRecords (plain or gzip).

Reads what `bert_tf.create_pretraining_data` writes (with its manifest) and
what the original google-research/bert script writes (no manifest: the
shapes come from the first record). Files are sharded across input pipelines
(one per worker under a multi-worker strategy), so each pipeline reads only
its own files, in parallel, interleaved.

Record variants (bert_tf.data.pretraining.writer.DataOptions): `DataInfo.sentence_task`
says which sentence label the records hold ("nsp", "sop": the feature
next_sentence_labels; "none": no such key in the batches), and
`DataInfo.masking` (a dynamic_masking.DynamicMasking, or None) that the
records were written without masks: the pipeline masks each example from
(seed, global example index), and yields exactly the static records'
features, so the model and losses need no change.
"""

import dataclasses

import tensorflow as tf
from absl import logging

from bert_tf.io import file_io as files_lib
from bert_tf.data.records import damaged_records
from bert_tf.data.input import dynamic_masking
from bert_tf.data.records import manifest as manifest_lib
from bert_tf.data.records import schema


@dataclasses.dataclass(frozen=True)
class DataInfo:
  """What `check_data` learned about a set of record files.

  files: tuple of record file paths (the writer's .json sidecars left out);
  compression: "" or "GZIP", from the first file's bytes;
  max_seq_length / max_predictions_per_seq: the record shapes;
  num_instances: from the manifest, None without one;
  manifest: the records' manifest.Manifest, None without one;
  sentence_task: "nsp", "sop" or "none" (the manifest's; "nsp" without
    one: records of the original script);
  masking: dynamic_masking.DynamicMasking for records written with
    --dynamic_masking (the pipeline masks them), None for masked records.
  """
  files: tuple
  compression: str
  max_seq_length: int
  max_predictions_per_seq: int
  num_instances: object = None
  manifest: object = None
  sentence_task: str = "nsp"
  masking: object = None


def _first_record(path, compression):
  with damaged_records.naming_the_file([path], compression):
    for record in tf.data.TFRecordDataset(path, compression_type=compression).take(1):
      return record.numpy()
  raise ValueError(f"record file {path} holds no records")


def naming_damage(info, what="records"):
  """A `with` block around reads of `info`'s records (a DataInfo): a
  truncated or corrupt file in it becomes a one-line
  damaged_records.DamagedRecordsError naming the file and offset."""
  return damaged_records.naming_the_file(info.files, info.compression, what)


def check_data(input_patterns, max_seq_length, max_predictions_per_seq,
               vocab_size=None, use_manifest=True, flag="--input_file", sentence_task=None):
  """Finds the record files and checks them against the training settings.

  The manifest (when the data writer left one) is checked for
  max_seq_length, max_predictions_per_seq and the vocab size; the first
  record's shapes are checked always, so records of the original script
  (no manifest) are checked too.

  Args:
    input_patterns: comma-separated globs (str) or a list of them.
    max_seq_length, max_predictions_per_seq: int, from the flags.
    vocab_size: int, the model's vocab_size (config), or None to skip.
    use_manifest: False to check the records alone.
    flag: the flag the patterns came from, named in errors.
    sentence_task: "nsp", "sop" or "none" that the caller trains with, or
      None to take the records' (DataInfo.sentence_task).
  Returns:
    DataInfo.
  Raises:
    FileNotFoundError: a pattern matching nothing.
    ValueError: one line naming the mismatching setting and both values.
  """
  files = manifest_lib.record_files(input_patterns, flag)
  manifest = manifest_lib.Manifest.find(input_patterns) if use_manifest else None
  if manifest is not None:
    manifest.check(max_seq_length, max_predictions_per_seq, vocab_size, sentence_task)
    _check_listed(manifest, files)
  # The bytes, not the manifest or the name: they cannot be stale.
  compression = files_lib.compression_of(files[0])
  if manifest is not None and manifest.gzip is not None and manifest.gzip != (compression == "GZIP"):
    logging.warning("%s says compression=%r but %s is %s; reading it as the bytes say",
                    manifest.source, manifest.compression, files[0], compression or "plain")
  first = _first_record(files[0], compression)
  seq, preds = schema.shapes_of_record(first)
  masked, has_label = schema.features_of_record(first)
  task, masking = _variant_of(manifest, files[0], masked, has_label)
  if preds is None:
    preds = manifest.max_predictions_per_seq
  for name, want, have in (("max_seq_length", max_seq_length, seq),
                           ("max_predictions_per_seq", max_predictions_per_seq, preds)):
    if have != want:
      raise ValueError(f"--{name}={want} but the records in {files[0]} have {name}={have}")
  if sentence_task is not None and sentence_task != task:
    raise ValueError(f"--sentence_task={sentence_task} but the records in {files[0]} "
                     f"have sentence_task={task}")
  return DataInfo(files=tuple(files), compression=compression, max_seq_length=seq,
                  max_predictions_per_seq=preds,
                  num_instances=manifest.instances if manifest is not None else None,
                  manifest=manifest, sentence_task=task, masking=masking)


def _check_listed(manifest, files):
  """ValueError naming a record file beside `manifest` that it does not list
  (a shard of another run left in the folder, whose records it does not
  describe)."""
  if manifest.files is None or manifest.path is None:
    return
  folder = files_lib.parent_of(manifest.path)
  listed = {path.rsplit("/", 1)[-1] for path in manifest.files}
  for path in files:
    if files_lib.parent_of(path) == folder and path.rsplit("/", 1)[-1] not in listed:
      raise ValueError(f"{path} is not one of the {len(listed)} record files its manifest "
                       f"{manifest.path} lists: another run's file? leave it out of the "
                       "pattern or move it away")


def _variant_of(manifest, path, masked, has_label):
  """(sentence_task, DynamicMasking or None) of records whose first record
  (at `path`) has masked_lm_* features / a sentence label or not, checked
  against their manifest (None: records of the original script)."""
  if manifest is None:
    if not masked:
      raise ValueError(f"the records in {path} have no masked_lm_* features (written with "
                       "--dynamic_masking) but no manifest beside them: the input pipeline "
                       "needs it to mask them; keep the writer's manifest with the records")
    if not has_label:
      raise ValueError(f"the records in {path} have no next_sentence_labels but no manifest "
                       "says which objective they were written for; keep the writer's "
                       "manifest with the records")
    return "nsp", None
  task = manifest.sentence_task
  dynamic = manifest.dynamic_masking
  if masked == dynamic or has_label != (task != "none"):
    raise ValueError(
        f"{manifest.source} says dynamic_masking={dynamic}, sentence_task={task} but the "
        f"records in {path} have {'' if masked else 'no '}masked_lm_* features and "
        f"{'a' if has_label else 'no'} next_sentence_labels")
  return task, dynamic_masking.DynamicMasking.from_manifest(manifest)


def make_dataset(files, batch_size, max_seq_length, max_predictions_per_seq,
                 is_training, compression="", input_context=None, seed=None,
                 shuffle_buffer=10000, cycle_length=8, sentence_task="nsp", masking=None,
                 drop_remainder=True):
  """Builds the tf.data pipeline of parsed, batched features.

  Args:
    files: list of record file paths (all pipelines get the same list).
    batch_size: int, the batch of *this pipeline* (per replica under
      `distribute_datasets_from_function`: pass
      `input_context.get_per_replica_batch_size(global_batch)`).
    is_training: shuffle files and records and repeat forever; otherwise
      read the files in order, once.
    compression: "" or "GZIP".
    input_context: tf.distribute.InputContext or None; files are sharded by
      `input_pipeline_id` (records are, when there are fewer files than
      pipelines).
    seed: int or None: the shuffles' seed, and the masks' (0 when None).
    sentence_task: "none" for records without next_sentence_labels.
    masking: dynamic_masking.DynamicMasking for records written without
      masks (DataInfo.masking): each example is masked from (seed, its
      global index in this pipeline's stream, counted after the shuffle
      and repeat), so a later epoch gets new masks and a run repeats
      exactly for a seed.
  Returns:
    tf.data.Dataset of dicts as `schema.parse_examples` returns, with static
    batch dimension `batch_size` (drop_remainder=True, as TPUs and XLA want;
    drop_remainder=False keeps a short last batch of a one-pass read);
    the same features for dynamic records (masked here); no
    next_sentence_labels with sentence_task "none".
  """
  files = list(files)
  num_pipelines = input_context.num_input_pipelines if input_context else 1
  pipeline_id = input_context.input_pipeline_id if input_context else 0
  ds = tf.data.Dataset.from_tensor_slices(files)
  shard_records = False
  own_files = len(files)
  if num_pipelines > 1:
    if len(files) >= num_pipelines:
      ds = ds.shard(num_pipelines, pipeline_id)
      own_files = len(files[pipeline_id::num_pipelines])
    else:
      logging.warning("%d record files for %d input pipelines: sharding by record "
                      "(every pipeline reads every file); write more shards",
                      len(files), num_pipelines)
      shard_records = True
  if is_training:
    ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True).repeat()
    ds = ds.interleave(
        lambda f: tf.data.TFRecordDataset(f, compression_type=compression),
        # No more than this pipeline's files: the file list repeats, so a
        # longer cycle would open a file twice and read each record twice.
        cycle_length=max(1, min(cycle_length, own_files)),
        # Deterministic: a seeded run reads the same batches every time (and
        # on any strategy); parallel reads still overlap.
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if shard_records:
      ds = ds.shard(num_pipelines, pipeline_id)
    ds = ds.shuffle(shuffle_buffer, seed=seed)
  else:
    ds = tf.data.TFRecordDataset(ds, compression_type=compression)
    if shard_records:
      ds = ds.shard(num_pipelines, pipeline_id)
  sentence_label = sentence_task != "none"
  drop_remainder = drop_remainder or is_training
  if masking is None:
    ds = ds.batch(batch_size, drop_remainder=drop_remainder)
    # Parsing a whole batch at once is much faster than record by record.
    ds = ds.map(lambda serialized: schema.parse_examples(
        serialized, max_seq_length, max_predictions_per_seq, sentence_label=sentence_label),
                num_parallel_calls=tf.data.AUTOTUNE)
    return ds.prefetch(tf.data.AUTOTUNE)
  mask_seed = int(seed or 0)

  def draws(index, serialized):
    # Unique over pipelines: pipeline k takes indices k, k + P, k + 2P, ...
    global_index = index * num_pipelines + pipeline_id
    return serialized, dynamic_masking.example_draws(mask_seed, global_index, max_seq_length)

  def parse_and_mask(serialized, example_draws):
    features = schema.parse_examples(serialized, max_seq_length, max_predictions_per_seq,
                                     masked=False, sentence_label=sentence_label)
    return dynamic_masking.mask_batch(features, example_draws, masking)

  ds = ds.enumerate().map(draws, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  ds = ds.batch(batch_size, drop_remainder=drop_remainder)
  ds = ds.map(parse_and_mask, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  return ds.prefetch(tf.data.AUTOTUNE)


def distributed_dataset(strategy, info, global_batch_size, is_training, seed=None,
                        shuffle_buffer=10000):
  """`make_dataset` under a strategy: one pipeline per input pipeline id.

  Args:
    strategy: tf.distribute.Strategy.
    info: DataInfo from `check_data`.
    global_batch_size: int, divisible by strategy.num_replicas_in_sync.
  Returns:
    tf.distribute.DistributedDataset of per-replica feature dicts.
  """
  if global_batch_size % strategy.num_replicas_in_sync:
    raise ValueError(f"batch size {global_batch_size} is not divisible by the "
                     f"{strategy.num_replicas_in_sync} replicas")

  def dataset_fn(input_context):
    return make_dataset(
        info.files, input_context.get_per_replica_batch_size(global_batch_size),
        info.max_seq_length, info.max_predictions_per_seq, is_training,
        compression=info.compression, input_context=input_context, seed=seed,
        shuffle_buffer=shuffle_buffer, sentence_task=info.sentence_task, masking=info.masking)

  return strategy.distribute_datasets_from_function(dataset_fn)
