"""Tests of bert_tf.downstream.classification.classifier_export: the fine-tuned classifier's
SavedModel loads with TensorFlow alone and answers as the Keras model does."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.downstream.classification import classifier
from bert_tf.downstream.classification import classifier_export

from helpers.serving_model import CONFIG, VOCAB, write_vocab

SEQ = 16


def _random_classifier(num_outputs, seed=0):
  model = classifier.BertClassifier(CONFIG, num_outputs)
  rng = np.random.default_rng(seed)
  for w in model.weights:  # weights far from the initializer's: a real difference shows
    w.assign(rng.normal(scale=0.3, size=w.shape).astype("float32"))
  return model


def _ids(texts_a, texts_b=None):
  """[CLS] A [SEP] (B [SEP]) ids, mask and segments as fine-tuning packs
  them, for texts of whole words of the vocab (each word one wordpiece)."""
  rows = []
  for i, a in enumerate(texts_a):
    tokens = ["[CLS]"] + a.split() + ["[SEP]"]
    segments = [0] * len(tokens)
    if texts_b is not None:
      b = texts_b[i].split() + ["[SEP]"]
      tokens, segments = tokens + b, segments + [1] * len(b)
    rows.append(([VOCAB.index(t) for t in tokens], segments))
  ids = np.zeros((len(rows), SEQ), np.int32)
  mask, segment_ids = np.zeros_like(ids), np.zeros_like(ids)
  for i, (row, segments) in enumerate(rows):
    ids[i, :len(row)], mask[i, :len(row)], segment_ids[i, :len(row)] = row, 1, segments
  return ids, mask, segment_ids


@pytest.mark.parametrize("pair", [False, True])
def test_the_export_gives_the_keras_models_logits_and_labels(tmp_path, pair):
  vocab = write_vocab(tmp_path / "vocab.txt")
  model = _random_classifier(3)
  labels = ["neg", "neutral", "pos"]
  export_dir = str(tmp_path / "export")
  classifier_export.export_classifier(model, vocab, True, labels, pair, export_dir,
                                      max_seq_length=SEQ)
  loaded = tf.saved_model.load(export_dir)
  texts_a = ["the day was long", "a word can see him", "the water was first"]
  texts_b = ["it had come", "the people go", "she said no"] if pair else None
  ids, mask, segments = _ids(texts_a, texts_b)
  expected = model({"input_ids": ids, "input_mask": mask, "segment_ids": segments},
                   training=False).numpy()
  by_ids = loaded.signatures["classify_ids"](input_ids=ids, input_mask=mask,
                                             segment_ids=segments)
  np.testing.assert_allclose(by_ids["logits"].numpy(), expected, rtol=1e-5, atol=1e-5)
  np.testing.assert_array_equal(by_ids["label_ids"].numpy(), expected.argmax(-1))
  # The text signature tokenizes and packs as fine-tuning does: the same answer.
  inputs = ({"text_a": tf.constant(texts_a), "text_b": tf.constant(texts_b)} if pair
            else {"text": tf.constant(texts_a)})
  by_text = loaded.signatures["classify"](**inputs)
  exp = np.exp(expected - expected.max(-1, keepdims=True))
  np.testing.assert_allclose(by_text["probabilities"].numpy(), exp / exp.sum(-1, keepdims=True),
                             rtol=1e-5, atol=1e-6)
  assert [label.decode() for label in by_text["labels"].numpy()] == [
      labels[i] for i in expected.argmax(-1)]
  assert [n.decode() for n in by_text["label_names"].numpy()] == labels
  assert not by_text["truncated"].numpy().any()


def test_a_regression_export_scores_and_marks_truncated_text(tmp_path):
  vocab = write_vocab(tmp_path / "vocab.txt")
  model = _random_classifier(1, seed=1)
  export_dir = str(tmp_path / "export")
  classifier_export.export_classifier(model, vocab, True, [], False, export_dir,
                                      max_seq_length=SEQ)
  loaded = tf.saved_model.load(export_dir)
  texts = ["the day was long", " ".join(["the day was long"] * 5)]
  out = loaded.signatures["classify"](text=tf.constant(texts))
  ids, mask, segments = _ids(texts[:1])
  expected = model({"input_ids": ids, "input_mask": mask, "segment_ids": segments},
                   training=False).numpy()[:, 0]
  np.testing.assert_allclose(out["scores"].numpy()[:1], expected, rtol=1e-5, atol=1e-5)
  assert out["truncated"].numpy().tolist() == [False, True]


def test_bad_arguments_are_one_line_errors_and_leave_no_directory(tmp_path):
  vocab = write_vocab(tmp_path / "vocab.txt")
  model = _random_classifier(2)
  export_dir = tmp_path / "export"
  with pytest.raises(ValueError, match="3 labels for a model with 2 outputs"):
    classifier_export.export_classifier(model, vocab, True, ["a", "b", "c"], False,
                                        str(export_dir), max_seq_length=SEQ)
  with pytest.raises(ValueError, match=r"max_seq_length=3 must lie in \[4, "
                     "max_position_embeddings=40\\]"):
    classifier_export.export_classifier(model, vocab, True, ["a", "b"], True,
                                        str(export_dir), max_seq_length=3)
  short = write_vocab(tmp_path / "short.txt", VOCAB[:-3])
  with pytest.raises(ValueError, match=f"short.txt has {len(VOCAB) - 3} tokens but the "
                     "bert_config's "
                     f"vocab_size is {CONFIG.vocab_size}"):
    classifier_export.export_classifier(model, short, True, ["a", "b"], False, str(export_dir),
                                        max_seq_length=SEQ)
  assert not export_dir.exists()
  classifier_export.export_classifier(model, vocab, True, ["a", "b"], False, str(export_dir),
                                      max_seq_length=SEQ)
  with pytest.raises(FileExistsError):
    classifier_export.export_classifier(model, vocab, True, ["a", "b"], False,
                                        str(export_dir), max_seq_length=SEQ)
