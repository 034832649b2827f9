"""Queries an exported BERT SavedModel: fill-mask, sentence pairs,
replaced-token detection (ELECTRA), fine-tuned classifiers and taggers, and
SQuAD answers (--text_a=QUESTION --text_b=CONTEXT on a run_squad --export_dir).

  python -m bert_tf.predict --saved_model=/tmp/bert_savedmodel \
    --text="the man went to the [MASK] to buy milk ."
  python -m bert_tf.predict --saved_model=... --text_a="..." --text_b="..."
  python -m bert_tf.predict --saved_model=... --input_file=in.txt --output_file=out.jsonl

A text goes to the export's fill_mask signature, or a classifier's classify,
or a tagger's tag (printed word/LABEL), or else ELECTRA's
replaced_token_detection; a pair to next_sentence or
sentence_order, a sentence-pair classifier's classify, or a SQuAD export's answer
(text_a the question, text_b the context); --signature picks
one. A signature the export lacks is one line naming those it has and
their inputs. In --input_file each line is one example: `text_a<TAB>text_b`
a pair, any other line a text; the output is one JSON object a line, in
input order.

This file needs only tensorflow, tensorflow_text (whose ops the text signatures
use) and absl, not the bert_tf package, so it runs wherever the SavedModel is
copied. For that it keeps its own copy of bert_tf.cli's command-line shell:
the same one-line errors and exit codes, and the same quiet TensorFlow C++ log
when run as a script (TF_CPP_MIN_LOG_LEVEL=3 unless set, also for the lines
TensorFlow writes while it is imported; TF_CPP_MIN_LOG_LEVEL=0 shows them).
"""

import json
import os
import re
import sys
import tempfile

from absl import app
from absl import flags

# TensorFlow's C++ log lines by severity (as bert_tf.cli), and lines that belong to them.
_CPP_LOG_LINE = re.compile(r"^([IWE])\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ \S+:\d+\] ")
_CPP_LOG_INFO_LINES = re.compile(
    r"^(WARNING: All log messages before absl::InitializeLog\(\) is called"
    r"|To enable the following instructions: )")


def _import_tensorflow_quietly():
  """Imports TensorFlow with fd 2 captured, passing on only the lines that
  TF_CPP_MIN_LOG_LEVEL (3 unless set) does not hide: the variable alone no
  longer hides what TensorFlow writes while it is imported."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  level = int(os.environ["TF_CPP_MIN_LOG_LEVEL"]) if os.environ[
      "TF_CPP_MIN_LOG_LEVEL"].isdigit() else 0
  sys.stderr.flush()
  saved = os.dup(2)
  with tempfile.TemporaryFile() as capture:
    os.dup2(capture.fileno(), 2)
    try:
      import tensorflow  # pylint: disable=g-import-not-at-top,unused-import
    finally:
      sys.stderr.flush()
      os.dup2(saved, 2)
      os.close(saved)
      capture.seek(0)
      for line in capture.read().decode("utf-8", errors="replace").splitlines(keepends=True):
        match = _CPP_LOG_LINE.match(line)
        hidden = (level >= "_IWE".index(match.group(1)) if match
                  else level >= 1 and _CPP_LOG_INFO_LINES.match(line))
        if not hidden:
          sys.stderr.write(line)
      sys.stderr.flush()


if __name__ == "__main__" and "tensorflow" not in sys.modules:
  _import_tensorflow_quietly()

import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position
import tensorflow_text  # pylint: disable=unused-import,g-import-not-at-top  (registers the text ops)

FLAGS = flags.FLAGS


PROG = "bert_tf.predict"


class Error(Exception):
  """Bad input found while running: one line, exit 1 (as bert_tf.cli.Error)."""


def define_flags(flag_values):
  """The tool's flags (see bert_tf.cli: defined when it runs, not at import)."""
  def string(name, help_text):
    flags.DEFINE_string(name, None, help_text, flag_values=flag_values)

  string("saved_model", "SavedModel directory written by bert_tf.export_saved_model or "
         "bert_tf.finetune --export_dir.")
  string("text", "A text: with one or more [MASK], the top fills of each (fill_mask); for a "
         "classifier, its label (classify); for a tagger, each word's label (tag).")
  string("text_a", "First text of a sentence-pair query (next_sentence, sentence_order or a "
         "sentence-pair classifier; with --text_b).")
  string("text_b", "Second text of a sentence-pair query (with --text_a).")
  string("input_file",
         "One example a line: `text_a<TAB>text_b` (a pair) or a text.")
  string("output_file", "JSON lines output of --input_file (default: stdout).")
  string("signature", "The signature to ask. Default: for a text, the first the export has of "
         "fill_mask, classify, replaced_token_detection; for a pair, of next_sentence, "
         "sentence_order, classify.")
  flags.DEFINE_integer("batch_size", 32, "Examples per call of the SavedModel in --input_file mode.",
                       flag_values=flag_values)


def _str(value):
  return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value


# Sentence-pair signatures an export may have -> their probability output.
SENTENCE_SIGNATURES = {"next_sentence": "is_next_probability",
                       "sentence_order": "in_order_probability"}
# What a --text asks, in order of preference (the first the export has),
# and what a --text_a/--text_b pair asks. `classify` is a fine-tuned
# classifier's: `text` for a single-text task, `text_a`, `text_b` for pairs.
TEXT_SIGNATURES = ("fill_mask", "classify", "tag", "replaced_token_detection")
PAIR_SIGNATURES = ("next_sentence", "sentence_order", "classify", "answer")
# A SQuAD export's signature: a pair is (question, context).
ANSWER_INPUTS = ("context", "question")


class Predictor:
  """Calls the text signatures of an exported SavedModel: every export of
  bert_tf (the pretraining export's fill_mask, next_sentence or
  sentence_order, ELECTRA's replaced_token_detection, a fine-tuned
  classifier's classify). Each signature's inputs are read from the export.

  Args:
    saved_model_dir: directory of an export.
  """

  def __init__(self, saved_model_dir):
    self._loaded = tf.saved_model.load(saved_model_dir)
    self._saved_model_dir = saved_model_dir
    specs = {name: fn.structured_input_signature[1]
             for name, fn in self._loaded.signatures.items()}
    # signature name -> its input names (sorted); the signatures whose inputs are text
    self.inputs = {name: tuple(sorted(spec)) for name, spec in specs.items()}
    self._text_in = {name for name, spec in specs.items()
                     if spec and all(s.dtype == tf.string for s in spec.values())}
    # The pretraining export's sentence-pair signature, if its objective has one.
    self.sentence_signature, self._probability_key = next(
        ((name, key) for name, key in SENTENCE_SIGNATURES.items() if name in self.inputs),
        (None, None))

  def describe(self):
    """`name(input, ...)` of each signature, comma-separated."""
    return ", ".join(f"{name}({', '.join(inputs)})" for name, inputs in sorted(self.inputs.items()))

  def _missing(self, what):
    """The one-line ValueError for a query the export cannot answer."""
    hint = "" if self._text_in else " (none takes text: exported with --notext_signatures?)"
    return ValueError(f"SavedModel {self._saved_model_dir} has no {what}; its signatures "
                      f"(inputs): {self.describe()}{hint}")

  def _takes(self, name, count):
    """Whether signature `name` takes `count` texts (1: a text, 2: a pair)."""
    inputs = self.inputs.get(name)
    if name not in self._text_in:
      return False
    if name == "classify":
      return len(inputs) == count
    if name == "answer":
      return count == 2 and inputs == ANSWER_INPUTS
    return len(inputs) == count and (count == 2) == (name in SENTENCE_SIGNATURES)

  def signature_for(self, count, signature=None):
    """The signature that answers `count` texts (1 or 2): `signature` when
    given, else the first of TEXT_SIGNATURES / PAIR_SIGNATURES the export has.

    Raises:
      ValueError: one line naming the export's signatures and their inputs.
    """
    kind = "a text (--text)" if count == 1 else "a sentence pair (--text_a, --text_b)"
    if signature:
      if signature not in self.inputs:
        raise self._missing(f"signature {signature!r}")
      if not self._takes(signature, count):
        raise self._missing(f"signature {signature!r} that takes {kind}")
      return signature
    for name in TEXT_SIGNATURES if count == 1 else PAIR_SIGNATURES:
      if self._takes(name, count):
        return name
    raise self._missing(f"signature that takes {kind}")

  def _call(self, name, *columns):
    fn = self._loaded.signatures[name]
    out = fn(**{key: tf.constant(list(column), tf.string)
                for key, column in zip(self.inputs[name], columns)})
    return {k: v.numpy() for k, v in out.items()}

  def fill_mask(self, texts):
    """Top-k fills of each [MASK] of each text.

    Args:
      texts: list of str or bytes.

    Returns:
      list of dicts, one per text: {"text", "masks": [{"position",
      "predictions": [{"token", "id", "probability"}, ...]}, ...],
      "truncated", "error"} ("error" is "" when the text was fine).
    """
    if not texts:
      return []
    self.signature_for(1, "fill_mask")
    out = self._call("fill_mask", texts)
    results = []
    for i, text in enumerate(texts):
      masks = []
      for m in range(int(out["num_masks"][i])):
        masks.append({
            "position": int(out["mask_positions"][i, m]),
            "predictions": [
                {"token": _str(token), "id": int(token_id), "probability": float(prob)}
                for token, token_id, prob in zip(out["top_k_tokens"][i, m],
                                                 out["top_k_ids"][i, m],
                                                 out["top_k_probs"][i, m])],
        })
      results.append({"text": _str(text), "masks": masks,
                      "truncated": bool(out["truncated"][i]), "error": _str(out["error"][i])})
    return results

  def sentence_pair(self, pairs):
    """The sentence-pair head's answer for each pair: the probability that
    text_b follows text_a (next_sentence) or that the two are in order
    (sentence_order).

    Args:
      pairs: list of (text_a, text_b), str or bytes.

    Returns:
      list of dicts {"text_a", "text_b", "is_next_probability" or
      "in_order_probability", "truncated", "error"}.

    Raises:
      ValueError: the export has no sentence-pair signature (objective mlm).
    """
    if not pairs:
      return []
    if self.sentence_signature is None:
      raise self._missing("sentence-pair signature (next_sentence or sentence_order): its "
                          "model was trained without a sentence task, or is a classifier")
    out = self._call(self.sentence_signature, [a for a, _ in pairs], [b for _, b in pairs])
    key = self._probability_key
    return [{"text_a": _str(a), "text_b": _str(b), key: float(out[key][i]),
             "truncated": bool(out["truncated"][i]), "error": _str(out["error"][i])}
            for i, (a, b) in enumerate(pairs)]

  next_sentence = sentence_pair

  def classify(self, examples):
    """A fine-tuned classifier's answers (signature classify).

    Args:
      examples: list of texts (a single-text task) or of (text_a, text_b)
        pairs (a sentence-pair task), str or bytes.

    Returns:
      list of dicts: {"text"} or {"text_a", "text_b"}, then for
      classification "label" and "probabilities" ({label: probability}),
      for regression "score"; and "truncated".
    """
    if not examples:
      return []
    pair = isinstance(examples[0], tuple)
    self.signature_for(2 if pair else 1, "classify")
    columns = list(zip(*examples)) if pair else [examples]
    out = self._call("classify", *columns)
    results = []
    for i, example in enumerate(examples):
      result = ({"text_a": _str(example[0]), "text_b": _str(example[1])} if pair
                else {"text": _str(example)})
      if "scores" in out:
        result["score"] = float(out["scores"][i])
      else:
        names = [_str(n) for n in out["label_names"]]
        result["label"] = _str(out["labels"][i])
        result["probabilities"] = dict(zip(names, map(float, out["probabilities"][i])))
      result["truncated"] = bool(out["truncated"][i])
      results.append(result)
    return results

  def answer_questions(self, pairs):
    """A SQuAD export's answers (signature answer).

    Args:
      pairs: list of (question, context), str or bytes.

    Returns:
      list of dicts {"question", "context", "answer" ("" for none),
      "start", "end" (character offsets in the context, end exclusive; -1
      for none), "score", "has_answer", "truncated"}.
    """
    if not pairs:
      return []
    self.signature_for(2, "answer")
    out = self._call("answer", [c for _, c in pairs], [q for q, _ in pairs])
    return [{"question": _str(q), "context": _str(c), "answer": _str(out["answer"][i]),
             "start": int(out["start"][i]), "end": int(out["end"][i]),
             "score": float(out["score"][i]), "has_answer": bool(out["has_answer"][i]),
             "truncated": bool(out["truncated"][i])} for i, (q, c) in enumerate(pairs)]

  def tag(self, texts):
    """A fine-tuned tagger's labels of each whitespace word (signature tag).

    Returns:
      list of dicts {"text", "tags": [{"word", "label", "probability"}],
      "num_windows", "truncated" (False: a long text is read in windows)}.
    """
    if not texts:
      return []
    self.signature_for(1, "tag")
    out = self._call("tag", texts)
    results = []
    for i, text in enumerate(texts):
      n = int(out["num_words"][i])
      tags = [{"word": _str(w), "label": _str(l), "probability": float(p)}
              for w, l, p in zip(out["words"][i, :n], out["labels"][i, :n],
                                 out["probabilities"][i, :n])]
      results.append({"text": _str(text), "tags": tags,
                      "num_windows": int(out["num_windows"][i]), "truncated": False})
    return results

  def replaced_token_detection(self, texts):
    """ELECTRA's discriminator: each token's probability of being replaced.

    Returns:
      list of dicts {"text", "tokens": [{"token", "replaced_probability"}]
      ([CLS] wordpieces [SEP]), "truncated", "error"}.
    """
    if not texts:
      return []
    self.signature_for(1, "replaced_token_detection")
    out = self._call("replaced_token_detection", texts)
    results = []
    for i, text in enumerate(texts):
      tokens = [{"token": _str(t), "replaced_probability": float(p)}
                for t, p in zip(out["tokens"][i], out["replaced_probability"][i]) if t]
      results.append({"text": _str(text), "tokens": tokens,
                      "truncated": bool(out["truncated"][i]), "error": _str(out["error"][i])})
    return results

  def answer(self, examples, signature=None):
    """Results of texts (str or bytes) or of (text_a, text_b) pairs (all one
    kind), from `signature_for` their kind."""
    if not examples:
      return []
    pair = isinstance(examples[0], tuple)
    name = self.signature_for(2 if pair else 1, signature)
    if name == "classify":
      return self.classify(examples)
    if name == "answer":
      return self.answer_questions(examples)
    if name == "tag":
      return self.tag(examples)
    if pair:
      return self.sentence_pair(examples)
    return self.fill_mask(examples) if name == "fill_mask" else self.replaced_token_detection(
        examples)

  def predict_lines(self, lines, batch_size=32, signature=None):
    """Results for input-file lines (bytes or str, without the newline), in order.

    A line with a tab is `text_a<TAB>text_b`, a pair; any other line a text.
    signature: the one to ask (`signature_for`), for the lines of its kind.
    """
    results = []
    for start in range(0, len(lines), batch_size):
      chunk = lines[start:start + batch_size]
      tab = b"\t" if chunk and isinstance(chunk[0], bytes) else "\t"
      pair_index = [i for i, line in enumerate(chunk) if tab in line]
      text_index = [i for i, line in enumerate(chunk) if tab not in line]
      by_index = dict(zip(pair_index, self.answer(
          [tuple(chunk[i].split(tab, 1)) for i in pair_index], signature)))
      by_index.update(zip(text_index, self.answer([chunk[i] for i in text_index], signature)))
      results.extend(by_index[i] for i in range(len(chunk)))
    return results


def format_fill_mask(result):
  """Human-readable lines of one `Predictor.fill_mask` result."""
  lines = [f"text: {result['text']}"]
  if result["error"]:
    lines.append(f"error: {result['error']}")
  if result["truncated"]:
    lines.append("note: text truncated to max_seq_length tokens")
  for n, mask in enumerate(result["masks"], 1):
    fills = "  ".join(f"{p['token']} ({p['probability']:.4f})" for p in mask["predictions"])
    lines.append(f"[MASK] {n} (token {mask['position']}): {fills}")
  return "\n".join(lines)


def format_next_sentence(result):
  """Human-readable lines of one `Predictor.next_sentence` result."""
  lines = [f"text_a: {result['text_a']}", f"text_b: {result['text_b']}"]
  if result["error"]:
    lines.append(f"error: {result['error']}")
  if result["truncated"]:
    lines.append("note: pair truncated to max_seq_length tokens")
  if "in_order_probability" in result:
    lines.append(f"P(text_a, text_b in order) = {result['in_order_probability']:.4f}")
  else:
    lines.append(f"P(text_b follows text_a) = {result['is_next_probability']:.4f}")
  return "\n".join(lines)


def format_result(result):
  """Human-readable lines of any Predictor result."""
  if "question" in result:
    note = ["note: the context was cut to one window"] if result["truncated"] else []
    return "\n".join([f"question: {result['question']}", f"context: {result['context']}"] +
                      note + [f"answer: {result['answer']!r} (characters {result['start']}-"
                              f"{result['end']}, score {result['score']:.4f})"
                              if result["has_answer"] else "answer: none"])
  if "masks" in result:
    return format_fill_mask(result)
  if "is_next_probability" in result or "in_order_probability" in result:
    return format_next_sentence(result)
  lines = ([f"text: {result['text']}"] if "text" in result
           else [f"text_a: {result['text_a']}", f"text_b: {result['text_b']}"])
  if result.get("error"):
    lines.append(f"error: {result['error']}")
  if result["truncated"]:
    lines.append("note: truncated to max_seq_length tokens")
  if "tags" in result:
    lines.append("  ".join(f"{t['word']}/{t['label']}" for t in result["tags"]))
  elif "tokens" in result:
    lines.append("P(replaced): " + "  ".join(
        f"{t['token']} {t['replaced_probability']:.4f}" for t in result["tokens"]))
  elif "score" in result:
    lines.append(f"score = {result['score']:.4f}")
  else:
    probs = "  ".join(f"{k} {v:.4f}" for k, v in result["probabilities"].items())
    lines.append(f"label = {result['label']}  (probabilities: {probs})")
  return "\n".join(lines)


def predict_file(predictor, input_file, output_file=None, batch_size=32, signature=None):
  """Writes one JSON line per line of `input_file` to output_file (or stdout).

  Returns:
    The number of examples.
  """
  with tf.io.gfile.GFile(input_file, "rb") as f:
    lines = f.read().splitlines()
  results = predictor.predict_lines(lines, batch_size=batch_size, signature=signature)
  text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in results)
  if output_file is None:
    sys.stdout.write(text)
  else:
    # A temporary name, renamed when complete: never half a file under the final name.
    tmp = f"{output_file}.tmp"
    with tf.io.gfile.GFile(tmp, "w") as f:
      f.write(text)
    tf.io.gfile.rename(tmp, output_file, overwrite=True)
  return len(results)


def main(argv):
  del argv
  if not FLAGS.saved_model:
    raise app.UsageError("--saved_model is required")
  modes = [FLAGS.text is not None, FLAGS.text_a is not None or FLAGS.text_b is not None,
           FLAGS.input_file is not None]
  if sum(modes) != 1:
    raise app.UsageError("give exactly one of --text, --text_a/--text_b, --input_file")
  if modes[1] and (FLAGS.text_a is None or FLAGS.text_b is None):
    raise app.UsageError("--text_a and --text_b go together")
  if not tf.io.gfile.exists(FLAGS.saved_model):
    raise Error(f"--saved_model {FLAGS.saved_model} does not exist")
  predictor = Predictor(FLAGS.saved_model)
  if FLAGS.input_file is not None:
    if not tf.io.gfile.exists(FLAGS.input_file):
      raise Error(f"--input_file {FLAGS.input_file} does not exist")
    predict_file(predictor, FLAGS.input_file, FLAGS.output_file, FLAGS.batch_size,
                 FLAGS.signature)
    return
  example = FLAGS.text if FLAGS.text is not None else (FLAGS.text_a, FLAGS.text_b)
  result = predictor.answer([example], FLAGS.signature)[0]
  formatted = format_result(result)
  if result.get("error"):
    # The query on stdout (as with an answer), the error once, on stderr.
    print("\n".join(line for line in formatted.splitlines() if line.startswith("text")))
    raise Error(result["error"])
  print(formatted)


def _fail(message, code):
  sys.stdout.flush()
  sys.stderr.write(f"{PROG}: error: {message}\n")
  sys.exit(code)


def _main_with_errors(argv):
  try:
    return main(argv)
  except app.UsageError as e:
    _fail(f"{e} (--help lists the flags)", 2)
  except (Error, ValueError, OSError, tf.errors.OpError) as e:
    _fail(" ".join(str(getattr(e, "message", None) or e).split()), 1)


def _parse_flags(argv):
  if any(a in ("-h", "-?", "--help", "--helpshort", "--helpfull") for a in argv[1:]):
    help_flags = flags.FlagValues()
    define_flags(help_flags)
    print(__doc__.strip() + "\n\nflags:\n" + help_flags.get_help(include_special_flags=False))
    sys.exit(0)
  try:
    rest = FLAGS(argv)
  except flags.Error as e:
    _fail(f"{e} (--help lists the flags)", 2)
  if len(rest) > 1:
    _fail(f"unexpected arguments: {' '.join(rest[1:])}", 2)
  return rest


def run():
  define_flags(FLAGS)
  app.run(_main_with_errors, flags_parser=_parse_flags)


if __name__ == "__main__":
  run()
