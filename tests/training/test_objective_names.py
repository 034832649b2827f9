"""Tests of bert_tf.training.objective_names: the names and defaults that
flags, configs and the registry read, without TensorFlow."""

import subprocess
import sys

import pytest

from bert_tf.training import objective_names as names


def test_the_names_import_without_tensorflow():
  # run_pretraining --help reads them; it must not wait for TensorFlow.
  code = ("import sys; import bert_tf.training.objective_names, bert_tf.training.train_config; "
          "assert 'tensorflow' not in sys.modules, 'tensorflow imported'")
  subprocess.run([sys.executable, "-c", code], check=True)


def test_every_objective_has_a_family_and_unknown_names_are_one_line_errors():
  assert names.OBJECTIVE_NAMES == ("mlm_nsp", "mlm_sop", "mlm", "electra", "distill_mlm",
                                   "distill_mlm_nsp", "distill_mlm_sop")
  assert {names.family_of(n) for n in names.OBJECTIVE_NAMES} == set(names.FAMILIES)
  assert names.family_of("mlm_sop") == "bert" and names.family_of("distill") == "distill"
  with pytest.raises(ValueError, match="--objective='electric' is not one of bert, electra, "
                     "distill, mlm_nsp"):
    names.family_of("electric")


def test_the_defaults_are_the_papers():
  # ELECTRA's configure_pretraining.py (small): generator 1/4, weight 50, lr 5e-4.
  assert (names.GENERATOR_HIDDEN_SIZE, names.DISCRIMINATOR_WEIGHT,
          names.ELECTRA_LEARNING_RATE) == (0.25, 50.0, 5e-4)
  # DistilBERT: 5.0 KL, 2.0 MLM, 1.0 cosine, T = 2, student from the teacher.
  assert (names.ALPHA_CE, names.ALPHA_MLM, names.ALPHA_COS, names.TEMPERATURE) == (
      5.0, 2.0, 1.0, 2.0)
  assert names.STUDENT_INITS[0] == "teacher"
