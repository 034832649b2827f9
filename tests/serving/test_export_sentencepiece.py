"""A released-style ALBERT with a SentencePiece model, end to end: its TF1
checkpoint (with the model beside it) warm-starts a run on records the
writer tokenized with the model, which exports a SavedModel whose text
signatures tokenize with it in the graph, and serves fill-mask."""

import os
import random

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the text signatures' ops)

from bert_tf.data.tokenizers import sentencepiece_graph
from bert_tf.data.tokenizers import sentencepiece_vocab as spv
from bert_tf.data.pretraining import writer
from bert_tf.models import tf1_checkpoint
from bert_tf.models.config import BertConfig
from bert_tf.serving import export
from bert_tf.serving import tf1_export
from bert_tf.training import loop
from bert_tf.training import objectives

SPM = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                   "albert_sentencepiece", "spm.model")
WORDS = ("in the beginning god created heaven and earth was without form void darkness "
         "upon face of deep light said let there be good divided").split()


def _albert_config():
  return BertConfig(vocab_size=spv.load_sentencepiece(SPM).vocab.size, hidden_size=32,
                    num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                    max_position_embeddings=64, type_vocab_size=2, embedding_size=16,
                    num_hidden_groups=1, inner_group_num=1)


def test_a_released_style_albert_continues_exports_and_fills_masks(tmp_path):
  config = _albert_config()
  # 1. A "release": TF1 checkpoint, its config and its SentencePiece model.
  released = objectives.get("mlm_sop").build_model(config)
  prefix = str(tmp_path / "albert_release" / "model.ckpt-best")
  tf1_export.write_tf1_checkpoint(released, prefix, None, spm_model_file=SPM)
  assert sorted(os.listdir(tmp_path / "albert_release")) == [
      "bert_config.json", "model.ckpt-best.data-00000-of-00001", "model.ckpt-best.index",
      "spm.model"]
  # 2. The corpus, tokenized with the model (ALBERT's SOP, whole words).
  rng = random.Random(2)
  docs = ["\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))) + "."
                    for _ in range(6)) for _ in range(30)]
  (tmp_path / "corpus.txt").write_text("\n\n".join(docs) + "\n")
  writer.create_pretraining_data(
      str(tmp_path / "corpus.txt"), writer.Outputs(directory=str(tmp_path / "rec"),
                                                   num_shards=1), None,
      writer.DataOptions(max_seq_length=32, max_predictions_per_seq=5, dupe_factor=1,
                         sentence_task="sop", max_ngram=3, do_whole_word_mask=True),
      spm_model_file=SPM)
  # 3. Continue pretraining from the release.
  result = loop.run(loop.TrainConfig(
      input_file=str(tmp_path / "rec" / "*.tfrecord"), output_dir=str(tmp_path / "run"),
      init_checkpoint=prefix, do_train=True, max_seq_length=32, max_predictions_per_seq=5,
      train_batch_size=8, num_train_steps=4, num_warmup_steps=1, save_checkpoints_steps=4,
      iterations_per_loop=2, learning_rate=1e-3, optimizer="lamb"), config)
  assert np.isfinite(float(result["train"]["loss"]))
  # What the run's warm start read: every weight of the release.
  from bert_tf.training import checkpoints  # pylint: disable=g-import-not-at-top
  report = checkpoints.warm_start(objectives.get("mlm_sop").build_model(config), prefix)
  assert (report.format, len(report.initialized), report.missing) == ("tf1", 32, ())
  config.to_json_file(str(tmp_path / "run" / "bert_config.json"))
  # 4. Export: SavedModel (text signatures with the model) and a new release.
  written = export.run_export(export.ExportOptions(
      bert_config_file=str(tmp_path / "run" / "bert_config.json"),
      checkpoint=str(tmp_path / "run"), vocab_file=None, spm_model_file=SPM,
      export_dir=str(tmp_path / "sm"), max_seq_length=32, top_k=3,
      tf1_checkpoint_out=str(tmp_path / "again" / "model.ckpt")))
  assert sorted(written) == ["export_dir", "tf1_checkpoint_out"]
  assert (tmp_path / "again" / "spm.model").read_bytes() == open(SPM, "rb").read()
  # 5. Serve fill-mask: the [MASK] where the text has it, the rest as the
  #    writer tokenizes, answers from the model's pieces.
  model = spv.load_sentencepiece(SPM)
  served = tf.saved_model.load(str(tmp_path / "sm"))
  out = served.signatures["fill_mask"](text=tf.constant(["In the [MASK] God created", "no"]))
  assert out["num_masks"].numpy().tolist() == [1, 0]
  assert int(out["mask_positions"][0, 0]) == 1 + len(model.tokenize("In the", lower=True))
  assert out["error"].numpy()[0] == b""
  tokens = [t.decode() for t in out["top_k_tokens"].numpy()[0, 0]]
  assert len(tokens) == 3 and all(t in model.vocab.token_to_id for t in tokens)
  order = served.signatures["sentence_order"](text_a=tf.constant(["god said"]),
                                              text_b=tf.constant(["let there be light"]))
  assert 0.0 <= float(order["in_order_probability"][0]) <= 1.0
  # The exported release reads back as the model that was served.
  back = objectives.get("mlm_sop").build_model(config)
  tf1_checkpoint.load_tf1_checkpoint(back, str(tmp_path / "again" / "model.ckpt"))


def test_a_keras_hub_preset_with_a_sentencepiece_model_is_refused(tmp_path):
  with pytest.raises(ValueError, match="keras_hub_preset_out with spm_model_file: not "
                     "supported"):
    export.run_export(export.ExportOptions(
        bert_config_file=None, checkpoint=str(tmp_path), vocab_file=None,
        spm_model_file=SPM, keras_hub_preset_out=str(tmp_path / "preset")))


def test_the_graph_tokenizer_is_the_one_the_export_uses():
  model = spv.load_sentencepiece(SPM)
  graph = sentencepiece_graph.SentencePieceModule(model, True)
  assert graph.tokenize(tf.constant(["Let there be light."])).to_list()[0] == model.tokenize(
      "Let there be light.", lower=True)


def test_hf_out_of_a_sentencepiece_albert_holds_spiece_model_and_reads_back(tmp_path):
  """--hf_out with --spm_model_file: spiece.model and an AlbertTokenizer
  config (transformers' own ALBERT tokenizer), and the folder reads back
  (its SentencePiece vocab checked against vocab_size)."""
  import json  # pylint: disable=g-import-not-at-top
  from bert_tf.models import hf_checkpoint  # pylint: disable=g-import-not-at-top
  from bert_tf.serving import hf_export  # pylint: disable=g-import-not-at-top
  config = _albert_config()
  objective = objectives.get("mlm_sop")
  model = objective.build_model(config)
  hf_export.write_hf_folder(model, objective, None, True, str(tmp_path / "hf"),
                            spm_model_file=SPM)
  assert sorted(os.listdir(tmp_path / "hf")) == [
      "config.json", "model.safetensors", "special_tokens_map.json", "spiece.model",
      "tokenizer_config.json"]
  tokenizer = json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())
  assert tokenizer["tokenizer_class"] == "AlbertTokenizer" and tokenizer["do_lower_case"]
  info = hf_checkpoint.read_hf_model(str(tmp_path / "hf"))
  assert info.architecture == "AlbertForPreTraining" and info.bert_config.vocab_size == 120
  with pytest.raises(ValueError, match="has a SentencePiece model, no WordPiece vocab: give "
                     "--spm_model_file="):
    hf_checkpoint.vocab_path(str(tmp_path / "hf"))
