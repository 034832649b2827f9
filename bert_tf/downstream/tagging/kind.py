"""CoNLL token tagging as a comparison's task kind (`--task NAME=conll:DIR`):
train.txt and dev.txt in CoNLL format, fine-tuned by tagging.tagging over
the seeds (metric entity_f1) and trained feature-based too
(frozen_<task>_entity_f1: the encoder frozen, the head on its last four
layers, as BERT's Table 7). The finetune tool runs it (--task_type=tagging):
a TaggingConfig, trained by tagging.run or evaluated as it is
(evaluate_only), exported with a `tag` signature (tagger_export) and as a
transformers *ForTokenClassification."""

from bert_tf.downstream import task


# The finetune tool's flags for a TSV's columns, which a tagging task has not.
COLUMN_FIELDS = ("text_a_column", "text_b_column", "label_column")


class TaggingKind(task.TaskKind):
  name = "conll"
  file_pattern = "{}.txt"
  result_types = ("tagging",)
  metric_keys = ("entity_f1",)
  size_unit = "sentences"
  tool = "finetune"
  task_types = ("tagging",)

  @property
  def hf_head(self):
    from bert_tf.models import hf_config  # pylint: disable=g-import-not-at-top
    return hf_config.TOKEN_CLASSIFICATION

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

  def default_config(self):
    from bert_tf.downstream.tagging import tagging  # pylint: disable=g-import-not-at-top
    return tagging.TaggingConfig()

  def config_for(self, values, frozen_encoder=False, window_stride=0):
    """A TaggingConfig of `values`, frozen_encoder and window_stride. The
    finetune tool's TSV column flags are not read: a CoNLL file's columns
    are fixed (token first, label last)."""
    from bert_tf.downstream.tagging import tagging  # pylint: disable=g-import-not-at-top
    values = {k: v for k, v in values.items() if k not in COLUMN_FIELDS}
    return tagging.TaggingConfig(**values, frozen_encoder=frozen_encoder,
                                 window_stride=window_stride)

  def check_outputs(self, config, bert_config, export_dir, hf_out, overwrite=False):
    """As the classifier's; a frozen-encoder tagger has no transformers class."""
    from bert_tf.downstream import hf_out as hf_out_lib  # pylint: disable=g-import-not-at-top
    from bert_tf.downstream import export  # pylint: disable=g-import-not-at-top
    hf_out_lib.check_out(config, bert_config, self.hf_head, hf_out, overwrite)
    if hf_out and config.frozen_encoder:
      raise ValueError(hf_out_lib.FROZEN_TAGGER)
    export.check_export_dir(config, export_dir, overwrite)

  def run(self, config, bert_config):
    """tagging.run when config.do_train, else the model as it is
    (evaluate_only.run)."""
    from bert_tf.downstream import evaluate_only  # pylint: disable=g-import-not-at-top
    from bert_tf.downstream.tagging import tagging  # pylint: disable=g-import-not-at-top
    return (tagging.run if config.do_train else evaluate_only.run)(config, bert_config)

  def summary_lines(self, config, results):
    from bert_tf.downstream import finetune  # pylint: disable=g-import-not-at-top
    return finetune.summary_lines(config, results)

  def export_saved_model(self, config, bert_config, results, export_dir, overwrite=False):
    from bert_tf.downstream.tagging import tagger_export  # pylint: disable=g-import-not-at-top
    from bert_tf.downstream import export  # pylint: disable=g-import-not-at-top
    return export.written_line(export_dir, tagger_export.export_finetuned(
        config, bert_config, results, export_dir, overwrite=overwrite))

  def write_hf(self, config, bert_config, results, out_dir, overwrite=False):
    """The first seed's tagger as a *ForTokenClassification."""
    if not out_dir:
      return None
    from bert_tf.downstream import export  # pylint: disable=g-import-not-at-top
    from bert_tf.downstream import hf_out  # pylint: disable=g-import-not-at-top
    from bert_tf.downstream.tagging import token_head  # pylint: disable=g-import-not-at-top
    if config.frozen_encoder:
      raise ValueError(hf_out.FROZEN_TAGGER)
    labels = results["labels"]
    return hf_out.write_head(
        config, bert_config, self.hf_head,
        lambda encoder: token_head.BertTokenTagger(bert_config, len(labels), encoder=encoder),
        export.finetuned_prefix(config), out_dir, labels=labels, overwrite=overwrite)

  def report_lines(self, options):
    return ["<task>_entity_f1 (CoNLL tasks): conlleval's entity F1 on dev.txt; "
            "frozen_<task>_entity_f1: the encoder frozen, one dense layer over the "
            "concatenated outputs of its last four layers (every layer of an encoder of four "
            "or fewer), over the same seeds, at "
            f"lr {options.frozen_learning_rate:g} (BERT's feature-based setting, Tables 7 "
            "and 8, puts a two-layer BiLSTM over the last four of twelve)"]


KIND = TaggingKind()
