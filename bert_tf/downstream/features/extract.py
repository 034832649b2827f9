"""Per-token hidden states of an encoder as JSON lines: the original
google-research/bert extract_features.py's behaviour and output.

Input: one example a line, stripped of surrounding white space; a line
`A ||| B` (split at the last " ||| ") is a pair, any other line (an empty
one too) a single text; every line is an example, numbered from 0
(`linex_index`, the original's key spelling). Tokens: [CLS] A [SEP]
(B [SEP]), segment ids 0 then 1, a pair cut to max_seq_length - 3 tokens by
popping from the longer side (B on a tie), a single text to
max_seq_length - 2; a B that tokenizes to nothing counts as no B, as in the
original. Output, one line per example, in input order:

    {"linex_index": 0, "features": [{"token": "[CLS]", "layers":
      [{"index": -1, "values": [0.123456, ...]}, ...]}, ...]}

one feature per token, [CLS] and [SEP] included, padding excluded; `index`
as asked (-1: the last transformer layer's output, 0: the first's; the
embeddings are not a layer), each value rounded to 6 decimals by Python's
`round`, serialized by `json.dumps` with its default separators.

The encoder is read as fine-tuning reads it (`downstream.finetune.
build_classifier`): a bert_tf run directory or checkpoint, an original TF1
checkpoint, a keras-hub preset directory, a transformers folder, an ELECTRA
run (its discriminator). Dropout is off.
"""

import json
import re
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.io import file_io as files
from bert_tf.downstream.classification import tsv as classification
from bert_tf.downstream import finetune
from bert_tf.models import modeling

_PAIR = re.compile(r"^(.*) \|\|\| (.*)$")
LOG_EVERY_SECONDS = 30.0


def read_examples(path):
  """[(text_a, text_b or None)] of each line of `path` (see module doc)."""
  text = files.read_text(path, "input")
  lines = text.split("\n")
  if lines and lines[-1] == "":
    lines.pop()  # the newline that ends the last line
  examples = []
  for line in lines:
    line = line.strip()
    match = _PAIR.match(line)
    examples.append((match.group(1), match.group(2)) if match else (line, None))
  return examples


def parse_layers(text, num_layers):
  """The --layers value "-1,-2" -> [-1, -2], each within the encoder's depth.

  Raises:
    ValueError: naming the value that is not an integer or out of range.
  """
  out = []
  for part in text.split(","):
    try:
      index = int(part)
    except ValueError:
      raise ValueError(f"layers={text!r}: {part!r} is not an integer") from None
    if not -num_layers <= index < num_layers:
      raise ValueError(f"layers={text!r}: {index} is out of range for an encoder of "
                       f"{num_layers} layers ({-num_layers}..{num_layers - 1})")
    out.append(index)
  return out


def pack(examples, tokenizer, max_seq_length):
  """(tokens per example, features dict of int32 [n, max_seq_length])."""
  vocab = tokenizer.vocab
  texts = [a for a, _ in examples] + [b or "" for _, b in examples]
  values, splits = tokenizer.tokenize_to_ids(texts)
  ids = [values[splits[i]:splits[i + 1]].tolist() for i in range(len(texts))]
  n = len(examples)
  features = {k: np.zeros([n, max_seq_length], np.int32)
              for k in ("input_ids", "input_mask", "segment_ids")}
  all_tokens = []
  for i in range(n):
    a, b = ids[i], ids[n + i]
    if b:
      classification.truncate_pair_at_the_back(a, b, max_seq_length - 3)
      row = [vocab.cls_id] + a + [vocab.sep_id] + b + [vocab.sep_id]
      segments = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    else:
      row = [vocab.cls_id] + a[:max_seq_length - 2] + [vocab.sep_id]
      segments = [0] * len(row)
    features["input_ids"][i, :len(row)] = row
    features["input_mask"][i, :len(row)] = 1
    features["segment_ids"][i, :len(row)] = segments
    all_tokens.append([vocab.tokens[t] for t in row])
  return all_tokens, features


def layer_model(encoder):
  """A keras.Model of the encoder's inputs -> the output of each transformer
  layer application, in order. ALBERT's encoder holds groups of inner
  blocks shared across depths: a depth's output is its group's last inner
  block's, and a group serves consecutive depths, so its applications
  (the layer's graph nodes, in call order) follow group by group."""
  layers = encoder.transformer_layers
  if layers and isinstance(layers[0], (list, tuple)):  # ALBERT
    layers = [group[-1] for group in layers]
  outputs = [node.output_tensors[0] for layer in layers
             for node in layer._inbound_nodes]  # pylint: disable=protected-access
  return keras.Model(encoder.input, outputs)


def _json_line(index, tokens, layer_values, layer_indexes):
  features = []
  for t, token in enumerate(tokens):
    features.append({"token": token, "layers": [
        {"index": li, "values": [round(v, 6) for v in values[t].tolist()]}
        for li, values in zip(layer_indexes, layer_values)]})
  return json.dumps({"linex_index": index, "features": features}) + "\n"


def extract(input_file, output_file, bert_config, init_checkpoint, vocab_file,
            do_lower_case=True, layers="-1,-2,-3,-4", max_seq_length=128, batch_size=32,
            spm_model_file=""):
  """Writes output_file (atomically) with the features of every line of
  input_file. Returns (number of examples, what the encoder was read from).
  spm_model_file: a SentencePiece model (ALBERT's) in the place of
  vocab_file (then not read); the tokens are its pieces.

  Raises:
    ValueError, FileNotFoundError: a bad argument or file, named (before
      anything is written).
  """
  if max_seq_length < 3 or max_seq_length > bert_config.max_position_embeddings:
    raise ValueError(f"max_seq_length={max_seq_length}: must be 3 to the bert_config's "
                     f"max_position_embeddings={bert_config.max_position_embeddings}")
  if batch_size < 1:
    raise ValueError(f"batch_size={batch_size} is out of range")
  layer_indexes = parse_layers(layers, bert_config.num_hidden_layers)
  examples = read_examples(input_file)
  tokenizer = finetune.config_tokenizer(finetune.FinetuneConfig(
      vocab_file=vocab_file or "", spm_model_file=spm_model_file or "",
      do_lower_case=do_lower_case), bert_config)
  classifier, described = finetune.build_classifier(bert_config, 1, init_checkpoint)
  model = layer_model(classifier.encoder)
  if len(model.outputs) != bert_config.num_hidden_layers:
    raise ValueError(f"the encoder applies {len(model.outputs)} transformer layers, the "
                     f"bert_config says {bert_config.num_hidden_layers}")
  infer = tf.function(lambda x: model(x, training=False), autograph=False)
  if modeling.is_causal(classifier.encoder):  # a left-to-right LM's: its layers as trained
    infer = tf.function(lambda x: modeling.causal_sequence_output(
        classifier.encoder, *(tf.cast(x[k], tf.int32) for k in ("token_ids", "segment_ids",
                                                                  "padding_mask")),
        every_layer=True), autograph=False)
  start = last_log = time.time()
  with files.atomic_open(output_file) as out:
    for begin in range(0, len(examples), batch_size):
      chunk = examples[begin:begin + batch_size]
      tokens, features = pack(chunk, tokenizer, max_seq_length)
      outputs = infer({"token_ids": features["input_ids"],
                       "segment_ids": features["segment_ids"],
                       "padding_mask": features["input_mask"]})
      outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]  # one layer
      chosen = [np.asarray(outputs[i], np.float32) for i in layer_indexes]
      for j, row_tokens in enumerate(tokens):
        out.write(_json_line(begin + j, row_tokens, [c[j] for c in chosen], layer_indexes))
      done, now = begin + len(chunk), time.time()
      if now - last_log >= LOG_EVERY_SECONDS or done == len(examples):
        logging.info("extract_features: %d/%d examples, %.1f examples/s", done,
                     len(examples), done / max(now - start, 1e-9))
        last_log = now
  return len(examples), described
