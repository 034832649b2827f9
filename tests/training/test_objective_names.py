"""Tests of bert_tf.training.objective_names and the objectives' options
dataclasses: the names and defaults that flags, configs and the registry
read, without TensorFlow."""

import subprocess
import sys

import pytest

from bert_tf.training import objective_names as names
from bert_tf.training import objectives


def test_the_names_import_without_tensorflow():
  # run_pretraining --help reads them; it must not wait for TensorFlow.
  code = ("import sys; import bert_tf.training.objective_names, bert_tf.training.train_config; "
          "from bert_tf.training import objectives; objectives.OPTIONS; "
          "assert 'tensorflow' not in sys.modules, 'tensorflow imported'")
  subprocess.run([sys.executable, "-c", code], check=True)


def test_every_objective_has_a_family_and_unknown_names_are_one_line_errors():
  assert names.OBJECTIVE_NAMES == ("mlm_nsp", "mlm_sop", "mlm", "electra", "electra_15",
                                   "replace_mlm", "all_tokens_mlm", "distill_mlm",
                                   "distill_mlm_nsp", "distill_mlm_sop", "ltr")
  assert {names.family_of(n) for n in names.OBJECTIVE_NAMES} == set(names.FAMILIES)
  assert names.family_of("mlm_sop") == "bert" and names.family_of("distill") == "distill"
  with pytest.raises(ValueError, match="--objective='electric' is not one of bert, electra, "
                     "distill, mlm_nsp"):
    names.family_of("electric")


def test_the_defaults_are_the_papers():
  # ELECTRA's configure_pretraining.py (small): generator 1/4, weight 50, lr 5e-4.
  electra = objectives.ElectraOptions()
  assert (electra.generator_hidden_size, electra.generator_layers,
          electra.discriminator_weight) == (0.25, 1.0, 50.0)
  assert electra.training_defaults == {"learning_rate": 5e-4}
  # DistilBERT: 5.0 KL, 2.0 MLM, 1.0 cosine, T = 2, student from the teacher.
  distill = objectives.DistillOptions()
  assert (distill.alpha_ce, distill.alpha_mlm, distill.alpha_cos, distill.temperature) == (
      5.0, 2.0, 1.0, 2.0)
  assert distill.student_init == "teacher" and distill.kl_tokens == "masked"
