"""Compare pretraining objectives, or any variants of one, at equal compute
on one corpus.

One plan: for each ARM (a name, an objective and writer / training flags:
experiments.arms) and each of `pretrain_seeds` pretraining seeds, write
its records, pretrain the same model size on the same batch x tokens for an
equal budget, then measure every model the same way. The budget
(`budget`): "steps", num_train_steps steps each; or "flops",
num_train_steps steps of the FIRST arm and, for every other one, the steps
that spend the same training FLOPs (`plan_steps`; each objective's
`train_flops`, `models/flops.py`). Pretraining seed k (0, 1, ...) is
`seed + k`: it changes the records' masks and pairs, the initialization
and the data order; the corpus split, the vocab and every evaluation set
stay. Arms whose records or whole pretraining come out the same share them.

  masked_lm_accuracy   held-out masked-LM accuracy on ONE set of static
                       held-out records (the original's masking), so every
                       arm is scored on the same predictions
  <objective's own>    what the objective's `heldout_figures` adds, read
                       by experiments.heldout_reading (a generator's
                       masked-LM accuracy gets a column of its own; a
                       discriminator's loss, accuracy, precision, recall
                       and replaced share are rows)
  head_<pair>_accuracy the model's own NSP / SOP head, as trained, on
                       held-out segment pairs (experiments.instruments)
  frozen_<task>_accuracy
                       a deterministic linear probe on the frozen encoder,
                       for each pair task and each user task
  probe_<task>         the pair tasks of `data/pair_tasks.py` (NSP with
                       random / same-document negatives, sentence order),
                       fine-tuned from each pretrained encoder (--probes)
  <name>_accuracy      the user's downstream TSV tasks, fine-tuned
  <name>_f1, <name>_exact_match
                       a SQuAD task (--task=NAME=squad:DIR), fine-tuned:
                       the official script's F1 and EM on its dev.json
  <name>_entity_f1, frozen_<name>_entity_f1
                       a CoNLL tagging task (--task=NAME=conll:DIR),
                       fine-tuned and feature-based (downstream.registry)

each fine-tuning repeated over `seeds` (nested in each pretraining run).
Everything is written under output_dir: plan.json (the inputs every stage
depends on, written once the preflight passes: a rerun with other ones is
refused, naming them and a folder for them; a refused run leaves only
plan.draft.json, whose outputs a run of other inputs discards), the split,
vocab and evaluation sets, records/<key>/ and runs/<key>/ (one per distinct
records and pretraining run; run.json says which arm and seed); a stage
whose result file exists is skipped, so a rerun continues where a run
stopped (pretraining itself resumes from its last checkpoint). What every
stage needs (held-out predictions, evaluation sets large enough, readable
tasks) is checked before the first pretraining starts (experiments.preflight).

The modules, in the order the driver below uses them:

  plan        options, plan.json (the rerun check), the runs and their keys
  stages      each stage and `cached`, the one rule for reusing its result
  preflight   what each instrument needs, checked up front
  progress    the progress lines and the ETA of the plan's stages
  run_rows    one run's measures; an arm's rows over its runs
  results     the rows, results.csv, plots, TensorBoard HParams
  report      results.md: the verdict, the table, the noise lines, notes

What the spreads measure: see experiments.results and experiments.report. With pretrain_seeds=1
they are fine-tuning and held-out sampling noise only, and results.md says
that no difference is then evidence about the objectives.
"""

import dataclasses
import os
import time

from bert_tf.io import file_io as files
from bert_tf.experiments import heldout_reading
from bert_tf.experiments import paper_figures
from bert_tf.experiments import plan as plan_lib
from bert_tf.experiments import preflight as preflight_lib
from bert_tf.experiments import provenance
from bert_tf.experiments import eta
from bert_tf.experiments import report
from bert_tf.experiments import report_noise
from bert_tf.experiments import results as results_lib
from bert_tf.experiments import run_rows
from bert_tf.experiments import stages
from bert_tf.downstream import registry
from bert_tf.training import objectives


def run_comparison(options):
  """Runs (or continues) the whole plan; writes results.md, results.csv, one
  PNG per metric and TensorBoard HParams data to output_dir; returns the
  result rows."""
  # ----------------------------------------------------------------------------
  # The plan: options, and the inputs a rerun must agree on
  # ----------------------------------------------------------------------------
  options.validate()
  for task in options.tasks:
    task.check_files()
  inputs = plan_lib.check_plan(options)
  stages.check_reuse(options, inputs)
  start = time.time()
  # What the corpus allows each instrument, said (and a shortfall refused)
  # before anything is written; the folder is claimed once the preflight passes.
  preflight_lib.check_corpus(options)
  plan_lib.start_draft(options, inputs)

  # ----------------------------------------------------------------------------
  # Text: split, vocab, held-out records, pair tasks, segment pairs
  # ----------------------------------------------------------------------------
  train_txt, held_txt, vocab_file, bert_config = stages.prepare_text(options)
  heldout_records, _ = stages.write_records(
      options, held_txt, vocab_file, "heldout",
      dataclasses.replace(options.base_data_options(options.seed), dupe_factor=1))
  task_list = stages.pair_task_files(options, held_txt) + list(options.tasks)
  pair_sets = _pair_sets(options, held_txt, train_txt, vocab_file)

  # ----------------------------------------------------------------------------
  # Preflight: every instrument's needs, before any pretraining
  # ----------------------------------------------------------------------------
  size_notes, chance, train_rows = preflight_lib.preflight(
      options, heldout_records, held_txt, task_list, pair_sets, stages.mask_id(vocab_file))
  runs = plan_lib.plan_runs(options, bert_config)
  unique = plan_lib.distinct_runs(runs)
  for run in unique:  # a shared run's model is found (or refused) before the claim
    stages.reused_run(options, run)
  plan_lib.claim(options, inputs)
  progress = eta.Progress(
      _planned_stages(options, bert_config, unique, train_txt, task_list, train_rows),
      start=start)
  progress.stage(f"text: split, vocab ({bert_config.vocab_size} entries), held-out records, "
                 f"{len(task_list)} fine-tuning tasks, {len(pair_sets)} pair sets; "
                 f"{len(options.arm_list)} arms x {options.pretrain_seeds} pretraining "
                 f"seed(s) = {len(unique)} distinct runs; budget {options.budget}",
                 seconds=time.time() - start)

  # ----------------------------------------------------------------------------
  # Each distinct run: records, pretraining, held-out, instruments, fine-tuning
  # ----------------------------------------------------------------------------
  summaries, measures, task_data, records_met = {}, {}, {}, set()
  for run in unique:
    summaries[run.key], measures[run.key] = _run_stages(
        options, run, progress, train_txt, vocab_file, bert_config, heldout_records,
        task_list, pair_sets, task_data, records_met)

  # ----------------------------------------------------------------------------
  # Rows over the runs, and the results files
  # ----------------------------------------------------------------------------
  rows = []
  for arm in options.arm_list:
    per_run = [(r.seed_index, summaries[r.key], measures[r.key]) for r in runs if r.arm == arm]
    rows += run_rows.arm_rows(arm.name, arm.objective, per_run)
  for r in rows:
    r["chance"] = chance.get(r["metric"], "")
  made = _provenance(options, inputs, progress, runs, summaries)
  for r in rows:
    r.update({k: made["fields"][k] for k in provenance.CSV_FIELDS})
  _write_results(options, rows,
                 report.notes(options, bert_config, runs, summaries, size_notes), made)
  return rows


def _provenance(options, inputs, progress, runs, summaries):
  """How the table was made: {"fields": provenance.fields, "lines": its
  results.md lines}; also written to output_dir/provenance.json."""
  info = provenance.fields(options.corpus, inputs["corpus_sha256"])
  times = provenance.stage_times(progress.seconds, progress.skipped, progress.recorded)
  total = provenance.total_seconds(progress.seconds, progress.skipped, progress.recorded)
  pretraining = [(r.arm.name, r.seed_index, summaries[r.key]["seconds"]) for r in runs]
  files.write_json(os.path.join(options.output_dir, "provenance.json"),
                   dict(info, stage_seconds=progress.seconds,
                        stages_read_back=progress.skipped,
                        read_back_seconds={k: v[0] for k, v in progress.recorded.items()},
                        total_seconds=total[0], read_back_untimed=total[1],
                        pretraining_seconds=[list(p) for p in pretraining]))
  return {"fields": info, "lines": provenance.lines(info, times, pretraining, total)}


# The pairs of pretraining documents a sentence head is also read on come
# from the first documents of this much of the pretraining text (enough for
# thousands of pairs; a corpus 1,000x a test one is not read whole).
SEEN_TEXT_BYTES = 8 << 20


def _pair_sets(options, held_txt, train_txt, vocab_file):
  """The held-out segment pairs of the heads and frozen probes, each with
  pairs of the pretraining text (`seen`) for the heads when an arm has
  one."""
  from bert_tf.experiments import instruments  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream import finetune  # pylint: disable=g-import-not-at-top
  tokenizer = finetune.task_tokenizer(vocab_file, options.do_lower_case)
  text = files.read_text(held_txt, "held-out text")
  args = (tokenizer, options.max_seq_length, options.seed, options.max_probe_examples)
  sets = instruments.pair_sets(text, options.pair_tasks, *args)
  if not any(stages.has_sentence_head(objectives.get(arm.objective))
             for arm in options.arm_list):
    return sets  # no arm has a sentence head to read on them
  seen = files.read_documents_prefix(train_txt, SEEN_TEXT_BYTES)
  return instruments.with_seen_pairs(sets, seen, *args)


def _planned_stages(options, bert_config, unique, train_txt, task_list, train_rows):
  """The plan's stages as progress.Planned, in the order they run."""
  text_bytes = files.size(train_txt)
  planned, records_seen = [eta.Planned("text", 1)], set()
  for run in unique:
    records = stages.records_outputs(options, f"train-{run.records_key}", train_txt)
    finished = stages.pretrained(options, run)
    planned.append(eta.Planned(
        "records", text_bytes * run.data_options.dupe_factor,
        not run.steps or finished or run.records_key in records_seen
        or plan_lib.exists(records.manifest_path())))
    if not finished:
      records_seen.add(run.records_key)
    flops_model = objectives.get(run.arm.objective).train_flops is not None
    planned.append(eta.Planned(
        "initialize" if not run.steps else "pretrain" if flops_model
        else f"pretrain {run.arm.objective}",
        1 if not run.steps else run.steps * (plan_lib.step_flops(options, run.arm, bert_config)
                                             if flops_model else 1),
        plan_lib.exists(stages.pretrain_path(options, run))))
    for kind, path in (("heldout", stages.heldout_path(options, run)),
                       ("instruments", stages.instruments_path(options, run))):
      planned.append(eta.Planned(kind, 1, plan_lib.exists(path)))
    for task in task_list:
      for _, frozen in task.kind_of.jobs(task):
        planned.append(eta.Planned(
            "finetune", train_rows[task.name] * options.finetune_epochs * options.seeds,
            plan_lib.exists(stages.finetune_path(options, run, task, frozen))))
  return planned


def _run_stages(options, run, progress, train_txt, vocab_file, bert_config, heldout_records,
                task_list, pair_sets, task_data, records_met):
  """The stages of one distinct run, each printed by `progress`; returns
  (its pretraining summary, its measures). records_met: the records keys
  met so far (records shared by runs count their writing time once)."""
  label = f"{run.arm.name} (seed {run.seed_index})"

  t = time.time()
  name = f"train-{run.records_key}"
  manifest = stages.records_outputs(options, name, train_txt).manifest_path()
  # The time of records written before, counted at the first run that reads them.
  recorded = 0.0 if name in records_met else stages.recorded_seconds(manifest)
  if run.steps:
    records_met.add(name)
  if run.steps and stages.pretrained(options, run):
    # A finished run needs no records: its folder read back is enough (the
    # records may be deleted, or the run's results copied elsewhere).
    records = ""
    progress.stage(f"{label}: no records (its pretraining is done)", True, recorded=recorded)
  elif run.steps and stages.reused_run(options, run) is None:
    records, skipped = stages.write_records(options, train_txt, vocab_file, name,
                                            run.data_options)
    progress.stage(f"{label}: records {records}", skipped, time.time() - t, recorded)
  else:
    records = ""
    progress.stage(f"{label}: no records ("
                   + ("never pretrained)" if not run.steps else
                      f"its pretraining is read from {options.reuse_runs_from})"), True,
                   recorded=0.0)

  t = time.time()
  summary, skipped = stages.pretrain(options, run, records, bert_config)
  progress.stage(f"{label}: pretrained {summary['steps']} steps in {summary['seconds']:.0f} s",
                 skipped, time.time() - t,
                 stages.recorded_seconds(stages.pretrain_path(options, run)))
  model_dir = summary["model_dir"]

  t = time.time()
  heldout, skipped = stages.heldout(options, run, bert_config, model_dir, heldout_records,
                                    stages.mask_id(vocab_file))
  reading = heldout_reading.reading(run.arm.objective)
  progress.stage(f"{label}: held-out masked-LM accuracy {heldout['masked_lm_accuracy']:.4f} "
                 f"over {int(heldout['predictions'])} predictions"
                 f"{reading.progress_text(heldout)}", skipped, time.time() - t,
                 stages.recorded_seconds(stages.heldout_path(options, run)))

  t = time.time()
  figures, skipped = stages.instrument_figures(options, run, model_dir, bert_config,
                                               vocab_file, pair_sets, task_data)
  progress.stage(f"{label}: " + (", ".join(f"{k} {v['value']:.4f}"
                                           for k, v in sorted(figures.items()))
                                 or "no head or frozen probe (no pair task or --task)"),
                 skipped, time.time() - t,
                 stages.recorded_seconds(stages.instruments_path(options, run)))

  task_results = []
  for task in task_list:
    for name, frozen in task.kind_of.jobs(task):
      t = time.time()
      res, skipped = stages.finetune_task(options, run, task, vocab_file, bert_config,
                                          model_dir, frozen)
      task_results.append((name, res))
      shown = ", ".join(f"{key} {res[key]:.4f} ± {res[key + '_sd']:.4f}"
                        for key in registry.metric_keys(res))
      progress.stage(f"{label}: {name} {shown} over {res['num_seeds']} seeds", skipped,
                     time.time() - t,
                     stages.recorded_seconds(stages.finetune_path(options, run, task, frozen)))

  order = run_rows.figure_order(figures, list(pair_sets), [t.name for t in options.tasks])
  return summary, run_rows.run_measures(run.arm.objective, heldout, figures, task_results,
                                        order)


def _write_results(options, rows, notes, made):
  """results.md, results.csv, plots/ and hparams/ under output_dir."""
  out = options.output_dir
  report_noise.analyse(rows, options.bootstrap_samples, options.seed)
  report.annotate(rows)
  files.atomic_write(os.path.join(out, "results.md"),
                     report.markdown(rows, "Pretraining objectives compared", notes,
                                     paper_figures.lines(options.paper_figures, rows),
                                     made["lines"]))
  files.atomic_write(os.path.join(out, "results.csv"), results_lib.to_csv(rows))
  plots = results_lib.write_plots(rows, os.path.join(out, "plots"))
  results_lib.write_hparams(rows, os.path.join(out, "hparams"))
  print(f"results: {os.path.join(out, 'results.md')}, results.csv, {len(plots)} plots, "
        f"TensorBoard HParams: tensorboard --logdir {os.path.join(out, 'hparams')}")
  print("verdict (results.md):\n" + "\n".join(f"  {line}" for line in report.verdict(rows)),
        flush=True)
