"""SQuAD span answers as a comparison's task kind (`--task NAME=squad:DIR`):
train.json and dev.json (SQuAD 1.1, or 2.0 when a question is_impossible
or the file's version says v2), fine-tuned by span.squad_finetune once per
fine-tuning seed (seed, seed + 1, ...), scored on dev.json by the official
script of its version; metrics f1 and exact_match as fractions (the
script's percent / 100), mean and sd over the seeds. Each seed's model is
removed once scored (its results are kept). Windows at compare's
max_seq_length take --squad_max_query_length question pieces and start
every --squad_doc_stride document pieces. The run_squad tool runs it: a
SquadConfig, trained and predicted by squad_finetune, exported with an
`answer` signature (answer_export) and as a transformers
*ForQuestionAnswering."""

import os

from bert_tf.io import file_io as files
from bert_tf.downstream import task
from bert_tf.util import bootstrap


def is_squad_v2(data):
  """True for a SQuAD 2.0 file's JSON: its version says v2, or a question
  is_impossible."""
  if str(data.get("version", "")).startswith("v2"):
    return True
  return any(qa.get("is_impossible") for article in data.get("data") or []
             for paragraph in article.get("paragraphs") or []
             for qa in paragraph.get("qas") or [])


def question_outcomes(dev, prediction_dir, version_2):
  """[(question id, (F1, exact match))] of each dev question from the
  predictions squad_finetune wrote in prediction_dir, as its version's
  official script scores them (their means are its f1 and exact match)."""
  from bert_tf.downstream.span import span_answers  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.span import squad_metrics as metrics  # pylint: disable=g-import-not-at-top
  predictions = files.read_json(os.path.join(prediction_dir, span_answers.PREDICTIONS_FILE),
                                "SQuAD predictions")
  odds_path = os.path.join(prediction_dir, span_answers.NULL_ODDS_FILE)
  odds = files.read_json(odds_path, "SQuAD null odds") if version_2 and files.exists(
      odds_path) else {}
  out = []
  for qid, golds in metrics.questions(dev["data"]):
    prediction = predictions.get(qid)
    if version_2:
      has_answer = bool(golds)
      golds = [g for g in golds if metrics.normalize_answer(g)] or [""]
      if odds.get(qid, 0.0) > 1.0:  # the script's default threshold
        out.append((qid, (float(not has_answer), float(not has_answer))))
        continue
      f1 = max(metrics.f1_v2(g, prediction or "") for g in golds)
    else:
      f1 = max(metrics.f1_v1(g, prediction) for g in golds) if prediction is not None else 0.0
    em = max(metrics.exact_match(g, prediction) for g in golds) if prediction is not None \
        else 0.0
    out.append((qid, (float(f1), float(em))))
  return out


class SpanKind(task.TaskKind):
  name = "squad"
  file_pattern = "{}.json"
  result_types = ("squad",)
  metric_keys = ("f1", "exact_match")
  size_unit = "questions"
  tool = "run_squad"

  @property
  def hf_head(self):
    from bert_tf.models import hf_config  # pylint: disable=g-import-not-at-top
    return hf_config.QUESTION_ANSWERING

  def sizes(self, task_):
    from bert_tf.downstream.span import squad  # pylint: disable=g-import-not-at-top
    out = {}
    for split_name in ("train", "dev"):
      path = self.file(task_, split_name)
      version_2 = is_squad_v2(files.read_json(path, "SQuAD file"))
      out[split_name] = len(squad.read_examples(path, split_name == "train",
                                                version_2).examples)
    return out, []

  def check(self, task_, options):
    from bert_tf.downstream.span import squad  # pylint: disable=g-import-not-at-top
    try:
      squad.check_window(options.max_seq_length, options.squad_doc_stride,
                         options.squad_max_query_length)
    except ValueError as e:
      raise ValueError(f"--task={task_.name} (squad): {e} (--max_seq_length, "
                       "--squad_max_query_length, --squad_doc_stride)") from None

  def settings(self, options):
    return {"max_query_length": options.squad_max_query_length,
            "doc_stride": options.squad_doc_stride}

  def finetune(self, options, task_, output_dir, vocab_file, bert_config, init_checkpoint,
               frozen=False):
    """{f1, exact_match, their _sd and seed_<s>_ values, num_seeds,
    num_train_examples, num_dev_examples, task_type: "squad", version}."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from bert_tf.downstream import export  # pylint: disable=g-import-not-at-top
    from bert_tf.downstream import finetune  # pylint: disable=g-import-not-at-top
    from bert_tf.downstream.span import squad_finetune  # pylint: disable=g-import-not-at-top
    version_2 = is_squad_v2(files.read_json(self.file(task_, "dev"), "SQuAD file"))
    per_seed, results, outcomes = [], {}, []
    for i in range(options.seeds):
      seed = options.seed + i
      config = squad_finetune.SquadConfig(
          vocab_file=vocab_file, output_dir=export.seed_dir(output_dir, seed),
          train_file=self.file(task_, "train"), predict_file=self.file(task_, "dev"),
          init_checkpoint=init_checkpoint, do_lower_case=options.do_lower_case,
          max_seq_length=options.max_seq_length, doc_stride=options.squad_doc_stride,
          max_query_length=options.squad_max_query_length, do_train=True, do_predict=True,
          train_batch_size=options.finetune_batch_size,
          learning_rate=options.finetune_learning_rate,
          num_train_epochs=options.finetune_epochs, save_checkpoints_steps=1 << 30,
          version_2_with_negative=version_2, seed=seed)
      res = squad_finetune.run(config, bert_config)
      outcomes.append(question_outcomes(files.read_json(self.file(task_, "dev"), "SQuAD file"),
                                        config.output_dir, version_2))
      # The official scripts' percents: v1.1 names exact match exact_match, v2.0 exact.
      metrics = {"f1": res["f1"] / 100.0,
                 "exact_match": res.get("exact_match", res.get("exact", 0.0)) / 100.0}
      per_seed.append(metrics)
      results.update({f"seed_{seed}_{k}": v for k, v in metrics.items()})
      results.update(num_train_examples=res["num_train_examples"],
                     num_dev_examples=res["num_predict_examples"])
      for path in files.glob(os.path.join(config.output_dir,
                                                squad_finetune.CHECKPOINT_NAME) + ".*"):
        files.remove(path)
    results.update({k: v for k, v in finetune.summarize(per_seed).items()
                    if not k.endswith("_median")})
    results.update(num_seeds=options.seeds, task_type="squad",
                   version="2.0" if version_2 else "1.1")
    ids = [q for q, _ in outcomes[0]]
    results["outcomes"] = {  # each dev question's (the comparison's bootstrap)
        name: bootstrap.record("mean", ids, [[v[i] for _, v in seed] for seed in outcomes])
        for i, name in enumerate(("f1", "exact_match"))}
    return results

  def report_lines(self, options):
    return [f"<task>_f1, <task>_exact_match (SQuAD tasks): the official script's F1 and "
            f"exact match on dev.json as fractions; windows of {options.max_seq_length} "
            f"pieces, {options.squad_max_query_length} of the question, starting every "
            f"{options.squad_doc_stride} document pieces"]

  def default_config(self):
    from bert_tf.downstream.span import squad_finetune  # pylint: disable=g-import-not-at-top
    return squad_finetune.SquadConfig()

  def config_for(self, values, **options):
    """A SquadConfig of `values` (it takes no other options)."""
    from bert_tf.downstream.span import squad_finetune  # pylint: disable=g-import-not-at-top
    if options:
      raise ValueError(f"{', '.join(options)}: not a SQuAD setting")
    return squad_finetune.SquadConfig(**values)

  def check_outputs(self, config, bert_config, export_dir, hf_out, overwrite=False):
    from bert_tf.downstream.span import answer_export  # pylint: disable=g-import-not-at-top
    answer_export.check_outputs(config, bert_config, export_dir, hf_out, overwrite)

  def run(self, config, bert_config):
    """squad_finetune.run; a malformed training question is a ValueError
    naming --skip_malformed_questions."""
    from bert_tf.downstream.span import squad  # pylint: disable=g-import-not-at-top
    from bert_tf.downstream.span import squad_finetune  # pylint: disable=g-import-not-at-top
    try:
      return squad_finetune.run(config, bert_config)
    except squad.MalformedQuestion as e:
      raise ValueError(f"{e} (--skip_malformed_questions skips such questions)") from None

  def summary_lines(self, config, results):
    from bert_tf.downstream.span import squad_finetune  # pylint: disable=g-import-not-at-top
    return squad_finetune.summary_lines(config, results)

  def export_saved_model(self, config, bert_config, results, export_dir, overwrite=False):
    from bert_tf.downstream import export  # pylint: disable=g-import-not-at-top
    from bert_tf.downstream.span import answer_export  # pylint: disable=g-import-not-at-top
    del results
    return export.written_line(export_dir, answer_export.export_finetuned(
        config, bert_config, export_dir, overwrite))

  def write_hf(self, config, bert_config, results, out_dir, overwrite=False):
    """The span model squad_finetune.run saved (output_dir/model) as a
    *ForQuestionAnswering."""
    del results
    if not out_dir:
      return None
    from bert_tf.downstream import hf_out  # pylint: disable=g-import-not-at-top
    from bert_tf.downstream.span import span_head  # pylint: disable=g-import-not-at-top
    from bert_tf.downstream.span import squad_finetune  # pylint: disable=g-import-not-at-top
    prefix = os.path.join(config.output_dir, squad_finetune.CHECKPOINT_NAME)
    return hf_out.write_head(
        config, bert_config, self.hf_head,
        lambda encoder: span_head.BertSpanModel(bert_config, encoder=encoder),
        prefix, out_dir, overwrite=overwrite,
        missing=f"hf_out: no fine-tuned span model {prefix} (train with do_train)")


KIND = SpanKind()
