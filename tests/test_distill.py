"""Tests of the distill tool end to end on a tiny model: a teacher trained
with loop.run, then distilled into half its layers (eval results of student
and teacher side by side, TensorBoard terms, resume, export of the student),
and the one-line errors of bad input."""

import dataclasses
import glob
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import cli
from bert_tf import distill
from bert_tf.models.config import BertConfig
from bert_tf.training import loop
from helpers.pretraining import tiny_bert_config, tiny_train_config, write_records
from helpers.pretraining import write_manifest
from helpers.checkpoints import load_recorded

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _teacher_config():
  return dataclasses.replace(tiny_bert_config(), num_hidden_layers=4)


@pytest.fixture(scope="module")
def teacher(tmp_path_factory):
  """Records and a 4-layer teacher trained on them for a few steps."""
  path = tmp_path_factory.mktemp("distill")
  write_records(path / "train.tfrecord", 64, seed=1)
  write_records(path / "heldout.tfrecord", 24, seed=2)
  _teacher_config().to_json_file(str(path / "teacher_config.json"))
  result = loop.run(tiny_train_config(path, output_dir=str(path / "teacher"), do_eval=True,
                                      eval_input_file=str(path / "heldout.tfrecord"),
                                      num_train_steps=4), _teacher_config())
  return path, result["eval"]


def _argv(path, out, *extra):
  return ["distill", f"--teacher_config_file={path / 'teacher_config.json'}",
          f"--teacher_checkpoint={path / 'teacher'}", f"--input_file={path / 'train.tfrecord'}",
          f"--eval_input_file={path / 'heldout.tfrecord'}", f"--output_dir={out}",
          "--max_seq_length=32", "--max_predictions_per_seq=5", "--train_batch_size=8",
          "--eval_batch_size=8", "--learning_rate=1e-3", "--num_warmup_steps=1",
          "--save_checkpoints_steps=2", "--iterations_per_loop=2", "--log_steps=2",
          "--max_eval_steps=3", "--do_train", "--do_eval", *extra]


def _main(monkeypatch, argv):
  monkeypatch.setattr(distill, "FLAGS", cli.parse(distill.define_flags, argv))
  return cli.call(distill.main, argv)


def _eval_results(out):
  with tf.io.gfile.GFile(os.path.join(out, "eval_results.txt")) as f:
    return dict(line.split(" = ") for line in f.read().splitlines())


def test_distill_reports_student_and_teacher_resumes_and_exports_the_student(
    teacher, monkeypatch):
  path, teacher_eval = teacher
  out = path / "student"
  assert _main(monkeypatch, _argv(path, out, "--num_train_steps=4")) == 0
  results = _eval_results(out)
  for key in ("global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
              "teacher_masked_lm_accuracy", "teacher_masked_lm_loss", "kl_loss",
              "cosine_loss"):
    assert key in results, key
  assert "next_sentence_accuracy" not in results  # no NSP unless asked
  assert int(results["global_step"]) == 4
  # The frozen teacher's accuracy on the same held-out batches is what its
  # own training run reported.
  np.testing.assert_allclose(float(results["teacher_masked_lm_accuracy"]),
                             teacher_eval["masked_lm_accuracy"], rtol=1e-6)
  np.testing.assert_allclose(float(results["teacher_masked_lm_loss"]),
                             teacher_eval["masked_lm_loss"], rtol=1e-5)
  # TensorBoard has each loss term.
  tags = set()
  for event_file in glob.glob(str(out / "train" / "events.*")):
    for event in tf.compat.v1.train.summary_iterator(event_file):
      tags.update(v.tag for v in event.summary.value)
  assert {"loss", "kl_loss", "cosine_loss", "masked_lm_loss",
          "teacher_masked_lm_accuracy"} <= tags

  # The same command with more steps resumes at step 4 (teacher and student
  # restored from the checkpoint, optimizer slots included).
  assert _main(monkeypatch, _argv(path, out, "--num_train_steps=6")) == 0
  assert int(_eval_results(out)["global_step"]) == 6
  assert tf.train.latest_checkpoint(str(out)).endswith("ckpt-6")

  # Export reads the student alone, with its own config written beside.
  student_config = BertConfig.from_json_file(str(out / "bert_config.json"))
  assert student_config.num_hidden_layers == 2
  pretrainer, prefix = load_recorded(student_config, str(out))
  assert prefix.endswith("ckpt-6") and pretrainer.nsp_head is None
  assert pretrainer.count_params() < 0.7 * load_recorded(
      _teacher_config(), str(path / "teacher"))[0].count_params()


def test_a_teacher_of_another_vocab_than_the_records_is_one_line(teacher, tmp_path):
  path, _ = teacher
  records = tmp_path / "records"
  records.mkdir()
  write_records(records / "train.tfrecord", 16, seed=3)
  write_manifest(records)  # vocab of 100 tokens
  dataclasses.replace(_teacher_config(), vocab_size=120).to_json_file(
      str(tmp_path / "teacher_config.json"))
  argv = _argv(path, tmp_path / "out", "--num_train_steps=2")
  argv = [a for a in argv if not a.startswith(("--teacher_config_file", "--input_file"))]
  argv += [f"--teacher_config_file={tmp_path / 'teacher_config.json'}",
           f"--input_file={records / 'train.tfrecord'}"]
  proc = subprocess.run([sys.executable, "-m", "bert_tf.distill"] + argv[1:],
                        capture_output=True, text=True, cwd=REPO, timeout=120,
                        env=dict(os.environ, PYTHONPATH=REPO))
  assert proc.returncode == 1, proc.stderr
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1, proc.stderr
  assert lines[0].startswith("bert_tf.distill: error: --teacher_config_file=")
  assert "the teacher has vocab_size=120 but the records of --input_file" in lines[0]
  assert "vocab of 100 tokens" in lines[0]
  assert not (tmp_path / "out").exists()


def test_a_student_the_teacher_cannot_initialize_is_one_line(teacher, tmp_path, monkeypatch,
                                                              capsys):
  path, _ = teacher
  dataclasses.replace(_teacher_config(), num_hidden_layers=3).to_json_file(
      str(tmp_path / "student.json"))
  argv = _argv(path, tmp_path / "out", "--num_train_steps=2",
               f"--bert_config_file={tmp_path / 'student.json'}")
  with pytest.raises(SystemExit) as exit_info:
    _main(monkeypatch, argv)
  assert exit_info.value.code == 1
  err = capsys.readouterr().err.strip().splitlines()
  assert err == [err[0]] and "cannot be initialized from the teacher's layers" in err[0]
  assert not (tmp_path / "out").exists()
  with pytest.raises(SystemExit) as exit_info:
    _main(monkeypatch, argv + [f"--init_checkpoint={path / 'teacher'}"])
  assert exit_info.value.code == 2
  assert "--init_checkpoint is not used by distill" in capsys.readouterr().err


def test_a_transformers_folder_teacher_holds_its_config(tmp_path, monkeypatch):
  """--teacher_checkpoint=<transformers folder>, no --teacher_config_file: the
  teacher's config.json; the default student keeps its exact GELU."""
  from helpers.hf_fixtures import fixture  # pylint: disable=g-import-not-at-top
  write_records(tmp_path / "train.tfrecord", 32, seed=4, vocab_size=79)
  argv = ["distill", f"--teacher_checkpoint={fixture('bert_for_pretraining')}",
          f"--input_file={tmp_path / 'train.tfrecord'}", f"--output_dir={tmp_path / 'out'}",
          "--max_seq_length=32", "--max_predictions_per_seq=5", "--train_batch_size=8",
          "--learning_rate=1e-3", "--num_warmup_steps=1", "--num_train_steps=2",
          "--save_checkpoints_steps=2", "--iterations_per_loop=2", "--log_steps=2",
          "--do_train", "--kl_tokens=all"]  # the KL at every real token, too
  assert _main(monkeypatch, argv) == 0
  student = BertConfig.from_json_file(str(tmp_path / "out" / "bert_config.json"))
  assert student.num_hidden_layers == 1 and student.hidden_act == "gelu_exact"
  assert tf.train.latest_checkpoint(str(tmp_path / "out")).endswith("ckpt-2")
  # The student goes back to transformers as the BERT class of its heads.
  from bert_tf.serving import export  # pylint: disable=g-import-not-at-top
  export.run_export(export.ExportOptions(
      bert_config_file=str(tmp_path / "out" / "bert_config.json"),
      checkpoint=str(tmp_path / "out"),
      vocab_file=os.path.join(os.path.dirname(fixture("bert_for_pretraining")), "tokenizer",
                              "vocab.txt"), hf_out=str(tmp_path / "hf")))
  import json  # pylint: disable=g-import-not-at-top
  written = json.loads((tmp_path / "hf" / "config.json").read_text())
  assert written["architectures"] == ["BertForMaskedLM"] and written["num_hidden_layers"] == 1
  assert written["hidden_act"] == "gelu"  # transformers' name of the exact GELU
