"""bert_tf.downstream.finetune.read_as_trained: a model built from a
left-to-right LM's checkpoint (objective ltr) reads its encoder as it was
trained, with the causal mask (Devlin et al. 2019, section 5.1: the LTR
model kept it in fine-tuning), its sentence vector from the last real
token; fine-tuning, the frozen probes, extract_features and the
SavedModel exports all do, --hf_out and a keras-hub preset refuse it (they
would drop the mask); any other checkpoint reads as before."""

import dataclasses
import json

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.downstream import export
from bert_tf.downstream import finetune
from bert_tf.downstream import hf_out
from bert_tf.downstream import registry
from bert_tf.downstream.classification import classifier_export
from bert_tf.downstream.features import extract
from bert_tf.downstream.span import squad_finetune
from bert_tf.downstream.tagging import token_head
from bert_tf.experiments import instruments
from bert_tf.models import modeling
from bert_tf.serving import hf_export
from bert_tf.serving import keras_hub_preset
from bert_tf.training import objectives

from helpers.finetune_task import tiny_config, write_vocab

SEQ = 10
LAST = 6  # row 1's last real token; row 0 is all real


def _checkpoint(tmp_path, name):
  """(BertConfig, directory) of a pretrained `name` checkpoint, tagged."""
  config = tiny_config()
  objective = objectives.get(name)
  keras_seed = {"ltr": 3, "mlm": 4}[name]
  tf.keras.utils.set_random_seed(keras_seed)
  model = objective.build_model(config)
  tf.train.Checkpoint(model=model, **objectives.checkpoint_variables(objective)).save(
      str(tmp_path / name / "ckpt"))
  return config, str(tmp_path / name)


def _batch(config, seed=0):
  ids = np.random.RandomState(seed).randint(5, config.vocab_size, (2, SEQ)).astype(np.int32)
  ids[:, 0] = 2  # [CLS]
  mask = np.ones_like(ids)
  mask[1, LAST + 1:] = 0
  return {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids)}


def _loud(model):
  """The model, its head's kernel drawn at unit scale (the initializer's
  0.02 leaves logits whose changes sit near float32 noise). Returns it."""
  kernel = model.head.kernel
  kernel.assign(np.random.RandomState(1).normal(size=kernel.shape).astype(np.float32))
  return model


def _changed(batch, position):
  ids = batch["input_ids"].copy()
  ids[:, position] = np.where(ids[:, position] == 5, 6, 5)
  return dict(batch, input_ids=ids)


def test_a_classifier_from_an_ltr_checkpoint_reads_left_to_right(tmp_path):
  config, ckpt = _checkpoint(tmp_path, "ltr")
  model, _ = finetune.build_classifier(config, 2, ckpt, seed=1)
  assert modeling.is_causal(model.encoder)
  _loud(model)
  batch = _batch(config)
  logits = model(batch).numpy()
  # Row 1's sentence vector is its last real token's (position LAST): what
  # comes after it changes nothing; a token before it does.
  after = model(_changed(batch, LAST + 1)).numpy()
  np.testing.assert_array_equal(after[1], logits[1])
  assert np.abs(after[0] - logits[0]).max() > 1e-5  # row 0: LAST + 1 is real
  before = model(_changed(batch, 2)).numpy()
  assert np.abs(before - logits).max(axis=-1).min() > 1e-5
  # The logits are the head on the pooler on the causal sequence output there.
  sequence = modeling.causal_sequence_output(
      model.encoder, batch["input_ids"], batch["segment_ids"], batch["input_mask"]).numpy()
  last = sequence[[0, 1], [SEQ - 1, LAST]]
  want = model.head(model.encoder.get_layer("pooled_dense")(last)).numpy()
  np.testing.assert_allclose(logits, want, atol=1e-5)
  # The same weights read bidirectionally give other logits.
  both = model.encoder({"token_ids": batch["input_ids"], "segment_ids": batch["segment_ids"],
                        "padding_mask": batch["input_mask"]})["pooled_output"]
  assert np.abs(model.head(both).numpy() - logits).max() > 1e-5


@pytest.mark.parametrize("frozen", [False, True])
def test_a_tagger_and_a_span_model_see_no_later_token(frozen, tmp_path):
  config, ckpt = _checkpoint(tmp_path, "ltr")
  tagger, _ = finetune.build_classifier(
      config, 3, ckpt, make_model=lambda c, n, encoder=None: token_head.BertTokenTagger(
          c, n, frozen_encoder=frozen, encoder=encoder))
  span, _ = squad_finetune.build_span_model(config, ckpt)
  _loud(tagger), _loud(span)
  batch = _batch(config)
  k = 4
  for run in (lambda b: tagger(b).numpy(), lambda b: span(b)[0].numpy()):
    now, later = run(batch), run(_changed(batch, k + 1))
    np.testing.assert_allclose(later[:, :k + 1], now[:, :k + 1], atol=1e-6)
    assert np.abs(later[:, k + 1:] - now[:, k + 1:]).max() > 1e-5


def test_another_objectives_checkpoint_reads_as_before(tmp_path):
  config, ckpt = _checkpoint(tmp_path, "mlm")
  model, _ = finetune.build_classifier(config, 2, ckpt, seed=1)
  assert not modeling.is_causal(model.encoder)
  _loud(model)
  batch = _batch(config)
  # The encoder's own call, as the classifier made it before.
  pooled = model.encoder({"token_ids": batch["input_ids"], "segment_ids": batch["segment_ids"],
                          "padding_mask": batch["input_mask"]})["pooled_output"]
  np.testing.assert_array_equal(model(batch).numpy(),
                                model.head(tf.cast(pooled, tf.float32)).numpy())
  later = model(_changed(batch, LAST - 1)).numpy()  # bidirectional: [CLS] sees it
  assert np.abs(later - model(batch).numpy()).max(axis=-1).min() > 1e-5


def test_the_probes_and_extracted_features_read_left_to_right(tmp_path):
  config, ckpt = _checkpoint(tmp_path, "ltr")
  model, _ = finetune.build_classifier(config, 2, ckpt)
  batch = _batch(config)
  single = instruments.encoder_features(model.encoder, batch, pair=False)
  sequence = modeling.causal_sequence_output(
      model.encoder, batch["input_ids"], batch["segment_ids"], batch["input_mask"]).numpy()
  width = config.hidden_size
  np.testing.assert_allclose(single[:, :width], sequence[[0, 1], [SEQ - 1, LAST]], atol=1e-5)
  # extract_features: a token's features do not depend on later tokens.
  vocab = write_vocab(tmp_path / "vocab.txt")
  lines = []
  for i, text in enumerate(["good movie was very nice", "good movie was very bad"]):
    (tmp_path / f"in{i}.txt").write_text(text + "\n")
    extract.extract(str(tmp_path / f"in{i}.txt"), str(tmp_path / f"out{i}.jsonl"), config,
                    ckpt, vocab, layers="-1,-2", max_seq_length=12)
    lines.append(json.loads((tmp_path / f"out{i}.jsonl").read_text()))
  values = [[[f["layers"][0]["values"] for f in line["features"]]] for line in lines]
  first, second = np.asarray(values[0][0]), np.asarray(values[1][0])
  np.testing.assert_allclose(first[:5], second[:5], atol=1e-5)  # [CLS] good movie was very
  assert np.abs(first[5] - second[5]).max() > 1e-4


def test_the_classifier_savedmodel_keeps_the_mask(tmp_path):
  config, ckpt = _checkpoint(tmp_path, "ltr")
  model, _ = finetune.build_classifier(config, 2, ckpt, seed=1)
  run = finetune.FinetuneConfig(init_checkpoint=ckpt, output_dir=str(tmp_path / "run"),
                                vocab_file=write_vocab(tmp_path / "vocab.txt"),
                                max_seq_length=SEQ)
  tf.train.Checkpoint(model=model).write(export.finetuned_prefix(run))
  classifier_export.export_finetuned(run, config, {"labels": ["0", "1"]},
                                     str(tmp_path / "export"))
  loaded = tf.saved_model.load(str(tmp_path / "export"))
  batch = _batch(config)
  out = loaded.signatures["classify_ids"](**{k: tf.constant(v) for k, v in batch.items()})
  np.testing.assert_allclose(out["logits"].numpy(), model(batch).numpy(), atol=1e-5)


def test_hf_out_and_a_keras_hub_preset_refuse_a_causal_encoder(tmp_path):
  config, ckpt = _checkpoint(tmp_path, "ltr")
  run = finetune.FinetuneConfig(init_checkpoint=ckpt, output_dir=str(tmp_path / "run"),
                                vocab_file=write_vocab(tmp_path / "vocab.txt"), do_train=True)
  for kind in (registry.for_tool("finetune", "auto"), registry.for_tool("finetune", "tagging"),
               registry.for_tool("run_squad")):
    with pytest.raises(ValueError, match="causal-encoder option"):
      hf_out.check_out(run, config, kind.hf_head, str(tmp_path / "hf"))
  pretrainer = objectives.get("ltr").build_model(config)
  with pytest.raises(ValueError, match="no causal-encoder option"):
    hf_export.write_hf_folder(pretrainer, objectives.get("ltr"), run.vocab_file, True,
                              str(tmp_path / "hf"))
  with pytest.raises(ValueError, match="keras_hub_preset_out: .* runs it bidirectionally"):
    keras_hub_preset.save_keras_hub_preset(pretrainer, run.vocab_file, True,
                                           str(tmp_path / "preset"))
  assert not (tmp_path / "hf").exists() and not (tmp_path / "preset").exists()
  # Another objective's model is not refused.
  _, mlm = _checkpoint(tmp_path, "mlm")
  hf_out.check_out(dataclasses.replace(run, init_checkpoint=mlm), config,
                   registry.for_tool("finetune", "auto").hf_head, str(tmp_path / "hf"))



def test_the_pretrainers_encode_signature_keeps_the_mask(tmp_path):
  from bert_tf.serving import saved_model  # pylint: disable=g-import-not-at-top
  config = tiny_config()
  pretrainer = objectives.get("ltr").build_model(config)
  module = saved_model.BertServingModule(pretrainer, write_vocab(tmp_path / "vocab.txt"), True,
                                         max_seq_length=SEQ, text_signatures=False)
  batch = {k: tf.constant(v) for k, v in _batch(config).items()}
  out = module.encode(**batch)
  sequence = pretrainer(batch)["sequence_output"].numpy()
  np.testing.assert_allclose(out["sequence_output"].numpy(), sequence, atol=1e-5)
  pooled = pretrainer.encoder.get_layer("pooled_dense")(sequence[[0, 1], [SEQ - 1, LAST]])
  np.testing.assert_allclose(out["pooled_output"].numpy(), pooled.numpy(), atol=1e-5)


@pytest.mark.slow  # 20-40 s on 2 cores: a fine-tuning run and its export
def test_fine_tuning_from_an_ltr_checkpoint_trains_and_exports_the_causal_reading(tmp_path):
  from bert_tf.downstream.classification import classifier  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.classification import finetune_tsv  # pylint: disable=g-import-not-at-top
  from helpers.finetune_task import write_task  # pylint: disable=g-import-not-at-top
  config, ckpt = _checkpoint(tmp_path, "ltr")
  run = finetune.FinetuneConfig(
      train_file=write_task(tmp_path / "train.tsv", 160, seed=1),
      dev_file=write_task(tmp_path / "dev.tsv", 64, seed=2), output_dir=str(tmp_path / "run"),
      vocab_file=write_vocab(tmp_path / "vocab.txt"), max_seq_length=16, learning_rate=1e-3,
      num_train_epochs=6, train_batch_size=16, text_a_column="sentence", init_checkpoint=ckpt)
  results = finetune_tsv.run(run, config)
  # The sentiment word may come anywhere: the last token, which sees them all, learns it.
  assert results["accuracy"] >= 0.8, results
  classifier_export.export_finetuned(run, config, results, str(tmp_path / "export"))
  loaded = tf.saved_model.load(str(tmp_path / "export"))
  batch = _batch(config)
  out = loaded.signatures["classify_ids"](**{k: tf.constant(v) for k, v in batch.items()})
  causal = export.read_finetuned(classifier.BertClassifier(config, 2), export.finetuned_prefix(run),
                                 init_checkpoint=ckpt)
  np.testing.assert_allclose(out["logits"].numpy(), causal(batch).numpy(), atol=1e-5)
  both = export.read_finetuned(classifier.BertClassifier(config, 2), export.finetuned_prefix(run))
  assert not modeling.is_causal(both.encoder)
  assert np.abs(both(batch).numpy() - out["logits"].numpy()).max() > 1e-4


def test_the_tagger_savedmodel_keeps_the_mask(tmp_path):
  from bert_tf.downstream.tagging import tagger_export  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.tagging import tagging  # pylint: disable=g-import-not-at-top
  config, ckpt = _checkpoint(tmp_path, "ltr")
  model, _ = finetune.build_classifier(
      config, 3, ckpt, make_model=lambda c, n, encoder=None: token_head.BertTokenTagger(
          c, n, encoder=encoder))
  _loud(model)
  run = tagging.TaggingConfig(init_checkpoint=ckpt, output_dir=str(tmp_path / "run"),
                              vocab_file=write_vocab(tmp_path / "vocab.txt"), max_seq_length=SEQ)
  tf.train.Checkpoint(model=model).write(export.finetuned_prefix(run))
  tagger_export.export_finetuned(run, config, {"labels": ["O", "B", "I"]},
                                 str(tmp_path / "export"))
  loaded = tf.saved_model.load(str(tmp_path / "export"))
  batch = _batch(config)
  out = loaded.signatures["tag_ids"](**{k: tf.constant(v) for k, v in batch.items()})
  np.testing.assert_allclose(out["logits"].numpy(), model(batch).numpy(), atol=1e-4)
  later = loaded.signatures["tag_ids"](**{k: tf.constant(v) for k, v in
                                          _changed(batch, 5).items()})["logits"].numpy()
  np.testing.assert_allclose(later[:, :5], out["logits"].numpy()[:, :5], atol=1e-5)


def test_the_answerer_savedmodel_reads_the_span_model_causally(tmp_path):
  from bert_tf.downstream.span import answer_export  # pylint: disable=g-import-not-at-top
  config, ckpt = _checkpoint(tmp_path, "ltr")
  model, _ = squad_finetune.build_span_model(config, ckpt)
  run = squad_finetune.SquadConfig(init_checkpoint=ckpt, output_dir=str(tmp_path / "run"),
                                   vocab_file=write_vocab(tmp_path / "vocab.txt"),
                                   max_seq_length=24, max_query_length=8, doc_stride=8)
  tf.train.Checkpoint(model=model).write(str(tmp_path / "run" / squad_finetune.CHECKPOINT_NAME))
  module = answer_export.export_finetuned(run, config, str(tmp_path / "export"))
  assert modeling.is_causal(module.model.encoder)
  batch = _batch(config)
  np.testing.assert_allclose(module.model(batch)[0].numpy(), model(batch)[0].numpy(), atol=1e-6)
  loaded = tf.saved_model.load(str(tmp_path / "export"))
  texts = {"question": tf.constant(["good movie"]),
           "context": tf.constant(["the movie was very good"])}
  saved, live = loaded.signatures["answer"](**texts), module.answer(**texts)
  np.testing.assert_allclose(saved["score"].numpy(), live["score"].numpy(), atol=1e-5)
  np.testing.assert_array_equal(saved["start"].numpy(), live["start"].numpy())
