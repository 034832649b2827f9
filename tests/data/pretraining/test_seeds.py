"""Tests of bert_tf.data.pretraining.seeds: every random choice of a run has its own seed,
the same in every process (so the records are those of any worker count and
either driver)."""

import subprocess
import sys

from bert_tf.data.pretraining import seeds


def test_seeds_are_pinned():
  # Every record of a run follows from these: a change here changes the bytes.
  assert seeds.derived_seed(12345, "chunk_order") == 220838614497184837
  assert seeds.pass_seed(12345, 3, 1) == 16374689641204169235
  assert seeds.unit_seed(12345, 3, 1) == 15910579123685449042


def test_each_choice_has_its_own_seed():
  drawn = {seeds.pass_seed(7, b, p) for b in range(20) for p in range(5)}
  drawn |= {seeds.unit_seed(7, b, p) for b in range(20) for p in range(5)}
  assert len(drawn) == 200
  assert all(0 <= s < 1 << 64 for s in drawn)
  assert seeds.pass_seed(7, 1, 2) != seeds.pass_seed(8, 1, 2)


def test_the_same_in_another_process():
  code = "from bert_tf.data.pretraining import seeds; print(seeds.pass_seed(12345, 3, 1))"
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  assert int(out.stdout) == seeds.pass_seed(12345, 3, 1)
