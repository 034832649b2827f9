"""Tests of bert_tf.data.pretraining.writer: raw text -> records, end to end.

The corpus is generated here: 40 documents whose words are `doc<d>` (with
'##s' / '##ing' pieces), so the document of every token in a record can be
read back, and next-sentence labels checked against where A and B came from.
"""

import collections
import hashlib
import json
import logging
import os
import random
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.pretraining import corpus_scan
from bert_tf.data.records import manifest as manifest_lib
from bert_tf.data.records import schema
from bert_tf.data.pretraining import writer

from helpers import sourced_corpus
from helpers.doc_corpus import (CLS, DOC_OF_ID, MASK, NUM_DOCS, SEP, SPECIALS, TOKEN_ID, VOCAB,
                                read_records, write_corpus, write_vocab)


OPTIONS = writer.DataOptions(max_seq_length=32, max_predictions_per_seq=5,
                                       dupe_factor=2, random_seed=7, block_bytes=4000)


def decode(record):
  feature = tf.train.Example.FromString(record).features.feature
  out = {name: list(feature[name].int64_list.value) for name in schema.INT_FEATURES}
  out["masked_lm_weights"] = list(feature["masked_lm_weights"].float_list.value)
  return out


def file_bytes(paths):
  return [open(p, "rb").read() for p in paths]


def run(inputs, outputs, vocab, options=OPTIONS, num_workers=1):
  return writer.create_pretraining_data(inputs, outputs, vocab, options,
                                                  num_workers=num_workers)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
  """The corpus, the vocab, and a reference run into 3 shards."""
  root = tmp_path_factory.mktemp("data")
  vocab = write_vocab(root / "vocab.txt")
  corpus = root / "corpus.txt"
  docs = write_corpus(corpus)
  outputs = writer.Outputs(directory=str(root / "ref"), num_shards=3)
  manifest = run(str(corpus), outputs, vocab)
  return {"root": root, "vocab": vocab, "corpus": str(corpus), "docs": docs,
          "paths": outputs.paths(), "manifest": manifest,
          "records": read_records(outputs.paths())}


# ---------------------------------------------------------------------------
# Determinism and output modes
# ---------------------------------------------------------------------------

def test_same_bytes_with_one_or_two_workers(data):
  assert len(data["records"]) > 300
  outputs = writer.Outputs(directory=str(data["root"] / "two_workers"), num_shards=3)
  manifest = run(data["corpus"], outputs, data["vocab"], num_workers=2)
  assert file_bytes(outputs.paths()) == file_bytes(data["paths"])
  assert all(len(b) > 0 for b in file_bytes(data["paths"]))
  assert manifest["run"]["num_workers"] == 2
  for key in ("counts", "shares", "length_histogram", "flags", "vocab"):
    assert manifest[key] == data["manifest"][key], key


def test_different_seed_gives_different_records(data):
  outputs = writer.Outputs(directory=str(data["root"] / "seed8"), num_shards=3)
  options = writer.DataOptions(**dict(vars(OPTIONS), random_seed=8))
  run(data["corpus"], outputs, data["vocab"], options)
  assert read_records(outputs.paths()) != data["records"]


def test_output_files_are_dealt_round_robin(data):
  files = (str(data["root"] / "files" / "a.tfrecord"), str(data["root"] / "files" / "b.tfrecord"))
  manifest = run(data["corpus"], writer.Outputs(files=files), data["vocab"])
  # The same stream of instances as the shards, dealt to the two files.
  stream = data["records"]
  assert read_records([files[0]]) == stream[0::2]
  assert read_records([files[1]]) == stream[1::2]
  assert manifest["files"] == list(files)
  assert manifest["counts"] == data["manifest"]["counts"]
  assert sorted(p.name for p in (data["root"] / "files").iterdir()) == [
      "a.tfrecord", "a.tfrecord.manifest.json", "b.tfrecord"]
  assert manifest_lib.Manifest.find(files[1]).to_dict() == manifest


def test_gzip_output(data):
  outputs = writer.Outputs(directory=str(data["root"] / "gz"), num_shards=3, gzip=True)
  manifest = run(data["corpus"], outputs, data["vocab"])
  paths = outputs.paths()
  assert all(p.endswith(".tfrecord.gz") for p in paths)
  assert open(paths[0], "rb").read(2) == b"\x1f\x8b"
  assert read_records(paths, compression="GZIP") == data["records"]
  assert manifest["compression"] == "GZIP" and manifest["flags"]["gzip"] is True
  assert manifest_lib.Manifest.find(f"{data['root']}/gz/*.gz").to_dict() == manifest


# ---------------------------------------------------------------------------
# Manifest and records
# ---------------------------------------------------------------------------

def test_manifest_says_what_is_in_the_files(data):
  manifest = data["manifest"]
  assert manifest == manifest_lib.Manifest.read(f"{data['root']}/ref/manifest.json").to_dict()
  assert manifest["schema_version"] == schema.SCHEMA_VERSION
  flags = manifest["flags"]
  for name in ("max_seq_length", "max_predictions_per_seq", "masked_lm_prob", "short_seq_prob",
               "dupe_factor", "random_seed", "do_lower_case", "do_whole_word_mask"):
    assert flags[name] == getattr(OPTIONS, name), name
  vocab_bytes = open(data["vocab"], "rb").read()
  assert manifest["vocab"]["sha256"] == hashlib.sha256(vocab_bytes).hexdigest()
  assert manifest["vocab"]["size"] == len(VOCAB)
  assert manifest["files"] == data["paths"]

  decoded = [decode(r) for r in data["records"]]
  counts = manifest["counts"]
  assert counts["documents"] == NUM_DOCS
  assert counts["sentences"] == sum(len(d) for d in data["docs"])
  assert counts["undecodable_bytes"] == 0
  assert counts["instances"] == len(decoded)
  lengths = [sum(r["input_mask"]) for r in decoded]
  assert counts["tokens"] == sum(lengths)
  assert counts["predictions"] == sum(sum(r["masked_lm_weights"]) for r in decoded)

  outcome = collections.Counter()
  for r in decoded:
    for pos, label, w in zip(r["masked_lm_positions"], r["masked_lm_ids"], r["masked_lm_weights"]):
      if w:
        new = r["input_ids"][pos]
        outcome["masked" if new == MASK else "kept" if new == label else "random"] += 1
  shares = manifest["shares"]
  for name in ("masked", "kept", "random"):
    assert shares[name] == pytest.approx(outcome[name] / counts["predictions"]), name
  assert 0.7 < shares["masked"] < 0.9
  assert shares["nsp_random"] == pytest.approx(
      sum(r["next_sentence_labels"][0] for r in decoded) / len(decoded))
  assert shares["mean_tokens"] == pytest.approx(np.mean(lengths))

  hist = manifest["length_histogram"]
  bucket = hist["bucket_tokens"]
  assert sum(hist["counts"]) == counts["instances"]
  expected = collections.Counter(n // bucket for n in lengths)
  assert hist["counts"] == [expected[i] for i in range(len(hist["counts"]))]


def original_ids(r):
  """input_ids with the masked positions given their original ids back."""
  ids = list(r["input_ids"])
  for pos, label, w in zip(r["masked_lm_positions"], r["masked_lm_ids"], r["masked_lm_weights"]):
    if w:
      ids[pos] = label
  return ids


def test_records_are_well_formed_and_nsp_labels_tell_the_truth(data):
  labels = collections.Counter()
  for record in data["records"]:
    r = decode(record)
    n = sum(r["input_mask"])
    assert r["input_mask"] == [1] * n + [0] * (32 - n)
    ids = original_ids(r)
    seps = [i for i, t in enumerate(ids[:n]) if t == SEP]
    assert ids[0] == CLS and len(seps) == 2 and seps[1] == n - 1 and seps[0] >= 2
    assert CLS not in ids[1:n] and not any(ids[n:])
    assert r["segment_ids"] == [0] * (seps[0] + 1) + [1] * (n - seps[0] - 1) + [0] * (32 - n)
    p = int(sum(r["masked_lm_weights"]))
    assert 1 <= p <= 5
    positions = r["masked_lm_positions"][:p]
    assert positions == sorted(set(positions)) and not any(r["masked_lm_positions"][p:])
    assert all(ids[pos] not in (CLS, SEP) for pos in positions)
    docs_a = {DOC_OF_ID[t] for t in ids[1:seps[0]] if t in DOC_OF_ID}
    docs_b = {DOC_OF_ID[t] for t in ids[seps[0] + 1:n - 1] if t in DOC_OF_ID}
    assert len(docs_a) <= 1 and len(docs_b) <= 1
    label = r["next_sentence_labels"][0]
    labels[label] += 1
    if docs_a and docs_b:
      if label == schema.IS_NEXT:
        assert docs_a == docs_b
      else:
        assert label == schema.IS_RANDOM
        assert docs_a != docs_b
  assert labels[schema.IS_NEXT] > 50 and labels[schema.IS_RANDOM] > 50


def test_whole_word_masking_end_to_end(data):
  options = writer.DataOptions(**dict(vars(OPTIONS), do_whole_word_mask=True))
  outputs = writer.Outputs(directory=str(data["root"] / "wwm"), num_shards=1)
  manifest = run(data["corpus"], outputs, data["vocab"], options)
  assert manifest["flags"]["do_whole_word_mask"] is True
  subword = {i for i, t in enumerate(VOCAB) if t.startswith("##")}
  split = 0
  for record in read_records(outputs.paths()):
    r = decode(record)
    ids = original_ids(r)
    n = sum(r["input_mask"])
    chosen = {pos for pos, w in zip(r["masked_lm_positions"], r["masked_lm_weights"]) if w}
    # Words: a piece and the '##' pieces after it (the original's grouping,
    # which skips [CLS]/[SEP]; a segment may start with a '##' piece after
    # truncation, which then belongs to the word before the [SEP]).
    words = []
    for i in range(1, n):
      if ids[i] in (CLS, SEP):
        continue
      if words and ids[i] in subword:
        words[-1].append(i)
      else:
        words.append([i])
    split += sum(0 < len(set(w) & chosen) < len(w) for w in words)
  assert split == 0


# ---------------------------------------------------------------------------
# Random B segments: another document, from the whole input
# ---------------------------------------------------------------------------

NUM_FILES = 12
SENTENCES = 40
# File k holds one document, sentence j of which is words "wKsJ" only: every
# token tells its file and sentence.
FILE_WORDS = [f"w{k}s{j}" for k in range(NUM_FILES) for j in range(SENTENCES)]
FILES_VOCAB = SPECIALS + ["."] + FILE_WORDS
PLACE_OF_ID = {i: (int(t[1:t.index("s")]), int(t[t.index("s") + 1:]))
               for i, t in enumerate(FILES_VOCAB) if t in FILE_WORDS}


def write_one_document_files(root, num_files=NUM_FILES):
  """Files of one document each, ending with a blank line, as the issue's."""
  root.mkdir()
  rng = random.Random(5)
  for k in range(num_files):
    lines = [" ".join([f"w{k}s{j}"] * rng.randint(3, 9)) + " ." for j in range(SENTENCES)]
    (root / f"book{k:02d}.txt").write_text("\n".join(lines) + "\n\n")
  vocab = root / "vocab.txt"
  vocab.write_text("".join(t + "\n" for t in FILES_VOCAB))
  return str(root / "book*.txt"), str(vocab)


def places(ids):
  """(file, sentence) of each token of ids that has one."""
  return [PLACE_OF_ID[t] for t in ids if t in PLACE_OF_ID]


# One block (the original's rule as it is), and a block per book: blocks of
# a single chunk, which draw from the negative pool.
@pytest.mark.parametrize("block_bytes", [writer.DataOptions.block_bytes, 1])
def test_random_b_comes_from_another_document_of_the_whole_input(tmp_path, block_bytes):
  inputs, vocab = write_one_document_files(tmp_path / "books")
  options = writer.DataOptions(max_seq_length=48, max_predictions_per_seq=6, dupe_factor=4,
                               random_seed=7, block_bytes=block_bytes)
  outputs = writer.Outputs(directory=str(tmp_path / "out"), num_shards=2)
  manifest = run(inputs, outputs, vocab, options, num_workers=2)
  assert manifest["counts"]["documents"] == NUM_FILES
  files_of_b = collections.Counter()
  n_random = n_next = 0
  for record in read_records(outputs.paths()):
    r = decode(record)
    ids = original_ids(r)
    n = sum(r["input_mask"])
    first_sep = ids.index(SEP)
    a, b = places(ids[1:first_sep]), places(ids[first_sep + 1:n - 1])
    assert a and b
    file_a, file_b = {f for f, _ in a}, {f for f, _ in b}
    assert len(file_a) == len(file_b) == 1
    if r["next_sentence_labels"] == [schema.IS_RANDOM]:
      n_random += 1
      assert file_a != file_b, "a random B from A's own document"
      files_of_b[file_a.pop(), file_b.pop()] += 1
    else:
      n_next += 1
      assert file_a == file_b
      # B follows A: its sentences come after A's, in order.
      assert a == sorted(a) and b == sorted(b) and b[0][1] > a[-1][1]
  assert n_random > 100 and n_next > 100
  assert manifest["shares"]["nsp_random"] == pytest.approx(n_random / (n_random + n_next))
  assert manifest["counts"]["nsp_random_from_same_document"] == 0
  # From the whole input: every file's random Bs come from many other files.
  for k in range(NUM_FILES):
    assert len({fb for (fa, fb) in files_of_b if fa == k}) >= 6, k
  # The same bytes with one worker, and with another number of shards the
  # same stream of instances.
  one = writer.Outputs(directory=str(tmp_path / "one"), num_shards=2)
  run(inputs, one, vocab, options, num_workers=1)
  assert file_bytes(one.paths()) == file_bytes(outputs.paths())


def test_whole_input_of_one_document_warns_and_counts(tmp_path, caplog):
  inputs, vocab = write_one_document_files(tmp_path / "books", num_files=1)
  options = writer.DataOptions(max_seq_length=48, max_predictions_per_seq=6, dupe_factor=3)
  caplog.set_level(logging.WARNING, logger="absl")
  manifest = run(inputs, writer.Outputs(directory=str(tmp_path / "out")), vocab, options)
  counts = manifest["counts"]
  random_count = round(manifest["shares"]["nsp_random"] * counts["instances"])
  assert counts["documents"] == 1 and random_count > 5
  assert counts["nsp_random_from_same_document"] == random_count
  warnings = [r for r in caplog.records if "single document" in r.getMessage()]
  assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
  assert f"{random_count} random next-sentence B" in warnings[0].getMessage()
  # Two documents: never.
  inputs, vocab = write_one_document_files(tmp_path / "two", num_files=2)
  manifest = run(inputs, writer.Outputs(directory=str(tmp_path / "out2")), vocab, options)
  assert manifest["counts"]["nsp_random_from_same_document"] == 0


def test_at_many_blocks_every_document_serves_as_b_and_files_mix_the_corpus(tmp_path):
  # 3,000 short documents in index order, ~55 blocks of 8 KiB: far more
  # documents than a block holds (and than the negative pool's 2,048).
  num_docs = 3000
  corpus, vocab = str(tmp_path / "corpus.txt"), str(tmp_path / "vocab.txt")
  sourced_corpus.write_corpus(corpus, num_docs)
  sourced_corpus.write_vocab(vocab, num_docs)
  options = writer.DataOptions(max_seq_length=64, max_predictions_per_seq=8, dupe_factor=2,
                               block_bytes=8192)
  outputs = writer.Outputs(files=tuple(str(tmp_path / f"out{k}.tfrecord") for k in range(4)))
  manifest = run(corpus, outputs, vocab, options, num_workers=2)
  got = sourced_corpus.mixing_figures(outputs.paths(), num_docs, first=200)
  # The original's rule: each random B's document uniform over the input.
  uniform = np.bincount(np.random.default_rng(0).integers(0, num_docs, got["random_b"]),
                        minlength=num_docs)
  assert got["random_b"] > 2 * num_docs
  assert got["distinct_b_documents"] >= 0.95 * np.count_nonzero(uniform)
  assert got["most_per_document"] <= 2 * uniform.max()
  # Any stretch of any file is a sample of the whole corpus.
  assert min(got["regions_of_first"]) >= 18, got["regions_of_first"]
  counts = manifest["counts"]
  assert counts["nsp_random_documents"] == got["distinct_b_documents"]
  assert counts["nsp_random_most_per_document"] == got["most_per_document"]
  # A document's copies (one per pass) lie a pass apart, not side by side:
  # its two A positions in the stream of file 0.
  pairs = sourced_corpus.read_pairs(outputs.paths()[0], num_docs)
  where = collections.defaultdict(list)
  for i, (a, _, _) in enumerate(pairs):
    where[a].append(i)
  gaps = [max(v) - min(v) for v in where.values() if len(v) >= 2]
  assert np.median(gaps) > len(pairs) / 4


def test_stream_is_pass_major_and_each_later_pass_visits_blocks_in_its_own_order():
  units = writer.stream_units(50, 4, random_seed=3)
  assert units[:50] == [(0, b) for b in range(50)]
  orders = [[b for p, b in units if p == q] for q in range(4)]
  assert all(sorted(order) == list(range(50)) for order in orders)
  assert len({tuple(order) for order in orders}) == 4
  assert writer.stream_units(50, 4, random_seed=3) == units


# ---------------------------------------------------------------------------
# Resuming after a kill
# ---------------------------------------------------------------------------

def test_resume_reuses_complete_shards_and_gives_the_same_bytes(data, caplog):
  out = data["root"] / "resume"
  shutil.copytree(data["root"] / "ref", out)
  outputs = writer.Outputs(directory=str(out), num_shards=3)
  paths = outputs.paths()
  expected = file_bytes(data["paths"])

  # Killed after shard 0 was complete: shard 1 gone, shard 2 half-written.
  for k in (1, 2):
    (out / f"pretrain-0000{k}-of-00003.tfrecord").unlink()
  (out / "pretrain-00001-of-00003.tfrecord.stats.json").unlink()
  (out / "pretrain-00002-of-00003.tfrecord.tmp").write_bytes(expected[2][:100])
  caplog.set_level(logging.INFO)
  caplog.set_level(logging.INFO, logger="absl")  # other tests may quiet absl
  manifest = run(data["corpus"], outputs, data["vocab"])
  assert file_bytes(paths) == expected
  assert manifest["run"]["reused_shards"] == 1
  assert "reusing 1 complete shards" in caplog.text
  assert manifest["counts"] == data["manifest"]["counts"]
  assert not [p for p in out.iterdir() if ".tmp" in p.name]

  # Nothing missing: everything reused.
  manifest = run(data["corpus"], outputs, data["vocab"])
  assert manifest["run"]["reused_shards"] == 3
  assert file_bytes(paths) == expected
  assert manifest["counts"] == data["manifest"]["counts"]
  assert manifest["length_histogram"] == data["manifest"]["length_histogram"]


def test_shards_of_a_run_with_other_options_are_not_reused(data):
  out = data["root"] / "stale"
  outputs = writer.Outputs(directory=str(out), num_shards=3)
  run(data["corpus"], outputs, data["vocab"],
      writer.DataOptions(**dict(vars(OPTIONS), random_seed=99)))
  manifest = run(data["corpus"], outputs, data["vocab"])
  assert manifest["run"]["reused_shards"] == 0
  assert file_bytes(outputs.paths()) == file_bytes(data["paths"])


def test_kill_between_finishing_a_shard_and_renaming_it(data, monkeypatch):
  # Shards of an earlier run with other options are in place; this run dies
  # as it renames its first shard into place. The next run must not take
  # the stale shard for its own.
  out = data["root"] / "kill_at_rename"
  outputs = writer.Outputs(directory=str(out), num_shards=3)
  run(data["corpus"], outputs, data["vocab"],
      writer.DataOptions(**dict(vars(OPTIONS), random_seed=99)))
  real_rename = tf.io.gfile.rename

  def rename(src, dst, overwrite=False):
    if ".tfrecord.tmp-" in src:
      raise RuntimeError("killed")
    return real_rename(src, dst, overwrite=overwrite)

  monkeypatch.setattr(tf.io.gfile, "rename", rename)
  with pytest.raises(RuntimeError, match="killed"):
    run(data["corpus"], outputs, data["vocab"])
  monkeypatch.setattr(tf.io.gfile, "rename", real_rename)
  manifest = run(data["corpus"], outputs, data["vocab"])
  assert file_bytes(outputs.paths()) == file_bytes(data["paths"])
  assert manifest["counts"] == data["manifest"]["counts"]


# ---------------------------------------------------------------------------
# Awkward input
# ---------------------------------------------------------------------------

def test_undecodable_bytes_are_replaced_and_counted(data, tmp_path):
  text = open(data["corpus"], "rb").read()
  lines = text.split(b"\n")
  # 3 + 1 + 2 bytes that are not UTF-8 (a lone continuation byte, an
  # impossible byte, a truncated 3-byte sequence).
  lines[3] = lines[3] + b" \x80\xbf\x80"
  lines[10] = b"\xff" + lines[10]
  lines[20] = lines[20].replace(b" ", b" \xe2\x82 ", 1)
  corpus = tmp_path / "bad.txt"
  corpus.write_bytes(b"\n".join(lines))
  outputs = writer.Outputs(directory=str(tmp_path / "out"), num_shards=1)
  manifest = run(str(corpus), outputs, data["vocab"])
  assert manifest["counts"]["undecodable_bytes"] == 6
  assert manifest["counts"]["documents"] == NUM_DOCS
  assert manifest["counts"]["sentences"] == data["manifest"]["counts"]["sentences"]
  assert len(read_records(outputs.paths())) == manifest["counts"]["instances"] > 300


def test_strict_decoding_stops_at_the_first_bad_byte_like_the_original(data, tmp_path):
  # The original (Python 3) raises UnicodeDecodeError on such input.
  text = open(data["corpus"], "rb").read()
  offset = text.index(b"\n", len(text) // 2) + 1
  corpus = tmp_path / "bad.txt"
  corpus.write_bytes(text[:offset] + b"caf\xe9 " + text[offset:])
  outputs = writer.Outputs(files=(str(tmp_path / "out.tfrecord"),))
  strict = writer.DataOptions(**dict(vars(OPTIONS), decode_errors="strict"))
  with pytest.raises(ValueError, match=rf"bad\.txt: byte {offset + 3} is not UTF-8"):
    run(str(corpus), outputs, data["vocab"], strict)
  assert not (tmp_path / "out.tfrecord").exists()
  assert run(data["corpus"], outputs, data["vocab"], strict)["counts"]["instances"] > 300


def test_carriage_returns_are_dropped_like_the_original_readline(tmp_path):
  # TensorFlow's GFile.readline, which the original reads with, removes
  # every "\r" (checked: "hello\rworld\r\n" reads as "helloworld\n").
  path = tmp_path / "cr.txt"
  path.write_bytes(b"ab\rcd ef\r\n\r\ngh\rij\n")
  chunk = corpus_scan.Chunk(0, str(path), 0, path.stat().st_size, 2, 0)
  assert corpus_scan.read_chunk_documents(chunk) == ([["abcd ef"], ["ghij"]], 0)


def test_lines_split_only_at_newlines(data, tmp_path):
  # The original reads lines with readline(): form feeds, vertical tabs and
  # Unicode line separators inside a line do not start a new sentence.
  corpus = tmp_path / "c.txt"
  corpus.write_text("doc1 doc1\x0cdoc1 doc1 .\ndoc1 doc1\x0bdoc1\u2028doc1 .\r\n"
                    "doc1 doc1 .\n\ndoc2 doc2 .\ndoc2\x1cdoc2 .\n", encoding="utf-8")
  manifest = run(str(corpus), writer.Outputs(directory=str(tmp_path / "o")),
                 data["vocab"])
  assert manifest["counts"]["documents"] == 2
  assert manifest["counts"]["sentences"] == 5


def test_one_sentence_corpus_pairs_it_with_itself(data, tmp_path):
  corpus = tmp_path / "one.txt"
  corpus.write_text("doc3 doc3s doc3ing doc3 .\n")
  outputs = writer.Outputs(directory=str(tmp_path / "out"))
  manifest = run(str(corpus), outputs, data["vocab"])
  records = [decode(r) for r in read_records(outputs.paths())]
  assert manifest["counts"]["documents"] == 1 and len(records) == OPTIONS.dupe_factor
  for r in records:
    assert r["next_sentence_labels"] == [schema.IS_RANDOM]
    ids = original_ids(r)
    sentence = [TOKEN_ID[t] for t in ("doc3", "doc3", "##s", "doc3", "##ing", "doc3", ".")]
    assert ids[:17] == [CLS] + sentence + [SEP] + sentence + [SEP]


def test_line_longer_than_max_seq_length(data, tmp_path):
  corpus = tmp_path / "long.txt"
  corpus.write_text("doc5 " * 300 + ".\ndoc5 doc5 .\n\n" + "doc6 doc6s .\n" * 5)
  outputs = writer.Outputs(directory=str(tmp_path / "out"))
  manifest = run(str(corpus), outputs, data["vocab"])
  records = [decode(r) for r in read_records(outputs.paths())]
  assert len(records) == manifest["counts"]["instances"] > 0
  lengths = [sum(r["input_mask"]) for r in records]
  assert max(lengths) == OPTIONS.max_seq_length  # truncated to fit, not dropped
  assert manifest["length_histogram"]["counts"][-1] > 0


def test_smallest_max_seq_length(data, tmp_path):
  options = writer.DataOptions(**dict(vars(OPTIONS), max_seq_length=5,
                                                max_predictions_per_seq=1))
  outputs = writer.Outputs(directory=str(tmp_path / "out"))
  manifest = run(data["corpus"], outputs, data["vocab"], options)
  records = [decode(r) for r in read_records(outputs.paths())]
  assert len(records) == manifest["counts"]["instances"] > 100
  for r in records:
    ids = original_ids(r)
    assert len(ids) == 5 and ids[0] == CLS and ids[2] == SEP and ids[4] == SEP
    assert r["masked_lm_weights"] == [1.0] and r["masked_lm_positions"][0] in (1, 3)


def test_document_of_100k_lines(data, tmp_path):
  corpus = tmp_path / "huge.txt"
  corpus.write_text("".join(f"doc{i % NUM_DOCS} doc{i % 7}s .\n" for i in range(100_000)))
  options = writer.DataOptions(max_seq_length=128, max_predictions_per_seq=20,
                                         dupe_factor=1, short_seq_prob=0.0)
  outputs = writer.Outputs(directory=str(tmp_path / "out"))
  manifest = run(str(corpus), outputs, data["vocab"], options)
  counts = manifest["counts"]
  assert counts["documents"] == 1 and counts["sentences"] == 100_000
  # Pairs of a document this long are close to the 125-token target.
  assert manifest["shares"]["mean_tokens"] > 100
  assert counts["instances"] > 2000
  assert sum(1 for _ in tf.data.TFRecordDataset(outputs.paths())) == counts["instances"]


@pytest.mark.parametrize("change, flag", [
    ({"max_seq_length": 4}, "--max_seq_length=4"),
    ({"max_predictions_per_seq": 0}, "--max_predictions_per_seq=0"),
    ({"masked_lm_prob": 0.0}, "--masked_lm_prob=0.0"),
    ({"masked_lm_prob": 1.5}, "--masked_lm_prob=1.5"),
    ({"short_seq_prob": -0.1}, "--short_seq_prob=-0.1"),
    ({"dupe_factor": 0}, "--dupe_factor=0"),
    ({"block_bytes": 0}, "--block_bytes=0"),
    ({"decode_errors": "replace"}, "--decode_errors=replace"),
])
def test_impossible_options_name_the_flag(data, tmp_path, change, flag):
  options = writer.DataOptions(**dict(vars(OPTIONS), **change))
  with pytest.raises(ValueError, match=flag.replace(".", r"\.")):
    run(data["corpus"], writer.Outputs(directory=str(tmp_path / "out")),
        data["vocab"], options)
  assert not (tmp_path / "out").exists()


def test_input_problems_name_the_file(data, tmp_path):
  empty = tmp_path / "empty.txt"
  empty.write_text("")
  blank = tmp_path / "blank.txt"
  blank.write_text("\n  \n\t\n\n")
  outputs = writer.Outputs(directory=str(tmp_path / "out"))
  with pytest.raises(FileNotFoundError, match="nothing-here"):
    run(f"{data['corpus']},{tmp_path}/nothing-here*.txt", outputs, data["vocab"])
  with pytest.raises(ValueError, match=r"empty\.txt.*empty"):
    run(f"{data['corpus']},{empty}", outputs, data["vocab"])
  with pytest.raises(ValueError, match=r"blank\.txt.*blank lines"):
    run(str(blank), outputs, data["vocab"])
  assert not [p for p in (tmp_path / "out").glob("*") if p.is_file()]
  # Workers start before the input is read: the error is the same with them.
  with pytest.raises(ValueError, match=r"blank\.txt.*blank lines"):
    run(str(blank), outputs, data["vocab"], num_workers=2)


def test_more_workers_than_passes_finishes_and_exits(data, tmp_path):
  # Each worker takes its copy of the negative pool at its first pass; with
  # one block and one pass, two of the three copies are never taken, and
  # the tool must still exit (not wait to hand them over).
  corpus = tmp_path / "one_block.txt"  # a pool larger than a pipe's buffer (64 KB)
  corpus.write_text("".join(f"the cat {i} sat on the mat .\nand the dog ran {i} .\n\n"
                            for i in range(3000)))
  out = tmp_path / "out.tfrecord"
  proc = subprocess.run(
      [sys.executable, "-m", "bert_tf.create_pretraining_data", f"--input_file={corpus}",
       f"--output_file={out}", f"--vocab_file={data['vocab']}", "--dupe_factor=1",
       "--num_workers=3"], capture_output=True, text=True, timeout=120,
      cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))))
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert out.exists() and out.stat().st_size > 0
