"""DistilBERT's student and the frozen teacher beside it.

DistilBERT (Sanh et al. 2019) trains a shallower BERT (the student) to
reproduce a trained one (the teacher). This module holds the two model-side
pieces; the loss lives in `training.objectives.DistillationObjective`.

- `init_student_from_teacher`: the student starts from the teacher by
  taking one layer out of two (teacher layer 2i -> student layer i), plus
  the embeddings, the pooler and the masked-LM head (and the sentence-pair
  head when both have one). This is the paper's rule. Hugging Face's
  `extract_distilbert.py` picks teacher layers 0, 2, 4, 7, 9, 11 for a
  6-layer student of BERT-base (the last one kept); we keep the paper's
  plain every-other-layer rule, which needs no per-depth table.
- `Distiller`: a Keras model holding the student pretrainer (trainable) and
  the teacher pretrainer (trainable=False, always called with
  training=False, its forward compiled with XLA, its outputs behind
  stop_gradient: no backward reaches it). Its outputs are the
  student's plus `teacher_mlm_logits` and `teacher_sequence_output`.

- `load_keras_hub_teacher`: a teacher from a keras-hub `BertMaskedLM`
  preset (one whose task.json/task.weights.h5 hold the masked-LM head; a
  backbone-only preset, as `export_saved_model --keras_hub_preset_out`
  writes, has no head to give soft targets).

Unlike DistilBERT's student we keep the token-type (segment) embeddings
and the pooler: the student is an ordinary `BertPretrainer` of a smaller
`BertConfig`, so everything downstream (export, fine-tuning, the TF1
checkpoint layout) takes it unchanged.
"""

import dataclasses
import json
import os

import keras
import keras_hub
import tensorflow as tf

from bert_tf.io import file_io
from bert_tf.models import modeling
from bert_tf.models.config import BertConfig

# The features the teacher reads.
_TEACHER_INPUTS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")
# Settings a student initialized from the teacher must share with it (every
# weight it copies has shapes set by these).
SHARED_SETTINGS = ("vocab_size", "hidden_size", "num_attention_heads", "intermediate_size",
                   "max_position_embeddings", "type_vocab_size", "hidden_act")


def default_student_config(teacher_config: BertConfig) -> BertConfig:
  """The teacher's config with half its layers (at least one), DistilBERT's
  choice (BERT-base's 12 layers -> 6)."""
  return dataclasses.replace(teacher_config,
                             num_hidden_layers=max(1, teacher_config.num_hidden_layers // 2))


def teacher_layers(student_config: BertConfig):
  """The teacher layer each student layer starts from: [0, 2, 4, ...]."""
  return [2 * i for i in range(student_config.num_hidden_layers)]


def check_student_config(teacher_config: BertConfig, student_config: BertConfig,
                         teacher_name="teacher config", student_name="student config"):
  """Raises a one-line ValueError, naming both configs, when the teacher's
  layers cannot initialize the student: a shared setting differs, or the
  student has more layers than every other teacher layer gives."""
  for key in SHARED_SETTINGS:
    have, want = getattr(teacher_config, key), getattr(student_config, key)
    if have != want:
      raise ValueError(
          f"{student_name} cannot be initialized from the teacher's layers: its {key}={want} "
          f"but {teacher_name} has {key}={have} (use --student_init=scratch, or a student "
          f"config with the teacher's {key})")
  most = (teacher_config.num_hidden_layers + 1) // 2
  if student_config.num_hidden_layers > most:
    raise ValueError(
        f"{student_name} cannot be initialized from the teacher's layers: it has "
        f"num_hidden_layers={student_config.num_hidden_layers} but every other layer of "
        f"{teacher_name} (num_hidden_layers={teacher_config.num_hidden_layers}) gives at "
        f"most {most} (use --student_init=scratch, or at most {most} layers)")


def _copy_weights(source_layer, target_layer):
  source, target = source_layer.weights, target_layer.weights
  if len(source) != len(target):
    raise ValueError(f"layer {source_layer.name} has {len(source)} weights but "
                     f"{target_layer.name} has {len(target)}")
  for s, t in zip(source, target):
    if tuple(s.shape) != tuple(t.shape):
      raise ValueError(f"cannot copy {s.path} {tuple(s.shape)} into {t.path} {tuple(t.shape)}")
    t.assign(s)


def init_student_from_teacher(student: modeling.BertPretrainer,
                              teacher: modeling.BertPretrainer):
  """Copies the teacher's weights into the student, every other layer.

  Student layer i gets teacher layer 2i; the embeddings (word, position,
  token type, their LayerNorm), the pooler and the masked-LM head are copied
  whole, and the sentence-pair head when both models have one (a student
  without it simply has none).

  Raises:
    ValueError: `check_student_config` of the two configs.
  Returns:
    The teacher layer indices used, [0, 2, ...].
  """
  check_student_config(teacher.config, student.config)
  t_enc, s_enc = teacher.encoder, student.encoder
  for name in ("token_embedding", "position_embedding", "segment_embedding",
               "embeddings_layer_norm", "pooled_dense"):
    _copy_weights(getattr(t_enc, name), getattr(s_enc, name))
  layers = teacher_layers(student.config)
  for i, j in enumerate(layers):
    _copy_weights(t_enc.transformer_layers[j], s_enc.transformer_layers[i])
  # The MLM head's decoder is tied to the word embeddings (copied above);
  # its own weights are the transform, its LayerNorm and the output bias.
  _copy_weights(teacher.mlm_head, student.mlm_head)
  if teacher.nsp_head is not None and student.nsp_head is not None:
    _copy_weights(teacher.nsp_head, student.nsp_head)
  return layers


def _logits_everywhere(pretrainer, sequence_output):
  """float32 [batch, seq, vocab]: the pretrainer's MLM head at every position
  (ids never pass through floats: the positions are an int32 range)."""
  shape = tf.shape(sequence_output)
  positions = tf.tile(tf.range(shape[1])[None, :], [shape[0], 1])
  return tf.cast(pretrainer.mlm_head(sequence_output, mask_positions=positions), tf.float32)


class Distiller(keras.Model):
  """The student pretrainer and the frozen teacher, run on the same batch.

  Attributes:
    student: modeling.BertPretrainer, trained and exported.
    teacher: modeling.BertPretrainer with trainable=False, called with
      training=False (no dropout: DistilBERT's teacher is in eval mode).

  A training checkpoint of this model holds both (model/student/...,
  model/teacher/...): resume needs no teacher checkpoint, and export reads
  model/student alone.
  """

  def __init__(self, student, teacher, all_token_logits=False, **kwargs):
    kwargs.setdefault("name", "distiller")
    super().__init__(**kwargs)
    self.student = student
    self.teacher = teacher
    # Both MLM heads also score every position (the KL on every real token).
    self.all_token_logits = bool(all_token_logits)
    self.teacher.trainable = False
    self.config = student.config  # the model being trained
    # The teacher's forward, compiled on its own: without dropout or a
    # backward pass, XLA fuses its elementwise work (GELU, LayerNorm, bias
    # adds) into the matmuls' loops: 20% less time on CPU.
    self._teacher_forward = tf.function(self._run_teacher, jit_compile=True)
    self.built = True

  def _run_teacher(self, inputs):
    outputs = self.teacher(inputs, training=False)
    kept = {k: outputs[k] for k in ("sequence_output", "mlm_logits") if k in outputs}
    if self.all_token_logits:
      kept["mlm_logits_all"] = _logits_everywhere(self.teacher, outputs["sequence_output"])
    return kept

  def call(self, inputs, training=False):
    """Runs student and teacher.

    Args:
      inputs: as `BertPretrainer.call` (int [batch, seq] input_ids,
        input_mask, segment_ids; int [batch, preds] masked_lm_positions).
      training: the student's dropout; the teacher runs without.

    Returns:
      The student's outputs (float32 mlm_logits [batch, preds, vocab],
      sequence_output [batch, seq, H], pooled_output [batch, H], and
      nsp_logits [batch, 2] when it has the head) plus
      teacher_mlm_logits float32 [batch, preds, vocab] and
      teacher_sequence_output [batch, seq, H_teacher], without gradient;
      with all_token_logits, mlm_logits_all and teacher_mlm_logits_all
      [batch, seq, vocab] too.
    """
    outputs = dict(self.student(inputs, training=training))
    teacher = self._teacher_forward({k: inputs[k] for k in _TEACHER_INPUTS if k in inputs})
    outputs["teacher_sequence_output"] = tf.stop_gradient(teacher["sequence_output"])
    if "mlm_logits" in teacher:
      outputs["teacher_mlm_logits"] = tf.stop_gradient(teacher["mlm_logits"])
    if self.all_token_logits:
      outputs["mlm_logits_all"] = _logits_everywhere(self.student, outputs["sequence_output"])
      outputs["teacher_mlm_logits_all"] = tf.stop_gradient(teacher["mlm_logits_all"])
    return outputs

  def count_params(self):
    """The student's parameter count: the model this run trains and
    exports (the plan line reports it beside the student's config)."""
    return self.student.count_params()


# ------------------------------------------------------------------------------
# A teacher from a keras-hub preset
# ------------------------------------------------------------------------------


def is_keras_hub_preset(path):
  """Whether `path` is a keras-hub preset directory (config.json and
  metadata.json), not a training checkpoint."""
  return all(file_io.exists(os.path.join(path, name))
             for name in ("config.json", "metadata.json"))


def _read_json(path):
  with file_io.open_file(path, "r") as f:
    return json.load(f)


def preset_bert_config(preset_dir):
  """The BertConfig of a keras-hub BERT preset: the one bert_tf kept in
  metadata.json ("bert_tf"), else the BertBackbone config in config.json."""
  metadata = _read_json(os.path.join(preset_dir, "metadata.json"))
  if "bert_tf" in metadata:
    return BertConfig.from_dict(metadata["bert_tf"]["bert_config"], source=preset_dir)
  backbone = _read_json(os.path.join(preset_dir, "config.json"))
  if backbone.get("class_name") != "BertBackbone":
    raise ValueError(f"keras-hub preset {preset_dir} holds a {backbone.get('class_name')}, "
                     "not a BertBackbone")
  c = backbone["config"]
  return BertConfig(vocab_size=c["vocabulary_size"], hidden_size=c["hidden_dim"],
                    num_hidden_layers=c["num_layers"], num_attention_heads=c["num_heads"],
                    intermediate_size=c["intermediate_dim"],
                    hidden_dropout_prob=c["dropout"], attention_probs_dropout_prob=c["dropout"],
                    max_position_embeddings=c["max_sequence_length"],
                    type_vocab_size=c["num_segments"])


def load_keras_hub_teacher(preset_dir, bert_config=None):
  """A BertPretrainer (no sentence-pair head) from a keras-hub BertMaskedLM
  preset: its backbone as the encoder, its masked-LM head's weights copied
  into ours.

  keras-hub's head applies exact GELU, ours (the original's) the tanh
  approximation; the two differ by under 1e-3 per activation, so the
  teacher's logits are close to, not bit-equal with, keras-hub's.

  Raises:
    ValueError: the preset has no BertMaskedLM task (no masked-LM head), or
      `bert_config` (when given) differs from the preset's in a shape.
  """
  task_path = os.path.join(preset_dir, "task.json")
  task_class = (_read_json(task_path).get("class_name")
                if file_io.exists(task_path) else None)
  if task_class != "BertMaskedLM":
    raise ValueError(
        f"keras-hub preset {preset_dir} has no masked-LM head (task: {task_class or 'none'}, "
        "not BertMaskedLM), so it cannot give the soft targets: use a BertMaskedLM preset "
        "or the training checkpoint it was exported from")
  config = preset_bert_config(preset_dir)
  if bert_config is not None:
    for key in SHARED_SETTINGS[:-1] + ("num_hidden_layers",):
      if getattr(bert_config, key) != getattr(config, key):
        raise ValueError(f"the teacher config has {key}={getattr(bert_config, key)} but "
                         f"keras-hub preset {preset_dir} has {getattr(config, key)}")
    config = bert_config
  task = keras_hub.models.BertMaskedLM.from_preset(preset_dir, preprocessor=None)
  teacher = modeling.BertPretrainer(config, encoder=task.backbone, sentence_head=False)
  theirs = {w.path: w for w in task.masked_lm_head.weights}
  for weight in teacher.mlm_head.weights:
    if weight.path not in theirs:
      raise ValueError(f"keras-hub preset {preset_dir}: its masked-LM head has no {weight.path}")
    weight.assign(theirs[weight.path])
  return teacher
