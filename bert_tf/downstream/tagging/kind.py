"""CoNLL token tagging as a comparison's task kind (`--task NAME=conll:DIR`):
train.txt and dev.txt in CoNLL format, fine-tuned by tagging.tagging over
the seeds (metric entity_f1) and trained feature-based too
(frozen_<task>_entity_f1: the encoder frozen, the head on its last four
layers, as BERT's Table 7)."""

from bert_tf.downstream import task


class TaggingKind(task.TaskKind):
  name = "conll"
  file_pattern = "{}.txt"
  result_types = ("tagging",)
  metric_keys = ("entity_f1",)
  size_unit = "sentences"

  def sizes(self, task_):
    from bert_tf.downstream.tagging import conll  # pylint: disable=g-import-not-at-top
    return {split_name: len(conll.read_conll(self.file(task_, split_name)))
            for split_name in ("train", "dev")}, []

  def jobs(self, task_):
    """Fine-tuned, and feature-based (frozen_<task>)."""
    return [(task_.name, False), (f"frozen_{task_.name}", True)]

  def finetune(self, options, task_, output_dir, vocab_file, bert_config, init_checkpoint,
               frozen=False):
    """tagging.run's results over options.seeds seeds; the encoder frozen
    (at --frozen_learning_rate) when `frozen`."""
    from bert_tf.downstream.tagging import tagging  # pylint: disable=g-import-not-at-top
    config = tagging.TaggingConfig(
        train_file=self.file(task_, "train"), dev_file=self.file(task_, "dev"),
        output_dir=output_dir, vocab_file=vocab_file, do_lower_case=options.do_lower_case,
        max_seq_length=options.max_seq_length, init_checkpoint=init_checkpoint,
        num_train_epochs=options.finetune_epochs,
        learning_rate=options.frozen_learning_rate if frozen else options.finetune_learning_rate,
        train_batch_size=options.finetune_batch_size, seeds=options.seeds, seed=options.seed,
        save_model=False, frozen_encoder=frozen)
    return tagging.run(config, bert_config)

  def report_lines(self, options):
    return ["<task>_entity_f1 (CoNLL tasks): conlleval's entity F1 on dev.txt; "
            "frozen_<task>_entity_f1: the tagger trained on the frozen encoder's last four "
            "layers (the feature-based setting of BERT's Table 7), over the same seeds, at "
            f"lr {options.frozen_learning_rate:g}"]


KIND = TaggingKind()
