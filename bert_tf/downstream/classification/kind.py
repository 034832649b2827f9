"""Sentence classification and regression on TSVs as a comparison's task
kind (`--task NAME=DIR,TEXT_A[,TEXT_B],LABEL`): train.tsv and dev.tsv with
its text_a, text_b ("" for single texts) and label columns, fine-tuned by
classification.finetune_tsv over the seeds (accuracy; pearson for a regression
task) and probed frozen by the comparison's linear probe. The finetune tool
runs it (--task_type auto, classification or regression): a FinetuneConfig,
trained by finetune_tsv or evaluated as it is (evaluate_only), exported with
a `classify` signature (classifier_export) and as a transformers
*ForSequenceClassification."""

from bert_tf.downstream import task


class ClassificationKind(task.TaskKind):
  name = "tsv"
  file_pattern = "{}.tsv"
  result_types = ("classification", "regression")
  named_columns = True
  frozen_probe = True
  tool = "finetune"
  task_types = ("auto", "classification", "regression")

  @property
  def hf_head(self):
    from bert_tf.models import hf_config  # pylint: disable=g-import-not-at-top
    return hf_config.SEQUENCE_CLASSIFICATION

  def metrics_of(self, result):
    return ("pearson",) if result.get("task_type") == "regression" else ("accuracy",)

  def _config(self, options, task_, output_dir, vocab_file, **fields):
    from bert_tf.downstream import finetune  # pylint: disable=g-import-not-at-top
    return finetune.FinetuneConfig(
        train_file=self.file(task_, "train"), dev_file=self.file(task_, "dev"),
        output_dir=output_dir, vocab_file=vocab_file,
        text_a_column=task_.text_a_column, text_b_column=task_.text_b_column,
        label_column=task_.label_column, do_lower_case=options.do_lower_case,
        max_seq_length=options.max_seq_length, **fields)

  def sizes(self, task_):
    from bert_tf.downstream.classification import tsv  # pylint: disable=g-import-not-at-top
    sizes, labels = {}, []
    for split_name in ("train", "dev"):
      examples = tsv.read_tsv(self.file(task_, split_name), task_.text_a_column,
                              task_.text_b_column or None, task_.label_column)
      sizes[split_name] = len(examples)
      labels = [e.label for e in examples]
    return sizes, labels

  def finetune(self, options, task_, output_dir, vocab_file, bert_config, init_checkpoint,
               frozen=False):
    from bert_tf.downstream.classification import finetune_tsv  # pylint: disable=g-import-not-at-top
    config = self._config(
        options, task_, output_dir, vocab_file, init_checkpoint=init_checkpoint,
        num_train_epochs=options.finetune_epochs, learning_rate=options.finetune_learning_rate,
        train_batch_size=options.finetune_batch_size, seeds=options.seeds, seed=options.seed,
        save_model=False)
    return finetune_tsv.run(config, bert_config)

  def frozen_data(self, options, task_, vocab_file, output_dir):
    from bert_tf.downstream.classification import finetune_tsv  # pylint: disable=g-import-not-at-top
    return finetune_tsv.load_task(self._config(options, task_, output_dir, vocab_file))

  def default_config(self):
    from bert_tf.downstream import finetune  # pylint: disable=g-import-not-at-top
    return finetune.FinetuneConfig()

  def preset_fields(self, preset, data_dir, given, need_train=True, need_dev=True):
    """A GLUE task's fields (glue.finetune_fields)."""
    from bert_tf.downstream.classification import glue  # pylint: disable=g-import-not-at-top
    return glue.finetune_fields(preset, data_dir,
                                {n: v for n, v in given.items() if n in glue.GIVEN_FIELDS},
                                need_train, need_dev)

  def config_for(self, values, frozen_encoder=False, window_stride=0):
    """A FinetuneConfig of `values`; frozen_encoder and window_stride are
    the tagger's (ValueError)."""
    from bert_tf.downstream import finetune  # pylint: disable=g-import-not-at-top
    if frozen_encoder or window_stride:
      raise ValueError(f"task_type={values.get('task_type')}: frozen_encoder and window_stride "
                       f"are for task_type=tagging")
    return finetune.FinetuneConfig(**values)

  def check_outputs(self, config, bert_config, export_dir, hf_out, overwrite=False):
    from bert_tf.downstream import hf_out as hf_out_lib  # pylint: disable=g-import-not-at-top
    from bert_tf.downstream import export  # pylint: disable=g-import-not-at-top
    hf_out_lib.check_out(config, bert_config, self.hf_head, hf_out, overwrite)
    export.check_export_dir(config, export_dir, overwrite)

  def run(self, config, bert_config):
    """finetune_tsv.run when config.do_train, else the model as it is
    (evaluate_only.run)."""
    from bert_tf.downstream import evaluate_only  # pylint: disable=g-import-not-at-top
    from bert_tf.downstream.classification import finetune_tsv  # pylint: disable=g-import-not-at-top
    return (finetune_tsv.run if config.do_train else evaluate_only.run)(config, bert_config)

  def summary_lines(self, config, results):
    from bert_tf.downstream import finetune  # pylint: disable=g-import-not-at-top
    return finetune.summary_lines(config, results)

  def export_saved_model(self, config, bert_config, results, export_dir, overwrite=False):
    from bert_tf.downstream.classification import classifier_export  # pylint: disable=g-import-not-at-top
    from bert_tf.downstream import export  # pylint: disable=g-import-not-at-top
    return export.written_line(export_dir, classifier_export.export_finetuned(
        config, bert_config, results, export_dir, overwrite=overwrite))

  def write_hf(self, config, bert_config, results, out_dir, overwrite=False):
    """The first seed's classifier as a *ForSequenceClassification (a
    regression task: problem_type "regression")."""
    if not out_dir:
      return None
    from bert_tf.downstream import export  # pylint: disable=g-import-not-at-top
    from bert_tf.downstream import hf_out  # pylint: disable=g-import-not-at-top
    from bert_tf.downstream.classification import classifier  # pylint: disable=g-import-not-at-top
    labels = results["labels"]
    return hf_out.write_head(
        config, bert_config, self.hf_head,
        lambda encoder: classifier.BertClassifier(bert_config, len(labels) or 1,
                                                  encoder=encoder),
        export.finetuned_prefix(config), out_dir, labels=labels,
        regression=results.get("task_type") == "regression", overwrite=overwrite)

  def report_lines(self, options):
    return ["frozen_<task>: the same linear probe for each TSV --task, fitted on its "
            "train.tsv and scored on its dev.tsv ([CLS] and the mean token vector for a "
            "single text)"]

  def task_key(self, task_):
    """Its fields without its kind (the key its results were always filed
    under)."""
    fields = super().task_key(task_)
    del fields["kind"]
    return fields


KIND = ClassificationKind()
