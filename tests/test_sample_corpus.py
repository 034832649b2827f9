"""Tests of bert_tf.sample_corpus's mixed corpora: --sample mixes a given
sample file (the bundled one) instead of this Python's docstrings."""

import hashlib
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KJV = os.path.join(REPO, "..", "shared", "corpora", "kjv.txt")
# docs/reproductions.md's sample (Python 3.11.7's docstrings) and the topics.txt made from it.
SAMPLE_SHA256 = "abbdaa6c2d33b0feabf1b71c4af6c5641a00c7d49270c9d27b067cf1674329e0"
TOPICS_SHA256 = "bdb64a96375a1b4df3a6018f96df5cab7cbf47b8c9fac27816b908e6e84b472c"


def _run(*args):
  return subprocess.run([sys.executable, "-m", "bert_tf.sample_corpus", *args], cwd=REPO,
                        capture_output=True, text=True, timeout=300)


def _docs(n, word):
  return "\n\n".join(f"{word} {i} opens.\n{word} {i} closes." for i in range(n)) + "\n"


def test_a_sample_file_is_mixed_document_for_document(tmp_path):
  sample, other = tmp_path / "sample.txt", tmp_path / "other.txt"
  sample.write_text(_docs(6, "python"))
  other.write_text(_docs(9, "psalm"))
  out = tmp_path / "topics.txt"
  done = _run(f"--output={out}", f"--sample={sample}", f"--mix_with={other}")
  assert done.returncode == 0, done.stderr
  assert f"6 sample documents ({sample}) mixed with 6 of {other}" in done.stdout
  documents = out.read_text().rstrip("\n").split("\n\n")
  assert sorted(d.split()[0] for d in documents) == ["psalm"] * 6 + ["python"] * 6
  assert {d for d in documents if d.startswith("python")} == set(
      _docs(6, "python").rstrip("\n").split("\n\n"))
  again = tmp_path / "again.txt"
  assert _run(f"--output={again}", f"--sample={sample}", f"--mix_with={other}").returncode == 0
  assert again.read_bytes() == out.read_bytes()  # seeded: the same bytes


def test_bad_sample_flags_fail_in_one_line(tmp_path):
  other = tmp_path / "other.txt"
  other.write_text(_docs(3, "psalm"))
  missing = _run(f"--output={tmp_path / 'a.txt'}", f"--sample={tmp_path / 'none.txt'}",
                 f"--mix_with={other}")
  assert missing.returncode != 0
  assert f"sample corpus file not found: {tmp_path / 'none.txt'}" in missing.stderr
  assert not (tmp_path / "a.txt").exists()
  alone = _run(f"--output={tmp_path / 'b.txt'}", "--sample=data/sample_corpus.txt")
  assert alone.returncode != 0 and "--sample is read with --mix_with only" in alone.stderr
  assert not (tmp_path / "b.txt").exists()


def test_the_reproductions_corpus_is_the_same_bytes_from_the_same_sample(tmp_path):
  if not os.path.exists(KJV):
    pytest.skip(f"{KJV} absent: the shared corpus comes with the development checkout")
  sample = tmp_path / "sample_corpus.txt"
  made = _run(f"--output={sample}")
  assert made.returncode == 0, made.stderr
  sample_sha = hashlib.sha256(sample.read_bytes()).hexdigest()
  if sample_sha != SAMPLE_SHA256:
    pytest.skip(f"this Python ({sys.version.split()[0]}) writes another sample (sha256 "
                f"{sample_sha[:12]}), so another corpus; docs/reproductions.md's is Python 3.11.7's")
  out = tmp_path / "topics.txt"
  done = _run(f"--output={out}", f"--sample={sample}", f"--mix_with={KJV}")
  assert done.returncode == 0, done.stderr
  assert hashlib.sha256(out.read_bytes()).hexdigest() == TOPICS_SHA256
