"""Tests of bert_tf.downstream.tagging.tagger_export: the tagger's SavedModel labels
each whitespace word of a text as the training code's windows do (long
texts too: every word once), loads with TensorFlow alone and errs on a
model it does not fit."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.downstream.tagging import conll
from bert_tf.data.tokenizers import tokenization
from bert_tf.data.tokenizers import wordpiece_vocab
from bert_tf.downstream.tagging import token_head
from bert_tf.serving import predict
from bert_tf.downstream.tagging import tagger_export
from bert_tf.downstream.tagging import tagging
from helpers.tagging_task import tiny_config, write_vocab

LABELS = ("O", "B-LOC", "B-PER", "I-PER", "S-ORG")
SEQ = 8
STRIDE = 3


def _random_tagger(seed=0):
  model = token_head.BertTokenTagger(tiny_config(), len(LABELS))
  rng = np.random.default_rng(seed)
  # A head far from the initializer's: labels vary from word to word.
  model.head.kernel.assign(rng.normal(size=model.head.kernel.shape).astype("float32"))
  return model


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  root = tmp_path_factory.mktemp("tagger")
  vocab = write_vocab(root / "vocab.txt")
  model = _random_tagger()
  export_dir = str(root / "export")
  tagger_export.export_tagger(model, vocab, True, LABELS, export_dir, max_seq_length=SEQ,
                              stride=STRIDE)
  return model, vocab, tf.saved_model.load(export_dir), export_dir


TEXTS = ["John went to Paris", "",
         "mary johns saw anna in rome today and peter met john in berlin with mary today",
         "the a went , Johns !! zzz"]


def test_tag_labels_each_word_as_the_training_windows_do(exported):
  model, vocab, loaded, _ = exported
  out = loaded.signatures["tag"](text=tf.constant(TEXTS))
  tokenizer = tokenization.BatchTokenizer(wordpiece_vocab.load_vocab(vocab), True)
  sentences = [conll.Sentence(tuple(t.split()), ("O",) * len(t.split()), ())
               for t in TEXTS if t]
  features = conll.convert_sentences(sentences, tokenizer, LABELS, SEQ, STRIDE)
  ids = tagging.predict_labels(model, features, 4)
  expected = conll.sentence_predictions(features, ids, sentences, LABELS)
  expected.insert(1, ())
  num_words = out["num_words"].numpy()
  assert num_words.tolist() == [len(t.split()) for t in TEXTS]
  assert out["num_windows"].numpy().tolist() == [1, 1, 5, 2]
  for i, text in enumerate(TEXTS):
    words = [w.decode() for w in out["words"].numpy()[i, :num_words[i]]]
    labels = tuple(w.decode() for w in out["labels"].numpy()[i, :num_words[i]])
    assert words == text.split()  # as written, case kept
    assert labels == expected[i]
  assert len({label for labels in expected for label in labels}) >= 3  # a real test
  probs = out["probabilities"].numpy()
  assert np.all(probs[num_words > 0, 0] > 1 / len(LABELS))
  assert [x.decode() for x in out["label_names"].numpy()] == list(LABELS)


def test_tag_ids_gives_the_keras_models_logits(exported):
  model, _, loaded, _ = exported
  ids = np.array([[2, 5, 9, 3, 0]], np.int32)
  mask = np.array([[1, 1, 1, 1, 0]], np.int32)
  expected = model({"input_ids": ids, "input_mask": mask,
                    "segment_ids": np.zeros_like(ids)}, training=False).numpy()
  out = loaded.signatures["tag_ids"](input_ids=ids, input_mask=mask,
                                     segment_ids=np.zeros_like(ids))
  np.testing.assert_allclose(out["logits"].numpy(), expected, rtol=1e-5, atol=1e-5)
  np.testing.assert_array_equal(out["label_ids"].numpy(), expected.argmax(-1))


def test_predict_answers_a_text_with_its_words_and_labels(exported):
  _, _, loaded, export_dir = exported
  predictor = predict.Predictor(export_dir)
  assert predictor.signature_for(1) == "tag"
  [result] = predictor.answer([TEXTS[0]])
  out = loaded.signatures["tag"](text=tf.constant(TEXTS[:1]))
  labels = [x.decode() for x in out["labels"].numpy()[0]]
  assert [(t["word"], t["label"]) for t in result["tags"]] == list(zip(TEXTS[0].split(), labels))
  assert predict.format_result(result).splitlines() == [
      f"text: {TEXTS[0]}", "  ".join(f"{w}/{l}" for w, l in zip(TEXTS[0].split(), labels))]
  by_line = predictor.predict_lines([TEXTS[2].encode()])
  assert len(by_line[0]["tags"]) == len(TEXTS[2].split()) and by_line[0]["num_windows"] == 5


def test_a_label_list_that_does_not_fit_the_model_is_an_error(tmp_path):
  vocab = write_vocab(tmp_path / "vocab.txt")
  with pytest.raises(ValueError, match="3 labels for a model with 5 outputs"):
    tagger_export.export_tagger(_random_tagger(), vocab, True, LABELS[:3],
                                str(tmp_path / "x"), max_seq_length=SEQ)
  assert not (tmp_path / "x").exists()
