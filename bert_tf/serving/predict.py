"""Queries an exported BERT SavedModel: fill-mask and next-sentence prediction.

  python -m bert_tf.predict --saved_model=/tmp/bert_savedmodel \
    --text="the man went to the [MASK] to buy milk ."
  python -m bert_tf.predict --saved_model=... --text_a="..." --text_b="..."
  python -m bert_tf.predict --saved_model=... --input_file=in.txt --output_file=out.jsonl

In --input_file each line is one example: `text_a<TAB>text_b` asks for the
next-sentence probability, any other line is a fill-mask text; the output is
one JSON object a line, in input order.

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

  string("saved_model", "SavedModel directory written by bert_tf.export_saved_model.")
  string("text", "A text with one or more [MASK]: prints the top fills of each.")
  string("text_a", "First text of a sentence-pair query (next_sentence or sentence_order; with --text_b).")
  string("text_b", "Second text of a sentence-pair query (with --text_a).")
  string("input_file",
         "One example a line: `text_a<TAB>text_b` (next sentence) or a fill-mask text.")
  string("output_file", "JSON lines output of --input_file (default: stdout).")
  flags.DEFINE_integer("batch_size", 32, "Examples per call of the SavedModel in --input_file mode.",
                       flag_values=flag_values)


def _str(value):
  return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value


# Sentence-pair signatures an export may have -> their probability output.
SENTENCE_SIGNATURES = {"next_sentence": "is_next_probability",
                       "sentence_order": "in_order_probability"}


class Predictor:
  """Calls the text signatures of an exported SavedModel.

  Args:
    saved_model_dir: directory of an export with the fill_mask signature
      and, when its objective has a sentence task, next_sentence (NSP) or
      sentence_order (SOP).

  Raises:
    ValueError: the export lacks the text signatures.
  """

  def __init__(self, saved_model_dir):
    self._loaded = tf.saved_model.load(saved_model_dir)
    signatures = self._loaded.signatures
    if "fill_mask" not in signatures:
      raise ValueError(
          f"SavedModel {saved_model_dir} has no fill_mask signature "
          f"(exported with --notext_signatures?); it has {sorted(signatures)}")
    self._fill_mask = signatures["fill_mask"]
    # The sentence-pair signature, if the objective has one, and its output.
    self.sentence_signature, self._probability_key = next(
        ((name, key) for name, key in SENTENCE_SIGNATURES.items() if name in signatures),
        (None, None))
    self._saved_model_dir = saved_model_dir

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
    out = {k: v.numpy() for k, v in self._fill_mask(text=tf.constant(texts, tf.string)).items()}
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
      raise ValueError(f"SavedModel {self._saved_model_dir} has no sentence-pair signature "
                       "(next_sentence or sentence_order): its model was trained without "
                       "a sentence task")
    out = self._loaded.signatures[self.sentence_signature](
        text_a=tf.constant([a for a, _ in pairs], tf.string),
        text_b=tf.constant([b for _, b in pairs], tf.string))
    out = {k: v.numpy() for k, v in out.items()}
    key = self._probability_key
    return [{"text_a": _str(a), "text_b": _str(b), key: float(out[key][i]),
             "truncated": bool(out["truncated"][i]), "error": _str(out["error"][i])}
            for i, (a, b) in enumerate(pairs)]

  next_sentence = sentence_pair

  def predict_lines(self, lines, batch_size=32):
    """Results for input-file lines (bytes or str, without the newline), in order.

    A line with a tab is `text_a<TAB>text_b`; any other line a fill-mask text.
    """
    results = []
    for start in range(0, len(lines), batch_size):
      chunk = lines[start:start + batch_size]
      tab = b"\t" if chunk and isinstance(chunk[0], bytes) else "\t"
      nsp_index = [i for i, line in enumerate(chunk) if tab in line]
      mlm_index = [i for i, line in enumerate(chunk) if tab not in line]
      by_index = dict(zip(nsp_index, self.sentence_pair(
          [tuple(chunk[i].split(tab, 1)) for i in nsp_index])))
      by_index.update(zip(mlm_index, self.fill_mask([chunk[i] for i in mlm_index])))
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


def predict_file(predictor, input_file, output_file=None, batch_size=32):
  """Writes one JSON line per line of `input_file` to output_file (or stdout).

  Returns:
    The number of examples.
  """
  with tf.io.gfile.GFile(input_file, "rb") as f:
    lines = f.read().splitlines()
  results = predictor.predict_lines(lines, batch_size=batch_size)
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
    predict_file(predictor, FLAGS.input_file, FLAGS.output_file, FLAGS.batch_size)
    return
  if FLAGS.text is not None:
    result = predictor.fill_mask([FLAGS.text])[0]
    formatted = format_fill_mask(result)
  else:
    result = predictor.sentence_pair([(FLAGS.text_a, FLAGS.text_b)])[0]
    formatted = format_next_sentence(result)
  if result["error"]:
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
