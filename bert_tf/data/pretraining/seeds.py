"""The data writer's seeds: every random choice of a run is seeded by a
hash of `random_seed` and what the choice is for (the chunk order, the
negative pool, a pass over a block, a unit's shuffle), so what a block
produces does not depend on which process or driver ran it."""

import hashlib


def derived_seed(*parts):
  """A 64-bit seed of `parts` (ints and strs), the same in every process."""
  digest = hashlib.sha256(":".join(["bert_tf"] + [str(p) for p in parts]).encode()).digest()
  return int.from_bytes(digest[:8], "little")


def pass_seed(random_seed, block_index, pass_index):
  """Seed of one pass over one block: independent of worker and driver."""
  return derived_seed(random_seed, block_index, pass_index)


def unit_seed(random_seed, block_index, pass_index):
  """Seed of the shuffle of one unit's instances (one pass over one block)."""
  return derived_seed(random_seed, block_index, pass_index, "order")
