"""The model configuration: exactly the keys of the original `bert_config.json`.

A `BertConfig` is frozen and validated when it is made, so a typo in a config
file fails at load time with the key and the file named, not as a silently
ignored setting hours into a run.
"""

import dataclasses
import json

import tensorflow as tf

# Activations the original `bert_config.json` may name. The model supports
# "gelu" (the tanh approximation, as the original's `gelu`); the others are
# accepted here so that any original config file loads, and rejected with a
# clear message by `modeling.build_encoder`.
KNOWN_ACTIVATIONS = ("gelu", "relu", "tanh", "linear")


@dataclasses.dataclass(frozen=True)
class BertConfig:
  """Hyperparameters of a BERT encoder, as in the original `bert_config.json`.

  Attributes:
    vocab_size: rows of the word-embedding matrix (30522 for the original
      uncased vocab).
    hidden_size: width H of every encoder layer.
    num_hidden_layers: number of transformer layers.
    num_attention_heads: heads per attention layer; must divide hidden_size.
    intermediate_size: width of the feed-forward layer (4 H in the releases).
    hidden_act: activation of the feed-forward and MLM-transform layers.
    hidden_dropout_prob: dropout on embeddings and on each sublayer output.
    attention_probs_dropout_prob: dropout on the attention probabilities.
    max_position_embeddings: rows of the position-embedding matrix, the
      longest sequence the model takes.
    type_vocab_size: number of segment ids (2: sentence A and B).
    initializer_range: stddev of the truncated normal used for every kernel
      and embedding.
  """
  vocab_size: int
  hidden_size: int
  num_hidden_layers: int
  num_attention_heads: int
  intermediate_size: int
  hidden_act: str = "gelu"
  hidden_dropout_prob: float = 0.1
  attention_probs_dropout_prob: float = 0.1
  max_position_embeddings: int = 512
  type_vocab_size: int = 2
  initializer_range: float = 0.02

  def __post_init__(self):
    for name in ("vocab_size", "hidden_size", "num_hidden_layers",
                 "num_attention_heads", "intermediate_size",
                 "max_position_embeddings", "type_vocab_size"):
      value = getattr(self, name)
      if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(
            f"BertConfig.{name} must be a positive integer, got {value!r}")
    for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
      value = getattr(self, name)
      if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        raise ValueError(
            f"BertConfig.{name} must be a number in [0, 1), got {value!r}")
    if (isinstance(self.initializer_range, bool) or
        not isinstance(self.initializer_range, (int, float)) or
        self.initializer_range <= 0):
      raise ValueError("BertConfig.initializer_range must be a positive "
                       f"number, got {self.initializer_range!r}")
    if self.hidden_act not in KNOWN_ACTIVATIONS:
      raise ValueError(f"BertConfig.hidden_act must be one of "
                       f"{list(KNOWN_ACTIVATIONS)}, got {self.hidden_act!r}")
    if self.hidden_size % self.num_attention_heads:
      raise ValueError(
          f"BertConfig.hidden_size ({self.hidden_size}) is not a multiple of "
          f"num_attention_heads ({self.num_attention_heads})")

  @property
  def head_size(self):
    """Width of one attention head: hidden_size / num_attention_heads."""
    return self.hidden_size // self.num_attention_heads

  @classmethod
  def from_dict(cls, d, source="<dict>"):
    """Makes a config from a dict with the original keys.

    Args:
      d: mapping of key -> value; every key of the original config is allowed,
        the five without defaults are required, any other key is an error.
      source: where `d` came from (a file name), named in error messages.

    Raises:
      ValueError: an unknown or missing key, or an invalid value.
    """
    if not isinstance(d, dict):
      raise ValueError(f"{source}: a BERT config must be a JSON object, got "
                       f"{type(d).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(d) - set(fields))
    if unknown:
      raise ValueError(f"{source}: unknown BERT config key(s) {unknown}; "
                       f"allowed keys are {sorted(fields)}")
    missing = [name for name, f in fields.items()
               if f.default is dataclasses.MISSING and name not in d]
    if missing:
      raise ValueError(f"{source}: missing BERT config key(s) {missing}")
    values = dict(d)
    # JSON writes 0.1 as a float but may write an integral dropout as 0;
    # accept ints for float fields, and floats with integral values for int
    # fields (some hand-written configs say 768.0).
    for name, value in values.items():
      if fields[name].type is int and isinstance(value, float) and value.is_integer():
        values[name] = int(value)
      if fields[name].type is float and isinstance(value, int) and not isinstance(value, bool):
        values[name] = float(value)
    try:
      return cls(**values)
    except ValueError as e:
      raise ValueError(f"{source}: {e}") from None

  @classmethod
  def from_json_file(cls, path):
    """Reads a `bert_config.json` (local path or gs://) into a BertConfig.

    Raises:
      FileNotFoundError: no file at `path`.
      ValueError: the file is not JSON, or has an unknown/missing/invalid key.
    """
    if not tf.io.gfile.exists(path):
      raise FileNotFoundError(f"BERT config file not found: {path}")
    with tf.io.gfile.GFile(path, "r") as f:
      text = f.read()
    try:
      d = json.loads(text)
    except json.JSONDecodeError as e:
      raise ValueError(f"{path}: not valid JSON ({e})") from None
    return cls.from_dict(d, source=path)

  def to_dict(self):
    """Returns the config as a dict with exactly the original keys."""
    return dataclasses.asdict(self)

  def to_json_string(self):
    """Returns the config as indented, key-sorted JSON text (as the original)."""
    return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

  def to_json_file(self, path):
    """Writes the config as JSON (local path or gs://), via a temporary name."""
    tmp = f"{path}.tmp"
    with tf.io.gfile.GFile(tmp, "w") as f:
      f.write(self.to_json_string())
    tf.io.gfile.rename(tmp, path, overwrite=True)

  def replace(self, **kw):
    """Returns a copy with some fields changed (validated like a new config)."""
    unknown = sorted(set(kw) - {f.name for f in dataclasses.fields(self)})
    if unknown:
      raise ValueError(f"unknown BERT config key(s) {unknown}")
    return dataclasses.replace(self, **kw)
