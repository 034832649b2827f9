"""The objectives by name, and the objective of a flag, a model or a
checkpoint.

`CLASSES` holds each family's class (`FAMILY_CLASSES` by family,
objective_names.FAMILIES); `OBJECTIVES` maps each name
(objective_names.OBJECTIVE_NAMES) to its family's member (`members()`)
with default options: what checkpoints, export and compare_objectives look
names up in. `resolve` turns --objective and the
records into the run's objective in one way for every family: the family's
`resolve(sentence_task, config, data)` (a member with its own class, one of
ELECTRA's variants, its class's), then a check that a named member is
the one the records and settings give, or one that leaves the records'
sentence labels unused (`mlm` on NSP or SOP records: BERT's "No NSP").
"""

from absl import logging
import tensorflow as tf

from bert_tf.training import checkpoints
from bert_tf.training import objective_names as names
from bert_tf.training.objectives import bert
from bert_tf.training.objectives import checkpoint_tag
from bert_tf.training.objectives import distillation
from bert_tf.training.objectives import electra
from bert_tf.training.objectives import electra_variants
from bert_tf.training.objectives import ltr

# Each family's class (objective_names.FAMILIES) first, then the classes of
# further members of a family (ELECTRA's variants, BERT's left-to-right LM),
# whose `resolve` a --objective naming them takes.
CLASSES = (bert.BertObjective, electra.ElectraObjective, distillation.DistillationObjective,
           *electra_variants.VARIANTS, ltr.LtrObjective)
FAMILY_CLASSES = {}
for _cls in CLASSES:
  FAMILY_CLASSES.setdefault(_cls.family, _cls)
_MEMBERS = {name: o for cls in CLASSES for name, o in cls.members().items()}
OBJECTIVES = {name: _MEMBERS[name] for name in names.OBJECTIVE_NAMES}


def get(name):
  """The objective registered as `name`; ValueError naming the choices."""
  if name not in OBJECTIVES:
    raise ValueError(f"objective {name!r} is not one of {', '.join(OBJECTIVES)}")
  return OBJECTIVES[name]


def resolve(objective=names.BERT, sentence_task=None, options=None, data=None):
  """The objective for `--objective=objective` on records of `sentence_task`.

  Args:
    objective: one of FAMILIES, or an OBJECTIVES name (which must agree
      with the records and settings).
    sentence_task: the records' sentence task ("nsp", "sop", "none"), None
      for records that do not say (the original's: NSP).
    options: the run's settings (its TrainConfig), for a family that takes
      options (distill: the teacher, the loss weights; electra: the
      generator, discriminator weight, mask rule); BERT's take none.
    data: the training (or eval) records' pipeline.DataInfo, for
      objectives that read something from the records (ELECTRA's [MASK] id).

  Raises:
    ValueError: an unknown objective, or a name the records contradict.
  """
  family = names.family_of(objective)
  cls = FAMILY_CLASSES[family]
  if objective in OBJECTIVES and type(OBJECTIVES[objective]) is not cls:
    cls = type(OBJECTIVES[objective])  # a member with its own class
  resolved = cls.resolve(sentence_task, options, data)
  if objective not in (family, resolved.name):
    named = get(objective)
    if named.ignores_sentence_labels(sentence_task):
      logging.info("objective %s: the records' sentence labels (sentence_task=%s) are not "
                   "used", named.name, sentence_task or names.DEFAULT_SENTENCE_TASK)
      return named
    raise named.contradiction(resolved, sentence_task)
  return resolved


def of_model(model):
  """The objective `model` was built for (`build_model` records it as
  `model.objective`); a pretrainer built directly (fine-tuning, tests) is
  MLM + NSP, or MLM alone without the sentence-pair head."""
  objective = getattr(model, "objective", None)
  if objective is not None:
    return objective
  return bert.BY_TASK["nsp" if getattr(model, "nsp_head", None) is not None else "none"]


def from_checkpoint(checkpoint):
  """The objective a checkpoint was trained for, with the options it saved;
  mlm_nsp (the original's) for a checkpoint that does not say (TF1
  originals, older bert_tf runs). See `checkpoint_tag`.

  Args:
    checkpoint: a prefix, or a directory (`checkpoints.resolve_checkpoint`).

  Raises:
    FileNotFoundError: no checkpoint there.
  """
  name, options_json = checkpoint_tag.read_tag(checkpoints.resolve_checkpoint(checkpoint))
  return get(name).with_options_json(options_json)


def check_objective(directory, objective):
  """Raises ValueError when the latest checkpoint in `directory` was trained
  for another objective than `objective` (a run would resume into other
  heads) or other networks; nothing without a checkpoint."""
  latest = tf.train.latest_checkpoint(directory) if directory else None
  if latest:
    saved = from_checkpoint(latest)
    if saved.name != objective.name:
      raise ValueError(f"{directory} holds a checkpoint trained for objective {saved.name} "
                       f"({latest}); this run's objective is {objective.name}: use another "
                       "--output_dir or records of the same objective")
    if saved.networks != objective.networks:
      raise ValueError(f"{directory} holds a checkpoint trained for objective {saved.name} "
                       f"with another generator {saved.networks} ({latest}); this run's is "
                       f"{objective.networks}: use another --output_dir or the same settings")
