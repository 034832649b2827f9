"""The README's main command runs end to end (with small settings)."""

import os
import re
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_quickstart_runs_every_stage(tmp_path):
  out = tmp_path / "run"
  proc = subprocess.run(
      [sys.executable, "-m", "bert_tf.quickstart", f"--output_dir={out}",
       f"--corpus={tmp_path / 'corpus.txt'}", "--vocab_size=3000", "--train_steps=40",
       "--dupe_factor=1", "--batch_size=16"],
      capture_output=True, text=True, timeout=900)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  text = proc.stdout
  for n in range(1, 7):
    assert f"=== stage {n}:" in text
  assert "generated" in text and "standard library" in text
  assert "held-out masked-LM accuracy" in text
  assert os.path.exists(out / "saved_model" / "saved_model.pb")
  assert os.path.exists(out / "model" / "eval_results.txt")
  # Stage 6 prints the top fills of each demo sentence and of three held-out
  # sentences, then the held-out fill-mask figure against its baseline.
  assert text.count("      -> ") == 4 + 3
  assert "(masked: " in text
  assert re.search(r"the word is the top fill in \d+% and in the top 5 in \d+% of \d+ \(always "
                   r"answering the 5 most frequent words: \d+%\)", text), text[-2000:]
  assert "all stages done" in text
  # The ten-minute recipe: no dropout in the written config (the template has 0.1).
  import json
  written = json.load(open(out / "bert_config.json"))
  assert written["hidden_dropout_prob"] == written["attention_probs_dropout_prob"] == 0.0
  assert "dropout 0 ->" in text


@pytest.mark.parametrize("flag", ["--dropout=1.5", "--adam_beta2=1.0", "--learning_rate=0"])
def test_quickstart_rejects_a_bad_recipe_flag_before_writing(tmp_path, flag):
  out = tmp_path / "run"
  proc = subprocess.run([sys.executable, "-m", "bert_tf.quickstart", f"--output_dir={out}", flag],
                        capture_output=True, text=True, timeout=300)
  assert proc.returncode != 0
  lines = proc.stderr.strip().splitlines()
  assert lines[-1].startswith("bert_tf.quickstart: error: " + flag.split("=")[0]), proc.stderr
  assert not out.exists()


def test_masked_word_cases_mask_one_content_word_of_a_whole_token():
  from bert_tf.cli import quickstart_stages as quickstart
  vocab = {"return", "the", "list", "items", "of", "iterable", "new"}
  sentences = ["Return the list of items .", "too short", "of the of the of the",
               "Return a new list of the items."]
  cases = quickstart.masked_word_cases(sentences, vocab, num=10, seed=3)
  # "too short" has under 6 words; "of the ..." has only stop words;
  # "items." is not alphabetic, "a" a stop word.
  assert len(cases) == 2
  for text, word in cases:
    assert text.count("[MASK]") == 1 and word in {"return", "list", "items", "new"}
    assert text.replace("[MASK]", word).lower() in {s.lower() for s in sentences}
  assert cases == quickstart.masked_word_cases(sentences, vocab, num=10, seed=3)  # seeded


def test_score_fills_against_the_frequency_baseline():
  from bert_tf.cli import quickstart_stages as quickstart
  vocab = {"list", "file", "name", "value", "string", "object", "socket"}
  train = ["list list list file file name value string"] * 3
  cases = [("a [MASK] x", "list"), ("b [MASK] y", "socket"), ("c [MASK] z", "object"),
           ("d [MASK] w", "file")]
  fills = [["list", "the"], ["a", "b", "c", "d", "socket"], ["the"], ["x", "file"]]
  scores = quickstart.score_fills(cases, fills, train, vocab)
  assert scores == {"cases": 4, "top1": 0.25, "top5": 0.75, "frequency_baseline_top5": 0.5}


def test_quickstart_defaults_are_the_ten_minute_recipe():
  # What the README's main command trains with: no dropout, lr 2e-3 with
  # beta2 0.98, XLA, 6,000 steps; the flags set the original's back.
  from absl import flags
  from bert_tf import cli
  from bert_tf import quickstart
  from bert_tf.cli import quickstart_stages
  records = {"train": "t/*.tfrecord", "heldout": "h/*.tfrecord"}

  def config(*argv):
    flag_values = flags.FlagValues()
    quickstart.define_flags(flag_values)
    flag_values(["quickstart", *argv])
    options = cli.options_from_flags(quickstart_stages.QuickstartOptions, flag_values)
    return options, quickstart_stages.quickstart_train_config(options, records, 10, "m")

  options, train = config()
  assert options.dropout == 0.0
  assert (train.learning_rate, train.adam_beta2, train.jit_compile) == (2e-3, 0.98, True)
  assert (train.num_train_steps, train.num_warmup_steps) == (6000, 600)
  options, train = config("--dropout=0.1", "--learning_rate=1e-4", "--adam_beta2=0.999",
                          "--nojit_compile")
  assert options.dropout == 0.1
  assert (train.learning_rate, train.adam_beta2, train.jit_compile) == (1e-4, 0.999, False)


def _readme_quickstart():
  """(the excerpt of the quickstart's output, the prose) of the README's
  Quickstart section."""
  repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  with open(os.path.join(repo, "README.md"), encoding="utf-8") as f:
    text = f.read()
  section = text[text.index("## Quickstart\n"):]
  section = section[:section.index("\n## ", 1)]
  excerpt = [line[4:] for line in section.splitlines() if line.startswith("    ")
             and not line.lstrip().startswith(("python3 ", ".venv/"))]
  prose = " ".join(line.strip() for line in section.splitlines() if not line.startswith("    "))
  return excerpt, prose


def test_the_readmes_quickstart_excerpt_is_what_the_code_prints():
  # The README quotes the quickstart's output: its stage titles, settings
  # and demo sentences must be the code's (its figures come from a run: the
  # README says which lines vary).
  from absl import flags
  from bert_tf import quickstart
  from bert_tf.cli import quickstart_stages
  flag_values = flags.FlagValues()
  quickstart.define_flags(flag_values)
  flag_values(["quickstart"])
  defaults = {name: flag_values[name].value for name in flag_values}
  excerpt, prose = _readme_quickstart()
  with open(quickstart_stages.__file__, encoding="utf-8") as f:
    source = f.read()
  titles = {int(n): title.replace("{options.train_steps}", str(defaults["train_steps"]))
            for n, title in re.findall(r'_stage\((\d), f?"([^"]*)"\)', source)}
  assert sorted(titles) == list(range(1, 7))
  quoted = [line for line in excerpt if line.startswith("=== stage ")]
  assert quoted == [f"=== stage {n}: {titles[n]}" for n in range(1, 7)]
  text = "\n".join(excerpt)
  n_train, n_held = map(int, re.search(r"split by document: (\d+) for training, (\d+) held "
                                       r"out", text).groups())
  assert n_held == (n_train + n_held) // 10  # every 10th document held out
  entries, template, vocab_size = re.search(
      r"(\d+) entries -> \S+; (\S+) with vocab_size=(\d+)", text).groups()
  assert entries == vocab_size and int(vocab_size) <= defaults["vocab_size"]
  assert template == os.path.relpath(defaults["bert_config_template"],
                                     os.path.dirname(os.path.dirname(quickstart.__file__)))
  assert f"step {defaults['train_steps']}: held-out masked-LM accuracy" in text
  stage_6 = excerpt.index(quoted[-1])
  demos = [line.strip() for line in excerpt[stage_6:] if "[MASK]" in line
           and "(masked: " not in line]
  assert demos and demos == list(quickstart_stages.DEMO_SENTENCES[:len(demos)])
  assert "at commit" not in prose and not re.search(r"\b[0-9a-f]{7}\b", prose)
  recipe = re.search(r"learning rate (\S+) with Adam's beta2 (\S+) \(", prose)
  assert recipe and tuple(map(float, recipe.groups())) == (defaults["learning_rate"],
                                                           defaults["adam_beta2"])
  assert "no dropout" in prose and defaults["dropout"] == 0.0
  assert defaults["jit_compile"] and "XLA" in prose
