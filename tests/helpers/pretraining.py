"""A tiny pretraining run: its BertConfig and TrainConfig, random records
of its shapes, records of the writer's test corpus, and a manifest."""

import random

import tensorflow as tf

from bert_tf.data.records import manifest as manifest_lib
from bert_tf.data.records import schema
from bert_tf.models.config import BertConfig
from bert_tf.training import loop

from helpers import reference_records


SEQ, PREDS, VOCAB = 32, 5, 100


# The keys of the original run_pretraining.py's eval_results.txt (its
# metric_fn's names plus global_step and loss), sorted as it writes them.
ORIGINAL_EVAL_KEYS = ("global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
                      "next_sentence_accuracy", "next_sentence_loss")


def tiny_bert_config(dropout=0.1):
  return BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                    num_attention_heads=2, intermediate_size=64,
                    hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
                    max_position_embeddings=64)


def write_records(path, n, seed=0, nan_weights=False, vocab_size=VOCAB):
  """n random instances of ids below vocab_size (MLM targets are masked
  with [MASK]=4 in the input)."""
  rng = random.Random(seed)
  encoder = reference_records.RecordEncoder(SEQ, PREDS)
  with tf.io.TFRecordWriter(str(path)) as writer:
    for _ in range(n):
      length = rng.randint(8, SEQ)
      ids = [rng.randrange(5, vocab_size) for _ in range(length)]
      positions = sorted(rng.sample(range(1, length), PREDS))
      targets = [ids[p] for p in positions]
      for p in positions:
        ids[p] = 4
      segments = [0] * (length // 2) + [1] * (length - length // 2)
      record = encoder.encode(ids, segments, positions, targets, rng.randint(0, 1))
      if nan_weights:
        example = tf.train.Example.FromString(record)
        example.features.feature["masked_lm_weights"].float_list.value[:] = [float("nan")] * PREDS
        record = example.SerializeToString()
      writer.write(record)


def tiny_train_config(tmp_path, **kw):
  defaults = dict(input_file=str(tmp_path / "train.tfrecord"),
                  output_dir=str(tmp_path / "out"), do_train=True,
                  max_seq_length=SEQ, max_predictions_per_seq=PREDS, train_batch_size=8,
                  eval_batch_size=8, learning_rate=1e-3, num_train_steps=6,
                  num_warmup_steps=2, save_checkpoints_steps=3, iterations_per_loop=2,
                  log_steps=2, max_eval_steps=3, shuffle_buffer=50)
  defaults.update(kw)
  return loop.TrainConfig(**defaults)


def two_step_train_config(tmp_path, records="a.tfrecord", **kw):
  """tiny_train_config of a 2-step run on tmp_path/records, checkpointed at
  its end."""
  fields = dict(input_file=str(tmp_path / records), num_train_steps=2, num_warmup_steps=1,
                save_checkpoints_steps=2, max_eval_steps=2, shuffle_buffer=16)
  fields.update(kw)
  return tiny_train_config(tmp_path, **fields)


def writer_records(tmp_path, dupe_factor=1, **changes):
  """Records of the writer tests' corpus (helpers/doc_corpus.py) written by the data writer with
  DataOptions `changes`: (their glob, a tiny BertConfig of their vocab)."""
  from helpers import doc_corpus  # pylint: disable=g-import-not-at-top
  from bert_tf.data.tokenizers import wordpiece_vocab  # pylint: disable=g-import-not-at-top
  from bert_tf.data.pretraining import writer  # pylint: disable=g-import-not-at-top
  vocab = doc_corpus.write_vocab(tmp_path / "vocab.txt")
  doc_corpus.write_corpus(tmp_path / "corpus.txt")
  options = writer.DataOptions(max_seq_length=SEQ, max_predictions_per_seq=PREDS,
                               dupe_factor=dupe_factor, random_seed=7, block_bytes=4000,
                               **changes)
  writer.create_pretraining_data(str(tmp_path / "corpus.txt"),
                                 writer.Outputs(directory=str(tmp_path / "rec"), num_shards=1),
                                 vocab, options, num_workers=1)
  size = len(wordpiece_vocab.load_vocab(vocab).tokens)
  return str(tmp_path / "rec" / "*.tfrecord"), tiny_bert_config().replace(vocab_size=size)


def write_manifest(directory, **flag_overrides):
  flags = {"max_seq_length": SEQ, "max_predictions_per_seq": PREDS}
  flags.update(flag_overrides)
  return manifest_lib.Manifest(
      schema_version=schema.SCHEMA_VERSION, flags=flags,
      vocab={"size": VOCAB, "sha256": "0" * 64, "path": "vocab.txt"},
      counts={"instances": 16, "a_count_of_a_newer_writer": 1}, compression="",
      extra={"a_section_of_a_newer_writer": {}}).write(
          manifest_lib.manifest_path_for_dir(str(directory)))
