"""Distils a trained BERT (the teacher) into a smaller one (DistilBERT).

The student trains on the same records as pretraining, against the frozen
teacher's masked-LM distribution:

  loss = --alpha_ce  x T^2 KL(teacher || student), softened by --temperature T,
                       at the masked positions
       + --alpha_mlm x masked-LM cross-entropy on the true tokens
       + --alpha_cos x (1 - cosine) of the last hidden states, on real tokens

(DistilBERT's 5.0, 2.0, 1.0 and T = 2). The flags are run_pretraining's
where they mean the same (--bert_config_file is the STUDENT's; without it the
student is the teacher's config with half the layers), plus the teacher and
loss flags below. The student starts from every other teacher layer
(--student_init=teacher) or from scratch. Resume, SIGTERM, TensorBoard
(each loss term) and eval work as in run_pretraining; eval_results.txt
holds the student's masked_lm_accuracy beside teacher_masked_lm_accuracy.
The student's bert_config.json is written to --output_dir; export the
student with

  python -m bert_tf.export_saved_model --bert_config_file=OUT/bert_config.json \\
    --checkpoint=OUT --vocab_file=vocab.txt --export_dir=/tmp/student_savedmodel

Example (a 4-layer teacher into 2 layers):

  python -m bert_tf.distill --teacher_config_file=teacher/bert_config.json \\
    --teacher_checkpoint=/tmp/teacher --input_file=data/train-*.tfrecord \\
    --eval_input_file=data/heldout-*.tfrecord --output_dir=/tmp/student \\
    --do_train --do_eval --train_batch_size=64 --num_train_steps=2000 \\
    --num_warmup_steps=200 --learning_rate=1e-3
"""

import os

from absl import app
from absl import flags
from absl import logging

from bert_tf import cli
from bert_tf import run_pretraining
from bert_tf.training import objective_names
from bert_tf.training import objectives

FLAGS = flags.FLAGS

# run_pretraining's flags that have no meaning here.
_NOT_USED = {
    "init_checkpoint": "the student starts from the teacher (--student_init)",
    "objective": "distill trains the distillation objective",
}


def define_flags(flag_values):
  """run_pretraining's flags plus the distillation's options (the teacher,
  the student's start, the loss weights: `DistillOptions`)."""
  run_pretraining.define_flags(flag_values)
  cli.define_option_flags(objectives.OPTIONS[objective_names.DISTILL], flag_values, __name__)


def config_from_flags():
  """(TrainConfig with objective distill and its DistillOptions, student
  BertConfig); raises app.UsageError."""
  from bert_tf.training.objectives import distillation  # pylint: disable=g-import-not-at-top
  for name, why in _NOT_USED.items():
    if FLAGS[name].present:
      raise app.UsageError(f"--{name} is not used by distill: {why}")
  options = cli.objective_options(objective_names.DISTILL, FLAGS)
  try:  # also checks the teacher's flags when --bert_config_file is given
    student_config = distillation.default_student_config(options)
  except ValueError as e:
    raise app.UsageError(str(e)) from None
  if FLAGS.bert_config_file:
    student_config = None  # run_pretraining reads it
  return run_pretraining.config_from_flags(student_config, FLAGS, objective_names.DISTILL)


def main(argv):
  del argv
  from bert_tf.io import file_io as files  # pylint: disable=g-import-not-at-top
  from bert_tf.training import objectives  # pylint: disable=g-import-not-at-top
  config, student_config = config_from_flags()
  logging.set_verbosity(logging.INFO)
  objectives.check_teacher_vocab(config)
  result = run_pretraining.train(config, student_config)
  # The student's config beside its checkpoints, for export and fine-tuning.
  path = os.path.join(config.output_dir, "bert_config.json")
  files.atomic_write(path, student_config.to_json_string())
  logging.info("Student config: %s", path)
  run_pretraining.log_eval(result)
  return 0


def run():
  cli.run(main, define_flags)


if __name__ == "__main__":
  run()
