"""Sentence classification and regression on TSVs as a comparison's task
kind (`--task NAME=DIR,TEXT_A[,TEXT_B],LABEL`): train.tsv and dev.tsv with
its text_a, text_b ("" for single texts) and label columns, fine-tuned by
classification.finetune_tsv over the seeds (accuracy; pearson for a regression
task) and probed frozen by the comparison's linear probe."""

from bert_tf.downstream import task


class ClassificationKind(task.TaskKind):
  name = "tsv"
  file_pattern = "{}.tsv"
  result_types = ("classification", "regression")
  named_columns = True
  frozen_probe = True

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
