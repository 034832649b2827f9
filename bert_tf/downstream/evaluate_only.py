"""A fine-tuned model evaluated and run as it is: the finetune tool's
--do_train=false (the original run_classifier's --do_eval / --do_predict
without --do_train).

The model is a transformers folder of a fine-tuned class
(Bert/Albert/ElectraForSequenceClassification for a classification or
regression task, *ForTokenClassification for tagging; `--hf_out` writes
them): its encoder and its head, read as they are, its outputs named by
its config.json id2label. The task's labels (a GLUE task's list, or the
train file's when one is given) must be the head's, in any order (the
head's outputs are reordered to the task's); without either the head's
are the task's. A folder without a fine-tuned head (a pretraining one,
BertForPreTraining), one of another task, and any other checkpoint (bert_tf's
own checkpoints keep no label names) are refused in one line.

`run(config, bert_config)`, which the classification and tagging kinds
call for config.do_train false (`TaskKind.run`), evaluates on the dev files (do_eval:
eval_results.txt, a tagger's dev_predictions.conll) and predicts the test
file (do_predict: test_results.tsv), as the trained runs write them.
"""

import os

from bert_tf.downstream.classification import tsv as classification
from bert_tf.downstream.tagging import conll
from bert_tf.downstream.classification import glue
from bert_tf.data.input import length_buckets
from bert_tf.models import hf_checkpoint
from bert_tf.downstream import finetune
from bert_tf.downstream.classification import finetune_tsv
from bert_tf.downstream.tagging import tagging

CLASSES = ("Bert", "Albert", "Electra")


def _accepted(task):
  return (f"a transformers {' / '.join(c + task for c in CLASSES)} folder (--hf_out "
          f"writes one)")


def read_head(init_checkpoint, task):
  """The fine-tuned head (hf_checkpoint.HfHead) of the transformers folder
  `init_checkpoint`, of head task `task` (hf_checkpoint.SEQUENCE_CLASSIFICATION
  or TOKEN_CLASSIFICATION).

  Raises:
    ValueError: one line: not a transformers folder, a folder without a
      fine-tuned head (a pretraining one) or of another task, naming what
      is accepted; ElectraForSequenceClassification (its head is not ours).
  """
  accepted = _accepted(task)
  if not hf_checkpoint.is_hf_folder(init_checkpoint):
    raise ValueError(f"init_checkpoint={init_checkpoint}: do_train=false evaluates "
                     f"{accepted} as it is; this is not a transformers folder (a bert_tf, "
                     f"TF1 or keras-hub checkpoint keeps no label names)")
  architecture = hf_checkpoint.read_hf_model(init_checkpoint).architecture
  if architecture not in hf_checkpoint.HEAD_ARCHITECTURES:
    raise ValueError(f"init_checkpoint={init_checkpoint}: its class {architecture} has no "
                     f"fine-tuned head (a pretraining checkpoint: fine-tune it, without "
                     f"do_train=false); do_train=false evaluates {accepted}")
  if hf_checkpoint.HEAD_ARCHITECTURES[architecture][1] != task:
    raise ValueError(f"init_checkpoint={init_checkpoint}: its class {architecture} is not "
                     f"the task's; do_train=false evaluates {accepted}")
  return hf_checkpoint.read_hf_head(init_checkpoint)


def _regression(head):
  # transformers treats a one-output head as a regression (problem_type or not).
  return head.regression or head.kernel.shape[1] == 1


def _mismatch(config, head_labels, task_labels, source):
  return ValueError(f"init_checkpoint={config.init_checkpoint}: its head's labels "
                    f"(config.json id2label) {head_labels} are not the task's {task_labels} "
                    f"({source})")


def classifier_space(config, head):
  """The task's LabelSpace, checked against the head's: a GLUE task's,
  the train file's (when given), else the head's.

  Raises:
    ValueError: one line naming both label sets (or both kinds, regression
      or classification) when they differ.
  """
  space = finetune_tsv.task_space(config)
  regression = _regression(head)
  if space is None:
    if config.task_type != "auto" and (config.task_type == "regression") != regression:
      raise ValueError(f"init_checkpoint={config.init_checkpoint} is a "
                       f"{'regression' if regression else 'classifier'}, the task_type "
                       f"{config.task_type}")
    return classification.LabelSpace(() if regression else tuple(head.labels), regression)
  source = (f"GLUE {config.task_name}" if config.task_name
            else f"the train file {config.train_file}")
  if space.regression != regression:
    raise _mismatch(config, "regression" if regression else head.labels,
                    "regression" if space.regression else list(space.labels), source)
  if not regression and sorted(head.labels) != sorted(space.labels):
    raise _mismatch(config, head.labels, list(space.labels), source)
  return space


def _check_dev_labels(config, labels, read):
  """Each dev label is among the model's (`labels`), naming file and line."""
  known = set(labels)
  extra = getattr(config, "extra_dev_files", ())  # a TSV task's (FinetuneConfig)
  for path in [config.dev_file] + [p for _, p in extra]:
    for label, line in read(path):
      if label not in known:
        raise ValueError(f"{path}:{line}: label {label!r} is not among the model's labels "
                         f"({', '.join(labels)}; {config.init_checkpoint} config.json "
                         f"id2label)")


def _build(config, bert_config, num_outputs, labels, make_model=None,
           head_task=hf_checkpoint.SEQUENCE_CLASSIFICATION):
  model, described = finetune.build_classifier(
      bert_config, num_outputs, config.init_checkpoint, config.seed, labels=labels,
      make_model=make_model, head_task=head_task)
  if "head from" not in described:  # its shape is not the model's (logged)
    raise ValueError(f"init_checkpoint={config.init_checkpoint}: its head was not read "
                     f"(see the log)")
  return model, described + ", evaluated as it is (do_train=false)"


def load_classifier(config, bert_config):
  """(BertClassifier read as it is from config.init_checkpoint, the task's
  LabelSpace (its outputs' order), description); the dev files' labels
  checked against the model's (do_eval).

  Raises:
    ValueError: see read_head and classifier_space; a dev label the model
      does not have (naming file and line).
  """
  head = read_head(config.init_checkpoint, hf_checkpoint.SEQUENCE_CLASSIFICATION)
  space = classifier_space(config, head)
  if config.do_eval and not space.regression:
    read = finetune_tsv.example_reader(config)
    _check_dev_labels(config, space.labels,
                      lambda path: [(e.label, e.line) for e in read(path)])
  model, described = _build(config, bert_config, space.num_outputs,
                            list(space.labels) or None)
  return model, space, described


def run_classifier(config, bert_config):
  """Evaluates (do_eval) and predicts with (do_predict) the classifier
  `config.init_checkpoint` as it is. Returns results as finetune_tsv.run's
  (without the training's and the seeds' fields)."""
  model, space, described = load_classifier(config, bert_config)
  task = finetune_tsv.load_task(config, space)
  lengths = length_buckets.boundaries(config.max_seq_length, config.length_buckets)
  results = {"init": described, "labels": list(space.labels),
             "task_type": "regression" if space.regression else "classification"}
  notes = list(task.notes)
  if config.do_eval:
    dev = [("", task.dev, task.dev_labels)] + list(task.extra_dev)
    for name, features, labels in dev:
      outputs = finetune.predict(model, features, config.eval_batch_size, lengths=lengths)
      results.update({f"{name}_{k}" if name else k: v for k, v in
                      finetune_tsv.compute_metrics(outputs, labels, space).items()})
    results["num_dev_examples"] = len(task.dev_labels)
    finetune.write_eval_results(os.path.join(config.output_dir, "eval_results.txt"), results)
    note = finetune_tsv.noise_note(len(task.dev_labels), results, space)
    notes += [note] if note else []
  if task.test is not None:
    finetune_tsv.write_test_predictions(os.path.join(config.output_dir, "test_results.tsv"),
                                    model, task, config)
    notes.append(f"wrote {os.path.join(config.output_dir, 'test_results.tsv')}")
  if config.task_name:
    results["official_metrics"] = list(glue.preset(config.task_name).metrics)
  results["notes"] = notes
  return results


def load_tagger(config, bert_config):
  """(BertTokenTagger read as it is from config.init_checkpoint, the task's
  labels (its outputs' order), description): the train file's labels when
  one is given (the same set as the head's), else the head's; the dev
  file's labels checked against them.

  Raises:
    ValueError: see read_head; labels that differ (naming both), a dev
      label the model does not have (naming file and line).
  """
  head = read_head(config.init_checkpoint, hf_checkpoint.TOKEN_CLASSIFICATION)
  labels = list(head.labels)
  if config.train_file:
    task_labels = tagging.task_labels(config, conll.read_conll(config.train_file))
    if sorted(task_labels) != sorted(labels):
      raise _mismatch(config, labels, task_labels, f"the train file {config.train_file}")
    labels = list(task_labels)
  _check_dev_labels(config, labels, lambda path: [
      pair for s in conll.read_conll(path) for pair in zip(s.labels, s.lines)])
  model, described = _build(config, bert_config, len(labels), labels,
                            tagging.make_tagger(config), hf_checkpoint.TOKEN_CLASSIFICATION)
  return model, labels, described


def run_tagger(config, bert_config):
  """Evaluates the tagger `config.init_checkpoint` as it is on the dev file
  (dev_predictions.conll, eval_results.txt). Returns results as
  tagging.run's (without the training's and the seeds' fields)."""
  model, labels, described = load_tagger(config, bert_config)
  task = tagging.load_task(config, labels)
  lengths = length_buckets.boundaries(config.max_seq_length, config.length_buckets)
  metrics, guesses = tagging.evaluate(model, task, config.eval_batch_size, lengths=lengths)
  results = dict(metrics, init=described, num_dev_examples=len(task.dev), task_type="tagging")
  finetune.write_eval_results(os.path.join(config.output_dir, "eval_results.txt"), results)
  from bert_tf.io import file_io as files  # pylint: disable=g-import-not-at-top
  files.atomic_write(os.path.join(config.output_dir, tagging.PREDICTIONS_FILE),
                     conll.format_conll(task.dev, guesses))
  test_note = tagging.write_test_predictions(config, model, task, lengths)
  results.update(labels=labels, official_metrics=[
      k for k in tagging.REPORTED_METRICS if k in results],
                 notes=list(task.notes) + [tagging.predictions_note(config, "the")] + (
                     [test_note] if test_note else []))
  return results


def run(config, bert_config):
  """The model of `config.init_checkpoint` as it is (config.do_train false):
  run_tagger for a TaggingConfig, run_classifier for a FinetuneConfig.

  Raises:
    ValueError, FileNotFoundError: one line: a bad config, checkpoint,
      file, or labels (the head's and the task's differ).
  """
  config.validate(bert_config)
  if config.do_train:
    raise ValueError("do_train=true: the task kind's run trains")
  if getattr(config, "frozen_encoder", False):
    raise ValueError("frozen_encoder: a transformers *ForTokenClassification reads the last "
                     "layer alone; do_train=false evaluates one as it is")
  tagging.check_vocab(config, bert_config)
  tagger = isinstance(config, tagging.TaggingConfig)
  return (run_tagger if tagger else run_classifier)(config, bert_config)

