"""bert_tf.downstream.span.squad_finetune on a trivially learnable synthetic task
(point at the colour word of a context of filler words): the span model
learns it (EM rises from ~0 to most questions), writes the original's files,
and reads its own fine-tuned model back for prediction alone."""

import json
import random

import numpy as np
import pytest

from bert_tf.downstream.span import span_head
from bert_tf.models.config import BertConfig
from bert_tf.downstream.span import squad_finetune

from helpers import checkpoints

COLOURS = ["red", "green", "blue", "yellow", "purple", "orange"]
FILLER = ["the", "a", "house", "tree", "river", "stone", "walked", "slowly", "near", "old",
          "dog", "cat", "small", "big", "road", "hill", "sun", "rain", "boat", "field"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "what", "colour", "?", ".", ","] + \
    COLOURS + FILLER


def tiny_config():
  return BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2,
                    num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)


def write_vocab(path):
  path.write_text("".join(t + "\n" for t in VOCAB), encoding="utf-8")
  return str(path)


def make_squad(n, seed, version_2=False, long_every=4):
  """SQuAD JSON: each context is filler words with one colour word (2.0:
  every third without colour, unanswerable); every `long_every`-th context
  is long enough for two windows at max_seq_length=24."""
  rng = random.Random(seed)
  paragraphs = []
  for i in range(n):
    words = [rng.choice(FILLER) for _ in range(30 if i % long_every == 0 else 10)]
    impossible = version_2 and i % 3 == 2
    qa = {"id": f"q{i}", "question": "what colour?", "answers": []}
    if not impossible:
      colour = rng.choice(COLOURS)
      position = rng.randrange(len(words))
      words[position] = colour.capitalize() if i % 2 else colour
      context = " ".join(words[:position])
      start = len(context) + (1 if position else 0)
      qa["answers"] = [{"text": words[position], "answer_start": start}]
    context = " ".join(words) + "."
    if version_2:
      qa["is_impossible"] = impossible
    paragraphs.append({"context": context, "qas": [qa]})
  return {"version": "v2.0" if version_2 else "1.1",
          "data": [{"title": "colours", "paragraphs": paragraphs}]}


def write_squad(path, data):
  path.write_text(json.dumps(data), encoding="utf-8")
  return str(path)


def config_for(tmp_path, **overrides):
  values = dict(vocab_file=write_vocab(tmp_path / "vocab.txt"),
                output_dir=str(tmp_path / "out"),
                train_file=write_squad(tmp_path / "train.json", make_squad(96, seed=1)),
                predict_file=write_squad(tmp_path / "dev.json", make_squad(24, seed=2)),
                do_train=True, do_predict=True, max_seq_length=24, doc_stride=8,
                max_query_length=6, train_batch_size=16, predict_batch_size=8,
                learning_rate=2e-3, num_train_epochs=1.0, n_best_size=5,
                max_answer_length=4)
  values.update(overrides)
  return squad_finetune.SquadConfig(**values)


def test_span_head_matches_the_originals_shape_and_init():
  model = span_head.BertSpanModel(tiny_config())
  kernel = model.head.kernel.numpy()
  assert kernel.shape == (32, 2)  # the original's output_weights [2, hidden], transposed
  assert abs(kernel).max() <= 2 * span_head.SPAN_HEAD_STDDEV + 1e-6  # truncated at 2 sd
  assert model.head.bias.numpy().tolist() == [0.0, 0.0]


def test_a_few_steps_write_the_originals_files(tmp_path):
  config = config_for(tmp_path, num_train_epochs=0.5)
  results = squad_finetune.run(config, tiny_config())
  out = tmp_path / "out"
  predictions = json.loads((out / "predictions.json").read_text())
  nbest = json.loads((out / "nbest_predictions.json").read_text())
  assert list(predictions) == [f"q{i}" for i in range(24)] == list(nbest)
  for qid, entries in nbest.items():
    assert 1 <= len(entries) <= 5
    assert set(entries[0]) == {"text", "probability", "start_logit", "end_logit"}
    assert sum(e["probability"] for e in entries) == pytest.approx(1.0)
    assert entries[0]["text"] == predictions[qid]
  assert not (out / "null_odds.json").exists()
  assert results["num_train_steps"] == 3  # int(96 / 16 * 0.5)
  assert results["num_predict_features"] > 24  # long contexts take two windows
  lines = dict(line.split(" = ") for line in (out / "eval_results.txt").read_text().splitlines())
  assert {"exact_match", "f1", "num_train_steps", "skipped_answers"} <= set(lines)


def test_version_2_writes_null_odds_and_its_metrics(tmp_path):
  config = config_for(
      tmp_path, version_2_with_negative=True, num_train_epochs=0.5,
      train_file=write_squad(tmp_path / "train2.json", make_squad(48, 3, version_2=True)),
      predict_file=write_squad(tmp_path / "dev2.json", make_squad(12, 4, version_2=True)))
  results = squad_finetune.run(config, tiny_config())
  null_odds = json.loads((tmp_path / "out" / "null_odds.json").read_text())
  assert list(null_odds) == [f"q{i}" for i in range(12)]
  assert {"exact", "f1", "HasAns_f1", "NoAns_f1", "best_f1", "best_f1_thresh"} <= set(results)


@pytest.mark.slow
def test_exact_match_rises_on_a_learnable_task(tmp_path):
  before = squad_finetune.run(config_for(tmp_path, do_train=False), tiny_config())
  assert "span head is untrained" in before["init"]
  trained = squad_finetune.run(config_for(tmp_path, num_train_epochs=30.0), tiny_config())
  print(f"untrained: EM {before['exact_match']:.1f} F1 {before['f1']:.1f}; after "
        f"{trained['num_train_steps']} steps: EM {trained['exact_match']:.1f} "
        f"F1 {trained['f1']:.1f}")
  assert before["exact_match"] < 40
  assert trained["exact_match"] > 80 and trained["f1"] > 80, trained
  # Prediction alone reads the fine-tuned model the training run left.
  again = squad_finetune.run(config_for(tmp_path, do_train=False), tiny_config())
  assert again["init"].startswith("read the fine-tuned span model")
  assert again["exact_match"] == trained["exact_match"]


def test_the_encoder_comes_from_a_tf1_release_or_an_electra_run(tmp_path):
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert_tf.training import objectives  # pylint: disable=g-import-not-at-top
  config = tiny_config()
  source = checkpoints.write_random_release(config, tmp_path / "release")
  model, described = squad_finetune.build_span_model(config, str(tmp_path / "release"))
  assert "original TF1 checkpoint" in described
  for ours, theirs in zip(model.encoder.weights, source.encoder.weights):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
  electra = objectives.ElectraObjective()
  pretrainer = electra.build_model(config)
  tf.train.Checkpoint(model=pretrainer, **objectives.checkpoint_variables(electra)).save(
      str(tmp_path / "electra" / "ckpt"))
  model, described = squad_finetune.build_span_model(config, str(tmp_path / "electra"))
  assert described.startswith("initialized the ELECTRA discriminator's")
  for ours, theirs in zip(model.encoder.weights, pretrainer.encoder.weights):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
  ids = np.full((2, 8), 7, np.int32)
  start, end = model({"input_ids": ids, "input_mask": np.ones_like(ids),
                      "segment_ids": np.zeros_like(ids)})
  assert start.shape == end.shape == (2, 8)


def test_predicting_again_with_a_model_traces_nothing_and_gives_the_same_logits(tmp_path):
  from bert_tf.downstream import finetune  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.span import squad  # pylint: disable=g-import-not-at-top
  config, bert = config_for(tmp_path), tiny_config()
  _, features = squad_finetune.read_predict_data(config, finetune.config_tokenizer(config, bert))
  assert len(features) % 8  # a short last batch
  model, _ = squad_finetune.build_span_model(bert, "", 0)
  first = squad_finetune.predict_logits(model, features, 8)
  traces = squad_finetune._predict_fn(model).num_traces  # pylint: disable=protected-access
  assert traces == 2  # a full batch and the short last one
  assert squad_finetune.predict_logits(model, features, 8) == first
  assert squad_finetune._predict_fn(model).num_traces == traces  # pylint: disable=protected-access
  arrays = squad.feature_arrays(features, with_positions=False)
  start, end = model(arrays, training=False)
  np.testing.assert_allclose([r.start_logits for r in first], start.numpy(), atol=1e-5)
  np.testing.assert_allclose([r.end_logits for r in first], end.numpy(), atol=1e-5)
  assert [r.unique_id for r in first] == [f.unique_id for f in features]


def test_training_twice_with_one_seed_gives_the_same_loss_and_answers(tmp_path):
  runs = []
  for name in ("a", "b"):
    (tmp_path / name).mkdir()
    results = squad_finetune.run(config_for(tmp_path / name), tiny_config())
    runs.append((results["final_train_loss"],
                 (tmp_path / name / "out" / "nbest_predictions.json").read_text()))
  assert runs[0] == runs[1]
