"""The feed-forward activation a config's `hidden_act` names, set on the
keras-hub layers that hard-code another.

Two GELUs exist and the name "gelu" means one or the other by library:

  bert_config.json  (the original BERT, ALBERT, ELECTRA code)   "gelu" = tanh approximation
  transformers' config.json                                   "gelu" = exact (erf),
                                                               "gelu_new" = tanh approximation

Every released TF1 model was trained with the tanh GELU, and keras-hub's
backbones hard-code it. A model imported from transformers whose config says
"gelu" runs the exact one there, so to give transformers' outputs ours must
run it too: `hidden_act: "gelu_exact"` in our config (`hf_checkpoint` maps
the names both ways). The two differ by up to about 5e-4 per activation
(near |x| = 2), enough to move logits by more than 1e-4 after a few layers.
"""

import keras

# Our config's hidden_act -> what the model runs.
TANH = "gelu"
EXACT = "gelu_exact"
SUPPORTED = (TANH, EXACT)


@keras.saving.register_keras_serializable(package="bert_tf")
def gelu_tanh(x):
  """The original's `gelu`: the tanh approximation of GELU."""
  return keras.activations.gelu(x, approximate=True)


@keras.saving.register_keras_serializable(package="bert_tf")
def gelu_exact(x):
  """GELU exactly: x * Phi(x), with the erf (transformers' "gelu")."""
  return keras.activations.gelu(x, approximate=False)


_FUNCTIONS = {TANH: gelu_tanh, EXACT: gelu_exact}


def check(hidden_act, model="bert_tf models"):
  """Raises ValueError (one line) when `hidden_act` is not one we run."""
  if hidden_act not in _FUNCTIONS:
    raise ValueError(f"hidden_act={hidden_act!r} is not supported; {model} run \"gelu\" "
                     f"(the original's tanh GELU, as every released BERT) or \"gelu_exact\" "
                     f"(transformers' \"gelu\")")


def function(hidden_act):
  """The activation function for a config's `hidden_act`."""
  check(hidden_act)
  return _FUNCTIONS[hidden_act]


def set_feedforward_activation(layers, hidden_act):
  """Sets `hidden_act` on keras-hub TransformerEncoder layers (built or not),
  whose backbones build them with the tanh GELU. A no-op for "gelu"."""
  if hidden_act == TANH:
    return
  fn = function(hidden_act)
  for layer in layers:
    layer.activation = fn
    # pylint: disable=protected-access
    layer._feedforward_intermediate_dense.activation = fn
