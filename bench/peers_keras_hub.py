"""bench_peers' third side: keras-hub (on TensorFlow, its own process) where
it has the piece.

- classify: keras_hub.models.BertTextClassifier on a BertBackbone of the
  same shape, its inputs made by BertTextClassifierPreprocessor (keras-hub's
  tokenizer, every pair packed to --seq tokens: keras-hub pads to a fixed
  length, it has no length buckets or dynamic padding) before timing, as
  both other sides time from tokenized features. One epoch of
  `Model.fit` (the model built and compiled in the round: AdamW at the
  same rate and weight decay, gradients clipped to global norm 1.0, no
  warmup schedule: keras-hub's guides compile a constant rate) and
  `Model.predict` of the dev set; prediction alone on a built model,
  traced before timing.
- pretrain (MLM only: keras-hub has no next-sentence head): BertMaskedLM
  trained by `Model.train_on_batch` on the records' batches (masked
  positions gathered as the original's, the same 20 predictions), AdamW,
  clipping at 1.0; the first steps (tracing) untimed. Its row is labelled
  MLM only: ours does MLM + NSP in the same step.

The pairing check of classify: keras-hub's tokenizer gives ours' ids, and
the same weights (our classifier's encoder weights file and head) give the
same logits.
"""

import os


def _backbone(keras_hub, bert):
  return keras_hub.models.BertBackbone(
      vocabulary_size=bert.vocab_size, num_layers=bert.num_hidden_layers,
      num_heads=bert.num_attention_heads, hidden_dim=bert.hidden_size,
      intermediate_dim=bert.intermediate_size, dropout=bert.hidden_dropout_prob,
      max_sequence_length=bert.max_position_embeddings, num_segments=bert.type_vocab_size)


def classify(args, bert, vocab_file, pairs, timed):
  """pairs: (train, dev) lists of (a, b, label)."""
  import keras  # pylint: disable=g-import-not-at-top
  import keras_hub  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  work = args.work
  preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
      keras_hub.models.BertTokenizer(vocabulary=vocab_file, lowercase=True),
      sequence_length=args.seq)

  def features(rows):
    # x= by name: a tuple given by position is read as (x, y)
    out = preprocessor(x=(tf.constant([a for a, _, _ in rows]),
                          tf.constant([b for _, b, _ in rows])))
    return {k: v.numpy() for k, v in out.items()}, np.array([l for _, _, l in rows], np.int32)
  (train_x, train_y), (dev_x, _) = features(pairs[0]), features(pairs[1])
  model = keras_hub.models.BertTextClassifier(_backbone(keras_hub, bert), 2)
  model.backbone.load_weights(os.path.join(work, "cls_encoder.weights.h5"))
  head = np.load(os.path.join(work, "cls_head.npz"))
  model.output_dense.set_weights([head["kernel"], head["bias"]])
  first = {k: v[:args.batch] for k, v in dev_x.items()}
  logits = np.asarray(model(first, training=False))
  ids = [row[mask > 0].tolist() for row, mask in zip(first["token_ids"], first["padding_mask"])]
  model.predict(dev_x, batch_size=args.batch, verbose=0)  # traced before timing
  n_train = len(train_y) // args.batch * args.batch

  def train():
    def run():
      keras.utils.set_random_seed(0)
      trained = keras_hub.models.BertTextClassifier(_backbone(keras_hub, bert), 2)
      trained.compile(
          optimizer=keras.optimizers.AdamW(1e-4, weight_decay=0.01, global_clipnorm=1.0),
          loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
          metrics=["accuracy"])
      # Task.fit makes a tf.data.Dataset of arrays and then ignores shuffle=True: shuffled here.
      data = tf.data.Dataset.from_tensor_slices((train_x, train_y)).shuffle(
          len(train_y), seed=0).batch(args.batch, drop_remainder=True)
      trained.fit(data, epochs=1, shuffle=False, verbose=0)
      trained.predict(dev_x, batch_size=args.batch, verbose=0)
    return timed(run, n_train)

  def predict():
    return timed(lambda: model.predict(dev_x, batch_size=args.batch, verbose=0), len(dev_x["token_ids"]))
  return ({"logits": logits.tolist(), "ids": ids},
          {"classify train": train, "classify predict": predict},
          f"BertTextClassifier (keras-hub {keras_hub.__version__}), inputs by "
          f"BertTextClassifierPreprocessor padded to {args.seq} (its fixed length), "
          f"Model.fit one epoch, AdamW constant rate, clip 1.0, the dev set predicted; "
          f"predict: Model.predict, traced before timing")


def pretrain(args, bert, batch, timed):
  """batch: the records' parsed arrays (batches.npz)."""
  import keras  # pylint: disable=g-import-not-at-top
  import keras_hub  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  keras.utils.set_random_seed(7)
  model = keras_hub.models.BertMaskedLM(_backbone(keras_hub, bert))
  model.compile(optimizer=keras.optimizers.AdamW(1e-4, weight_decay=0.01, global_clipnorm=1.0),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                weighted_metrics=[])
  n = len(batch["input_ids"]) // args.batch
  steps = [({"token_ids": batch["input_ids"][i * args.batch:(i + 1) * args.batch],
             "segment_ids": batch["segment_ids"][i * args.batch:(i + 1) * args.batch],
             "padding_mask": batch["input_mask"][i * args.batch:(i + 1) * args.batch],
             "mask_positions": batch["masked_lm_positions"][i * args.batch:(i + 1) * args.batch]},
            batch["masked_lm_ids"][i * args.batch:(i + 1) * args.batch],
            batch["masked_lm_weights"][i * args.batch:(i + 1) * args.batch].astype(np.float32))
           for i in range(n)]
  for x, y, w in steps[:2]:
    model.train_on_batch(x, y, sample_weight=w)  # tracing, untimed

  def round_():
    def run():
      for i in range(args.steps):
        x, y, w = steps[i % n]
        model.train_on_batch(x, y, sample_weight=w)
    return timed(run, args.steps * args.batch)
  return ({}, {"pretrain": round_},
          f"BertMaskedLM (keras-hub {keras_hub.__version__}), MLM only (no NSP head), "
          f"Model.train_on_batch, AdamW, clip 1.0, float32, {args.steps} steps timed after 2")
