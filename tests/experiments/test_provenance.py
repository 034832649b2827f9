"""Tests of bert_tf.experiments.provenance: what results.md and results.csv
say about how they were made."""

import os
import platform

from bert_tf.experiments import provenance


def test_paths_are_shown_relative_where_they_can_be(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  (tmp_path / "data").mkdir()
  assert provenance.shown_path(str(tmp_path / "data" / "c.txt")) == os.path.join("data",
                                                                                 "c.txt")
  config = os.path.join(provenance.REPOSITORY, "configs", "bert_tiny.json")
  assert provenance.shown_path(config) == os.path.join("configs", "bert_tiny.json")
  assert provenance.shown_path("gs://bucket/corpus.txt") == "gs://bucket/corpus.txt"
  assert provenance.shown_path("/elsewhere/corpus.txt") == "/elsewhere/corpus.txt"
  line = provenance.command([f"--corpus={tmp_path / 'data'}", "--pretrain_seeds=3",
                             "--task=a b"])
  assert line == "python -m bert_tf.compare_objectives --corpus=data --pretrain_seeds=3 '--task=a b'"


def test_the_fields_name_the_code_the_versions_the_corpus_and_the_machine(tmp_path):
  corpus = tmp_path / "corpus.txt"
  corpus.write_text("one sentence.\n")
  info = provenance.fields(str(corpus), "ab" * 32, ["--corpus=x"])
  assert set(provenance.CSV_FIELDS) <= set(info)
  # A commit hash (this is a git checkout), or "unknown" without git.
  assert info["commit"] == "unknown" or len(info["commit"].split()[0]) == 40
  assert info["python"] == platform.python_version()
  assert info["tensorflow"] and info["keras"]
  assert info["corpus_bytes"] == 14 and info["corpus_sha256"] == "ab" * 32
  assert info["machine"].startswith(f"{os.cpu_count()} cores, ")
  lines = provenance.lines(info, provenance.stage_times({"pretrain": 12.4}, {"text": 1}),
                           [("bert", 0, 12.4)],
                           provenance.total_seconds({"pretrain": 12.4}, {"text": 1}))
  assert lines[0].startswith(f"commit {info['commit']}; Python {info['python']}, TensorFlow ")
  assert f"{14:,} bytes, sha256 {'ab' * 32}" in lines[1]
  assert lines[3] == ("wall time of this invocation by stage: pretrain 12 s, text: 1 done "
                      "before (read back)")
  assert lines[4] == ("wall time of every stage, those read back as they ran: 12 s (0 min); "
                      "1 read back with no time kept")
  assert lines[5].endswith("bert seed 0: 12 s")
  assert lines[6] == "command: `python -m bert_tf.compare_objectives --corpus=x`"


def test_stages_read_back_count_the_time_they_took_when_they_ran():
  """A table finished over two invocations says what every stage cost."""
  seconds, skipped = {"finetune": 60.0}, {"pretrain": 3, "finetune": 2}
  recorded = {"pretrain": (1200.0, 3), "finetune": (50.0, 1)}
  assert provenance.stage_times(seconds, skipped, recorded) == (
      "finetune 60 s, pretrain: 3 done before (read back; 1200 s when they ran), "
      "finetune: 2 done before (read back; 1 of them 50 s when they ran, 1 not timed)")
  assert provenance.total_seconds(seconds, skipped, recorded) == (1310.0, 1)


def test_without_git_the_commit_is_unknown(tmp_path):
  assert provenance.commit(str(tmp_path)) == "unknown"


def test_the_cpu_model_is_read_from_cpuinfo_or_platform(tmp_path):
  cpuinfo = tmp_path / "cpuinfo"
  cpuinfo.write_text("processor\t: 0\nmodel name\t: Test CPU 9000\n", encoding="utf-8")
  assert provenance.cpu_model(str(cpuinfo)) == "Test CPU 9000"
  assert provenance.cpu_model(str(tmp_path / "absent")) == (
      platform.processor() or platform.machine() or "unknown")


def test_the_command_shows_existing_local_paths_relative_and_others_as_given(tmp_path,
                                                                           monkeypatch):
  monkeypatch.chdir(tmp_path)
  (tmp_path / "corpus.txt").write_text("x", encoding="utf-8")
  line = provenance.command([f"--corpus={tmp_path / 'corpus.txt'}", "--output_dir=gs://b/runs",
                             "--learning_rate=1e-3"])
  assert line == ("python -m bert_tf.compare_objectives --corpus=corpus.txt "
                  "--output_dir=gs://b/runs --learning_rate=1e-3")
