"""`--hf_out` of bert_tf.finetune and bert_tf.run_squad: a tiny fine-tuned
model written as a transformers folder (BertForSequenceClassification with
the task's labels, a regression's problem_type, BertForQuestionAnswering)
reads back as --init_checkpoint with its head: the same logits, the same
predictions, and, evaluated as it is (--do_train=false), the same dev metrics. (transformers itself loading these: check_export.py, by hand.)"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.downstream.classification import classifier
from bert_tf.models import hf_checkpoint as hf
from bert_tf.downstream.span import span_head
from bert_tf.downstream import finetune
from bert_tf.downstream.span import squad_finetune

from helpers import finetune_task
from helpers.finetune_task import tiny_config, write_task
from helpers.tool_runs import model_flags, run_tool


def _finetune_hf_out(tmp_path, task, train, dev, *flags, head):
  """bert_tf.finetune of `task`'s tiny model (a helpers module) on train and
  dev, one epoch, --output_dir=tmp_path/out --hf_out=tmp_path/hf (the last
  two flags); checks that it wrote the transformers `head` folder. Returns
  the flags and the folder's config.json."""
  hf_dir = tmp_path / "hf"
  args = model_flags(tmp_path, task) + [
      f"--train_file={train}", f"--dev_file={dev}", "--max_seq_length=16",
      "--num_train_epochs=1", *flags, f"--output_dir={tmp_path / 'out'}", f"--hf_out={hf_dir}"]
  child = run_tool("finetune", args, tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert f"wrote {hf_dir} {head}" in child.stdout
  return args, json.loads((hf_dir / "config.json").read_text())


def _feed():
  ids = np.array([[2, 7, 12, 9, 3, 0], [2, 15, 5, 3, 8, 3]], np.int32)
  return {"input_ids": ids, "input_mask": (ids != 0).astype(np.int32),
          "segment_ids": np.array([[0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1]], np.int32)}


@pytest.mark.slow
@pytest.mark.parametrize("regression", [False, True])
def test_finetune_hf_out_reads_back_with_its_head(tmp_path, regression):
  out, hf_dir = tmp_path / "out", tmp_path / "hf"
  args, written = _finetune_hf_out(
      tmp_path, finetune_task, write_task(tmp_path / "train.tsv", 32, 1, regression=regression),
      write_task(tmp_path / "dev.tsv", 16, 2, regression=regression),
      "--text_a_column=sentence", "--train_batch_size=16",
      head="BertForSequenceClassification")
  if regression:
    assert (written["num_labels"], written["problem_type"]) == (1, "regression")
  else:
    assert written["id2label"] == {"0": "0", "1": "1"}
  assert sorted(os.listdir(hf_dir)) == ["config.json", "model.safetensors",
                                        "special_tokens_map.json", "tokenizer_config.json",
                                        "vocab.txt"]
  trained = classifier.BertClassifier(tiny_config(), 1 if regression else 2)
  tf.train.Checkpoint(model=trained).read(
      str(out / "seed_0" / "model")).assert_existing_objects_matched()
  labels = None if regression else ["0", "1"]
  read, described = finetune.build_classifier(hf.read_hf_model(str(hf_dir)).bert_config,
                                              1 if regression else 2, str(hf_dir),
                                              labels=labels)
  assert "read its BertForSequenceClassification head" in described
  np.testing.assert_allclose(read(_feed()).numpy(), trained(_feed()).numpy(), atol=1e-6)
  # The folder alone, evaluated as it is (--do_train=false): the trained run's dev metrics.
  again = run_tool("finetune", [a for a in args if a.startswith(("--dev_file", "--text_a",
                                                                 "--max_seq"))] + [
      f"--init_checkpoint={hf_dir}", "--do_train=false", f"--output_dir={tmp_path / 'again'}"],
                   tmp_path)
  assert again.returncode == 0, again.stderr[-3000:]
  _same_metrics(tmp_path / "again", out, ("pearson", "spearman", "mse") if regression
                else ("accuracy", "f1", "mcc"))


def _same_metrics(evaluated, trained, names):
  def results(directory):
    return dict(line.split(" = ", 1) for line in
                (directory / "eval_results.txt").read_text().splitlines())
  evaluated, trained = results(evaluated), results(trained)
  for name in names:
    assert abs(float(evaluated[name]) - float(trained[name])) < 1e-6, name


def squad_file(path):
  context = "the movie was good and the plot was bad ."
  qas = [{"id": f"q{i}", "question": "what was good ?",
          "answers": [{"text": "the movie", "answer_start": 0}]} for i in range(4)]
  path.write_text(json.dumps({"version": "1.1", "data": [{"paragraphs": [
      {"context": context, "qas": qas}]}]}), encoding="utf-8")
  return str(path)


@pytest.mark.slow
def test_run_squad_hf_out_predicts_the_same_from_the_folder(tmp_path):
  data = squad_file(tmp_path / "squad.json")
  common = ["--max_seq_length=16", "--doc_stride=4", "--max_query_length=6",
            "--train_batch_size=2", "--do_predict", f"--predict_file={data}"]
  child = run_tool("run_squad", common + model_flags(tmp_path, finetune_task) + [
      "--do_train", f"--train_file={data}", f"--output_dir={tmp_path / 'out'}",
      f"--hf_out={tmp_path / 'hf'}"], tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert f"wrote {tmp_path / 'hf'} BertForQuestionAnswering" in child.stdout
  assert "bert.pooler.dense.weight" not in hf.tensor_names(str(tmp_path / "hf"))
  # The folder alone (its config.json and vocab), its qa_outputs as they are.
  again = run_tool("run_squad", common + [
      f"--init_checkpoint={tmp_path / 'hf'}", f"--output_dir={tmp_path / 'again'}"], tmp_path)
  assert again.returncode == 0, again.stderr[-3000:]
  assert "read its BertForQuestionAnswering head" in again.stdout
  for name in ("nbest_predictions.json", "predictions.json"):
    assert (json.loads((tmp_path / "again" / name).read_text())
            == json.loads((tmp_path / "out" / name).read_text())), name
  trained = span_head.BertSpanModel(tiny_config())
  tf.train.Checkpoint(model=trained).read(
      str(tmp_path / "out" / squad_finetune.CHECKPOINT_NAME)).assert_existing_objects_matched()
  read, _ = squad_finetune.build_span_model(tiny_config(), str(tmp_path / "hf"))
  for ours, theirs in zip(read(_feed()), trained(_feed())):
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-6)


@pytest.mark.slow
def test_a_taggers_hf_out_is_a_token_classifier_that_reads_back(tmp_path):
  from bert_tf.downstream.tagging import token_head  # pylint: disable=g-import-not-at-top
  from helpers import tagging_task  # pylint: disable=g-import-not-at-top
  out, hf_dir = tmp_path / "out", tmp_path / "hf"
  args, written = _finetune_hf_out(
      tmp_path, tagging_task, tagging_task.write_task(tmp_path / "train.txt", 24, 1),
      tagging_task.write_task(tmp_path / "dev.txt", 8, 2), "--task_type=tagging",
      "--train_batch_size=8", head="BertForTokenClassification")
  labels = [written["id2label"][str(i)] for i in range(len(written["id2label"]))]
  assert sorted(labels) == ["B-LOC", "B-PER", "I-PER", "O"]
  trained = token_head.BertTokenTagger(tagging_task.tiny_config(), len(labels))
  tf.train.Checkpoint(model=trained).read(
      str(out / "seed_0" / "model")).assert_existing_objects_matched()
  read, described = finetune.build_classifier(
      hf.read_hf_model(str(hf_dir)).bert_config, len(labels), str(hf_dir), labels=labels,
      make_model=token_head.BertTokenTagger, head_task=hf.TOKEN_CLASSIFICATION)
  assert "read its BertForTokenClassification head" in described
  feed = _feed()
  np.testing.assert_allclose(read(feed).numpy(), trained(feed).numpy(), atol=1e-5)
  # The folder alone, evaluated as it is (--do_train=false): the trained run's dev results.
  again = run_tool("finetune", [a for a in args if a.startswith(("--dev_file", "--task_type",
                                                                 "--max_seq"))] + [
      f"--init_checkpoint={hf_dir}", "--do_train=false", f"--output_dir={tmp_path / 'again'}"],
                   tmp_path)
  assert again.returncode == 0, again.stderr[-3000:]
  _same_metrics(tmp_path / "again", out, ("entity_f1", "entity_precision", "entity_recall",
                                          "token_accuracy"))
  assert ((tmp_path / "again" / "dev_predictions.conll").read_text()
          == (out / "dev_predictions.conll").read_text())
  # A frozen encoder's four-layer head has no transformers class: one line.
  frozen = run_tool("finetune", args[:-2] + [f"--output_dir={tmp_path / 'frozen'}",
                                             f"--hf_out={tmp_path / 'hf2'}",
                                             "--frozen_encoder"], tmp_path)
  assert frozen.returncode != 0
  assert "a --frozen_encoder tagger's head reads the last four layers" in frozen.stderr
  assert not (tmp_path / "hf2").exists()
