"""The --task kinds of a comparison beyond TSVs: SQuAD span answers and
CoNLL token tagging. What each reads (its sizes, for the preflight), how
it is fine-tuned from one pretrained model, and the metrics it reports.

  squad   training.squad_finetune once per fine-tuning seed (seed, seed + 1,
          ...), trained on train.json and scored on dev.json by the official
          script of its version (2.0 when a question is_impossible or the
          file's version says v2); metrics f1 and exact_match as fractions
          (the script's percent / 100), mean and sd over the seeds. Each
          seed's model is removed once scored (its results are kept).
  conll   training.tagging over the seeds: fine-tuned (metric entity_f1) and
          feature-based (frozen_<task>_entity_f1: the encoder frozen, the head
          on its last four layers, as BERT's Table 7).

SQuAD windows at compare's max_seq_length take --squad_max_query_length
question pieces and start every --squad_doc_stride document pieces.
"""

import dataclasses
import os

from bert_tf import file_io as files

# The metrics each kind of result reports (its "task_type"), table order.
METRIC_KEYS = {"classification": ("accuracy",), "regression": ("pearson",),
               "tagging": ("entity_f1",), "squad": ("f1", "exact_match")}


def metric_keys(result):
  """The metric names (without the task's) of a fine-tuning result."""
  return METRIC_KEYS.get(result.get("task_type"), ("accuracy",))


def jobs(task):
  """The fine-tunings of `task` per pretrained model: [(metric prefix,
  frozen encoder)]; a tagging task is also trained feature-based."""
  if task.kind == "conll":
    return [(task.name, False), (f"frozen_{task.name}", True)]
  return [(task.name, False)]


def is_squad_v2(data):
  """True for a SQuAD 2.0 file's JSON: its version says v2, or a question
  is_impossible."""
  if str(data.get("version", "")).startswith("v2"):
    return True
  return any(qa.get("is_impossible") for article in data.get("data") or []
             for paragraph in article.get("paragraphs") or []
             for qa in paragraph.get("qas") or [])


def sizes(task):
  """{"train": rows, "dev": rows} of a squad (questions) or conll
  (sentences) task; ValueError / FileNotFoundError naming the file."""
  out = {}
  for split_name in ("train", "dev"):
    path = task.file(split_name)
    if task.kind == "squad":
      from bert_tf.downstream.span import squad  # pylint: disable=g-import-not-at-top
      version_2 = is_squad_v2(files.read_json(path, "SQuAD file"))
      out[split_name] = len(squad.read_examples(path, split_name == "train", version_2).examples)
    else:
      from bert_tf.downstream.tagging import conll  # pylint: disable=g-import-not-at-top
      out[split_name] = len(conll.read_conll(path))
  return out


def settings(options, task):
  """What a kind's fine-tuning depends on beyond compare's fine-tuning
  options (part of its results' key)."""
  if task.kind == "squad":
    return {"max_query_length": options.squad_max_query_length,
            "doc_stride": options.squad_doc_stride}
  return {}


def run_squad(options, task, output_dir, vocab_file, bert_config, init_checkpoint):
  """Fine-tunes `task` from `init_checkpoint` over options.seeds seeds;
  returns {f1, exact_match, their _sd and seed_<s>_ values, num_seeds,
  num_train_examples, num_dev_examples, task_type: "squad", version}."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream import finetune  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.span import squad_finetune  # pylint: disable=g-import-not-at-top
  version_2 = is_squad_v2(files.read_json(task.file("dev"), "SQuAD file"))
  per_seed, results = [], {}
  for i in range(options.seeds):
    seed = options.seed + i
    config = squad_finetune.SquadConfig(
        vocab_file=vocab_file, output_dir=os.path.join(output_dir, f"seed_{seed}"),
        train_file=task.file("train"), predict_file=task.file("dev"),
        init_checkpoint=init_checkpoint, do_lower_case=options.do_lower_case,
        max_seq_length=options.max_seq_length, doc_stride=options.squad_doc_stride,
        max_query_length=options.squad_max_query_length, do_train=True, do_predict=True,
        train_batch_size=options.finetune_batch_size,
        learning_rate=options.finetune_learning_rate,
        num_train_epochs=options.finetune_epochs, save_checkpoints_steps=1 << 30,
        version_2_with_negative=version_2, seed=seed)
    res = squad_finetune.run(config, bert_config)
    # The official scripts' percents: v1.1 names exact match exact_match, v2.0 exact.
    metrics = {"f1": res["f1"] / 100.0,
               "exact_match": res.get("exact_match", res.get("exact", 0.0)) / 100.0}
    per_seed.append(metrics)
    results.update({f"seed_{seed}_{k}": v for k, v in metrics.items()})
    results.update(num_train_examples=res["num_train_examples"],
                   num_dev_examples=res["num_predict_examples"])
    for path in tf.io.gfile.glob(os.path.join(config.output_dir,
                                              squad_finetune.CHECKPOINT_NAME) + ".*"):
      tf.io.gfile.remove(path)
  results.update({k: v for k, v in finetune.summarize(per_seed).items()
                  if not k.endswith("_median")})
  results.update(num_seeds=options.seeds, task_type="squad",
                 version="2.0" if version_2 else "1.1")
  return results


def run_tagging(options, task, output_dir, vocab_file, bert_config, init_checkpoint, frozen):
  """training.tagging's results for `task` from `init_checkpoint` over
  options.seeds seeds; the encoder frozen when `frozen`."""
  from bert_tf.downstream.tagging import tagging  # pylint: disable=g-import-not-at-top
  config = tagging.TaggingConfig(
      train_file=task.file("train"), dev_file=task.file("dev"), output_dir=output_dir,
      vocab_file=vocab_file, do_lower_case=options.do_lower_case,
      max_seq_length=options.max_seq_length, init_checkpoint=init_checkpoint,
      num_train_epochs=options.finetune_epochs,
      learning_rate=options.frozen_learning_rate if frozen else options.finetune_learning_rate,
      train_batch_size=options.finetune_batch_size, seeds=options.seeds, seed=options.seed,
      save_model=False, frozen_encoder=frozen)
  return tagging.run(config, bert_config)


def task_key(task):
  """A task's part of its results' key: its fields, a TSV task's without
  its kind (the key its results are filed under)."""
  fields = dataclasses.asdict(task)
  if task.kind == "tsv":
    del fields["kind"]
  return fields
