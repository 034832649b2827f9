"""bert_tf.downstream.export: where a fine-tuning run keeps its model (the
seed_<n> path, spelled there alone) and the SavedModel steps every task
kind's export shares."""

import os

import pytest

from bert_tf.downstream import export
from bert_tf.downstream import finetune


class _Module:
  """A serving module that records its write."""

  def __init__(self, names):
    self.names, self.written = names, None

  def signature_functions(self):
    return {name: None for name in self.names}

  def write(self, export_dir, overwrite):
    self.written = (export_dir, overwrite)


def test_a_runs_model_is_its_first_seeds():
  config = finetune.FinetuneConfig(output_dir="/runs/sst", seed=3)
  assert export.seed_dir("/runs/sst", 4) == os.path.join("/runs/sst", "seed_4")
  assert export.finetuned_prefix(config) == os.path.join("/runs/sst", "seed_3", "model")


def test_a_module_is_written_after_the_folder_is_checked(tmp_path):
  built = []
  module = export.write_module(lambda: built.append(1) or _Module(
      ["serving_default", "classify_ids", "classify"]), str(tmp_path / "sm"))
  assert module.written == (str(tmp_path / "sm"), False) and built == [1]
  assert export.written_line("sm", module) == "wrote SavedModel sm (signatures classify, " \
                                             "classify_ids)"
  assert export.written_line("sm", _Module(["serving_default", "answer"])) == (
      "wrote SavedModel sm (signature answer)")
  # An existing folder is refused before the module is built.
  (tmp_path / "there").mkdir()
  with pytest.raises(FileExistsError, match="there"):
    export.write_module(lambda: built.append(2), str(tmp_path / "there"))
  assert built == [1]


def test_the_export_dir_is_checked_before_training(tmp_path):
  config = finetune.FinetuneConfig(output_dir=str(tmp_path), do_train=False)
  export.check_export_dir(config, "")  # none asked: nothing to check
  with pytest.raises(ValueError, match="--do_train=false trains nothing to export"):
    export.check_export_dir(config, str(tmp_path / "sm"))
  (tmp_path / "sm").mkdir()
  with pytest.raises(FileExistsError, match="--export_dir"):
    export.check_export_dir(finetune.FinetuneConfig(), str(tmp_path / "sm"))
  export.check_export_dir(finetune.FinetuneConfig(), str(tmp_path / "sm"), overwrite=True)


def test_a_missing_checkpoint_is_named(tmp_path):
  prefix = str(tmp_path / "model")
  with pytest.raises(FileNotFoundError, match="no model here"):
    export.read_finetuned(None, prefix, missing="no model here")
