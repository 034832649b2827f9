"""bert_tf.extract_features on the original's golden TF1 checkpoint: each
layer's values equal the original forward pass (helpers.reference_bert, a
numpy statement of the original's rules, run to that depth), the JSON
schema and token layout are the original extract_features.py's, and bad
input is a one-line error with no output file."""

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models.config import BertConfig
from bert_tf.downstream.features import extract
from helpers.reference_bert import reference_forward

REPO = os.path.dirname(os.path.abspath(__file__)).rsplit(os.sep, 3)[0]
WORDS = ("the dog is hairy . no it is not cat sat on mat a b c d e f g h i j k l m n o p q r s "
         "t u v w x y z ##s ##ed ##ing run jump big small red |").split()
LINES = ["The dog is hairy .", "the cat sat ||| no it is not", "",
         " a b c d e f g h i j k l m n o p q r s t u v w x y z ", "runs |||",
         "big ||| red ||| small", "zebra"]


@pytest.fixture
def golden(shared_dir, tmp_path):
  model = os.path.join(shared_dir, "reference", "golden", "model")
  config = BertConfig.from_json_file(os.path.join(model, "bert_config.json"))
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(dict.fromkeys(WORDS))
  assert len(tokens) <= config.vocab_size
  tokens += [f"[unused{i}]" for i in range(config.vocab_size - len(tokens))]
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(tokens) + "\n")
  source = tmp_path / "input.txt"
  source.write_text("\n".join(LINES) + "\n")
  return {"model": model, "config": config, "vocab": str(vocab), "tokens": tokens,
          "input": str(source), "config_file": os.path.join(model, "bert_config.json")}


def test_values_and_schema_are_the_originals(golden, tmp_path):
  out = tmp_path / "features.jsonl"
  count, described = extract.extract(
      golden["input"], str(out), golden["config"], golden["model"], golden["vocab"],
      layers="-1,-2,-3,0", max_seq_length=12, batch_size=3)
  assert count == len(LINES) and "original TF1" in described
  rows = [json.loads(line) for line in out.read_text().splitlines()]
  assert [r["linex_index"] for r in rows] == list(range(len(LINES)))
  # Key order and separators of the original's json.dumps of OrderedDicts.
  first = out.read_text().splitlines()[0]
  assert first.startswith('{"linex_index": 0, "features": [{"token": "[CLS]", "layers": '
                          '[{"index": -1, "values": [')
  tokens = [[f["token"] for f in r["features"]] for r in rows]
  assert tokens[0] == ["[CLS]", "the", "dog", "is", "hairy", ".", "[SEP]"]
  assert tokens[1] == ["[CLS]", "the", "cat", "sat", "[SEP]", "no", "it", "is", "not", "[SEP]"]
  assert tokens[2] == ["[CLS]", "[SEP]"]  # an empty line is an example
  assert tokens[3] == ["[CLS]"] + list("abcdefghij") + ["[SEP]"]  # cut to 12 - 2
  assert tokens[4] == ["[CLS]", "run", "##s", "|", "|", "|", "[SEP]"]  # no " ||| " in it
  assert tokens[5] == ["[CLS]", "big", "|", "|", "|", "red", "[SEP]", "small", "[SEP]"]
  assert tokens[6] == ["[CLS]", "[UNK]", "[SEP]"]
  prefix = os.path.join(golden["model"], "bert_model.ckpt")
  weights = {name: tf.train.load_checkpoint(prefix).get_tensor(name)
             for name, _ in tf.train.list_variables(prefix)}
  config = golden["config"]
  ids = {t: i for i, t in enumerate(golden["tokens"])}
  for row, toks in zip(rows, tokens):
    second = toks.index("[SEP]") + 1
    segments = [0] * second + [1] * (len(toks) - second)
    for layer in row["features"][0]["layers"]:
      depth = layer["index"] % config.num_hidden_layers + 1
      want = reference_forward(weights, dataclasses.replace(config, num_hidden_layers=depth),
                               [[ids[t] for t in toks]], [[1] * len(toks)],
                               [segments])["sequence_output"][0]
      got = np.array([f["layers"][[l["index"] for l in f["layers"]].index(layer["index"])]
                      ["values"] for f in row["features"]])
      np.testing.assert_allclose(got, want, atol=2e-5, err_msg=f"layer {layer['index']}")
      values = [v for f in row["features"] for l in f["layers"] for v in l["values"]]
      assert all(round(v, 6) == v for v in values)
  # The four layer indexes are distinct layers' values.
  v = [np.array(l["values"]) for l in rows[0]["features"][1]["layers"]]
  assert not np.allclose(v[0], v[1]) and np.allclose(v[2], v[3])  # -3 is 0 of 3 layers


def test_tool_writes_whole_file_or_one_line_error(golden, tmp_path):
  def run(*extra):
    return subprocess.run(
        [sys.executable, "-m", "bert_tf.extract_features", f"--input_file={golden['input']}",
         f"--output_file={tmp_path / 'out.jsonl'}", f"--init_checkpoint={golden['model']}",
         f"--bert_config_file={golden['config_file']}", f"--vocab_file={golden['vocab']}",
         "--max_seq_length=16"] + list(extra), cwd=tmp_path, capture_output=True, text=True,
        timeout=600, env=dict(os.environ, PYTHONPATH=REPO))
  child = run("--layers=-1,-4")
  assert child.returncode == 1 and "Traceback" not in child.stderr
  assert child.stderr.strip().splitlines()[-1].endswith(
      "layers='-1,-4': -4 is out of range for an encoder of 3 layers (-3..2)")
  assert os.listdir(tmp_path) == ["vocab.txt", "input.txt"] or not (
      tmp_path / "out.jsonl").exists()
  child = run("--layers=-1")
  assert child.returncode == 0, child.stderr[-3000:]
  assert f"wrote {len(LINES)} examples to" in child.stdout
  assert "examples/s" in child.stderr  # the progress line with its rate
  rows = (tmp_path / "out.jsonl").read_text().splitlines()
  assert len(rows) == len(LINES)
  assert [l["index"] for l in json.loads(rows[0])["features"][0]["layers"]] == [-1]
  assert not [p for p in os.listdir(tmp_path) if p.startswith(".") or "tmp" in p]


@pytest.mark.parametrize("albert", [False, True])
def test_last_layer_is_the_encoders_sequence_output(tmp_path, albert):
  """A one-layer BERT, and an ALBERT whose one shared block serves two depths:
  layer -1 is the encoder's sequence_output, the depths differ."""
  from bert_tf.downstream import finetune  # pylint: disable=g-import-not-at-top
  from helpers.finetune_task import tiny_config, write_vocab  # pylint: disable=g-import-not-at-top
  config = (dataclasses.replace(tiny_config(), embedding_size=16, num_hidden_groups=1,
                                inner_group_num=1) if albert
            else dataclasses.replace(tiny_config(), num_hidden_layers=1))
  vocab = write_vocab(tmp_path / "vocab.txt")
  (tmp_path / "in.txt").write_text("the movie was good ||| a bad plot\nnice\n")
  out = tmp_path / "out.jsonl"
  layers = "-1,0" if albert else "-1"
  extract.extract(str(tmp_path / "in.txt"), str(out), config, "", vocab, layers=layers,
                  max_seq_length=16)
  rows = [json.loads(line) for line in out.read_text().splitlines()]
  encoder = finetune.build_classifier(config, 1, "")[0].encoder  # the same seeded weights
  for row in rows:
    tokens = [f["token"] for f in row["features"]]
    ids = [[{"[CLS]": 2, "[SEP]": 3}.get(t) or
            open(vocab).read().split("\n").index(t) for t in tokens]]
    second = tokens.index("[SEP]") + 1
    want = encoder({"token_ids": tf.constant(ids), "padding_mask": tf.ones_like(ids),
                    "segment_ids": tf.constant([[0] * second + [1] * (len(tokens) - second)])},
                   training=False)["sequence_output"][0].numpy()
    got = np.array([f["layers"][0]["values"] for f in row["features"]])
    np.testing.assert_allclose(got, want, atol=2e-6)
    if albert:
      assert not np.allclose(got, [f["layers"][1]["values"] for f in row["features"]])
