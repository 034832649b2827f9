"""The Beam driver writes the same bytes as the local driver."""

import json
import random

import pytest

beam = pytest.importorskip("apache_beam", reason="the Beam driver needs the 'beam' extra")

from bert_tf.data.pretraining import beam  # noqa: E402
from bert_tf.data.pretraining import writer  # noqa: E402

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
         "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"]


def _write_inputs(tmp_path):
  vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ","] + WORDS + ["##s", "##ed"]
  (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
  rng = random.Random(3)
  docs = []
  for _ in range(30):
    sentences = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + " ."
                 for _ in range(rng.randint(2, 9))]
    docs.append("\n".join(sentences))
  (tmp_path / "a.txt").write_text("\n\n".join(docs[:18]) + "\n")
  (tmp_path / "b.txt").write_text("\n\n".join(docs[18:]) + "\n")
  return str(tmp_path / "*.txt"), str(tmp_path / "vocab.txt")


def _shard_bytes(outputs):
  return [open(p, "rb").read() for p in outputs.paths()]


@pytest.mark.parametrize("variant", [
    {},
    {"sentence_task": "sop", "max_ngram": 3, "do_whole_word_mask": True},
    {"sentence_task": "none", "packing": "full_sentences", "dynamic_masking": True},
])
def test_beam_and_local_drivers_write_identical_shards(tmp_path, variant):
  inputs, vocab = _write_inputs(tmp_path)
  options = writer.DataOptions(max_seq_length=32, max_predictions_per_seq=5,
                                         dupe_factor=2, block_bytes=600, **variant)
  local = writer.Outputs(directory=str(tmp_path / "local"), num_shards=3)
  via_beam = writer.Outputs(directory=str(tmp_path / "beam"), num_shards=3)
  local_manifest = writer.create_pretraining_data(inputs, local, vocab, options,
                                                            num_workers=1)
  beam_manifest = beam.run_beam(inputs, via_beam, vocab, options)

  assert local_manifest["counts"]["instances"] > 50
  local_shards, beam_shards = _shard_bytes(local), _shard_bytes(via_beam)
  assert all(local_shards), "every shard has records"
  assert beam_shards == local_shards
  assert beam_manifest["counts"] == local_manifest["counts"]
  assert beam_manifest["shares"] == local_manifest["shares"]
  # The temporary per-block files are gone.
  assert not (tmp_path / "beam" / ".blocks").exists()
  with open(via_beam.manifest_path()) as f:
    assert json.load(f)["run"]["driver"] == "beam"


def test_beam_driver_refuses_output_file_mode(tmp_path):
  inputs, vocab = _write_inputs(tmp_path)
  outputs = writer.Outputs(files=(str(tmp_path / "out.tfrecord"),))
  with pytest.raises(ValueError, match="output_dir"):
    beam.run_beam(inputs, outputs, vocab, writer.DataOptions())


def test_beam_and_local_drivers_agree_with_a_sentencepiece_model(tmp_path):
  """--spm_model_file (ALBERT's tokenization): the Beam workers tokenize with
  the same model and rules; 2 local workers too."""
  import os  # pylint: disable=g-import-not-at-top
  model = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "fixtures", "albert_sentencepiece", "spm.model")
  inputs, _ = _write_inputs(tmp_path)
  options = writer.DataOptions(max_seq_length=32, max_predictions_per_seq=5, dupe_factor=2,
                               block_bytes=600, sentence_task="sop", max_ngram=3,
                               do_whole_word_mask=True)
  runs = {}
  for name, workers in (("local1", 1), ("local2", 2)):
    runs[name] = writer.Outputs(directory=str(tmp_path / name), num_shards=3)
    writer.create_pretraining_data(inputs, runs[name], None, options, num_workers=workers,
                                   spm_model_file=model)
  runs["beam"] = writer.Outputs(directory=str(tmp_path / "beam"), num_shards=3)
  manifest = beam.run_beam(inputs, runs["beam"], None, options, spm_model_file=model)
  assert manifest["vocab"]["path"] == model and manifest["counts"]["instances"] > 50
  shards = {name: _shard_bytes(out) for name, out in runs.items()}
  assert all(shards["local1"])
  assert shards["local2"] == shards["local1"] and shards["beam"] == shards["local1"]
