"""Statistics of pretraining TFRecords, computed from the records alone.

The figures that say whether the data is what BERT pretraining expects:
instances, mean real tokens, predictions per instance, the [MASK] / kept /
random split, the share of random next sentences, the share of short
instances. Works on records of the original script too.

They carry the names of the same figures in the manifest
(bert_tf.data.records.manifest: `counts` and `shares`), so the two can be compared
side by side; `reference_figures` gives them the names of the original's
figures in ../shared/reference/original_create_pretraining_data_kjv.json.
"""

import collections

# Figures computed from the records, by section, named as in the manifest.
COUNTS = ("instances", "tokens", "predictions")
SHARES = ("mean_tokens", "predictions_per_instance", "prediction_fraction", "masked",
          "kept", "random", "nsp_random", "shorter_than_64")
# The original's reference figures: their name -> (section, manifest name).
REFERENCE_NAMES = {
    "instances": ("counts", "instances"),
    "mean_tokens": ("shares", "mean_tokens"),
    "preds_per_instance": ("shares", "predictions_per_instance"),
    "pred_fraction": ("shares", "prediction_fraction"),
    "mask_frac": ("shares", "masked"),
    "kept_frac": ("shares", "kept"),
    "random_frac": ("shares", "random"),
    "nsp_random_frac": ("shares", "nsp_random"),
    "frac_len_lt_64": ("shares", "shorter_than_64"),
}


def _compression(files):
  """The one compression of all `files`; ValueError naming two that differ."""
  from bert_tf.io import file_io as files_lib
  by_kind = {}
  for path in files:
    by_kind.setdefault(files_lib.compression_of(path), path)
  if len(by_kind) > 1:
    raise ValueError(f"{by_kind['GZIP']} is GZIP-compressed but {by_kind['']} is not: "
                     "inspect them separately")
  return next(iter(by_kind))


def _numpy_batches(dataset, files, compression):
  """The batches of `dataset` (over `files`) as numpy dicts; a damaged
  file is a one-line error naming it (damaged_records)."""
  from bert_tf.data.records import damaged_records
  with damaged_records.naming_the_file(files, compression):
    for batch in dataset:
      yield {k: v.numpy() for k, v in batch.items()}


def record_statistics(input_patterns, mask_id, batch_size=1024, flag="--input_file"):
  """Statistics of the records matched by `input_patterns`.

  Args:
    input_patterns: list of globs or a comma-separated string (the writer's
      .json sidecars they match are left out).
    mask_id: id of [MASK] in the vocab the records were written with.
  Returns:
    dict in the manifest's layout (nsp_random None for records without a
    sentence label): files (number of files), max_seq_length,
    max_predictions_per_seq, counts {COUNTS}, shares {SHARES} (shorter_than_64
    None when no instance can be 64 tokens long, as in the manifest).
  Raises:
    FileNotFoundError / ValueError naming the flag, pattern or file.
  """
  import numpy as np
  import tensorflow as tf
  from bert_tf.data.records import manifest as manifest_lib
  from bert_tf.data.records import schema
  files = manifest_lib.record_files(input_patterns, flag)
  compression = _compression(files)
  first = next(_numpy_batches(tf.data.TFRecordDataset(files[:1], compression_type=compression)
                              .batch(1).map(lambda x: {"record": x}), files[:1], compression),
               None)
  if first is None:
    raise ValueError(f"{files[0]}: no record")
  first = first["record"][0]
  seq, preds = schema.shapes_of_record(first)
  # Records of the variants may lack the masks (dynamic masking: figures of
  # masks are 0) or the sentence label (nsp_random None).
  has_masks, has_label = schema.features_of_record(first)
  ds = (tf.data.TFRecordDataset(files, compression_type=compression)
        .batch(batch_size)
        .map(lambda x: schema.parse_examples(x, seq, preds or 0, masked=has_masks,
                                             sentence_label=has_label)))
  n = tokens = predictions = masked = kept = negatives = short = 0
  for b in _numpy_batches(ds, files, compression):
    n += len(b["input_ids"])
    lengths = b["input_mask"].sum(axis=1)
    tokens += int(lengths.sum())
    short += int((lengths < 64).sum())
    if has_masks:
      w = b["masked_lm_weights"] > 0
      predictions += int(w.sum())
      at = np.take_along_axis(b["input_ids"], b["masked_lm_positions"], axis=1)
      masked += int(((at == mask_id) & w).sum())
      kept += int(((at == b["masked_lm_ids"]) & (at != mask_id) & w).sum())
    if has_label:
      negatives += int(b["next_sentence_labels"].sum())  # random B (nsp) or swapped (sop)
  if n == 0:
    raise ValueError(f"{','.join(files)}: no record")
  p = max(predictions, 1)
  return {
      "files": len(files),
      "max_seq_length": seq,
      "max_predictions_per_seq": preds,  # None: records without masks
      "counts": {"instances": n, "tokens": tokens, "predictions": predictions},
      "shares": {
          "mean_tokens": tokens / n,
          "predictions_per_instance": predictions / n,
          "prediction_fraction": predictions / max(tokens, 1),
          "masked": masked / p,
          "kept": kept / p,
          "random": (predictions - masked - kept) / p,
          "nsp_random": negatives / n if has_label else None,
          "shorter_than_64": short / n if seq >= 64 else None,
      },
  }


def unigram_plateau(input_patterns, mask_id, batch_size=1024):
  """The accuracy of predicting one token at every [MASK] of the records:
  the share of the most frequent label among the predictions whose input
  is [MASK] (a masked-LM model that has learned no context scores this),
  or None when no input is [MASK] (dynamic masking, [MASK]-free rules)."""
  import numpy as np
  import tensorflow as tf
  from bert_tf.data.records import manifest as manifest_lib
  from bert_tf.data.records import schema
  files = manifest_lib.record_files(input_patterns, "held-out records")
  compression = _compression(files)
  first = next(iter(tf.data.TFRecordDataset(files[:1], compression_type=compression)), None)
  if first is None:
    return None
  seq, preds = schema.shapes_of_record(first.numpy())
  has_masks, has_label = schema.features_of_record(first.numpy())
  if not has_masks:
    return None
  ds = (tf.data.TFRecordDataset(files, compression_type=compression).batch(batch_size)
        .map(lambda x: schema.parse_examples(x, seq, preds, masked=True,
                                             sentence_label=has_label)))
  counts = collections.Counter()
  for b in _numpy_batches(ds, files, compression):
    fed = np.take_along_axis(b["input_ids"], b["masked_lm_positions"], axis=1)
    chosen = (fed == mask_id) & (b["masked_lm_weights"] > 0)
    counts.update(b["masked_lm_ids"][chosen].tolist())
  total = sum(counts.values())
  return counts.most_common(1)[0][1] / total if total else None


def manifest_figures(manifest):
  """The figures of `record_statistics` as the manifest (a Manifest) states
  them: same layout and names; None for one it does not record."""
  return {
      "path": manifest.path,
      "files": len(manifest.files) if manifest.files is not None else None,
      "max_seq_length": manifest.max_seq_length,
      "max_predictions_per_seq": manifest.max_predictions_per_seq,
      "counts": {name: manifest.count(name) for name in COUNTS},
      "shares": {name: manifest.share(name) for name in SHARES},
  }


def reference_figures(stats):
  """`record_statistics` under the names of the original's reference
  figures (../shared/reference/original_create_pretraining_data_kjv.json)."""
  return {ref: stats[section][name] for ref, (section, name) in REFERENCE_NAMES.items()}
