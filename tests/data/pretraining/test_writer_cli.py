"""Tests of bert_tf.data.pretraining.writer_cli, what the data tool does around the
writer (tests/test_create_pretraining_data.py runs the tool itself)."""

import pytest

from bert_tf.data.pretraining import writer
from bert_tf.data.pretraining import writer_cli


def test_outputs_from_flags():
  assert writer_cli.outputs_from_flags(" a.tfrecord, b.tfrecord ,", None, 1, False) == (
      writer.Outputs(files=("a.tfrecord", "b.tfrecord")))
  assert writer_cli.outputs_from_flags(None, "out", 4, True) == writer.Outputs(
      directory="out", num_shards=4, gzip=True)
  for args, message in (((None, None, 1, False), "exactly one of --output_file and --output_dir"),
                        (("a", "out", 1, False), "exactly one of --output_file and --output_dir"),
                        ((None, "out", 0, False), "--num_output_shards=0: must be at least 1")):
    with pytest.raises(writer_cli.FlagError, match=message):
      writer_cli.outputs_from_flags(*args)


def test_num_workers_of():
  assert writer_cli.num_workers_of(3) == 3
  assert writer_cli.num_workers_of(None) == writer_cli.num_workers_of(0) == (
      writer.default_num_workers())
  with pytest.raises(writer_cli.FlagError, match="--num_workers=-1"):
    writer_cli.num_workers_of(-1)


def test_a_failed_run_leaves_no_new_empty_folder(tmp_path):
  new, kept = tmp_path / "a" / "b", tmp_path / "kept"
  with pytest.raises(RuntimeError):
    with writer_cli.removed_if_left_empty([str(new), str(kept)]):
      new.mkdir(parents=True)
      kept.mkdir()
      (kept / "shard.tfrecord").write_text("x")  # a shard a rerun resumes from
      raise RuntimeError("killed")
  assert not (tmp_path / "a").exists() and (kept / "shard.tfrecord").exists()
  with writer_cli.removed_if_left_empty([str(new)]):  # no error: nothing removed
    new.mkdir(parents=True)
  assert new.is_dir()


def test_log_summary(monkeypatch):
  manifest = {"counts": {"instances": 10, "documents": 2, "undecodable_bytes": 0},
              "files": ["a"], "run": {"seconds": 2.0},
              "shares": {"mean_tokens": 30.0, "predictions_per_instance": 4.0, "masked": 0.8,
                         "kept": 0.1, "random": 0.1, "nsp_random": 0.5}}
  lines = []  # absl's verbosity is whatever earlier tests left: take the calls themselves
  monkeypatch.setattr(writer_cli.logging, "info", lambda fmt, *args: lines.append(fmt % args))
  writer_cli.log_summary(manifest, writer.Outputs(directory="out"))
  text = "\n".join(lines)
  assert "wrote 10 instances from 2 documents to 1 file(s) in 2.0 s (5 instances/s)" in text
  assert "NSP random 0.500" in text and "manifest: out/manifest.json" in text


@pytest.mark.parametrize("task, phrase", [("nsp", "| NSP random 0.498 "),
                                          ("sop", "| SOP swapped 0.498 "),
                                          ("none", "")])
def test_the_pair_share_is_named_for_the_records_sentence_task(task, phrase):
  """Sentence-order records' class-1 pairs are swapped segments, not random
  ones: the summary names the share for the sentence task the manifest
  records, and masked-LM-only records print none."""
  manifest = {"flags": {"sentence_task": task},
              "shares": {"nsp_random": 0.498 if task != "none" else None}}
  assert writer_cli.pair_share_phrase(manifest) == phrase
  assert writer_cli.pair_share_phrase({"shares": {"nsp_random": 0.498}}) == (
      "| NSP random 0.498 ")  # the original's manifest-less default: NSP
