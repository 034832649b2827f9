"""Tests of the inspect_records tool: the figures from the records beside the
manifest's, under the same names; one-line errors on bad input."""

import json
import os
import re
import shutil
from unittest import mock

import pytest

from bert_tf import cli
from bert_tf import inspect_records
from bert_tf.data.records import manifest as manifest_lib
from bert_tf.data.tokenizers import sentencepiece_vocab
from bert_tf.data.records import stats

from helpers.writer_run import MASK_ID, write_run


def run_main(argv, capsys):
  flag_values = cli.parse(inspect_records.define_flags, ["inspect_records"] + argv)
  with mock.patch.object(inspect_records, "FLAGS", flag_values):
    cli.call(inspect_records.main, ["inspect_records"])
  return capsys.readouterr()


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
  return write_run(tmp_path_factory.mktemp("inspect"), gzip=True)


def test_prints_the_records_figures_beside_the_manifests(outputs, capsys):
  vocab = outputs.directory + "/../vocab.txt"
  out = run_main([f"--input_file={outputs.directory}/*", f"--vocab_file={vocab}"], capsys)
  report = json.loads(out.out)
  records, stated = report["records"], report["manifest"]
  assert stated["path"] == outputs.manifest_path()
  assert set(records) == set(stated) - {"path"}
  assert records["counts"] == stated["counts"]
  for name, value in records["shares"].items():
    assert value == pytest.approx(stated["shares"][name]) if value is not None else (
        stated["shares"][name] is None), name
  assert records["files"] == 2 and records["max_seq_length"] == 32


def test_records_without_a_manifest(outputs, capsys, tmp_path):
  copy = tmp_path / "copy.tfrecord"
  shutil.copy(outputs.paths()[0], copy)
  vocab = outputs.directory + "/../vocab.txt"
  report = json.loads(run_main([f"--input_file={copy}", f"--vocab_file={vocab}"], capsys).out)
  assert report["manifest"] is None
  assert report["records"] == stats.record_statistics(str(copy), MASK_ID)


def test_counts_differing_from_the_manifest_of_the_same_files_are_an_error(outputs, tmp_path):
  copy = tmp_path / "out"
  shutil.copytree(outputs.directory, copy)
  obj = manifest_lib.Manifest.read(str(copy / "manifest.json")).to_dict()
  obj["counts"]["instances"] += 1
  manifest_lib.Manifest.from_dict(obj).write(str(copy / "manifest.json"))
  with pytest.raises(cli.Error, match=r"^the records hold counts\.instances=\d+ but "
                                      r".*manifest\.json states counts\.instances=\d+$"):
    inspect_records.inspect(f"{copy}/*", MASK_ID)
  # A subset of the files: their counts are not the manifest's, and that is fine.
  report = inspect_records.inspect(str(sorted(copy.glob("*.gz"))[0]), MASK_ID)
  assert report["records"]["counts"]["instances"] < obj["counts"]["instances"]


def test_bad_input_is_one_line(tmp_path, capsys):
  (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
  with pytest.raises(SystemExit) as exit_info:
    run_main([f"--input_file={tmp_path}/none*.tfrecord", f"--vocab_file={tmp_path}/vocab.txt"],
             capsys)
  assert exit_info.value.code == cli.ERROR_EXIT
  err = capsys.readouterr().err.strip()
  assert "\n" not in err and "none*.tfrecord' (--input_file) matches no files" in err


SPM_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures",
                       "albert_sentencepiece")


def test_records_of_a_sentencepiece_model_take_its_mask_id(outputs, capsys):
  """--spm_model_file (ALBERT's model) gives its [MASK] id; its .vocab listing as --vocab_file is named, not read
  as a vocab missing its special tokens."""
  copy = outputs.paths()[0]
  report = json.loads(run_main([f"--input_file={copy}",
                                f"--spm_model_file={SPM_DIR}/spm.model"], capsys).out)
  spm_mask_id = sentencepiece_vocab.load_sentencepiece(f"{SPM_DIR}/spm.model").vocab.mask_id
  assert report["records"] == stats.record_statistics(copy, spm_mask_id)
  for argv, message in (([f"--vocab_file={SPM_DIR}/spm.vocab"],
                         r"SentencePiece vocab listing .*--spm_model_file"),
                        ([], "give one of --vocab_file and --spm_model_file")):
    with pytest.raises(SystemExit) as exit_info:
      run_main([f"--input_file={copy}"] + argv, capsys)
    assert exit_info.value.code != 0
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and re.search(message, err), err
