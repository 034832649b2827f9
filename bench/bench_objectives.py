"""Each objective's step time against its FLOPs, side by side in one run.

Three comparisons, each a pair of training arms (bert_tf's `loop.Trainer`
on the real input pipeline, random-token records, seq 128, batch 32):

  electra   ELECTRA against BERT (MLM + NSP) at the same discriminator size,
            for each --configs (tiny, mini): step time ratio against the
            training-FLOPs ratio (`models/flops.py`); goal <= 1.15x it.
  distill   distillation (a 4-layer teacher of the student's width, random
            weights: speed only) against the student's plain MLM step: step
            time ratio against (teacher forward + student step) / student
            step; goal <= 1.1x it.
  masking   BERT-tiny MLM on records masked in the input pipeline (dynamic
            masking, RoBERTa's) against the same records' static masks:
            examples/s ratio; goal >= 0.95. Then the dynamic-masking
            pipeline alone: examples/s, and per CPU core it used (examples
            per second of process CPU time, all threads).

The machine may be shared, so the arms run INTERLEAVED: every round runs
one host loop of each arm of every pair in turn (A, B, then B, A the next
round), after a first untimed loop (tracing). Per arm it reports the median
step time over rounds; each ratio is the median of the rounds' paired
ratios (A and B of a round ran next to each other, under the same load).

  python bench/bench_objectives.py --rounds 9 --steps 4   # all, ~4 min on 2 cores
  python bench/bench_objectives.py --pairs electra --configs tiny --rounds 3
"""

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "bench"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
from absl import logging  # noqa: E402

from bench_training import write_random_records  # noqa: E402
from bert_tf.data.input import dynamic_masking  # noqa: E402
from bert_tf.data.pretraining import masking  # noqa: E402
from bert_tf.data.input import pipeline  # noqa: E402
from bert_tf.models import distillation  # noqa: E402
from bert_tf.models import flops  # noqa: E402
from bert_tf.models import modeling  # noqa: E402
from bert_tf.models.config import BertConfig  # noqa: E402
from bert_tf.training import loop  # noqa: E402
from bert_tf.training import optimization  # noqa: E402
from bert_tf.training import objectives  # noqa: E402
from bert_tf.training.objectives import distillation as distill_objective  # noqa: E402
from bert_tf.training.objectives import electra as electra_objective  # noqa: E402

MASK_ID = 103  # write_random_records' [MASK]


@dataclasses.dataclass
class Arm:
  """One training arm: a Trainer and its input iterator."""
  name: str
  trainer: loop.Trainer
  iterator: object
  steps: int
  seconds: list = dataclasses.field(default_factory=list)  # wall, per step, by round
  cpu_seconds: list = dataclasses.field(default_factory=list)  # process CPU, per step

  def loop(self):
    """(wall seconds, process CPU seconds) per step of one host loop."""
    start, cpu = time.perf_counter(), time.process_time()
    metrics, done, _ = self.trainer.train_steps(self.iterator, tf.constant(self.steps))
    float(metrics["loss"])  # waits for the loop
    done = int(done)
    return (time.perf_counter() - start) / done, (time.process_time() - cpu) / done


def make_arm(name, objective, model, dataset, steps, jit_compile):
  optimizer = optimization.create_optimizer("adamw_original", 1e-4, 10 ** 6, 10)
  optimizer.build(objective.trainable_variables(model))
  step = tf.Variable(0, dtype=tf.int64, trainable=False)
  trainer = loop.Trainer(tf.distribute.get_strategy(), model, optimizer, objective, step,
                         jit_compile=jit_compile)
  arm = Arm(name, trainer, iter(dataset), steps)
  arm.loop()  # tracing, not timed
  return arm


def dynamic(vocab_size, args):
  return dynamic_masking.DynamicMasking(
      masked_lm_prob=0.15, max_predictions_per_seq=args.preds,
      vocab=masking.MaskingVocab(size=vocab_size, cls_id=101, sep_id=102, mask_id=MASK_ID))


def config(name):
  return BertConfig.from_json_file(os.path.join(REPO, "configs", f"bert_{name}.json"))


def electra_pair(name, records, args):
  bert_config = config(name)
  bert = objectives.get("mlm_nsp")
  electra = electra_objective.ElectraObjective(
      electra_objective.ElectraSettings(mask_token_id=MASK_ID))
  shape = (args.batch, args.seq, args.preds)
  goal = (electra.train_flops(bert_config, *shape) / bert.train_flops(bert_config, *shape))
  steps = max(1, args.steps * 128 // bert_config.hidden_size)
  ds = pipeline.make_dataset([records], args.batch, args.seq, args.preds, True, seed=1,
                             shuffle_buffer=1000)
  arms = [make_arm(f"bert-{name}", bert, bert.build_model(bert_config), ds, steps, args.jit),
          make_arm(f"electra-{name}", electra, electra.build_model(bert_config), ds, steps,
                   args.jit)]
  return f"electra {name}", arms, "step time", goal, "<=", 1.15


def distill_pair(records, args):
  student_config = config("tiny")
  teacher_config = dataclasses.replace(student_config, num_hidden_layers=4)
  student = objectives.get("mlm")
  options = distill_objective.DistillSettings(teacher_config=teacher_config,
                                             teacher_checkpoint="(random weights)")
  distill = distill_objective.DistillationObjective(student, options)
  # The objective's build_model reads a teacher checkpoint; the bench's
  # teacher is a random one (the same arithmetic).
  model = distillation.Distiller(student.build_model(student_config),
                                 modeling.BertPretrainer(teacher_config, sentence_head=False))
  model.objective = distill
  shape = (args.batch, args.seq, args.preds)
  goal = (flops.distillation_step_flops(student_config, teacher_config, *shape)
          / flops.bert_step_flops(student_config, *shape, sentence_head=False))
  ds = pipeline.make_dataset([records], args.batch, args.seq, args.preds, True, seed=1,
                             shuffle_buffer=1000, sentence_task="none")
  arms = [make_arm("mlm-student", student, student.build_model(student_config), ds,
                   args.steps, args.jit),
          make_arm("distill", distill, model, ds, args.steps, args.jit)]
  return "distill tiny", arms, "step time", goal, "<=", 1.1


def masking_pair(records, args):
  bert_config = config("tiny")
  mlm = objectives.get("mlm")
  static = pipeline.make_dataset([records], args.batch, args.seq, args.preds, True, seed=1,
                                 shuffle_buffer=1000, sentence_task="none")
  masked = pipeline.make_dataset([records], args.batch, args.seq, args.preds, True, seed=1,
                                 shuffle_buffer=1000, sentence_task="none",
                                 masking=dynamic(bert_config.vocab_size, args))
  arms = [make_arm("static", mlm, mlm.build_model(bert_config), static, args.steps, args.jit),
          make_arm("dynamic", mlm, mlm.build_model(bert_config), masked, args.steps, args.jit)]
  return "masking tiny", arms, "examples/s", 1.0, ">=", 0.95


def pipeline_alone(records, args):
  """(examples/s, examples per CPU-second, CPU cores busy) of the
  dynamic-masking pipeline alone."""
  ds = pipeline.make_dataset([records], args.batch, args.seq, args.preds, True, seed=2,
                             shuffle_buffer=1000, sentence_task="none",
                             masking=dynamic(config("tiny").vocab_size, args))
  it = iter(ds)
  for _ in range(10):
    next(it)
  wall, cpu, n = time.perf_counter(), time.process_time(), 0
  while time.perf_counter() - wall < args.pipeline_seconds:
    next(it)
    n += args.batch
  wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
  return n / wall, n / cpu, cpu / wall


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--pairs", default="electra,distill,masking")
  parser.add_argument("--configs", default="tiny,mini", help="ELECTRA's discriminator sizes")
  parser.add_argument("--seq", type=int, default=128)
  parser.add_argument("--preds", type=int, default=20)
  parser.add_argument("--batch", type=int, default=32)
  parser.add_argument("--steps", type=int, default=8,
                      help="steps per host loop at hidden 128 (fewer for wider configs)")
  parser.add_argument("--rounds", type=int, default=5)
  parser.add_argument("--pipeline_seconds", type=float, default=10.0)
  parser.add_argument("--jit", action="store_true", help="jit_compile the update step")
  args = parser.parse_args()
  logging.set_verbosity(logging.WARNING)
  wanted = args.pairs.split(",")
  with tempfile.TemporaryDirectory() as workdir:
    records = os.path.join(workdir, "random.tfrecord")
    write_random_records(records, 2048, args.seq, args.preds, config("tiny").vocab_size)
    pairs = []
    if "electra" in wanted:
      pairs += [electra_pair(name, records, args) for name in args.configs.split(",")]
    if "distill" in wanted:
      pairs.append(distill_pair(records, args))
    if "masking" in wanted:
      pairs.append(masking_pair(records, args))
    paired = {title: [] for title, *_ in pairs}
    for r in range(args.rounds):
      for title, arms, *_ in pairs:
        order = arms if r % 2 == 0 else arms[::-1]
        for arm in order:
          wall, cpu = arm.loop()
          arm.seconds.append(wall)
          arm.cpu_seconds.append(cpu)
        paired[title].append((arms[1].seconds[-1] / arms[0].seconds[-1],
                              arms[1].cpu_seconds[-1] / arms[0].cpu_seconds[-1]))
      print(f"  round {r + 1}/{args.rounds} done", flush=True)
    alone = pipeline_alone(records, args) if "masking" in wanted else None

  print(f"\n{os.cpu_count()} CPUs, seq {args.seq}, batch {args.batch}, {args.preds} predictions, "
        f"jit_compile={args.jit}; medians of {args.rounds} interleaved rounds; B/A: the "
        "median of the rounds' paired ratios of wall time (and of process CPU time)")
  print(f"{'pair':13} {'A':>12} {'ms/step':>8} {'B':>12} {'ms/step':>8} {'B/A wall':>9} "
        f"{'(CPU)':>6} {'FLOPs B/A':>10} {'measured':>22} {'goal':>8}")
  for title, arms, kind, flops_ratio, sign, goal in pairs:
    a, b = (statistics.median(arm.seconds) * 1000 for arm in arms)
    wall = statistics.median(r[0] for r in paired[title])
    cpu = statistics.median(r[1] for r in paired[title])
    if kind == "examples/s":  # a rate: A's time over B's
      measured, met = 1 / wall, 1 / wall >= goal
      label = f"ex/s B/A {measured:.3f}"
    else:
      measured, met = wall / flops_ratio, wall / flops_ratio <= goal
      label = f"time/FLOPs {measured:.3f}"
    print(f"{title:13} {arms[0].name:>12} {a:8.1f} {arms[1].name:>12} {b:8.1f} {wall:9.3f} "
          f"{cpu:6.3f} {flops_ratio:10.3f} {label:>22} {sign + ' ' + str(goal):>8} "
          f"{'met' if met else 'NOT met'}", flush=True)
  if alone is not None:
    rate, per_core, cores = alone
    print(f"dynamic-masking input pipeline alone: {rate:.0f} examples/s on {cores:.2f} cores "
          f"busy, {per_core:.0f} examples/s per core")


if __name__ == "__main__":
  main()
