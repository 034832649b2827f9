"""The pretraining objectives' names and defaults: the one list that the
flags, `TrainConfig` and the objectives' registry all read.

No TensorFlow here: run_pretraining and distill take their flag choices and
defaults from this module (through `train_config`), so `--help` does not
wait for TensorFlow to import. The objectives themselves live in
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
# (data/manifest.py `sentence_task`): the name and the metric prefix of the
# sentence-pair head (None: masked LM alone).
SENTENCE_TASKS = ("nsp", "sop", "none")
BERT_NAMES = {"nsp": "mlm_nsp", "sop": "mlm_sop", "none": "mlm"}
SENTENCE_NAMES = {"nsp": "next_sentence", "sop": "sentence_order", "none": None}
# Records written before sentence tasks existed, and the original's, are NSP.
DEFAULT_SENTENCE_TASK = "nsp"

# DistilBERT: named after the student's heads (distill_mlm; distill_mlm_nsp
# or distill_mlm_sop with a sentence-pair loss).
DISTILL_PREFIX = "distill_"
DISTILL_STUDENTS = ("mlm", "mlm_nsp", "mlm_sop")

OBJECTIVE_NAMES = (tuple(BERT_NAMES.values()) + (ELECTRA,)
                   + tuple(DISTILL_PREFIX + s for s in DISTILL_STUDENTS))
# The family of each --objective value.
FAMILY_OF = {**{f: f for f in FAMILIES}, **{n: BERT for n in BERT_NAMES.values()},
             **{DISTILL_PREFIX + s: DISTILL for s in DISTILL_STUDENTS}}


def family_of(objective):
  """The family of an --objective value; ValueError naming the choices."""
  if objective not in FAMILY_OF:
    raise ValueError(f"--objective={objective!r} is not one of "
                     f"{', '.join(FAMILIES + OBJECTIVE_NAMES)}")
  return FAMILY_OF[objective]


# --------------------------------------------------------------------------
# ELECTRA's defaults (google-research/electra's configure_pretraining.py)
# --------------------------------------------------------------------------

# How the records' masked positions are corrupted for the generator:
# electra (85% [MASK], 15% kept), bert (80/10/10 redrawn), records (the
# records' input as written). models/electra.py implements each
# (`MASK_RULES`, its shares).
ELECTRA_MASK_RULES = ("electra", "bert", "records")
DEFAULT_ELECTRA_MASK_RULE = "electra"
# The generator's hidden size (and heads and intermediate size) and layers
# as fractions of the discriminator's.
GENERATOR_HIDDEN_SIZE = 0.25
GENERATOR_LAYERS = 1.0
DISCRIMINATOR_WEIGHT = 50.0
# The original's learning rate for ELECTRA-small (its base and large used
# 2e-4); its warmup (10000) and weight decay (0.01) are our defaults
# already. run_pretraining uses it for --objective=electra when
# --learning_rate is not given.
ELECTRA_LEARNING_RATE = 5e-4

# --------------------------------------------------------------------------
# DistilBERT's defaults (Sanh et al. 2019; Hugging Face's distiller)
# --------------------------------------------------------------------------

# teacher: student layer i starts as teacher layer 2i; scratch: random.
STUDENT_INITS = ("teacher", "scratch")
ALPHA_CE = 5.0
ALPHA_MLM = 2.0
ALPHA_COS = 1.0
ALPHA_SENTENCE = 0.0
TEMPERATURE = 2.0
# Where the soft-target KL is taken: at the records' masked positions
# (ours, the distiller's --restrict_ce_to_mask) or at every real token (the
# distiller's default).
KL_TOKENS = ("masked", "all")
