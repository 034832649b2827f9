"""The quickstart's stages as library functions: the main job end to end on
a text corpus with small settings (bert_tf.quickstart is the tool).

  corpus -> WordPiece vocab -> pretraining records (train + held-out)
  -> train a small BERT (MLM + NSP) -> export a SavedModel -> fill-mask demo

Each stage prints what it did, and calls the same library function as the
command-line tool of that step.
"""

import collections
import dataclasses
import hashlib
import math
import os
import random
import subprocess
import sys
import time

from absl import logging

from bert_tf import cli
from bert_tf.io import file_io
from bert_tf.data.text import split
from bert_tf.data.pretraining import writer
from bert_tf.models import config as config_lib
from bert_tf.training import objectives
from bert_tf.training import recipe
from bert_tf.training import train_config
# The modules that import TensorFlow (seconds) are imported by the stage that
# uses them, so the first stages print before TensorFlow has loaded and
# tests of the helpers below do without it.


@dataclasses.dataclass(frozen=True)
class QuickstartOptions:
  """The quickstart's settings (the tool's flags of the same names).

  output_dir: where everything is written; corpus: input text, generated
  from the standard library's docstrings when the file does not exist;
  vocab_size: WordPiece vocab size; bert_config_template: model config whose
  vocab_size and max_position_embeddings the quickstart sets; train_steps,
  dupe_factor, batch_size, max_seq_length, learning_rate, adam_beta2,
  jit_compile: as in the tools; dropout: the model's hidden and attention
  dropout (set over the template's); overwrite: start from scratch when
  output_dir exists.
  """
  output_dir: str
  corpus: str
  vocab_size: int
  bert_config_template: str
  train_steps: int = recipe.positive()
  dupe_factor: int
  batch_size: int = recipe.batch_size()
  max_seq_length: int
  learning_rate: float = recipe.learning_rate()
  adam_beta2: float = recipe.adam_beta(0.98)
  dropout: float = recipe.dropout(0.0)
  jit_compile: bool = True
  overwrite: bool = True

  def __post_init__(self):
    # Checked before stage 1 writes anything, as the tools check them.
    recipe.check(self, prefix="--")


DEMO_SENTENCES = (
    "Return a new [MASK] containing the items of the iterable.",
    "The [MASK] is closed when the with statement ends.",
    "Raise a [MASK] if the argument is not a string.",
    "This module provides access to the [MASK] system.",
)


def _stage(n, title):
  print(f"\n=== stage {n}: {title}", flush=True)
  return time.time()


def _done(start, text):
  print(f"    {text} ({time.time() - start:.1f} s)", flush=True)


# Words too common to say whether a model uses the context.
STOP_WORDS = frozenset(
    "a an and are as at be by can for from has have if in is it its may not of on or that the "
    "this to was were will with".split())


def _content_word(word, vocab):
  lower = word.lower()
  return word.isalpha() and len(word) >= 3 and lower not in STOP_WORDS and lower in vocab


def masked_word_cases(sentences, vocab, num=200, seed=0):
  """Fill-mask cases that say whether a model learned more than word
  frequencies: from up to `num` of `sentences` (seeded choice), one content
  word (alphabetic, 3+ letters, not a stop word, a whole token of `vocab`)
  replaced by [MASK]. Returns [(masked sentence, the word lower-cased)]."""
  rng = random.Random(seed)
  pool = [s for s in sentences if len(s.split()) >= 6]
  rng.shuffle(pool)
  cases = []
  for sentence in pool:
    words = sentence.split()
    candidates = [i for i, w in enumerate(words) if _content_word(w, vocab)]
    if not candidates:
      continue
    i = rng.choice(candidates)
    answer = words[i].lower()
    words[i] = "[MASK]"
    cases.append((" ".join(words), answer))
    if len(cases) == num:
      break
  return cases


def score_fills(cases, top_fills, train_sentences, vocab):
  """Share of cases whose word is the top fill and in the top 5 fills, and
  the top-5 share of always answering the 5 most frequent content words of
  the training text (what a model that ignores the context can reach)."""
  counts = collections.Counter(
      w.lower() for s in train_sentences for w in s.split() if _content_word(w, vocab))
  frequent = {w for w, _ in counts.most_common(5)}
  n = max(len(cases), 1)
  return {
      "cases": len(cases),
      "top1": sum(fills[:1] == [word] for (_, word), fills in zip(cases, top_fills)) / n,
      "top5": sum(word in fills[:5] for (_, word), fills in zip(cases, top_fills)) / n,
      "frequency_baseline_top5": sum(word in frequent for _, word in cases) / n,
  }


def run_quickstart(options):
  """Runs the six stages with `options` (QuickstartOptions), printing each."""
  out = options.output_dir
  if options.overwrite and file_io.exists(out):
    file_io.rmtree(out)
  file_io.makedirs(out)
  total_start = time.time()
  train_txt, held_txt = corpus_stage(options)
  vocab_file, tokens, bert_config = vocab_stage(options, train_txt)
  records, max_predictions = records_stage(options, train_txt, held_txt, vocab_file)
  model_dir = train_stage(options, records, max_predictions, bert_config)
  export_dir = export_stage(options, bert_config, model_dir, vocab_file)
  fill_mask_stage(export_dir, set(tokens), train_txt, held_txt)
  print(f"\nall stages done in {time.time() - total_start:.0f} s; outputs in {out}")


def corpus_stage(options):
  """Stage 1: the corpus (generated when missing), split by document into
  train.txt and heldout.txt in output_dir; returns their paths."""
  out = options.output_dir
  t = _stage(1, "sample corpus")
  corpus = options.corpus
  generated = not file_io.exists(corpus)
  if generated:
    # In a fresh interpreter: the corpus is the docstrings of the modules as
    # they are after a plain import, not after this process's imports.
    child = subprocess.run([sys.executable, "-m", "bert_tf.sample_corpus", f"--output={corpus}"],
                           stdout=subprocess.DEVNULL, check=False)
    if child.returncode:
      raise cli.Error(f"generating the sample corpus {corpus} failed (its error is above)")
  with file_io.open_file(corpus, "rb") as f:
    data = f.read()
  # The figures below depend on the corpus: its fingerprint says whether it
  # is the one a published figure came from (the standard library's
  # docstrings change with the Python version).
  fingerprint = f"sha256 {hashlib.sha256(data).hexdigest()[:12]}, {len(data) / 1e6:.2f} MB"
  _done(t, f"generated {corpus} from the standard library's docstrings of Python "
           f"{sys.version.split()[0]} ({fingerprint})" if generated else
           f"using {corpus} ({fingerprint})")
  train_txt, held_txt = os.path.join(out, "train.txt"), os.path.join(out, "heldout.txt")
  n_train, n_held = split.split_corpus(corpus, train_txt, held_txt)
  print(f"    split by document: {n_train} for training, {n_held} held out")
  return train_txt, held_txt


def vocab_stage(options, train_txt):
  """Stage 2: the WordPiece vocab of train_txt and the model config sized to
  it; returns (vocab file, its tokens, the BertConfig)."""
  from bert_tf.data.tokenizers import vocab_learning as vocab_lib  # TensorFlow (see the top)
  out = options.output_dir
  t = _stage(2, "WordPiece vocab and model config")
  vocab_file = os.path.join(out, "vocab.txt")
  tokens = vocab_lib.build_vocab([train_txt], options.vocab_size, do_lower_case=True)
  vocab_lib.write_vocab(tokens, vocab_file)
  seq = options.max_seq_length
  config_path = os.path.join(out, "bert_config.json")
  bert_config = config_lib.write_bert_config(
      options.bert_config_template, len(tokens), config_path, max_position_embeddings=seq,
      hidden_dropout_prob=options.dropout, attention_probs_dropout_prob=options.dropout)
  _done(t, f"{len(tokens)} entries -> {vocab_file}; {options.bert_config_template} with "
           f"vocab_size={len(tokens)}, max_position_embeddings={seq}, dropout "
           f"{options.dropout:g} -> {config_path}")
  return vocab_file, tokens, bert_config


def records_stage(options, train_txt, held_txt, vocab_file):
  """Stage 3: pretraining records of both splits; returns ({"train", "heldout"}
  -> records glob, max_predictions_per_seq)."""
  out = options.output_dir
  t = _stage(3, "pretraining records (original schema, 80/10/10 masking + NSP)")
  seq = options.max_seq_length
  max_predictions = math.ceil(seq * 0.15)  # the original's 20 at 128, 80 at 512
  records = {}
  for name, path, dupe in (("train", train_txt, options.dupe_factor), ("heldout", held_txt, 1)):
    data_options = writer.DataOptions(
        max_seq_length=seq, max_predictions_per_seq=max_predictions, dupe_factor=dupe,
        block_bytes=256 << 10)
    outputs = writer.Outputs(directory=os.path.join(out, "records", name),
                             num_shards=2 if name == "train" else 1)
    manifest = writer.create_pretraining_data(
        path, outputs, vocab_file, data_options, num_workers=writer.default_num_workers())
    records[name] = outputs.directory + "/*.tfrecord"
    c, s = manifest["counts"], manifest["shares"]
    print(f"    {name}: {c['instances']} instances from {c['documents']} documents in "
          f"{manifest['run']['seconds']:.1f} s | mean tokens {s['mean_tokens']:.1f} | "
          f"predictions {s['predictions_per_instance']:.2f} | [MASK]/kept/random "
          f"{s['masked']:.2f}/{s['kept']:.2f}/{s['random']:.2f} | NSP random {s['nsp_random']:.2f}")
  _done(t, "records written")
  return records, max_predictions


def quickstart_train_config(options, records, max_predictions, model_dir):
  """The TrainConfig of stage 4: the quickstart's recipe (QuickstartOptions)
  on its records, warmup over the first 10% of the steps."""
  return train_config.TrainConfig(
      input_file=records["train"], eval_input_file=records["heldout"], output_dir=model_dir,
      do_train=True, do_eval=True, train_batch_size=options.batch_size, eval_batch_size=64,
      learning_rate=options.learning_rate, adam_beta2=options.adam_beta2,
      jit_compile=options.jit_compile, num_train_steps=options.train_steps,
      num_warmup_steps=options.train_steps // 10, save_checkpoints_steps=500,
      iterations_per_loop=100, log_steps=100, max_eval_steps=20,
      max_seq_length=options.max_seq_length, max_predictions_per_seq=max_predictions)


def train_stage(options, records, max_predictions, bert_config):
  """Stage 4: trains and evaluates on the records; returns the model dir."""
  from bert_tf.training import loop  # TensorFlow (see the top)
  t = _stage(4, f"train a small BERT for {options.train_steps} steps")
  model_dir = os.path.join(options.output_dir, "model")
  train_config = quickstart_train_config(options, records, max_predictions, model_dir)
  logging.set_verbosity(logging.INFO)  # the loop's progress lines: losses, rate, ETA
  result = loop.run(train_config, bert_config)
  logging.set_verbosity(logging.WARNING)
  ev = result["eval"]
  _done(t, f"step {result['global_step']}: held-out masked-LM accuracy "
           f"{ev['masked_lm_accuracy']:.3f}, NSP accuracy {ev['next_sentence_accuracy']:.3f}, "
           f"loss {ev['loss']:.3f} (TensorBoard: tensorboard --logdir {model_dir})")
  return model_dir


def export_stage(options, bert_config, model_dir, vocab_file):
  """Stage 5: the latest checkpoint as a SavedModel; returns its directory."""
  from bert_tf.serving import saved_model  # TensorFlow (see the top)
  from bert_tf.training import checkpoints  # TensorFlow (see the top)
  t = _stage(5, "export SavedModel")
  export_dir = os.path.join(options.output_dir, "saved_model")
  pretrainer, checkpoint = checkpoints.load_pretrainer(bert_config, model_dir,
                                                       objectives.from_checkpoint(model_dir))
  saved_model.export_saved_model(pretrainer, vocab_file, True, export_dir,
                                 max_seq_length=options.max_seq_length)
  _done(t, f"{checkpoint} -> {export_dir} (signatures: serving_default/pretraining, encode, "
           "fill_mask, next_sentence)")
  return export_dir


def fill_mask_stage(export_dir, vocab, train_txt, held_txt):
  """Stage 6: the exported model's fill_mask on the demo sentences, then its
  figure on held-out sentences against the frequency baseline."""
  import tensorflow as tf  # see the top
  t = _stage(6, "fill-mask with the exported model (loaded by stock TensorFlow + tensorflow_text)")
  import tensorflow_text  # noqa: F401  pylint: disable=unused-import  (its ops, for the SavedModel)
  loaded = tf.saved_model.load(export_dir)
  fill = loaded.signatures["fill_mask"]
  result = fill(text=tf.constant(list(DEMO_SENTENCES)))
  tokens_out = result["top_k_tokens"].numpy()
  probs = result["top_k_probs"].numpy()
  for i, sentence in enumerate(DEMO_SENTENCES):
    fills = ", ".join(f"{tok.decode()} ({p:.2f})" for tok, p in zip(tokens_out[i][0], probs[i][0]))
    print(f"    {sentence}\n      -> {fills}")
  # A figure for the demo: one content word masked in held-out sentences.
  with file_io.open_file(held_txt) as f:
    cases = masked_word_cases(f.read().splitlines(), vocab)
  top_fills = []
  for i in range(0, len(cases), 64):
    batch = [text for text, _ in cases[i:i + 64]]
    out_tokens = fill(text=tf.constant(batch))["top_k_tokens"].numpy()
    top_fills += [[tok.decode() for tok in row[0]] for row in out_tokens]
  with file_io.open_file(train_txt) as f:
    scores = score_fills(cases, top_fills, f.read().splitlines(), vocab)
  for (text, word), fills in list(zip(cases, top_fills))[:3]:
    print(f"    {text}\n      -> {', '.join(fills)}   (masked: {word})")
  _done(t, f"held-out sentences with one content word masked: the word is the top fill in "
           f"{scores['top1']:.0%} and in the top 5 in {scores['top5']:.0%} of "
           f"{scores['cases']} (always answering the 5 most frequent words: "
           f"{scores['frequency_baseline_top5']:.0%})")
