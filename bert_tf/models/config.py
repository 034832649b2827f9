"""The model configuration: the keys of the original `bert_config.json`.

A `BertConfig` is frozen and validated when it is made, so a bad value in a
config file fails at load time with the key and the file named, not hours
into a run.

Like the original (whose `BertConfig.from_dict` copies every key of the
file), any key loads. Keys the model does not use are kept in `extra` and
written back unchanged by `to_dict`/`to_json_file`, so a released
`bert_config.json` round-trips as it is. The released multilingual and
Chinese models carry such keys (`directionality` and the `pooler_*` keys,
which the released code never reads); they are logged at INFO. An unknown key
that looks like a misspelling of one of ours (`hidden_sise`) is logged as a
WARNING naming the key it resembles, since the setting it meant to change is
then silently at its default.
"""

import dataclasses
import difflib
import json
import typing
from typing import Any, Mapping, Optional

from absl import logging

from bert_tf.io import file_io as files

# Activations the original `bert_config.json` may name, and ours
# "gelu_exact". The model runs "gelu" (the tanh approximation, as the
# original's `gelu`) and "gelu_exact" (the erf GELU, transformers' "gelu";
# models.activations); the others are accepted here so that any original
# config file loads, and rejected with a clear message by
# `modeling.build_encoder`.
KNOWN_ACTIVATIONS = ("gelu", "gelu_exact", "relu", "tanh", "linear")

# Keys of released bert_config.json files that no BERT code reads (the
# multilingual and Chinese releases have them). They are kept in `extra` and
# logged at INFO, never flagged as typos (`pooler_num_attention_heads` is
# otherwise close to `num_attention_heads`).
RELEASED_EXTRA_KEYS = frozenset({
    "directionality", "pooler_fc_size", "pooler_num_attention_heads",
    "pooler_num_fc_layers", "pooler_size_per_head", "pooler_type"})
# The keys an original ALBERT `albert_config.json` (google-research/albert)
# adds to BERT's. They are fields of BertConfig, None when the file does not
# have them, and written back only when present, so a BERT config round-trips
# without them. `embedding_size` is what makes a config ALBERT.
ALBERT_KEYS = ("embedding_size", "num_hidden_groups", "inner_group_num",
               "down_scale_factor", "net_structure_type", "gap_size",
               "num_memory_blocks", "layers_to_keep")
# What the ALBERT keys mean when an ALBERT file leaves them out: the defaults
# of the original's AlbertConfig (and of its released files) for the keys
# it reads; no released code reads the last five (see BertConfig).
ALBERT_DEFAULTS = {"num_hidden_groups": 1, "inner_group_num": 1,
                   "down_scale_factor": 1, "net_structure_type": 0, "gap_size": 0,
                   "num_memory_blocks": 0, "layers_to_keep": ()}
# difflib similarity above which an unknown key is reported as a likely typo.
_TYPO_CUTOFF = 0.8


def _albert_field():
  return dataclasses.field(default=None, kw_only=True)


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
    type_vocab_size: rows of the segment-embedding table; the pretraining
      data uses ids 0 and 1 (the releases say 2). 16 when absent, as the
      original's BertConfig.
    initializer_range: stddev of the truncated normal used for every kernel
      and embedding.
    embedding_size: ALBERT only (None for BERT): width E of the factorized
      token, position and segment embeddings, projected to hidden_size by
      `embedding_hidden_mapping_in`. A config with it is an ALBERT config
      (`is_albert`).
    num_hidden_groups: ALBERT: groups of layers that share parameters (1:
      every layer shares one set, as in every released ALBERT).
    inner_group_num: ALBERT: distinct attention+FFN blocks run inside each
      group per layer (1 in every released ALBERT).
    down_scale_factor, net_structure_type, gap_size, num_memory_blocks,
    layers_to_keep: ALBERT keys that the released configs carry but that
      google-research/albert's modeling.py never reads (the model is the same
      whatever their value); kept so such a file round-trips.
    extra: (keyword only) keys of the config file that the model does not
      use, kept so that `to_dict` writes the file back unchanged; values are
      JSON values. Empty for configs made in code.
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
  type_vocab_size: int = 16
  initializer_range: float = 0.02
  # ALBERT's keys (see ALBERT_KEYS); None: not in the file. Keyword only,
  # so positional construction stays that of the original's keys.
  embedding_size: Optional[int] = _albert_field()
  num_hidden_groups: Optional[int] = _albert_field()
  inner_group_num: Optional[int] = _albert_field()
  down_scale_factor: Optional[float] = _albert_field()
  net_structure_type: Optional[int] = _albert_field()
  gap_size: Optional[int] = _albert_field()
  num_memory_blocks: Optional[int] = _albert_field()
  layers_to_keep: Optional[tuple] = _albert_field()
  # Not hashed: a dict is unhashable, and the known fields identify a model.
  extra: Mapping[str, Any] = dataclasses.field(
      default_factory=dict, kw_only=True, hash=False)

  def __post_init__(self):
    if not isinstance(self.extra, Mapping):
      raise ValueError(f"BertConfig.extra must be a mapping, got {self.extra!r}")
    clash = sorted(set(self.extra) & set(_known_keys()))
    if clash:
      raise ValueError(f"BertConfig.extra repeats known key(s) {clash}")
    try:
      json.dumps(dict(self.extra))
    except (TypeError, ValueError) as e:
      raise ValueError(f"BertConfig.extra must hold JSON values: {e}") from None
    # A private copy, so a caller's later change to its dict cannot reach
    # this frozen config.
    object.__setattr__(self, "extra", json.loads(json.dumps(dict(self.extra))))
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
    self._check_albert_keys()
    if self.hidden_size % self.num_attention_heads:
      raise ValueError(
          f"BertConfig.hidden_size ({self.hidden_size}) is not a multiple of "
          f"num_attention_heads ({self.num_attention_heads})")

  def _check_albert_keys(self):
    present = [k for k in ALBERT_KEYS if getattr(self, k) is not None]
    if present and self.embedding_size is None:
      raise ValueError(
          f"BertConfig has ALBERT key(s) {present} but no embedding_size: an "
          f"ALBERT config needs embedding_size (the factorized embedding width)")
    for name in ("embedding_size", "num_hidden_groups", "inner_group_num"):
      value = getattr(self, name)
      if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                or value <= 0):
        raise ValueError(
            f"BertConfig.{name} must be a positive integer, got {value!r}")
    for name in ("net_structure_type", "gap_size", "num_memory_blocks"):
      value = getattr(self, name)
      if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                or value < 0):
        raise ValueError(
            f"BertConfig.{name} must be an integer >= 0, got {value!r}")
    if self.down_scale_factor is not None and (
        isinstance(self.down_scale_factor, bool) or
        not isinstance(self.down_scale_factor, (int, float)) or
        self.down_scale_factor <= 0):
      raise ValueError("BertConfig.down_scale_factor must be a positive number, "
                       f"got {self.down_scale_factor!r}")
    if self.layers_to_keep is not None:
      if (isinstance(self.layers_to_keep, (str, bytes)) or
          not isinstance(self.layers_to_keep, (list, tuple)) or
          not all(isinstance(n, int) and not isinstance(n, bool)
                  for n in self.layers_to_keep)):
        raise ValueError("BertConfig.layers_to_keep must be a list of layer "
                         f"indices, got {self.layers_to_keep!r}")
      # A tuple, so the frozen config stays hashable.
      object.__setattr__(self, "layers_to_keep", tuple(self.layers_to_keep))

  @property
  def is_albert(self):
    """True for an ALBERT config (it has `embedding_size`)."""
    return self.embedding_size is not None

  def albert_value(self, name):
    """An ALBERT key's value, or the original's default when the file left
    it out (ALBERT_DEFAULTS); for ALBERT configs only."""
    value = getattr(self, name)
    return ALBERT_DEFAULTS.get(name) if value is None else value

  @property
  def head_size(self):
    """Width of one attention head: hidden_size / num_attention_heads."""
    return self.hidden_size // self.num_attention_heads

  @classmethod
  def from_dict(cls, d, source="<dict>"):
    """Makes a config from a dict with the original keys.

    Args:
      d: mapping of key -> value. The five keys without defaults are
        required; any key that is not ours goes to `extra` (logged once at
        INFO; at WARNING when it looks like a misspelling of one of ours).
      source: where `d` came from (a file name), named in messages.

    Raises:
      ValueError: a missing key (naming a likely misspelling of it, if
        any), or an invalid value.
    """
    if not isinstance(d, dict):
      raise ValueError(f"{source}: a BERT config must be a JSON object, got "
                       f"{type(d).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.name != "extra"}
    unknown = sorted(set(d) - set(fields))
    typos = {key: match[0] for key in unknown
             if key not in RELEASED_EXTRA_KEYS and
             (match := difflib.get_close_matches(key, fields, n=1, cutoff=_TYPO_CUTOFF))}
    missing = [name for name, f in fields.items()
               if f.default is dataclasses.MISSING and name not in d]
    if missing:
      meant = {k: v for k, v in typos.items() if v in missing}
      hint = f" (misspelled as {sorted(meant)}?)" if meant else ""
      raise ValueError(f"{source}: missing BERT config key(s) {missing}{hint}")
    for key, match in sorted(typos.items()):
      logging.warning("%s: unknown BERT config key %r (did you mean %r?) has no "
                      "effect; %s=%r is used", source, key, match, match,
                      d.get(match, fields[match].default))
    others = [key for key in unknown if key not in typos]
    if others:
      logging.info("%s: BERT config key(s) %s are not used by the model; kept "
                   "as they are", source, others)
    values = {k: v for k, v in d.items() if k in fields}
    # JSON writes 0.1 as a float but may write an integral dropout as 0;
    # accept ints for float fields, and floats with integral values for int
    # fields (some hand-written configs say 768.0).
    for name, value in values.items():
      kind = _base_type(fields[name].type)
      if kind is int and isinstance(value, float) and value.is_integer():
        values[name] = int(value)
      if kind is float and isinstance(value, int) and not isinstance(value, bool):
        values[name] = float(value)
    try:
      return cls(**values, extra={k: d[k] for k in unknown})
    except ValueError as e:
      raise ValueError(f"{source}: {e}") from None

  @classmethod
  def from_json_file(cls, path):
    """Reads a `bert_config.json` (local path or gs://) into a BertConfig.

    Raises:
      FileNotFoundError: no file at `path`.
      ValueError: the file is not JSON, or has a missing or invalid key.
    """
    return cls.from_dict(files.read_json(path, "BERT config file"), source=path)

  def to_dict(self):
    """Returns the config as a dict: the original keys plus `extra`'s, as
    they were read (so from_dict(to_dict()) == self). ALBERT keys appear
    only when set, so a BERT config gets none of them."""
    d = {name: getattr(self, name) for name in _known_keys()
         if not (name in ALBERT_KEYS and getattr(self, name) is None)}
    if "layers_to_keep" in d:
      d["layers_to_keep"] = list(d["layers_to_keep"])
    d.update(json.loads(json.dumps(self.extra)))  # a copy, deep
    return d

  def to_json_string(self):
    """Returns the config as indented, key-sorted JSON text (as the original)."""
    return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

  def to_json_file(self, path):
    """Writes the config as JSON (local path or gs://), via a temporary name."""
    files.atomic_write(path, self.to_json_string())

  def replace(self, **kw):
    """Returns a copy with some fields changed (validated like a new config).

    `extra` is kept unless given. Unlike a config file, a keyword that is
    not a field is an error here (code has no released files to accept).
    """
    unknown = sorted(set(kw) - {f.name for f in dataclasses.fields(self)})
    if unknown:
      raise ValueError(f"unknown BERT config key(s) {unknown}")
    return dataclasses.replace(self, **kw)


def _base_type(annotation):
  """int for int and Optional[int], float for float and Optional[float]."""
  args = [a for a in typing.get_args(annotation) if a is not type(None)]
  return args[0] if len(args) == 1 else annotation


def _known_keys():
  """The original config keys, in declaration order (not `extra`)."""
  return [f.name for f in dataclasses.fields(BertConfig) if f.name != "extra"]


def write_bert_config(template_file, vocab_size, output_file, **overrides):
  """Writes `template_file`'s BertConfig with `vocab_size` (and `overrides`,
  config keys) to `output_file`, atomically; returns the written BertConfig.

  Raises:
    FileNotFoundError, ValueError: a missing or invalid template, or override.
  """
  config = BertConfig.from_json_file(template_file).replace(vocab_size=vocab_size, **overrides)
  config.to_json_file(output_file)
  return config
