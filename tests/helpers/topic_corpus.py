"""A corpus of topics: documents of simple sentences, each about two of a
few subjects (a change of document is a change of topic, as NSP's random
negatives are)."""

import random

SUBJECTS = ("king", "shepherd", "river", "city", "prophet", "garden", "temple", "field")
VERBS = ("went to", "looked at", "spoke of", "built", "praised", "left")


def write_corpus(path, documents=100, sentences=12, seed=0):
  """Writes `documents` documents of `sentences` lines to path; its str."""
  rng = random.Random(seed)
  docs = []
  for _ in range(documents):
    a, b = rng.sample(SUBJECTS, 2)
    docs.append("\n".join(f"the {rng.choice((a, b))} {rng.choice(VERBS)} the "
                          f"{rng.choice(SUBJECTS)} on day {i} ." for i in range(sentences)))
  path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
  return str(path)
