"""The transformers folders of tests/fixtures/transformers and what each holds."""

import os

from bert_tf.models import activations
from bert_tf.models import hf_checkpoint as hf


FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "fixtures", "transformers")


# folder: (architecture, objective, the config's hidden_act as ours)
MODELS = {"bert_for_pretraining": (hf.BERT_PRETRAINING, "mlm_nsp", activations.EXACT),
          "bert_for_masked_lm": (hf.BERT_MASKED_LM, "mlm", activations.TANH),
          "albert_for_pretraining": (hf.ALBERT_PRETRAINING, "mlm_sop", activations.TANH),
          "electra_for_pretraining": (hf.ELECTRA_PRETRAINING, "electra", activations.EXACT)}


def fixture(name):
  return os.path.join(FIXTURES, name)
