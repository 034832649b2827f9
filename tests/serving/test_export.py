"""Tests of bert_tf.serving.export and the export_saved_model entry point.

One export (from an original-format TF1 checkpoint, with every output) is
shared by the module; the tests check it the way a user of each output would.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.serving import export
from bert_tf.serving import saved_model
from bert_tf.serving import keras_hub_preset
from bert_tf.serving import tf1_export
from bert_tf.training import checkpoints
from bert_tf.models import modeling
from bert_tf.models import tf1_checkpoint
from bert_tf.data.tokenizers import tokenization
from bert_tf.data.tokenizers import wordpiece_vocab
from bert_tf.models.config import BertConfig

from helpers import reference_bert
from helpers.checkpoints import write_tf1_checkpoint
from helpers.checkpoints import load_recorded
from helpers.serving_model import CONFIG, MAX_SEQ_LENGTH, TOP_K, VOCAB, write_vocab

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The export's input config carries keys the model does not use, as the
# released multilingual config does; the TF1 output must keep them.
RELEASED_EXTRA = {"directionality": "bidi", "pooler_type": "first_token_transform"}


def _python_env():
  """Environment for a child python that sees only the venv, not the checkout."""
  env = dict(os.environ)
  env.pop("PYTHONPATH", None)
  env["TF_CPP_MIN_LOG_LEVEL"] = "2"
  return env


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  """Exports straight from an original TF1 checkpoint, with every output."""
  root = tmp_path_factory.mktemp("export")
  vocab_file = write_vocab(root / "vocab.txt")
  config_file = root / "bert_config.json"
  config_file.write_text(json.dumps(dict(CONFIG.to_dict(), **RELEASED_EXTRA), indent=2))
  weights = reference_bert.random_tf1_weights(CONFIG, np.random.default_rng(1))
  prefix = write_tf1_checkpoint(str(root / "orig" / "bert_model.ckpt"), weights)
  options = export.ExportOptions(
      bert_config_file=str(config_file), checkpoint=prefix, vocab_file=vocab_file,
      do_lower_case=True, export_dir=str(root / "saved_model"),
      max_seq_length=MAX_SEQ_LENGTH, top_k=TOP_K,
      tf1_checkpoint_out=str(root / "roundtrip" / "bert_model.ckpt"),
      keras_hub_preset_out=str(root / "preset"))
  written = export.run_export(options)
  pretrainer, _ = load_recorded(CONFIG, prefix)
  return {"root": root, "vocab_file": vocab_file, "config_file": str(config_file),
          "weights": weights, "prefix": prefix, "options": options, "written": written,
          "pretrainer": pretrainer, "loaded": tf.saved_model.load(options.export_dir)}


def _ids_batch(rng):
  ids = rng.integers(5, CONFIG.vocab_size, (3, 11)).astype(np.int32)
  mask = np.ones_like(ids)
  mask[1, 8:] = 0
  mask[2, 5:] = 0
  ids[mask == 0] = 0
  segments = np.zeros_like(ids)
  segments[0, 6:] = 1
  segments[1, 4:8] = 1
  positions = np.array([[1, 3, 9], [2, 7, 0], [4, 0, 0]], np.int32)
  return {"input_ids": ids, "input_mask": mask, "segment_ids": segments,
          "masked_lm_positions": positions}


def _keras_fill_mask(pretrainer, vocab_file, texts):
  """What fill_mask must give, computed with the Keras model and Python tokenizer."""
  vocab = wordpiece_vocab.load_vocab(vocab_file)
  tokenizer = tokenization.BatchTokenizer(vocab, True, keep_special_tokens=True)
  results = []
  for text in texts:
    values, _ = tokenizer.tokenize_to_ids([text])
    ids = [vocab.cls_id] + list(values[:MAX_SEQ_LENGTH - 2]) + [vocab.sep_id]
    positions = [i for i, t in enumerate(ids) if t == vocab.mask_id]
    out = pretrainer({"input_ids": np.array([ids], np.int32),
                      "input_mask": np.ones([1, len(ids)], np.int32),
                      "segment_ids": np.zeros([1, len(ids)], np.int32),
                      "masked_lm_positions": np.array([positions], np.int32)})
    results.append((positions, tf.nn.softmax(out["mlm_logits"]).numpy()[0]))
  return results


# ------------------------------------------------------------------------------
# ids-in signatures
# ------------------------------------------------------------------------------


def test_serving_default_matches_numpy_original(exported):
  batch = _ids_batch(np.random.default_rng(2))
  out = exported["loaded"].signatures["serving_default"](
      **{k: tf.constant(v) for k, v in batch.items()})
  ref = reference_bert.reference_forward(exported["weights"], CONFIG, **batch)
  assert out["masked_lm_log_probs"].shape == (3, 3, CONFIG.vocab_size)
  assert out["masked_lm_log_probs"].dtype == tf.float32
  np.testing.assert_allclose(out["masked_lm_log_probs"], ref["mlm_log_probs"], atol=1e-4)
  np.testing.assert_allclose(out["next_sentence_log_probs"], ref["nsp_log_probs"], atol=1e-4)
  # Same function under its second name; any batch size and sequence length.
  short = {k: tf.constant(v[:1, :4]) for k, v in batch.items()}
  short["masked_lm_positions"] = tf.constant([[1, 2]])
  again = exported["loaded"].signatures["pretraining"](**short)
  ref = reference_bert.reference_forward(exported["weights"], CONFIG,
                                         **{k: v.numpy() for k, v in short.items()})
  np.testing.assert_allclose(again["masked_lm_log_probs"], ref["mlm_log_probs"], atol=1e-4)


def test_sequence_longer_than_positions_is_refused(exported):
  n = CONFIG.max_position_embeddings + 1
  ones = tf.ones([1, n], tf.int32)
  with pytest.raises(tf.errors.InvalidArgumentError, match="max_position_embeddings=40"):
    exported["loaded"].signatures["encode"](input_ids=ones, input_mask=ones, segment_ids=ones * 0)


def test_fresh_process_with_only_tensorflow_matches_keras(exported, tmp_path):
  """A process that imports tensorflow (+ tensorflow_text) only gets the Keras outputs.

  First, before tensorflow_text is imported, the process loads and runs the
  way TF Serving's C++ loader does (whole graph into a Session), which needs
  every op of the export: the --notext_signatures export serves, the full
  one does not load. With tensorflow_text, that way serves fill_mask too.
  """
  ids_only = str(tmp_path / "ids_only")
  saved_model.export_saved_model(exported["pretrainer"], exported["vocab_file"], True, ids_only,
                            max_seq_length=MAX_SEQ_LENGTH, text_signatures=False)
  batch = _ids_batch(np.random.default_rng(3))
  texts = ["the [MASK] was long .", "he [MASK] [MASK] water , then [MASK] ."]
  np.savez(tmp_path / "in.npz", **batch)
  script = textwrap.dedent("""
      import sys
      import numpy as np
      import tensorflow as tf

      def tf1_run(path, signature, feeds):
        # Loads and runs as TF Serving's C++ loader does: whole graph, Session.
        with tf.Graph().as_default(), tf.compat.v1.Session() as session:
          try:
            meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], path)
          except Exception as e:  # pylint: disable=broad-except
            return type(e).__name__ + ": " + str(e).splitlines()[0]
          sig = meta_graph.signature_def[signature]
          return session.run({k: v.name for k, v in sig.outputs.items()},
                             {sig.inputs[k].name: v for k, v in feeds.items()})

      batch = dict(np.load(sys.argv[2]))
      out = {"stock/full": tf1_run(sys.argv[1], "serving_default", batch)}
      for k, v in tf1_run(sys.argv[4], "serving_default", batch).items():
        out["stock/" + k] = v
      ids_only = tf.saved_model.load(sys.argv[4])
      out["stock/signatures"] = sorted(ids_only.signatures)

      import tensorflow_text  # the ops of the text signatures
      loaded = tf.saved_model.load(sys.argv[1])
      for k, v in loaded.signatures["serving_default"](
          **{k: tf.constant(v) for k, v in batch.items()}).items():
        out["pretraining/" + k] = v.numpy()
      ids = {k: tf.constant(batch[k]) for k in ("input_ids", "input_mask", "segment_ids")}
      for k, v in loaded.signatures["encode"](**ids).items():
        out["encode/" + k] = v.numpy()
      texts = tf.constant(sys.argv[5:])
      for k, v in loaded.signatures["fill_mask"](text=texts).items():
        out["fill_mask/" + k] = v.numpy()
      # TF Serving built with tensorflow-text's ops runs the text signatures too.
      for k, v in tf1_run(sys.argv[1], "fill_mask", {"text": np.array(sys.argv[5:], object)}).items():
        out["tf1_fill_mask/" + k] = v
      for k, v in loaded.signatures["next_sentence"](text_a=texts, text_b=texts[::-1]).items():
        out["next_sentence/" + k] = v.numpy()
      out["bert_tf_imported"] = np.array(any(m.startswith("bert_tf") for m in sys.modules))
      np.savez(sys.argv[3], **out)
  """)
  (tmp_path / "child.py").write_text(script)
  child = subprocess.run(
      [sys.executable, str(tmp_path / "child.py"), exported["options"].export_dir,
       str(tmp_path / "in.npz"), str(tmp_path / "out.npz"), ids_only] + texts,
      cwd=tmp_path, env=_python_env(), capture_output=True, text=True)
  assert child.returncode == 0, child.stderr[-3000:]
  out = dict(np.load(tmp_path / "out.npz", allow_pickle=True))
  assert not out["bert_tf_imported"]
  assert "Op type not registered" in str(out["stock/full"])
  assert list(out["stock/signatures"]) == ["encode", "pretraining", "serving_default"]
  for k in ("masked_lm_log_probs", "next_sentence_log_probs"):
    np.testing.assert_allclose(out["stock/" + k], out["pretraining/" + k], atol=1e-5)
  for k in ("top_k_ids", "mask_positions", "error"):
    np.testing.assert_array_equal(out["tf1_fill_mask/" + k], out["fill_mask/" + k])
  np.testing.assert_allclose(out["tf1_fill_mask/top_k_probs"], out["fill_mask/top_k_probs"],
                             atol=1e-6)

  model = exported["pretrainer"]
  keras_out = model(batch)
  np.testing.assert_allclose(out["pretraining/masked_lm_log_probs"],
                             tf.nn.log_softmax(keras_out["mlm_logits"]), atol=1e-5)
  np.testing.assert_allclose(out["pretraining/next_sentence_log_probs"],
                             tf.nn.log_softmax(keras_out["nsp_logits"]), atol=1e-5)
  np.testing.assert_allclose(out["encode/sequence_output"], keras_out["sequence_output"], atol=1e-5)
  np.testing.assert_allclose(out["encode/pooled_output"], keras_out["pooled_output"], atol=1e-5)

  for i, (positions, probs) in enumerate(_keras_fill_mask(model, exported["vocab_file"], texts)):
    n = len(positions)
    assert out["fill_mask/num_masks"][i] == n
    np.testing.assert_array_equal(out["fill_mask/mask_positions"][i, :n], positions)
    top_ids = out["fill_mask/top_k_ids"][i, :n]
    np.testing.assert_allclose(out["fill_mask/top_k_probs"][i, :n],
                               np.take_along_axis(probs, top_ids, axis=1), atol=1e-5)
    np.testing.assert_allclose(out["fill_mask/top_k_probs"][i, :n],
                               -np.sort(-probs, axis=1)[:, :TOP_K], atol=1e-5)

  vocab = wordpiece_vocab.load_vocab(exported["vocab_file"])
  for i, (a, b) in enumerate(zip(texts, texts[::-1])):
    ids_a, _ = tokenization.BatchTokenizer(vocab, True).tokenize_to_ids([a])
    ids_b, _ = tokenization.BatchTokenizer(vocab, True).tokenize_to_ids([b])
    keep_a, keep_b = _original_truncation(len(ids_a), len(ids_b), MAX_SEQ_LENGTH - 3)
    ids_a, ids_b = ids_a[:keep_a], ids_b[:keep_b]
    ids = [vocab.cls_id, *ids_a, vocab.sep_id, *ids_b, vocab.sep_id]
    segments = [0] * (len(ids_a) + 2) + [1] * (len(ids_b) + 1)
    nsp = model({"input_ids": np.array([ids]), "input_mask": np.ones([1, len(ids)]),
                 "segment_ids": np.array([segments])})["nsp_logits"]
    np.testing.assert_allclose(out["next_sentence/is_next_probability"][i],
                               tf.nn.softmax(nsp)[0, 0], atol=1e-5)


def test_saved_model_cli_lists_the_signatures(exported):
  cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
  if not os.path.exists(cli):  # tensorflow installed outside this interpreter's bin/
    cli = shutil.which("saved_model_cli")
  assert cli, "saved_model_cli (installed with tensorflow) not found"
  shown = subprocess.run([cli, "show", "--all", "--dir", exported["options"].export_dir],
                         check=True, capture_output=True, text=True, env=_python_env()).stdout
  for name in ("serving_default", "pretraining", "encode", "fill_mask", "next_sentence"):
    assert f"signature_def['{name}']" in shown
  assert "masked_lm_log_probs" in shown and "top_k_tokens" in shown


def test_vocab_is_an_asset_of_the_export(exported):
  asset = os.path.join(exported["options"].export_dir, "assets", "vocab.txt")
  with open(asset, encoding="utf-8") as f:
    assert f.read().split("\n")[:-1] == VOCAB
  # The export restores with every object it tracks.
  assert exported["loaded"].vocab_file.asset_path.numpy().decode().endswith("vocab.txt")
  assert bool(exported["loaded"].do_lower_case.numpy())
  assert int(exported["loaded"].max_seq_length.numpy()) == MAX_SEQ_LENGTH


# ------------------------------------------------------------------------------
# fill_mask and next_sentence
# ------------------------------------------------------------------------------


def _fill(exported, texts):
  out = exported["loaded"].signatures["fill_mask"](text=tf.constant(texts))
  return {k: v.numpy() for k, v in out.items()}


def test_fill_mask_top_k_ordering_and_several_masks(exported):
  out = _fill(exported, ["the [MASK] was long .", "[MASK] day , [MASK] water [MASK]"])
  assert out["top_k_ids"].shape == (2, 3, TOP_K)
  assert out["top_k_probs"].dtype == np.float32 and out["top_k_ids"].dtype == np.int32
  np.testing.assert_array_equal(out["num_masks"], [1, 3])
  np.testing.assert_array_equal(out["mask_positions"], [[2, -1, -1], [1, 4, 6]])
  assert list(out["error"]) == [b"", b""]
  probs = out["top_k_probs"]
  valid = probs[1]  # three real masks
  assert np.all(np.diff(valid, axis=-1) <= 0)  # best first
  assert np.all(valid > 0) and np.all(valid.sum(-1) <= 1.0 + 1e-6)
  # Tokens are the vocab's strings of the ids; padding is empty / -1 / 0.
  for m in range(3):
    assert [t.decode() for t in out["top_k_tokens"][1, m]] == [VOCAB[i] for i in out["top_k_ids"][1, m]]
  assert np.all(out["top_k_ids"][0, 1:] == -1) and np.all(probs[0, 1:] == 0)
  assert np.all(out["top_k_tokens"][0, 1:] == b"")
  # The first text's fills do not depend on the batch they came in.
  alone = _fill(exported, ["the [MASK] was long ."])
  np.testing.assert_allclose(alone["top_k_probs"][0, 0], probs[0, 0], atol=1e-6)


def test_fill_mask_bad_input_is_reported_per_example(exported):
  long_text = "the [MASK] " + "water " * 40 + "[MASK] ."
  texts = ["no mask in this text", "", "   ", long_text, "water " * 40 + "[MASK]",
           b"the \xff\xfe[MASK] was long .", "the [MASK] was long ."]
  out = _fill(exported, texts)
  assert [e.decode() for e in out["error"]] == [
      "no [MASK] in text", "empty text", "empty text", "", saved_model.ERROR_MASKS_TRUNCATED,
      "", ""]
  np.testing.assert_array_equal(out["num_masks"], [0, 0, 0, 1, 0, 1, 1])
  np.testing.assert_array_equal(out["truncated"], [False, False, False, True, True, False, False])
  # Invalid UTF-8 is dropped (as the original tokenizer drops U+FFFD), not fatal.
  np.testing.assert_allclose(out["top_k_probs"][5], out["top_k_probs"][6], atol=1e-6)
  np.testing.assert_array_equal(out["top_k_ids"][5], out["top_k_ids"][6])
  # A batch with no [MASK] at all still answers.
  none = _fill(exported, ["nothing here"])
  assert none["top_k_ids"].shape == (1, 0, TOP_K) and none["error"][0] == b"no [MASK] in text"


def test_next_sentence_truncates_and_flags(exported):
  fn = exported["loaded"].signatures["next_sentence"]
  out = fn(text_a=tf.constant(["the day was long", "water " * 30, ""]),
           text_b=tf.constant(["he said so .", "the day", "water"]))
  probs = out["is_next_probability"].numpy()
  assert probs.shape == (3,) and np.all((probs > 0) & (probs < 1))
  np.testing.assert_array_equal(out["truncated"], [False, True, False])
  assert [e.decode() for e in out["error"].numpy()] == ["", "", saved_model.ERROR_EMPTY_TEXT_A]


def _original_truncation(len_a, len_b, max_total):
  while len_a + len_b > max_total:
    if len_a > len_b:
      len_a -= 1
    else:
      len_b -= 1
  return len_a, len_b


def test_pair_truncation_equals_the_original_rule():
  lengths = np.array([(a, b) for a in range(0, 14) for b in range(0, 14)], np.int64)
  for max_total in (0, 1, 5, 8, 13):
    keep_a, keep_b = saved_model.truncate_pair_lengths(lengths[:, 0], lengths[:, 1], max_total)
    expected = [_original_truncation(a, b, max_total) for a, b in lengths]
    np.testing.assert_array_equal(np.stack([keep_a, keep_b], 1), expected)


# ------------------------------------------------------------------------------
# Other outputs: TF1 checkpoint and keras-hub preset
# ------------------------------------------------------------------------------


def test_original_to_bert_tf_to_original_is_bit_identical(exported):
  reader = tf.train.load_checkpoint(exported["options"].tf1_checkpoint_out)
  names = set(reader.get_variable_to_shape_map())
  assert names == set(exported["weights"])
  for name, value in exported["weights"].items():
    got = reader.get_tensor(name)
    assert got.dtype == value.dtype
    assert got.tobytes() == value.tobytes(), name


def test_tf1_checkpoint_out_is_laid_out_as_a_release(exported):
  prefix = exported["options"].tf1_checkpoint_out
  folder = os.path.dirname(prefix)
  assert sorted(os.listdir(folder)) == [
      "bert_config.json", "bert_model.ckpt.data-00000-of-00001", "bert_model.ckpt.index",
      "vocab.txt"]
  with open(os.path.join(folder, "bert_config.json"), encoding="utf-8") as f:
    written = json.load(f)
  with open(exported["config_file"], encoding="utf-8") as f:
    assert written == json.load(f)  # the input's unused keys included
  model_config = BertConfig.from_json_file(exported["config_file"])
  assert model_config.extra == RELEASED_EXTRA
  assert BertConfig.from_json_file(os.path.join(folder, "bert_config.json")) == model_config
  with open(os.path.join(folder, "vocab.txt"), "rb") as a, open(exported["vocab_file"], "rb") as b:
    assert a.read() == b.read()
  # The folder is an export's input as it is: the same model comes back.
  again, read = load_recorded(
      BertConfig.from_json_file(os.path.join(folder, "bert_config.json")), folder)
  assert read == prefix
  for a, b in zip(again.weights, exported["pretrainer"].weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_tf1_checkpoint_out_refuses_to_overwrite_its_files(exported, tmp_path):
  prefix = str(tmp_path / "out" / "bert_model.ckpt")
  os.makedirs(tmp_path / "out")
  (tmp_path / "out" / "vocab.txt").write_text("someone else's\n")
  with pytest.raises(FileExistsError, match=r"out/vocab.txt exists already.*--overwrite"):
    tf1_export.write_tf1_checkpoint(exported["pretrainer"], prefix, exported["vocab_file"])
  assert os.listdir(tmp_path / "out") == ["vocab.txt"]
  tf1_export.write_tf1_checkpoint(exported["pretrainer"], prefix, exported["vocab_file"],
                              overwrite=True)
  assert (tmp_path / "out" / "vocab.txt").read_text().split("\n")[:-1] == VOCAB
  assert len(os.listdir(tmp_path / "out")) == 4  # no temporary file left
  short_vocab = write_vocab(tmp_path / "short.txt", VOCAB[:-1])
  with pytest.raises(ValueError, match=r"short.txt has .* vocab_size"):
    tf1_export.write_tf1_checkpoint(exported["pretrainer"], str(tmp_path / "b" / "m.ckpt"),
                                short_vocab)
  assert not os.path.exists(tmp_path / "b" / "m.ckpt.index")


def test_keras_hub_preset_loads_with_equal_outputs(exported):
  preset = exported["options"].keras_hub_preset_out
  backbone = keras_hub.models.BertBackbone.from_preset(preset)
  inputs = {"token_ids": np.array([[2, 10, 11, 4, 3, 0]], np.int32),
            "segment_ids": np.zeros([1, 6], np.int32),
            "padding_mask": np.array([[1, 1, 1, 1, 1, 0]], np.int32)}
  ours = exported["pretrainer"].encoder(inputs)
  theirs = backbone(inputs)
  np.testing.assert_allclose(theirs["sequence_output"], ours["sequence_output"], atol=1e-6)
  np.testing.assert_allclose(theirs["pooled_output"], ours["pooled_output"], atol=1e-6)

  classifier = keras_hub.models.BertTextClassifier.from_preset(preset, num_classes=2)
  for a, b in zip(classifier.backbone.weights, exported["pretrainer"].encoder.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy())
  tokenizer = classifier.preprocessor.tokenizer
  assert tokenizer.lowercase and tokenizer.vocabulary_size() == CONFIG.vocab_size
  assert np.asarray(tokenizer("The day")).tolist() == [VOCAB.index("the"), VOCAB.index("day")]
  # The preprocessor packs to the export's max_seq_length (keras-hub's
  # default, 512, does not fit a model with 40 positions).
  assert classifier.preprocessor.sequence_length == MAX_SEQ_LENGTH
  texts = ["the day was long", " ".join(["water"] * 60), "he said so ."]
  logits = classifier.predict(texts, verbose=0)
  assert logits.shape == (3, 2) and np.all(np.isfinite(logits))
  packed = classifier.preprocessor(tf.constant(texts))
  assert packed["token_ids"].shape == (3, MAX_SEQ_LENGTH)
  # Every BertConfig value is kept: BertBackbone has one dropout rate, the
  # preset's metadata.json the whole config.
  assert backbone.dropout == CONFIG.hidden_dropout_prob
  assert keras_hub_preset.read_preset_bert_config(preset) == BertConfig.from_json_file(
      exported["config_file"])
  with open(os.path.join(preset, "metadata.json"), encoding="utf-8") as f:
    kept = json.load(f)["bert_tf"]
  assert kept["bert_config"]["attention_probs_dropout_prob"] == CONFIG.attention_probs_dropout_prob
  assert (kept["max_seq_length"], kept["do_lower_case"]) == (MAX_SEQ_LENGTH, True)


def test_keras_hub_preset_keeps_attention_dropout_and_default_length(exported, tmp_path):
  pretrainer = modeling.BertPretrainer(
      CONFIG.replace(attention_probs_dropout_prob=0.25))
  preset = str(tmp_path / "preset")
  keras_hub_preset.save_keras_hub_preset(pretrainer, exported["vocab_file"], True, preset)
  assert keras_hub_preset.read_preset_bert_config(preset).attention_probs_dropout_prob == 0.25
  classifier = keras_hub.models.BertTextClassifier.from_preset(preset, num_classes=2)
  # The default length is the export's: 128, or the model's 40 positions.
  assert classifier.preprocessor.sequence_length == CONFIG.max_position_embeddings
  assert classifier.predict(["the day", "he was"], verbose=0).shape == (2, 2)
  with pytest.raises(ValueError, match="max_seq_length=41"):
    keras_hub_preset.save_keras_hub_preset(pretrainer, exported["vocab_file"], True,
                                 str(tmp_path / "p2"), max_seq_length=41)
  with pytest.raises(ValueError, match="not a bert_tf preset"):
    os.makedirs(tmp_path / "other")
    (tmp_path / "other" / "metadata.json").write_text("{}")
    keras_hub_preset.read_preset_bert_config(str(tmp_path / "other"))


# ------------------------------------------------------------------------------
# Checkpoints and bad input at export time
# ------------------------------------------------------------------------------


def test_bert_tf_training_checkpoint_restores_every_weight(exported, tmp_path):
  pretrainer = exported["pretrainer"]
  step = tf.Variable(7, dtype=tf.int64)
  manager = tf.train.CheckpointManager(
      tf.train.Checkpoint(model=pretrainer, step=step), str(tmp_path), max_to_keep=1)
  manager.save(7)
  restored, prefix = load_recorded(CONFIG, str(tmp_path))
  assert prefix.endswith("ckpt-7")
  for a, b in zip(restored.weights, pretrainer.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy())

  wider = CONFIG.replace(intermediate_size=24)
  with pytest.raises(ValueError) as error:
    load_recorded(wider, str(tmp_path))
  for part in ("intermediate_dense/kernel", "(16, 32)", "(16, 24)"):
    assert part in str(error.value)
  with pytest.raises(ValueError, match="num_hidden_layers"):
    load_recorded(CONFIG.replace(num_hidden_layers=1), str(tmp_path))


def test_tf1_checkpoint_that_does_not_match_the_config(exported):
  wider = CONFIG.replace(intermediate_size=24)
  with pytest.raises(ValueError, match=r"layer_0/intermediate/dense/kernel.*\[16, 32\].*\[16, 24\]"):
    load_recorded(wider, exported["prefix"])


def test_vocab_of_another_size_is_refused_before_loading(exported, tmp_path):
  short_vocab = write_vocab(tmp_path / "short.txt", VOCAB[:-3])
  options = export.ExportOptions(
      bert_config_file=exported["config_file"], checkpoint=exported["prefix"],
      vocab_file=short_vocab, export_dir=str(tmp_path / "out"))
  with pytest.raises(ValueError, match=rf"short.txt has {len(VOCAB) - 3} tokens .* vocab_size is {len(VOCAB)}"):
    export.run_export(options)
  assert not os.path.exists(tmp_path / "out")


def test_missing_checkpoint_is_named(tmp_path):
  with pytest.raises(FileNotFoundError, match="no-such.ckpt"):
    checkpoints.resolve_checkpoint(str(tmp_path / "no-such.ckpt"))
  with pytest.raises(FileNotFoundError, match="no checkpoint in directory"):
    checkpoints.resolve_checkpoint(str(tmp_path))


def test_entry_point_refuses_to_overwrite(exported):
  options = exported["options"]
  before = sorted(os.listdir(options.export_dir))
  child = subprocess.run(
      [sys.executable, "-m", "bert_tf.export_saved_model",
       f"--bert_config_file={options.bert_config_file}", f"--checkpoint={options.checkpoint}",
       f"--vocab_file={options.vocab_file}", f"--export_dir={options.export_dir}"],
      cwd=REPO, capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert child.returncode != 0
  last_line = child.stderr.strip().splitlines()[-1]
  assert last_line.startswith("bert_tf.export_saved_model: error: export_dir ")
  assert "saved_model exists already" in last_line and "--overwrite" in last_line
  assert sorted(os.listdir(options.export_dir)) == before
  # No temporary directory is left beside the outputs.
  assert not [n for n in os.listdir(exported["root"]) if ".tmp-" in n]


def test_written_outputs_are_reported(exported):
  assert set(exported["written"]) == {"export_dir", "tf1_checkpoint_out", "keras_hub_preset_out"}
  assert tf1_checkpoint.is_tf1_checkpoint(exported["options"].tf1_checkpoint_out)
  assert json.loads(open(os.path.join(exported["options"].keras_hub_preset_out, "config.json"))
                    .read())["config"]["vocabulary_size"] == CONFIG.vocab_size


def test_text_signature_length_defaults_to_what_the_model_has(exported, tmp_path):
  # CONFIG has 40 positions, fewer than the default 128: the export takes 40.
  options = export.ExportOptions(
      bert_config_file=exported["config_file"], checkpoint=exported["prefix"],
      vocab_file=exported["options"].vocab_file, export_dir=str(tmp_path / "out"))
  assert options.max_seq_length is None
  export.run_export(options)
  loaded = tf.saved_model.load(str(tmp_path / "out"))
  assert int(loaded.max_seq_length.numpy()) == CONFIG.max_position_embeddings
  result = loaded.signatures["fill_mask"](text=tf.constant([" ".join(["day"] * 60) + " [MASK]"]))
  assert bool(result["truncated"].numpy()[0])
  assert result["error"].numpy()[0].decode() == saved_model.ERROR_MASKS_TRUNCATED
