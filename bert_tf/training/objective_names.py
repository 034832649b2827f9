"""The pretraining objectives' names and families: the one list that the
--objective flag, `TrainConfig` and the objectives' registry all read.

No TensorFlow here: run_pretraining takes the --objective choices from this
module, so `--help` does not wait for TensorFlow to import. The objectives
themselves, and the options of those that take any, live in
`training/objectives/` (one module per family); each takes its name from
here, so a name cannot be spelled twice.
"""

# --------------------------------------------------------------------------
# Families and objective names
# --------------------------------------------------------------------------

# --objective values: a family (the records' sentence task picks the BERT
# member and the distillation student's heads) or one objective's name.
BERT = "bert"
ELECTRA = "electra"
DISTILL = "distill"
FAMILIES = (BERT, ELECTRA, DISTILL)

# The BERT family, one objective per sentence task of the records
# (data/records/manifest.py `sentence_task`): the name and the metric prefix of the
# sentence-pair head (None: masked LM alone).
SENTENCE_TASKS = ("nsp", "sop", "none")
BERT_NAMES = {"nsp": "mlm_nsp", "sop": "mlm_sop", "none": "mlm"}
SENTENCE_NAMES = {"nsp": "next_sentence", "sop": "sentence_order", "none": None}
# Records written before sentence tasks existed, and the original's, are NSP.
DEFAULT_SENTENCE_TASK = "nsp"

# ELECTRA's variants of its Table 5 (Clark et al. 2020, section 3.5): members
# of the ELECTRA family, with its options.
ELECTRA_15 = "electra_15"
REPLACE_MLM = "replace_mlm"
ALL_TOKENS_MLM = "all_tokens_mlm"
ELECTRA_VARIANTS = (ELECTRA_15, REPLACE_MLM, ALL_TOKENS_MLM)

# BERT's "LTR & No NSP" (Devlin et al. 2019, Table 5): a left-to-right LM
# (causal attention, the next token at every position), a member of the
# BERT family that reads any records and leaves their sentence labels unused.
LTR = "ltr"

# DistilBERT: named after the student's heads (distill_mlm; distill_mlm_nsp
# or distill_mlm_sop with a sentence-pair loss).
DISTILL_PREFIX = "distill_"
DISTILL_STUDENTS = ("mlm", "mlm_nsp", "mlm_sop")

OBJECTIVE_NAMES = (tuple(BERT_NAMES.values()) + (ELECTRA,) + ELECTRA_VARIANTS
                   + tuple(DISTILL_PREFIX + s for s in DISTILL_STUDENTS) + (LTR,))
# The family of each --objective value.
FAMILY_OF = {**{f: f for f in FAMILIES}, **{n: BERT for n in BERT_NAMES.values()},
             **{n: ELECTRA for n in ELECTRA_VARIANTS},
             **{DISTILL_PREFIX + s: DISTILL for s in DISTILL_STUDENTS}, LTR: BERT}


def family_of(objective):
  """The family of an --objective value; ValueError naming the choices."""
  if objective not in FAMILY_OF:
    raise ValueError(f"--objective={objective!r} is not one of "
                     f"{', '.join(FAMILIES + OBJECTIVE_NAMES)}")
  return FAMILY_OF[objective]
