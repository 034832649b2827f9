"""Tests of bert_tf.experiments.instruments: a sentence head read as
trained (on a head whose answer is set by hand), the pair features, and the
frozen-feature probe on features that hold the answer."""

import numpy as np
import pytest

from bert_tf.data import segment_pairs
from bert_tf.data.tokenizers import wordpiece_vocab
from bert_tf.experiments import instruments
from bert_tf.models import modeling
from bert_tf.models.config import BertConfig
from bert_tf.training import objectives

CONFIG = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=32, max_position_embeddings=32)


class Vocab:
  cls_id, sep_id = 2, 3


WORDS = [f"w{i}" for i in range(55)]


def tokenizer(tmp_path):
  """A tokenizer whose ids are [PAD] [UNK] [CLS] [SEP] [MASK] w0 .. w54."""
  from bert_tf.downstream.classification import tsv as classification  # pylint: disable=g-import-not-at-top
  path = tmp_path / "vocab.txt"
  path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS) + "\n")
  return classification.make_tokenizer(str(path), True)


def corpus_text(count=40, sentences=10, seed=0):
  rng = np.random.default_rng(seed)
  return "\n\n".join("\n".join(" ".join(rng.choice(WORDS, rng.integers(3, 7)))
                                 for _ in range(sentences)) for _ in range(count)) + "\n"


def test_pair_features_are_the_pretraining_layout():
  features, labels = instruments.pair_features([([7, 8], [9], 0), ([10], [11, 12, 13], 1)],
                                               Vocab, 10)
  assert features["input_ids"][0].tolist() == [2, 7, 8, 3, 9, 3, 0, 0, 0, 0]
  assert features["segment_ids"][0].tolist() == [0, 0, 0, 0, 1, 1, 0, 0, 0, 0]
  assert features["input_mask"][1].tolist() == [1] * 7 + [0] * 3
  assert labels.tolist() == [0, 1]
  with pytest.raises(ValueError, match="pair 0 has 11 tokens, more than 10"):
    instruments.pair_features([([5] * 4, [6] * 4, 0)], Vocab, 10)


@pytest.mark.parametrize("bias, answer", [((3.0, 0.0), 0), ((0.0, 3.0), 1)])
def test_the_head_is_read_as_trained(bias, answer, tmp_path):
  # A head set by hand to one answer: its accuracy is exactly the share of
  # pairs with that label, so class 0 is read as the natural pair.
  model = objectives.get("mlm_nsp").build_model(CONFIG)
  kernel, _ = model.nsp_head.weights
  kernel.assign(np.zeros(kernel.shape, np.float32))
  model.nsp_head.weights[1].assign(np.array(bias, np.float32))
  sets = instruments.pair_sets(corpus_text(), segment_pairs.TASKS, tokenizer(tmp_path), 32,
                               seed=1, max_examples=1000)
  for pairs in sets.values():
    accuracy = instruments.head_accuracy(model, pairs.dev, pairs.dev_labels, batch_size=7)
    assert accuracy == pytest.approx(float(np.mean(pairs.dev_labels == answer)))
    assert 0.1 < accuracy < 0.9


def test_seen_pairs_are_the_pretraining_texts_made_as_the_held_out_dev_pairs(tmp_path):
  # A head is also read on pairs of the documents it trained on: made by
  # the same rules, from that text, beside each held-out set.
  tok = tokenizer(tmp_path)
  held = instruments.pair_sets(corpus_text(), ["sop", "nsp_random"], tok, 32, seed=1,
                               max_examples=50)
  seen_text = corpus_text(seed=7)
  sets = instruments.with_seen_pairs(held, seen_text, tok, 32, seed=1, max_examples=50)
  alone = instruments.pair_sets(seen_text, ["sop", "nsp_random"], tok, 32, seed=1,
                                max_examples=50)
  for task, s in sets.items():
    np.testing.assert_array_equal(s.dev_labels, held[task].dev_labels)  # kept as they were
    np.testing.assert_array_equal(s.seen_labels, alone[task].dev_labels)
    np.testing.assert_array_equal(s.seen["input_ids"], alone[task].dev["input_ids"])
    assert not np.array_equal(s.seen["input_ids"][:5], s.dev["input_ids"][:5])
  assert held["sop"].seen is None


def test_a_frozen_probe_finds_what_the_features_hold():
  # Single texts of random tokens, label 1 when they hold token 40 (three
  # times): an
  # untrained encoder's mean token vector carries it, a linear probe reads it.
  encoder = modeling.build_encoder(CONFIG)
  rng = np.random.default_rng(3)

  def split(n, informative=True):
    ids = np.zeros((n, 12), np.int32)
    labels = rng.integers(0, 2, n)
    for i in range(n):
      body = list(rng.integers(5, 39, 8))
      if labels[i] and informative:
        for j in rng.choice(8, 3, replace=False):
          body[j] = 40
      ids[i, :10] = [2] + body + [3]
    return {"input_ids": ids, "input_mask": (ids > 0).astype(np.int32),
            "segment_ids": np.zeros_like(ids)}, labels

  (train, train_y), (dev, dev_y) = split(600), split(300)
  kind, accuracy, correct = instruments.frozen_probe(encoder, train, train_y, dev, dev_y, None,
                                                     pair=False)
  assert kind == "accuracy" and accuracy > 0.9
  # Each dev example's outcome, in dev order: their mean is the accuracy.
  assert correct.shape == (300,) and set(correct.tolist()) <= {0, 1}
  assert correct.mean() == accuracy
  # Labels the texts do not show: nothing to find.
  (train_n, train_ny), (dev_n, dev_ny) = split(600, False), split(300, False)
  _, chance, _ = instruments.frozen_probe(encoder, train_n, train_ny, dev_n, dev_ny, None,
                                          pair=False)
  assert abs(chance - 0.5) < 0.1
  # The same inputs give the same answer (no seed in the probe).
  assert instruments.frozen_probe(encoder, train, train_y, dev, dev_y, None,
                                  pair=False)[1] == accuracy


def test_pair_sets_take_only_the_documents_they_need(tmp_path, monkeypatch):
  tok = tokenizer(tmp_path)
  text = corpus_text(count=60)
  # A cap above what the text gives: every document, the same pairs as the
  # whole text's.
  whole = instruments.pair_sets(text, ["sop"], tok, 32, seed=1, max_examples=10000)["sop"]
  from bert_tf.data import pair_tasks  # pylint: disable=g-import-not-at-top
  tokenized = instruments.tokenized_documents(pair_tasks.parse_documents(text), tok)
  train, dev = segment_pairs.split_pairs(segment_pairs.segment_pairs(tokenized, "sop", 29, 1))
  assert len(whole.train_labels) == len(train) and len(whole.dev_labels) == len(dev)
  np.testing.assert_array_equal(whole.dev_labels, [p[2] for p in dev])
  # A small cap: the first documents that give it, tokenized, no more.
  monkeypatch.setattr(instruments, "FIRST_DOCUMENTS", 10)
  seen = []
  real = instruments.tokenized_documents
  monkeypatch.setattr(instruments, "tokenized_documents",
                      lambda docs, t: seen.append(len(docs)) or real(docs, t))
  small = instruments.pair_sets(text, ["sop", "nsp_random"], tok, 32, seed=1, max_examples=8)
  assert all(len(p.train_labels) == len(p.dev_labels) == 8 for p in small.values())
  assert seen[0] == 10 and seen[-1] < 60 and seen == sorted(seen)


def test_pair_features_of_the_encoder_compare_a_and_b():
  encoder = modeling.build_encoder(CONFIG)
  features, _ = instruments.pair_features([([7, 8], [9, 10], 0)] * 3, Vocab, 12)
  out = instruments.encoder_features(encoder, features, pair=True)
  h = CONFIG.hidden_size
  assert out.shape == (3, 5 * h)
  u, v = out[0, h:2 * h], out[0, 2 * h:3 * h]
  np.testing.assert_allclose(out[0, 3 * h:4 * h], np.abs(u - v), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(out[0, 4 * h:], u * v, rtol=1e-5, atol=1e-6)


def test_tokenized_documents_drop_empty_sentences(tmp_path):
  path = tmp_path / "vocab.txt"
  path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "king",
                             "went", "."]) + "\n")
  from bert_tf.downstream.classification import tsv as classification
  tokenizer = classification.make_tokenizer(str(path), True)
  from bert_tf.data import pair_tasks  # pylint: disable=g-import-not-at-top
  docs = instruments.tokenized_documents(
      pair_tasks.parse_documents("the king went .\n\n\nThe king\n"), tokenizer)
  vocab = wordpiece_vocab.load_vocab(str(path))
  assert docs == [[[5, 6, 7, 8]], [[5, 6]]] and vocab.cls_id == 2
