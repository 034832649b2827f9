"""Tests of the create_pretraining_data entry point: the original's flags,
and what a user sees on bad input (one line naming the problem, a non-zero
exit, nothing under a final output name).

Most cases call `main` in this process with absl flags (a CLI process costs
seconds of TensorFlow import); a few run the real command line to check
exit codes and stderr as a shell sees them, and a slow one kills a run with
SIGKILL and resumes it.
"""

import json
import os
import random
import signal
import subprocess
import sys
import time

from unittest import mock

import pytest

from bert_tf import cli
from bert_tf import create_pretraining_data as cpd

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LETTERS = "abcdefghijklmnopqrstuvwxyz"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "light", "of", "day", "and", "night", "water", "land"]
VOCAB = SPECIALS + [".", ","] + WORDS + list(LETTERS) + ["##" + c for c in LETTERS]


def write_vocab(path, drop=()):
  path.write_text("".join(t + "\n" for t in VOCAB if t not in drop))
  return str(path)


def write_corpus(path, num_docs=40, seed=0):
  rng = random.Random(seed)
  docs = []
  for _ in range(num_docs):
    docs.append("\n".join(" ".join(rng.choice(WORDS + ["lights", "days"]) for _ in range(rng.randint(3, 15)))
                          + " ." for _ in range(rng.randint(5, 20))))
  path.write_text("\n\n".join(docs) + "\n")
  return str(path)


@pytest.fixture
def files(tmp_path):
  return {"vocab": write_vocab(tmp_path / "vocab.txt"),
          "corpus": write_corpus(tmp_path / "corpus.txt"),
          "out": tmp_path / "out"}


def run_main(argv):
  """Runs main as `python -m bert_tf.create_pretraining_data argv` would."""
  flag_values = cli.parse(cpd.define_flags, ["create_pretraining_data"] + argv)
  with mock.patch.object(cpd, "FLAGS", flag_values):
    return cli.call(cpd.main, ["create_pretraining_data"])


def last_line(text):
  lines = [l for l in text.splitlines() if l.strip()]
  return lines[-1] if lines else ""


def output_names(out):
  """Final-looking names under `out` (temporaries excluded)."""
  if not out.exists():
    return []
  return sorted(p.name for p in out.rglob("*") if p.is_file() and ".tmp" not in p.name)


# ---------------------------------------------------------------------------
# The original's command line
# ---------------------------------------------------------------------------

def test_original_flags_with_original_defaults():
  defaults = {"input_file": None, "output_file": None, "vocab_file": None,
              "do_lower_case": True, "do_whole_word_mask": False, "max_seq_length": 128,
              "max_predictions_per_seq": 20, "random_seed": 12345, "dupe_factor": 10,
              "masked_lm_prob": 0.15, "short_seq_prob": 0.1}
  flag_values = cli.parse(cpd.define_flags, ["create_pretraining_data"])
  for name, value in defaults.items():
    assert flag_values[name].default == value, name


def test_main_writes_round_robin_files_and_manifest(files, tmp_path):
  out = files["out"]
  a, b = out / "a.tfrecord", out / "b.tfrecord"
  run_main([f"--input_file={files['corpus']}", f"--output_file={a},{b}",
            f"--vocab_file={files['vocab']}", "--max_seq_length=32",
            "--max_predictions_per_seq=5", "--dupe_factor=2", "--num_workers=1"])
  assert output_names(out) == ["a.tfrecord", "a.tfrecord.manifest.json", "b.tfrecord"]
  manifest = json.loads((out / "a.tfrecord.manifest.json").read_text())
  assert manifest["files"] == [str(a), str(b)]
  assert manifest["flags"]["max_seq_length"] == 32 and manifest["flags"]["dupe_factor"] == 2
  assert manifest["counts"]["documents"] == 40 and manifest["counts"]["instances"] > 300
  import tensorflow as tf
  n = [sum(1 for _ in tf.data.TFRecordDataset(str(p))) for p in (a, b)]
  assert sum(n) == manifest["counts"]["instances"] and abs(n[0] - n[1]) <= 1


# ---------------------------------------------------------------------------
# Bad input, in this process
# ---------------------------------------------------------------------------

def assert_fails_cleanly(argv, expected, capsys, out):
  """main exits non-zero with one last stderr line containing `expected`,
  and leaves no final output file."""
  with pytest.raises(SystemExit) as info:
    run_main(argv)
  assert info.value.code not in (0, None)
  line = last_line(capsys.readouterr().err)
  assert line.startswith("bert_tf.create_pretraining_data: error:"), line
  for text in expected:
    assert text in line, line
  assert output_names(out) == []


def common_flags(files, **overrides):
  values = {"input_file": files["corpus"], "output_dir": str(files["out"]),
            "vocab_file": files["vocab"], "max_seq_length": "32",
            "max_predictions_per_seq": "5", "dupe_factor": "1", "num_workers": "1"}
  values.update(overrides)
  return [f"--{k}={v}" for k, v in values.items() if v is not None]


def test_input_glob_that_matches_nothing(files, capsys):
  pattern = f"{files['out'].parent}/no-such-dir/*.txt"
  assert_fails_cleanly(common_flags(files, input_file=pattern),
                       ["--input_file", "no-such-dir/*.txt", "matches no file"], capsys, files["out"])


def test_empty_file_and_blank_file(files, tmp_path, capsys):
  empty = tmp_path / "empty.txt"
  empty.write_text("")
  assert_fails_cleanly(common_flags(files, input_file=f"{files['corpus']},{empty}"),
                       [str(empty), "empty"], capsys, files["out"])
  blank = tmp_path / "blank.txt"
  blank.write_text("\n \n\t\n\n\n")
  assert_fails_cleanly(common_flags(files, input_file=str(blank)),
                       [str(blank), "only blank lines"], capsys, files["out"])


def test_text_without_a_single_token(files, tmp_path, capsys):
  # Only characters the tokenizer drops: the run fails, and leaves neither
  # empty record files nor stats a rerun could take for complete shards.
  junk = tmp_path / "junk.txt"
  junk.write_text("\x01\x02\n\x03\n\n\ufffd\n")
  assert_fails_cleanly(common_flags(files, input_file=str(junk)),
                       ["--input_file", "no instance"], capsys, files["out"])
  out_file = files["out"] / "f.tfrecord"
  assert_fails_cleanly(common_flags(files, input_file=str(junk), output_dir=None,
                                    output_file=str(out_file)),
                       ["--input_file", "no instance"], capsys, files["out"])


@pytest.mark.parametrize("missing", [["[CLS]"], ["[SEP]"], ["[MASK]"], ["[UNK]"], ["[MASK]", "[CLS]"]])
def test_vocab_without_a_special_token(files, tmp_path, capsys, missing):
  vocab = write_vocab(tmp_path / "bad_vocab.txt", drop=missing)
  assert_fails_cleanly(common_flags(files, vocab_file=vocab),
                       ["bad_vocab.txt", "missing"] + missing, capsys, files["out"])


def test_vocab_file_that_does_not_exist(files, tmp_path, capsys):
  assert_fails_cleanly(common_flags(files, vocab_file=str(tmp_path / "nope.txt")),
                       ["nope.txt"], capsys, files["out"])


@pytest.mark.parametrize("flag, value", [
    ("max_seq_length", "4"), ("max_seq_length", "0"),
    ("max_predictions_per_seq", "0"),
    ("masked_lm_prob", "0"), ("masked_lm_prob", "1.5"), ("masked_lm_prob", "-0.2"),
    ("dupe_factor", "0"),
    ("short_seq_prob", "2"),
])
def test_impossible_flag_values(files, capsys, flag, value):
  assert_fails_cleanly(common_flags(files, **{flag: value}), [f"--{flag}="], capsys, files["out"])


def test_output_that_cannot_be_written(files, tmp_path, capsys):
  # Tests run as root, which ignores permissions: a path under a regular
  # file cannot be created by anyone.
  a_file = tmp_path / "a_file"
  a_file.write_text("x")
  target = a_file / "out"
  assert_fails_cleanly(common_flags(files, output_dir=str(target)),
                       ["cannot write output", str(target)], capsys, files["out"])
  assert_fails_cleanly(common_flags(files, output_dir=None,
                                    output_file=f"{files['out']}/ok.tfrecord,{target}/x.tfrecord"),
                       ["cannot write output", f"{target}/x.tfrecord"], capsys, files["out"])
  assert a_file.read_text() == "x"


@pytest.mark.parametrize("overrides, message", [
    ({"vocab_file": None}, "--vocab_file is required"),
    ({"input_file": None}, "--input_file is required"),
    ({"output_file": "x.tfrecord"}, "exactly one of --output_file and --output_dir"),
    ({"output_dir": None}, "exactly one of --output_file and --output_dir"),
    ({"num_output_shards": "0"}, "--num_output_shards=0"),
])
def test_usage_errors(files, overrides, message, capsys):
  with pytest.raises(SystemExit) as info:
    run_main(common_flags(files, **overrides))
  assert info.value.code == cli.USAGE_EXIT
  line = last_line(capsys.readouterr().err)
  assert line.startswith("bert_tf.create_pretraining_data: error:") and message in line, line
  assert output_names(files["out"]) == []


@pytest.mark.parametrize("overrides, expected", [
    ({"sentence_task": "none"}, ["--sentence_task=none", "--packing=full_sentences"]),
    ({"sentence_task": "sop", "packing": "full_sentences"},
     ["--sentence_task=sop", "--packing=segment_pair"]),
    ({"max_ngram": "0"}, ["--max_ngram=0"]),
])
def test_impossible_variant_combinations(files, capsys, overrides, expected):
  assert_fails_cleanly(common_flags(files, **overrides), expected, capsys, files["out"])


def test_sop_on_one_sentence_documents_fails_cleanly(files, tmp_path, capsys):
  corpus = tmp_path / "one_sentence_docs.txt"
  corpus.write_text("\n\n".join("the light of day and night ." for _ in range(30)) + "\n")
  assert_fails_cleanly(common_flags(files, input_file=str(corpus), sentence_task="sop"),
                       ["--sentence_task=sop", "no document has two sentences"], capsys,
                       files["out"])
  out_file = files["out"] / "f.tfrecord"
  assert_fails_cleanly(common_flags(files, input_file=str(corpus), sentence_task="sop",
                                    output_dir=None, output_file=str(out_file)),
                       ["--sentence_task=sop"], capsys, files["out"])


def test_variant_flags_reach_the_manifest(files):
  run_main(common_flags(files, sentence_task="none", packing="doc_sentences", max_ngram="3",
                        dynamic_masking="true", do_whole_word_mask="true"))
  flags = json.loads((files["out"] / "manifest.json").read_text())["flags"]
  assert (flags["sentence_task"], flags["packing"], flags["max_ngram"],
          flags["dynamic_masking"]) == ("none", "doc_sentences", 3, True)


# ---------------------------------------------------------------------------
# The real command line
# ---------------------------------------------------------------------------

def run_cli(args, **kwargs):
  return subprocess.run([sys.executable, "-m", "bert_tf.create_pretraining_data"] + args,
                        capture_output=True, text=True, cwd=REPO, timeout=300, **kwargs)


def test_cli_bad_inputs_exit_non_zero_with_one_clear_line(files, tmp_path):
  a_file = tmp_path / "a_file"
  a_file.write_text("x")
  vocab = write_vocab(tmp_path / "no_mask.txt", drop=["[MASK]"])
  cases = [
      (common_flags(files, input_file=f"{tmp_path}/missing*.txt"), ["missing*.txt", "matches no file"]),
      (common_flags(files, vocab_file=vocab), ["no_mask.txt", "[MASK]"]),
      (common_flags(files, output_dir=str(a_file / "sub")), ["cannot write output", "a_file/sub"]),
      (common_flags(files, vocab_file=None), ["--vocab_file is required"]),
      (common_flags(files, sentence_task="none"), ["--sentence_task=none", "--packing="]),
  ]
  for argv, expected in cases:
    result = run_cli(argv)
    assert result.returncode != 0, argv
    line = last_line(result.stderr)
    for text in expected:
      assert text in line, (argv, line)
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert output_names(files["out"]) == []


def test_cli_awkward_input_works(files, tmp_path):
  # Not UTF-8, a one-sentence document, a line far over max_seq_length:
  # all written, the bad bytes counted.
  corpus = tmp_path / "awkward.txt"
  corpus.write_bytes(b"the light \xff\xfe of day .\n\nwater .\n\n" + b"land " * 400 + b".\nthe day .\n")
  result = run_cli(common_flags(files, input_file=str(corpus), dupe_factor="3"))
  assert result.returncode == 0, result.stderr[-3000:]
  manifest = json.loads((files["out"] / "manifest.json").read_text())
  assert manifest["counts"]["undecodable_bytes"] == 2
  assert manifest["counts"]["documents"] == 3
  assert manifest["counts"]["instances"] > 0
  assert "manifest:" in result.stderr


# ---------------------------------------------------------------------------
# Another input into the same --output_dir
# ---------------------------------------------------------------------------

def test_another_input_into_an_output_dir_is_refused_unless_overwrite(files, tmp_path, capsys):
  run_main(common_flags(files))
  out = files["out"]
  first = {p.name: p.read_bytes() for p in out.glob("*.tfrecord")}
  # The same command again resumes: every shard reused, the same bytes.
  run_main(common_flags(files))
  manifest = json.loads((out / "manifest.json").read_text())
  assert manifest["run"]["reused_shards"] == 1
  before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
  assert "writer_run.json" in before and "manifest.json" in before
  assert {name: before[name] for name in first} == first
  other = write_corpus(tmp_path / "other.txt", seed=5)
  for overrides, expected in (
      ({"input_file": other}, [f"inputs {files['corpus']} -> {other}", "--overwrite"]),
      ({"dupe_factor": "2"}, ["options dupe_factor 1 -> 2"]),
      ({"num_output_shards": "2"}, ["num_output_shards 1 -> 2"])):
    with pytest.raises(SystemExit) as info:
      run_main(common_flags(files, **overrides))
    assert info.value.code not in (0, None)
    line = last_line(capsys.readouterr().err)
    assert line.startswith("bert_tf.create_pretraining_data: error: --output_dir=")
    assert "holds the records of another run" in line
    for text in expected:
      assert text in line, line
    for name, data in before.items():  # nothing rewritten
      assert (out / name).read_bytes() == data, name
  run_main(common_flags(files, input_file=other, num_output_shards="2", overwrite="true"))
  assert sorted(p.name for p in out.glob("*.tfrecord")) == [
      "pretrain-00000-of-00002.tfrecord", "pretrain-00001-of-00002.tfrecord"]
  manifest = json.loads((out / "manifest.json").read_text())
  assert manifest["flags"]["input_file"] == other


def _round_robin_flags(files, output_files, **overrides):
  values = {"output_dir": None, "output_file": str(output_files), "dupe_factor": "2"}
  values.update(overrides)
  return common_flags(files, **values)


def test_another_input_onto_an_output_file_is_refused_unless_overwrite(files, tmp_path, capsys):
  out = files["out"]
  a, b = out / "a.tfrecord", out / "b.tfrecord"
  run_main(_round_robin_flags(files, f"{a},{b}"))
  first = {p.name: p.read_bytes() for p in out.iterdir()}
  # The same command again writes the same files again.
  run_main(_round_robin_flags(files, f"{a},{b}"))
  assert a.read_bytes() == first["a.tfrecord"] and b.read_bytes() == first["b.tfrecord"]
  first = {p.name: p.read_bytes() for p in out.iterdir()}
  other = write_corpus(tmp_path / "other.txt", seed=5)
  for overrides, expected in (
      ({"input_file": other}, [f"inputs {files['corpus']} -> {other}"]),
      ({"dupe_factor": "3"}, ["options dupe_factor 2 -> 3"]),
      ({"output_file": str(a)}, [f"--output_file {a},{b} -> {a}"])):
    with pytest.raises(SystemExit) as info:
      run_main(_round_robin_flags(files, f"{a},{b}", **overrides))
    assert info.value.code not in (0, None)
    line = last_line(capsys.readouterr().err)
    assert line.startswith(f"bert_tf.create_pretraining_data: error: --output_file={a} holds "
                           "the records of another run ("), line
    for text in expected + [f"by {a}.manifest.json", "--overwrite"]:
      assert text in line, line
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first  # nothing rewritten
  # --overwrite: the original's behaviour, the file replaced.
  run_main(_round_robin_flags(files, f"{a},{b}", input_file=other, overwrite="true"))
  manifest = json.loads((out / "a.tfrecord.manifest.json").read_text())
  assert manifest["flags"]["input_file"] == other
  assert a.read_bytes() != first["a.tfrecord"]
  assert not [p for p in out.iterdir() if ".tmp" in p.name]


def _record_starts(data):
  """Offsets where each TFRecord of `data` starts (a record is an 8-byte
  length, its 4-byte CRC, the data and the data's 4-byte CRC)."""
  import struct  # pylint: disable=g-import-not-at-top
  starts, at = [], 0
  while at < len(data):
    starts.append(at)
    at += 16 + struct.unpack("<Q", data[at:at + 8])[0]
  return starts


def _read_as_training_does(out):
  """The number of records the training input pipeline reads from `out`."""
  from bert_tf.data.input import pipeline  # pylint: disable=g-import-not-at-top
  info = pipeline.check_data(str(out / "*.tfrecord"), 32, 5)
  with pipeline.naming_damage(info, "training records"):
    dataset = pipeline.make_dataset(info.files, 16, 32, 5, is_training=False,
                                    compression=info.compression,
                                    sentence_task=info.sentence_task, drop_remainder=False)
    return sum(1 for _ in dataset.unbatch())


def _cut(data):
  """The damages a shard is given, by name: bytes -> damaged bytes."""
  starts = _record_starts(data)
  flipped = bytearray(data)
  flipped[starts[len(starts) // 2] + 20] ^= 0xFF
  return {"mid-record": data[:starts[1] + 30],
          "at a record boundary": data[:starts[len(starts) // 2]],
          "header only": data[:12],
          "empty file": b"",
          "a changed byte": bytes(flipped)}


@pytest.mark.parametrize("overwrite", [False, True])
def test_the_rerun_the_damage_error_advises_repairs_a_cut_shard(files, overwrite, caplog):
  import logging  # pylint: disable=g-import-not-at-top
  from bert_tf.data.records import damaged_records  # pylint: disable=g-import-not-at-top
  flags = common_flags(files, num_output_shards="2", dupe_factor="3")
  run_main(flags)
  out = files["out"]
  shard, other = out / "pretrain-00001-of-00002.tfrecord", out / "pretrain-00000-of-00002.tfrecord"
  clean = {p.name: p.read_bytes() for p in out.glob("*.tfrecord")}
  instances = json.loads((out / "manifest.json").read_text())["counts"]["instances"]
  assert _read_as_training_does(out) == instances
  caplog.set_level(logging.INFO, logger="absl")
  for name, damaged in _cut(clean[shard.name]).items():
    shard.write_bytes(damaged)
    if name == "mid-record":  # what training says, and advises
      with pytest.raises(damaged_records.DamagedRecordsError) as e:
        _read_as_training_does(out)
      assert str(e.value).startswith(f"{shard}: truncated record at ")
      assert "rerun the create_pretraining_data command that wrote it" in str(e.value)
    caplog.clear()
    other_mtime = other.stat().st_mtime_ns
    run_main(flags + (["--overwrite"] if overwrite else []))
    assert {p.name: p.read_bytes() for p in out.glob("*.tfrecord")} == clean, name
    assert _read_as_training_does(out) == instances, name
    manifest = json.loads((out / "manifest.json").read_text())
    if overwrite:  # every shard written again
      assert manifest["run"]["reused_shards"] == 0, name
      assert other.stat().st_mtime_ns != other_mtime, name
      assert "writing every shard again" in caplog.text, name
    else:  # the whole shard reused, the damaged one rewritten and named
      assert manifest["run"]["reused_shards"] == 1, name
      assert other.stat().st_mtime_ns == other_mtime, name
      assert f"rewriting {shard}: " in caplog.text, name
      assert f"rewriting 1 that failed the check: {shard.name}" in caplog.text, name
    assert not [p for p in out.iterdir() if ".tmp" in p.name]


# ---------------------------------------------------------------------------
# Killed and resumed
# ---------------------------------------------------------------------------

@pytest.mark.slow
def test_sigkill_then_rerun_gives_the_bytes_of_an_uninterrupted_run(files, tmp_path):
  corpus = write_corpus(tmp_path / "big.txt", num_docs=4000, seed=1)
  args = [f"--input_file={corpus}", f"--vocab_file={files['vocab']}", "--max_seq_length=64",
          "--max_predictions_per_seq=10", "--dupe_factor=2", "--num_workers=1",
          "--num_output_shards=8", "--block_bytes=20000"]
  killed = tmp_path / "killed"
  first_shard = killed / "pretrain-00000-of-00008.tfrecord"
  last_shard = killed / "pretrain-00007-of-00008.tfrecord"
  proc = subprocess.Popen([sys.executable, "-m", "bert_tf.create_pretraining_data",
                           f"--output_dir={killed}"] + args, cwd=REPO,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  try:
    deadline = time.time() + 240
    # A shard is complete (reusable) once its stats are written beside it,
    # just after its rename: wait for those, or a kill in between (under
    # load) leaves nothing to reuse.
    first_stats = first_shard.with_name(first_shard.name + ".stats.json")
    while not first_stats.exists() and proc.poll() is None and time.time() < deadline:
      time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
  finally:
    proc.wait()
  assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
  assert first_shard.exists() and not last_shard.exists()
  assert not (killed / "manifest.json").exists()

  result = run_cli([f"--output_dir={killed}"] + args)
  assert result.returncode == 0, result.stderr[-3000:]
  manifest = json.loads((killed / "manifest.json").read_text())
  assert manifest["run"]["reused_shards"] >= 1
  assert "complete shards of an earlier run" in result.stderr

  # The uninterrupted run, in this process.
  clean = tmp_path / "clean"
  run_main([f"--output_dir={clean}"] + args)
  names = [f"pretrain-{k:05d}-of-00008.tfrecord" for k in range(8)]
  for name in names:
    assert (killed / name).read_bytes() == (clean / name).read_bytes(), name
  assert not [p for p in killed.iterdir() if ".tmp" in p.name]
  # The token cache the killed run left was reused and is gone now.
  assert not [p for p in killed.iterdir() if p.name.startswith(".tokens-")]
  clean_manifest = json.loads((clean / "manifest.json").read_text())
  assert manifest["counts"] == clean_manifest["counts"]


# ---------------------------------------------------------------------------
# ALBERT's SentencePiece tokenization (--spm_model_file)
# ---------------------------------------------------------------------------

SPM_MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures",
                         "albert_sentencepiece", "spm.model")


def _spm_records(out):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  records = []
  for path in sorted(out.glob("*.tfrecord")):
    records += [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(str(path))]
  return records


def _spm_run(files, out, *extra):
  run_main([f"--input_file={files['corpus']}", f"--output_dir={out}",
            f"--spm_model_file={SPM_MODEL}", "--max_seq_length=32",
            "--max_predictions_per_seq=5", "--dupe_factor=2", "--num_output_shards=2",
            "--do_whole_word_mask", "--sentence_task=sop", *extra])


def test_spm_model_file_tokenizes_as_albert_and_masks_whole_words(files, tmp_path):
  """--spm_model_file without --vocab_file: ids are the SentencePiece model's
  by ALBERT's rules, [CLS]/[SEP]/[MASK] are its control symbols, masked
  spans cover whole words (a continuation piece is masked only with the piece
  before it), and the manifest names the model; 1 and 2 workers write the
  same bytes."""
  from bert_tf.data.tokenizers import sentencepiece_vocab as spv  # pylint: disable=g-import-not-at-top
  model = spv.load_sentencepiece(SPM_MODEL)
  vocab = model.vocab
  _spm_run(files, tmp_path / "one", "--num_workers=1")
  _spm_run(files, tmp_path / "two", "--num_workers=2")
  one = sorted((tmp_path / "one").glob("*.tfrecord"))
  assert [p.read_bytes() for p in one] == [
      p.read_bytes() for p in sorted((tmp_path / "two").glob("*.tfrecord"))]
  manifest = json.loads(next((tmp_path / "one").glob("*manifest.json")).read_text())
  assert manifest["vocab"]["path"] == SPM_MODEL and manifest["vocab"]["size"] == vocab.size
  corpus_ids = set()
  with open(files["corpus"], encoding="utf-8") as f:
    for line in f:
      corpus_ids.update(model.tokenize(line, lower=True))
  records = _spm_records(tmp_path / "one")
  assert records
  whole = 0
  for example in records:
    feature = example.features.feature
    ids = list(feature["input_ids"].int64_list.value)
    n = sum(feature["input_mask"].int64_list.value)
    assert ids[0] == vocab.cls_id and ids[n - 1] == vocab.sep_id
    masked = {p for p, w in zip(feature["masked_lm_positions"].int64_list.value,
                                feature["masked_lm_weights"].float_list.value) if w}
    originals = list(ids)
    for p, t in zip(feature["masked_lm_positions"].int64_list.value,
                    feature["masked_lm_ids"].int64_list.value):
      originals[p] = t
    assert set(originals[1:n - 1]) - {vocab.sep_id} <= corpus_ids
    for p in masked:
      # A masked continuation piece has its word's previous piece masked (the
      # original skips [CLS]/[SEP] when it groups, so that piece may lie
      # before a [SEP]; the first piece starts a word whatever it is).
      q = p - 1
      while q > 0 and originals[q] in (vocab.cls_id, vocab.sep_id):
        q -= 1
      if vocab.is_subword[originals[p]] and q > 0:
        assert q in masked, (p, originals)
        whole += 1
  assert whole > 0


def test_spm_model_file_that_is_not_a_model_is_one_line(files, tmp_path, capsys):
  bad = tmp_path / "bad.model"
  bad.write_bytes(b"nope")
  assert_fails_cleanly(common_flags(files, vocab_file=None, spm_model_file=str(bad)),
                       ["is not a SentencePiece model"], capsys, files["out"])


def test_placeholder_vocab_file_beside_spm_model_file_is_named(files, tmp_path, caplog):
  """A flagfile's --vocab_file left beside --spm_model_file is not read (the
  SentencePiece model is the vocabulary, as in google-research/albert): the
  run says so in a warning naming both, and writes the records of the model
  alone."""
  caplog.set_level("WARNING")
  _spm_run(files, tmp_path / "with", "--vocab_file=YOUR_VOCAB/vocab.txt")
  _spm_run(files, tmp_path / "without")
  warned = [r.getMessage() for r in caplog.records if "is not read" in r.getMessage()]
  assert len(warned) == 1
  assert "--vocab_file=YOUR_VOCAB/vocab.txt" in warned[0] and SPM_MODEL in warned[0]
  assert ([p.read_bytes() for p in sorted((tmp_path / "with").glob("*.tfrecord"))]
          == [p.read_bytes() for p in sorted((tmp_path / "without").glob("*.tfrecord"))])
