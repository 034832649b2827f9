"""The bundled sample corpus is real prose in the original input format."""

from bert_tf.data.text import stdlib_corpus


def test_sample_corpus_is_large_enough_and_in_the_original_format(tmp_path, capsys):
  path = str(tmp_path / "corpus.txt")
  docs, lines, size = stdlib_corpus.write_corpus(path)
  # Importing the standard library's packages prints nothing into the
  # quickstart's stage output (some test packages print a banner).
  assert capsys.readouterr().out == ""
  text = open(path, encoding="utf-8").read()
  assert size == len(text.encode("utf-8")) >= 1 << 20  # enough for the demo model to learn
  documents = [d for d in text.rstrip("\n").split("\n\n") if d.strip()]
  assert len(documents) == docs >= 100
  sentences = [s for d in documents for s in d.split("\n")]
  assert len(sentences) == lines
  assert all(s.strip() == s and s for s in sentences), "one non-empty sentence a line"
  assert not any(s.startswith(">>>") for s in sentences), "code examples left out"
  words = sum(len(s.split()) for s in sentences)
  assert words / len(sentences) >= 5  # sentences, not fragments


def test_sample_corpus_is_the_same_in_every_process(tmp_path):
  # The quickstart's published figures hold only for the same corpus: two
  # fresh interpreters must write the same bytes (deduplicating docstrings
  # by id() once let a freed string's address hide a later docstring).
  import subprocess
  import sys
  paths = [tmp_path / f"corpus{i}.txt" for i in range(2)]
  for path in paths:
    subprocess.run([sys.executable, "-c", "import sys; from bert_tf.data.text import stdlib_corpus; "
                    "stdlib_corpus.write_corpus(sys.argv[1])", str(path)], check=True,
                   capture_output=True, timeout=300)
  assert paths[0].read_bytes() == paths[1].read_bytes()
