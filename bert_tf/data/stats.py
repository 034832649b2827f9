"""Statistics of pretraining TFRecords, computed from the records alone.

The figures that say whether the data is what BERT pretraining expects:
instances, mean real tokens, predictions per instance, the [MASK] / kept /
random split, the share of random next sentences, the share of short
instances. Works on records of the original script too.
"""

def record_statistics(input_patterns, mask_id, batch_size=1024):
  """Statistics of the records matched by `input_patterns`.

  Args:
    input_patterns: list of globs or a comma-separated string.
    mask_id: id of [MASK] in the vocab the records were written with.
  Returns:
    dict: files, instances, max_seq_length, max_predictions_per_seq,
    mean_tokens, preds_per_instance, pred_fraction, mask_frac, kept_frac,
    random_frac, nsp_random_frac, frac_len_lt_64 (the names of
    ../shared/reference/original_create_pretraining_data_kjv.json).
  """
  import numpy as np
  import tensorflow as tf
  from bert_tf.data import schema
  if isinstance(input_patterns, str):
    input_patterns = [p for p in input_patterns.split(",") if p]
  files = sorted({f for p in input_patterns for f in tf.io.gfile.glob(p)})
  files = [f for f in files if not f.endswith(".json")]
  if not files:
    raise FileNotFoundError(f"--input_file: {','.join(input_patterns)!r} matches no file")
  compression = "GZIP" if files[0].endswith(".gz") else ""
  first = next(iter(tf.data.TFRecordDataset(files[:1], compression_type=compression)), None)
  if first is None:
    raise ValueError(f"{files[0]}: no record")
  seq, preds = schema.shapes_of_record(first.numpy())
  ds = (tf.data.TFRecordDataset(files, compression_type=compression)
        .batch(batch_size)
        .map(lambda x: schema.parse_examples(x, seq, preds)))
  n = tokens = predictions = masked = kept = nsp = short = 0
  for batch in ds:
    b = {k: v.numpy() for k, v in batch.items()}
    n += len(b["input_ids"])
    lengths = b["input_mask"].sum(axis=1)
    tokens += int(lengths.sum())
    short += int((lengths < 64).sum())
    w = b["masked_lm_weights"] > 0
    predictions += int(w.sum())
    at = np.take_along_axis(b["input_ids"], b["masked_lm_positions"], axis=1)
    masked += int(((at == mask_id) & w).sum())
    kept += int(((at == b["masked_lm_ids"]) & (at != mask_id) & w).sum())
    nsp += int(b["next_sentence_labels"].sum())
  if n == 0:
    raise ValueError(f"{','.join(files)}: no record")
  p = max(predictions, 1)
  return {
      "files": len(files),
      "instances": n,
      "max_seq_length": seq,
      "max_predictions_per_seq": preds,
      "mean_tokens": tokens / n,
      "preds_per_instance": predictions / n,
      "pred_fraction": predictions / tokens,
      "mask_frac": masked / p,
      "kept_frac": kept / p,
      "random_frac": (predictions - masked - kept) / p,
      "nsp_random_frac": nsp / n,
      "frac_len_lt_64": short / n,
  }
