"""Pretraining objectives: one module per family, one base class.

  base            `Objective`: the interface and the defaults every objective has
  bert            mlm_nsp (BERT), mlm_sop (ALBERT), mlm (RoBERTa)
  electra         ELECTRA: generator + replaced-token discriminator
  distillation    DistilBERT: a student against a frozen teacher
  registry        the objectives by name; the objective of --objective and the
                  records (`resolve`), of a model, of a checkpoint
  checkpoint_tag  the objective's name and options saved in a checkpoint

Names and defaults live in `training/objective_names.py` (no TensorFlow).
The training loop, the evaluation, the export, fine-tuning and the
comparison call only `Objective`'s methods and attributes, so a new
objective is a new module here (a subclass of `Objective`), its class in
`registry.FAMILY_CLASSES` and its name in objective_names, plus its head in
`models/` (docs/architecture.md works an example).

The package's API, for `from bert_tf.training import objectives`:
"""

from bert_tf.training.objectives.base import Objective
from bert_tf.training.objectives.bert import BertObjective
from bert_tf.training.objectives.checkpoint_tag import checkpoint_variables
from bert_tf.training.objectives.distillation import check_teacher_vocab
from bert_tf.training.objectives.distillation import DistillationObjective
from bert_tf.training.objectives.distillation import DistillOptions
from bert_tf.training.objectives.electra import ElectraObjective
from bert_tf.training.objectives.electra import ElectraOptions
from bert_tf.training.objectives.registry import check_objective
from bert_tf.training.objectives.registry import from_checkpoint
from bert_tf.training.objectives.registry import get
from bert_tf.training.objectives.registry import OBJECTIVES
from bert_tf.training.objectives.registry import of_model
from bert_tf.training.objectives.registry import resolve
