"""bert_tf.finetune's --do_train / --do_eval / --do_predict: a fine-tuned
transformers folder evaluated and predicted with as it is (transformers'
own BertForSequenceClassification fixture on a TSV task and on GLUE MNLI,
a BertForTokenClassification folder on CoNLL), its refusals in one line,
and --hf_out refused before any training step."""

import os
import subprocess
import sys

import numpy as np

from bert_tf.downstream.tagging import conll
from bert_tf.data.input import length_buckets
from bert_tf.models import hf_checkpoint as hf
from bert_tf.downstream import evaluate_only
from bert_tf.downstream import finetune
from bert_tf.downstream.classification import finetune_tsv
from bert_tf.downstream.tagging import tagging

from helpers import glue_files
from helpers import tagging_task
from helpers.finetune_task import tiny_config, write_task, write_vocab
from helpers.hf_fixtures import fixture

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLASSIFIER = fixture("bert_for_sequence_classification")


def _run_tool(args, cwd):
  return subprocess.run([sys.executable, "-m", "bert_tf.finetune"] + args, cwd=cwd,
                        capture_output=True, text=True, timeout=600,
                        env=dict(os.environ, PYTHONPATH=REPO))


def _results(path):
  return dict(line.split(" = ", 1) for line in path.read_text().splitlines())


def _error(child):
  lines = child.stderr.strip().splitlines()
  assert "Traceback" not in child.stderr, child.stderr[-3000:]
  return lines[-1]


def test_a_transformers_classifier_is_evaluated_and_predicts_as_it_is(tmp_path):
  rows = [("the lord said unto moses", "entailment"), ("light and day", "neutral"),
          ("night was god", "contradiction"), ("in the earth", "entailment"),
          ("heaven and earth", "neutral")]
  dev = tmp_path / "dev.tsv"
  dev.write_text("sentence\tlabel\n" + "".join(f"{a}\t{y}\n" for a, y in rows))
  test = tmp_path / "test.tsv"
  test.write_text("sentence\n" + "".join(f"{a}\n" for a, _ in rows))
  out = tmp_path / "out"
  child = _run_tool([f"--init_checkpoint={CLASSIFIER}", "--do_train=false",
                     f"--dev_file={dev}", f"--test_file={test}", "--max_seq_length=16",
                     f"--output_dir={out}"], tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert "evaluated as it is (do_train=false); 5 dev examples" in child.stdout
  # What the fixture's head gives (its logits checked against transformers'
  # in tests/downstream/test_evaluate_only.py) on the tokenized dev file.
  bert_config, vocab, _, casing = hf.model_files(CLASSIFIER, "", "")
  config = finetune.FinetuneConfig(init_checkpoint=CLASSIFIER, vocab_file=vocab,
                                   do_lower_case=casing, dev_file=str(dev), max_seq_length=16,
                                   output_dir=str(out), do_train=False)
  model, space, _ = evaluate_only.load_classifier(config, bert_config)
  task = finetune_tsv.load_task(config, space)
  logits = finetune.predict(model, task.dev, 32, lengths=length_buckets.boundaries(16, 8))
  expected = finetune_tsv.compute_metrics(logits, task.dev_labels, space)
  results = _results(out / "eval_results.txt")
  for name in ("accuracy", "mcc"):
    assert abs(float(results[name]) - expected[name]) < 1e-9, name
  assert results["num_dev_examples"] == "5"
  lines = (out / "test_results.tsv").read_text().splitlines()
  assert lines[0] == "label\tp_contradiction\tp_entailment\tp_neutral"
  probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
  written = np.array([[float(x) for x in line.split("\t")[1:]] for line in lines[1:]])
  np.testing.assert_allclose(written, probs, atol=2e-6)
  assert [line.split("\t")[0] for line in lines[1:]] == [
      space.labels[i] for i in np.argmax(logits, axis=1)]
  assert sorted(os.listdir(out)) == ["eval_results.txt", "test_results.tsv"]  # no training


def test_glue_mnli_without_a_train_file(tmp_path):
  data = tmp_path / "MNLI"
  glue_files.write_task_dir(data, "MNLI", n_dev=6)
  (data / "train.tsv").unlink()  # evaluation reads no train file
  args = [f"--init_checkpoint={CLASSIFIER}", "--do_train=false", "--task_name=MNLI",
          f"--data_dir={data}", "--max_seq_length=32"]
  child = _run_tool(args + [f"--output_dir={tmp_path / 'out'}", "--do_predict=false"],
                    tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert "MNLI official metrics (dev):" in child.stdout
  results = _results(tmp_path / "out" / "eval_results.txt")
  assert {"accuracy", "mismatched_accuracy"} <= set(results)
  assert not (tmp_path / "out" / "test_results.tsv").exists()
  # SST-2's labels are not the head's: one line naming both.
  data = tmp_path / "SST-2"
  glue_files.write_task_dir(data, "SST-2", n_dev=4)
  child = _run_tool(args[:2] + ["--task_name=SST-2", f"--data_dir={data}",
                                "--max_seq_length=32", f"--output_dir={tmp_path / 'sst'}"],
                    tmp_path)
  assert child.returncode == 1
  assert _error(child) == (
      f"bert_tf.finetune: error: init_checkpoint={CLASSIFIER}: its head's labels (config.json "
      f"id2label) ['contradiction', 'entailment', 'neutral'] are not the task's ['0', '1'] "
      f"(GLUE SST-2)")
  assert not (tmp_path / "sst" / "eval_results.txt").exists()


def test_a_transformers_tagger_is_evaluated_as_it_is(tmp_path):
  vocab = tagging_task.write_vocab(tmp_path / "vocab.txt")
  tagging_task.write_tagger_folder(tmp_path / "hf", vocab, ["O", "B-PER", "I-PER", "B-LOC"])
  dev = tagging_task.write_task(tmp_path / "dev.txt", 8, 2)
  out = tmp_path / "out"
  child = _run_tool([f"--init_checkpoint={tmp_path / 'hf'}", "--do_train=false",
                     "--task_type=tagging", f"--dev_file={dev}", "--max_seq_length=16",
                     f"--test_file={dev}", f"--output_dir={out}"], tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert "read its BertForTokenClassification head" in child.stdout
  config = tagging.TaggingConfig(init_checkpoint=str(tmp_path / "hf"), vocab_file=vocab,
                                 dev_file=dev, max_seq_length=16, output_dir=str(out),
                                 do_train=False)
  model, labels, _ = evaluate_only.load_tagger(config, tagging_task.tiny_config())
  task = tagging.load_task(config, labels)
  metrics, guesses = tagging.evaluate(model, task, 32,
                                      lengths=length_buckets.boundaries(16, 8))
  assert len({g for sentence in guesses for g in sentence}) > 1  # not one label throughout
  assert (out / tagging.PREDICTIONS_FILE).read_text() == conll.format_conll(task.dev, guesses)
  # The same file as --test_file: the same predictions.
  assert (out / tagging.TEST_PREDICTIONS_FILE).read_text() == conll.format_conll(task.dev,
                                                                                guesses)
  results = _results(out / "eval_results.txt")
  for name in tagging.METRICS:
    assert abs(float(results[name]) - metrics[name]) < 1e-9, name


def test_what_cannot_run_as_it_is_is_one_line(tmp_path):
  dev = write_task(tmp_path / "dev.tsv", 4, 2)
  common = [f"--dev_file={dev}", "--max_seq_length=16", f"--output_dir={tmp_path / 'out'}",
            "--do_train=false"]
  child = _run_tool(common + [f"--init_checkpoint={fixture('bert_for_pretraining')}"],
                    tmp_path)
  assert child.returncode == 1
  assert _error(child).startswith(
      f"bert_tf.finetune: error: init_checkpoint={fixture('bert_for_pretraining')}: its "
      f"class BertForPreTraining has no fine-tuned head (a pretraining checkpoint")
  config = tmp_path / "bert_config.json"
  tiny_config().to_json_file(str(config))
  child = _run_tool(common + [f"--bert_config_file={config}",
                              f"--vocab_file={write_vocab(tmp_path / 'vocab.txt')}"], tmp_path)
  assert child.returncode == 2
  assert "--init_checkpoint is required with do_train=false" in _error(child)
  assert not (tmp_path / "out").exists()


def test_outputs_and_steps_that_cannot_be_are_one_line(tmp_path):
  common = [f"--dev_file={write_task(tmp_path / 'dev.tsv', 4, 2)}", "--max_seq_length=16",
            f"--output_dir={tmp_path / 'out'}", "--do_train=false",
            f"--init_checkpoint={CLASSIFIER}"]
  child = _run_tool(common + [f"--hf_out={tmp_path / 'hf'}"], tmp_path)
  assert child.returncode == 1
  assert "--do_train=false trains nothing to write" in _error(child)
  child = _run_tool(common + ["--do_predict"], tmp_path)
  assert child.returncode == 2 and "--do_predict needs --test_file" in _error(child)
  assert not (tmp_path / "out").exists() and not (tmp_path / "hf").exists()


def test_an_existing_hf_out_is_refused_before_any_training(tmp_path):
  config = tmp_path / "bert_config.json"
  tiny_config().to_json_file(str(config))
  (tmp_path / "hf").mkdir()
  (tmp_path / "hf" / "keep.txt").write_text("x")
  out = tmp_path / "out"
  # Thousands of steps: minutes of training, were the check after it.
  args = [f"--bert_config_file={config}", f"--vocab_file={write_vocab(tmp_path / 'vocab.txt')}",
          f"--train_file={write_task(tmp_path / 'train.tsv', 64, 1)}",
          f"--dev_file={write_task(tmp_path / 'dev.tsv', 8, 2)}", "--max_seq_length=16",
          "--num_train_epochs=1000", "--train_batch_size=16", f"--output_dir={out}",
          f"--hf_out={tmp_path / 'hf'}"]
  child = _run_tool(args, tmp_path)
  assert child.returncode == 1
  assert _error(child) == (f"bert_tf.finetune: error: --hf_out {tmp_path / 'hf'} exists "
                           "already; pass overwrite=True (--overwrite) to replace it")
  assert not out.exists()  # no seed_<n>/ (TensorBoard, model), no eval_results.txt
  assert os.listdir(tmp_path / "hf") == ["keep.txt"]


def test_training_without_evaluation_predicts_the_test_file(tmp_path):
  config = tmp_path / "bert_config.json"
  tiny_config().to_json_file(str(config))
  out = tmp_path / "out"
  child = _run_tool([
      f"--bert_config_file={config}", f"--vocab_file={write_vocab(tmp_path / 'vocab.txt')}",
      f"--train_file={write_task(tmp_path / 'train.tsv', 32, 1)}", "--do_eval=false",
      f"--test_file={write_task(tmp_path / 'test.tsv', 6, 3)}", "--max_seq_length=16",
      "--num_train_epochs=1", "--train_batch_size=16", f"--output_dir={out}"], tmp_path)
  assert child.returncode == 0, child.stderr[-3000:]
  assert "accuracy" not in child.stdout and "32 train examples, 1 seed(s)" in child.stdout
  assert not (out / "eval_results.txt").exists()
  lines = (out / "test_results.tsv").read_text().splitlines()
  assert lines[0] == "label\tp_0\tp_1" and len(lines) == 7
  assert (out / "seed_0" / "model.index").exists()
