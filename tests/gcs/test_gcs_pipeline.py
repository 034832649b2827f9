"""The whole pipeline with every path on gs://, through TensorFlow's own GCS
client and a Cloud Storage emulator on loopback (conftest.py's `gcs`):
vocab -> records (local driver with shards, token cache and manifest; the
Beam driver) -> training with checkpoints and TensorBoard, stopped by
SIGTERM and resumed -> export (SavedModel, transformers folder, TF1
checkpoint) -> a tiny compare_objectives."""

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

pytest.importorskip("apache_beam", reason="the Beam driver needs the 'beam' extra")

from helpers import topic_corpus  # noqa: E402  (after the skip)

TINY = {"vocab_size": 100, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
        "intermediate_size": 32, "max_position_embeddings": 32, "type_vocab_size": 2,
        "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
        "initializer_range": 0.02}
RECORD_FLAGS = ("--max_seq_length=32", "--max_predictions_per_seq=5", "--dupe_factor=2",
                "--num_output_shards=2", "--block_bytes=3000")

# Copies local files to gs:// (argv: local gs:// pairs) or a gs:// tree to a
# local folder (argv: --get gs://... local): the test reads what the tools
# wrote with the same client they wrote it with.
_COPY = r"""
import os, sys
import tensorflow as tf
g = tf.io.gfile
if sys.argv[1] == "--get":
  src, dst = sys.argv[2].rstrip("/"), sys.argv[3]
  for root, _, names in g.walk(src):
    for name in names:
      path = root.rstrip("/") + "/" + name
      local = os.path.join(dst, path[len(src) + 1:])
      os.makedirs(os.path.dirname(local), exist_ok=True)
      g.copy(path, local, overwrite=True)
else:
  for local, remote in zip(sys.argv[1::2], sys.argv[2::2]):
    g.copy(local, remote, overwrite=True)
"""


_REMOVE = "import sys, tensorflow as tf\nfor p in sys.argv[1:]: tf.io.gfile.remove(p)\n"


def _corpus(path, documents=80, sentences=10, seed=0):
  topic_corpus.write_corpus(path, documents, sentences, seed)


def _train(gcs, output_dir, sigterm):
  """run_pretraining on gs://; with `sigterm`, SIGTERM once the first
  checkpoint is saved. Returns (exit code, stderr text)."""
  proc = gcs.popen([sys.executable, "-m", "bert_tf.run_pretraining",
                    f"--bert_config_file={gcs.url('bert_config.json')}",
                    f"--input_file={gcs.url('records/*.tfrecord')}",
                    f"--output_dir={output_dir}", "--do_train", "--max_seq_length=32",
                    "--max_predictions_per_seq=5", "--train_batch_size=8",
                    "--num_train_steps=40", "--num_warmup_steps=2", "--save_checkpoints_steps=10",
                    "--iterations_per_loop=5", "--log_steps=5", "--nojit_compile"],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  lines = []

  def read():
    pending = sigterm
    for line in proc.stderr:
      lines.append(line)
      if pending and "Saved checkpoint" in line:
        proc.send_signal(signal.SIGTERM)
        pending = False

  reader = threading.Thread(target=read)
  reader.start()
  proc.stdout.read()
  code = proc.wait(timeout=300)
  reader.join()
  return code, "".join(lines)


@pytest.mark.slow
def test_the_pipeline_on_gcs(gcs, tmp_path):
  corpus = tmp_path / "corpus.txt"
  _corpus(corpus)
  (tmp_path / "tiny.json").write_text(json.dumps(TINY))
  gcs.python(_COPY, str(corpus), gcs.url("corpus/corpus.txt"),
             str(tmp_path / "tiny.json"), gcs.url("tiny.json"))
  vocab = gcs.url("vocab.txt")

  # === Vocab and records ===
  gcs.tool("build_vocab", f"--input_file={gcs.url('corpus/*.txt')}", f"--vocab_file={vocab}",
           "--vocab_size=120", f"--bert_config_template={gcs.url('tiny.json')}",
           f"--bert_config_out={gcs.url('bert_config.json')}")
  inputs = (f"--input_file={gcs.url('corpus/*.txt')}", f"--vocab_file={vocab}")
  gcs.tool("create_pretraining_data", *inputs, *RECORD_FLAGS, "--num_workers=2",
                   f"--output_dir={gcs.url('records')}")
  gcs.tool("create_pretraining_data", *inputs, *RECORD_FLAGS, "--driver=beam",
           f"--output_dir={gcs.url('records_beam')}")
  # A rerun of the local driver reuses its complete shards.
  again = gcs.tool("create_pretraining_data", *inputs, *RECORD_FLAGS, "--num_workers=2",
                   f"--output_dir={gcs.url('records')}")
  assert "reusing 2 complete shards" in again.stderr, again.stderr[-2000:]

  # === Training: SIGTERM after the first checkpoint, then resume ===
  run = gcs.url("run")
  code, log = _train(gcs, run, sigterm=True)
  assert code == 0, log[-3000:]
  assert "SIGTERM: saved step" in log, log[-3000:]
  stopped_at = int(log.split("SIGTERM: saved step ")[1].split()[0])
  assert 0 < stopped_at < 40
  code, log = _train(gcs, run, sigterm=False)
  assert code == 0, log[-3000:]
  assert f"ckpt-{stopped_at}" in log, log[-3000:]  # restored from where it stopped
  assert "Training done at step 40" in log, log[-3000:]

  # === Export: SavedModel, transformers folder, TF1 checkpoint ===
  export = gcs.url("export")
  export_flags = (f"--checkpoint={run}", f"--bert_config_file={gcs.url('bert_config.json')}",
                  f"--vocab_file={vocab}", f"--export_dir={export}/saved_model",
                  f"--hf_out={export}/hf", f"--tf1_checkpoint_out={export}/tf1/bert_model.ckpt")
  gcs.tool("export_saved_model", *export_flags)
  # A folder "renamed" on Cloud Storage is copied object by object: an
  # exporter killed then leaves part of it under the final name. The rerun
  # refuses it in one line; with --overwrite it writes it whole again.
  gcs.python(_REMOVE, f"{export}/saved_model/variables/variables.index",
             f"{export}/hf/model.safetensors")
  refused = gcs.tool("export_saved_model", *export_flags, check=False)
  assert refused.returncode != 0
  assert "exists already" in refused.stderr.strip().splitlines()[-1], refused.stderr[-2000:]
  gcs.tool("export_saved_model", *export_flags, "--overwrite")

  # === compare_objectives (tiny) ===
  gcs.tool("compare_objectives", f"--corpus={gcs.url('corpus/corpus.txt')}",
           f"--output_dir={gcs.url('compare')}", f"--bert_config_file={gcs.url('tiny.json')}",
           "--vocab_size=120", "--heldout_every=2", "--max_seq_length=32", "--dupe_factor=1",
           "--num_train_steps=3", "--train_batch_size=8", "--objectives=mlm",
           "--probes=", "--seeds=1", "--max_probe_examples=64")

  # === What a user finds in the bucket ===
  got = tmp_path / "bucket"
  gcs.python(_COPY, "--get", gcs.url(), str(got))
  names = sorted(os.path.relpath(os.path.join(root, n), got)
                 for root, _, files in os.walk(got) for n in files)
  assert not [n for n in names if ".tmp" in n or ".blocks" in n], names
  shards = sorted(n for n in names if n.startswith("records/") and n.endswith(".tfrecord"))
  assert len(shards) == 2
  for shard in shards:
    beam_shard = got / shard.replace("records/", "records_beam/", 1)
    assert (got / shard).read_bytes() == beam_shard.read_bytes(), shard
  manifest = json.loads((got / "records" / "manifest.json").read_text())
  assert manifest["counts"]["instances"] > 100
  assert any(n.startswith("run/events") or "/events.out.tfevents" in n
             for n in names if n.startswith("run/")), names
  assert "run/ckpt-40.index" in names or any(n.startswith("run/ckpt-40") for n in names)
  for path in ("export/saved_model/saved_model.pb", "export/hf/config.json",
               "export/hf/model.safetensors", "export/tf1/bert_model.ckpt.index",
               "compare/results.md", "compare/results.csv"):
    assert path in names, (path, names)

  # The downloaded SavedModel serves; the transformers folder has the weights.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_text  # noqa: F401  pylint: disable=unused-import,g-import-not-at-top
  loaded = tf.saved_model.load(str(got / "export" / "saved_model"))
  assert "fill_mask" in loaded.signatures, list(loaded.signatures)

  from safetensors.numpy import load_file  # pylint: disable=g-import-not-at-top
  weights = load_file(str(got / "export" / "hf" / "model.safetensors"))
  assert any("word_embeddings" in name for name in weights), sorted(weights)[:5]
