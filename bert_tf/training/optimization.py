"""The original BERT optimizer and learning-rate schedule, as Keras 3 objects.

`AdamWeightDecay` is the original's update, which differs from Keras' AdamW:
no bias correction of m and v, epsilon 1e-6 added to sqrt(v), and the decay
term added to the update before the learning rate scales it:

  m = 0.9 m + 0.1 g;  v = 0.999 v + 0.001 g^2
  update = m / (sqrt(v) + 1e-6) + 0.01 * param     (decay only where allowed)
  param -= lr * update

Weight decay is skipped for every variable whose path contains "LayerNorm",
"layer_norm" or "bias" (the original's exclusion list, matched against Keras
variable paths: keras-hub names its layer norms `embeddings_layer_norm`,
`self_attention_layer_norm`, `feedforward_layer_norm`, and the MLM head's
`intermediate_layer_norm`; biases end in `bias` or `output_bias`).

`Lamb` is the LAMB that ALBERT was trained with (google-research/albert
lamb_optimizer.py; You et al. 2019, arXiv:1904.00962): the same m, v and
update without bias correction, the decay added to the update *before* the
layer-wise trust ratio ||param|| / ||update|| scales it; LayerNorm and bias
variables (the same exclusion list) get neither decay nor the ratio. Keras'
own `keras.optimizers.Lamb` is another rule (bias correction, decay applied
outside the ratio, the ratio on every variable), so it is not used.

`--optimizer=adamw` is keras.optimizers.AdamW: bias-corrected Adam with
epsilon added to sqrt(v) and the step scaled by sqrt(1 - beta2^t) /
(1 - beta1^t), and decoupled decay param -= lr * wd * param before the
update: the update of fairseq's Adam that RoBERTa was trained with (RoBERTa
decays every variable; here LayerNorm and bias are excluded as for the
others).

No gradient clipping happens here: the training loop's update step
(`loop.Trainer.update_step`) clips to global norm 1.0 before the optimizer's
`apply` (so it can log the norm).
"""

import re

import keras
from keras import ops
import tensorflow as tf

# The original's exclusion list, searched in variable paths.
WEIGHT_DECAY_EXCLUDE = ("LayerNorm", "layer_norm", "bias")
# The same exclusion stated on Keras variable *names* (a LayerNormalization's
# weights are named "gamma" and "beta"), for Keras' own AdamW, which matches
# names only.
_KERAS_EXCLUDE_NAMES = ("gamma", "beta", "bias")


def uses_weight_decay(variable):
  """True when the original would decay `variable` (a Keras variable)."""
  path = getattr(variable, "path", None) or variable.name
  return re.search("|".join(WEIGHT_DECAY_EXCLUDE), path) is None


# The schedule's shapes (--lr_schedule, train_config.LR_SCHEDULES): named
# after the papers that used them, not objectives (any objective trains with
# either). WARMUP_THEN_DECAY switches from the warmup rate to the decayed one
# at num_warmup_steps (the original BERT's); DECAY_TIMES_WARMUP multiplies
# the decayed rate by min(1, step / num_warmup_steps) (google-research/electra's).
WARMUP_THEN_DECAY = "bert"
DECAY_TIMES_WARMUP = "electra"
SCHEDULE_SHAPES = (WARMUP_THEN_DECAY, DECAY_TIMES_WARMUP)


@keras.saving.register_keras_serializable(package="bert_tf")
class LinearWarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
  """The original schedule: linear warmup, then linear decay to 0.

  As the original computes it: the decayed rate
    lr * (1 - min(step, num_train_steps) / num_train_steps)
  is replaced by the warmup rate lr * step / num_warmup_steps while
  step < num_warmup_steps. `step` is the number of updates already applied
  (the original's global_step before its increment), so the first update
  uses rate 0 when there is warmup.

  warmup="electra" is google-research/electra's shape instead: the decayed
  rate times min(1, step / num_warmup_steps), so the peak is lower (by the
  share of the run spent warming up) and decay starts at step 0.
  """

  def __init__(self, learning_rate, num_train_steps, num_warmup_steps,
               warmup=WARMUP_THEN_DECAY):
    super().__init__()
    if num_train_steps <= 0:
      raise ValueError(f"num_train_steps must be positive, got {num_train_steps}")
    if num_warmup_steps < 0:
      raise ValueError(f"num_warmup_steps must be >= 0, got {num_warmup_steps}")
    if warmup not in SCHEDULE_SHAPES:
      raise ValueError(f"warmup must be 'bert' or 'electra', got {warmup!r}")
    self.learning_rate = float(learning_rate)
    self.num_train_steps = int(num_train_steps)
    self.num_warmup_steps = int(num_warmup_steps)
    self.warmup = warmup

  def __call__(self, step):
    """float32 scalar learning rate at integer `step`."""
    step = ops.cast(step, "float32")
    lr = ops.cast(self.learning_rate, "float32")
    done = ops.minimum(step, float(self.num_train_steps)) / float(self.num_train_steps)
    rate = lr * (1.0 - done)
    if self.num_warmup_steps and self.warmup == DECAY_TIMES_WARMUP:
      rate = rate * ops.minimum(1.0, step / float(self.num_warmup_steps))
    elif self.num_warmup_steps:
      warmup_rate = lr * step / float(self.num_warmup_steps)
      is_warmup = ops.cast(step < float(self.num_warmup_steps), "float32")
      rate = (1.0 - is_warmup) * rate + is_warmup * warmup_rate
    return rate

  def get_config(self):
    return {"learning_rate": self.learning_rate,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps, "warmup": self.warmup}


@keras.saving.register_keras_serializable(package="bert_tf")
class AdamWeightDecay(keras.optimizers.Optimizer):
  """The original BERT `AdamWeightDecayOptimizer` as a Keras 3 optimizer.

  Slots per trainable variable: `m` and `v` (float32, zeros). See the module
  docstring for the update. Variables are decayed unless `uses_weight_decay`
  says no (path contains LayerNorm, layer_norm or bias).
  """

  def __init__(self, learning_rate=0.001, weight_decay_rate=0.01, beta_1=0.9,
               beta_2=0.999, epsilon=1e-6, name="adam_weight_decay", **kwargs):
    # Keras' own `weight_decay` argument is decoupled decay applied before
    # the update, another formula; ours is inside `update_step`.
    if kwargs.get("weight_decay") is not None:
      raise ValueError("AdamWeightDecay takes weight_decay_rate, not weight_decay")
    kwargs.pop("weight_decay", None)
    super().__init__(learning_rate=learning_rate, name=name, **kwargs)
    self.weight_decay_rate = float(weight_decay_rate)
    self.beta_1 = float(beta_1)
    self.beta_2 = float(beta_2)
    self.epsilon = float(epsilon)

  def build(self, var_list):
    if self.built:
      return
    super().build(var_list)
    self._m, self._v = self.add_optimizer_variables(var_list, ["m", "v"])
    # Decided once per variable from its path, not per step.
    self._decay = [uses_weight_decay(v) for v in var_list]

  def update_step(self, gradient, variable, learning_rate):
    """One original AdamWeightDecay update of `variable` (no bias correction),
    scaled by `_scale_update` (LAMB's trust ratio in `Lamb`)."""
    index = self._get_variable_index(variable)
    lr = ops.cast(learning_rate, variable.dtype)
    if isinstance(gradient, tf.IndexedSlices):
      # Embedding gradients arrive sparse; the original's update (and its
      # decay of every row) is dense, and LAMB's trust ratio needs the whole
      # update.
      gradient = tf.convert_to_tensor(gradient)
    g = ops.cast(gradient, variable.dtype)
    m, v = self._m[index], self._v[index]
    next_m = self.beta_1 * m + (1.0 - self.beta_1) * g
    next_v = self.beta_2 * v + (1.0 - self.beta_2) * ops.square(g)
    update = next_m / (ops.sqrt(next_v) + self.epsilon)
    if self._decay[index] and self.weight_decay_rate:
      update = update + self.weight_decay_rate * variable
    update = self._scale_update(index, variable, update)
    self.assign(m, next_m)
    self.assign(v, next_v)
    self.assign_sub(variable, lr * update)

  def _scale_update(self, index, variable, update):
    """The update as applied (times lr); AdamWeightDecay applies it as is."""
    del index, variable
    return update

  def get_config(self):
    config = super().get_config()
    config.update({"weight_decay_rate": self.weight_decay_rate,
                   "beta_1": self.beta_1, "beta_2": self.beta_2,
                   "epsilon": self.epsilon})
    return config


@keras.saving.register_keras_serializable(package="bert_tf")
class Lamb(AdamWeightDecay):
  """ALBERT's LAMB (google-research/albert `LAMBOptimizer`) as a Keras 3
  optimizer.

  Per variable, with m, v as AdamWeightDecay's (no bias correction):
    update = m / (sqrt(v) + epsilon) + weight_decay_rate * param   (decayed vars)
    ratio = ||param|| / ||update||  (1 when either norm is 0, and 1 for
            variables excluded from adaptation)
    param -= ratio * lr * update
  Norms are the Frobenius norms of the whole variable. Variables whose path
  contains LayerNorm, layer_norm or bias get neither decay nor the ratio
  (the original's exclude_from_layer_adaptation defaults to its
  exclude_from_weight_decay, and ALBERT passes only the latter).
  """

  def __init__(self, learning_rate=0.001, weight_decay_rate=0.01, beta_1=0.9,
               beta_2=0.999, epsilon=1e-6, name="lamb", **kwargs):
    super().__init__(learning_rate=learning_rate, weight_decay_rate=weight_decay_rate,
                     beta_1=beta_1, beta_2=beta_2, epsilon=epsilon, name=name, **kwargs)

  def build(self, var_list):
    if self.built:
      return
    super().build(var_list)
    # The original matches one exclusion list for both decisions.
    self._adapt = list(self._decay)

  def _scale_update(self, index, variable, update):
    """The original LAMB's trust ratio times the AdamWeightDecay update."""
    if not self._adapt[index]:
      return update
    w_norm = ops.sqrt(ops.sum(ops.square(variable)))
    u_norm = ops.sqrt(ops.sum(ops.square(update)))
    ratio = ops.where(w_norm > 0.0,
                      ops.where(u_norm > 0.0, w_norm / u_norm, 1.0), 1.0)
    return ratio * update


OPTIMIZERS = ("adamw_original", "adamw", "lamb")


def create_optimizer(name="adamw_original", learning_rate=1e-4,
                     num_train_steps=None, num_warmup_steps=0,
                     weight_decay=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                     warmup=WARMUP_THEN_DECAY):
  """Makes an optimizer with the original schedule.

  Args:
    name: "adamw_original" (the original BERT AdamWeightDecay, default),
      "adamw" (keras.optimizers.AdamW: bias-corrected, decoupled decay
      lr*wd*param; RoBERTa's), or "lamb" (`Lamb`: ALBERT's LAMB).
    learning_rate: peak learning rate.
    num_train_steps: steps at which the rate reaches 0.
    num_warmup_steps: steps of linear warmup.
    weight_decay: decay rate; LayerNorm weights and biases are never decayed.
    beta_1, beta_2, epsilon: the Adam moments' decay rates and the epsilon
      added to sqrt(v), for every choice (the defaults are the original
      BERT's and ALBERT's; RoBERTa used beta_2 0.98).
    warmup: one of SCHEDULE_SHAPES ("bert", "electra"), the schedule's
      shape (LinearWarmupLinearDecay).

  Returns:
    A Keras optimizer whose learning_rate is a LinearWarmupLinearDecay. It
    does not clip gradients.

  Raises:
    ValueError: unknown name or bad step counts.
  """
  if num_train_steps is None:
    raise ValueError("create_optimizer needs num_train_steps")
  schedule = LinearWarmupLinearDecay(learning_rate, num_train_steps, num_warmup_steps, warmup)
  adam = {"beta_1": beta_1, "beta_2": beta_2, "epsilon": epsilon}
  if name == "adamw_original":
    return AdamWeightDecay(learning_rate=schedule, weight_decay_rate=weight_decay, **adam)
  if name == "lamb":
    return Lamb(learning_rate=schedule, weight_decay_rate=weight_decay, **adam)
  if name != "adamw":
    raise ValueError(f"unknown optimizer {name!r}; choose one of {list(OPTIMIZERS)}")
  optimizer = keras.optimizers.AdamW(learning_rate=schedule, weight_decay=weight_decay,
                                     **adam)
  optimizer.exclude_from_weight_decay(var_names=list(_KERAS_EXCLUDE_NAMES))
  return optimizer
