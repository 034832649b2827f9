"""How an objective's held-out figures read in a comparison's table: each
objective declares its reading (`Objective.heldout_reading`, a
training.objectives.heldout.HeldoutReading: the masked-LM accuracy's
column, the rows of its `heldout_figures`, a note for results.md); the
comparison asks the objective by its arm's name, so it names none.
"""

from bert_tf.training import objectives


def reading(objective_name):
  """The HeldoutReading the objective registered as `objective_name`
  declares; ValueError naming the choices for an unknown name."""
  return objectives.get(objective_name).heldout_reading
