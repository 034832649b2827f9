"""Whether a run's masked-LM loss beat a uniform guess, and if not, why.

A uniform guess over the vocabulary has cross-entropy ln(vocab_size) on
every masked token (7.16 for 1,285 tokens, 10.33 for BERT's 30,522). A
freshly initialized model starts near it; an evaluation above it means
the model has nothing usable about the masked tokens of that text. Two
different failures give it, and they want opposite fixes:

  not learned   the training masked-LM accuracy is as low as the
                evaluation's: the run was too short for its schedule (the
                warmup still under way, or a rate meant for BERT-base over
                100k+ steps on a small model): train longer, shorten the
                warmup, raise the rate.
  overfitted    the training accuracy is far above the held-out one
                (OVERFIT_GAP and OVERFIT_RATIO: 0.218 against 0.071 on a
                76-paragraph corpus): the model learned its training text,
                not the language, and more steps or a higher rate make it
                worse: more text, more dropout, or fewer steps (the step of
                the lowest held-out loss when the run evaluated along the
                way).

`warning` says which in one line with the settings to change; the loop
logs it at the end of a run. Evaluated on the training data itself (no
held-out file) the two cannot be told apart, and the line says "not
learned".
"""

import math

# The training accuracy (the last host loop's, under dropout, on the
# training records) is "far above" the held-out one when it is at least
# OVERFIT_GAP higher AND OVERFIT_RATIO times it: dropout alone keeps a
# model that generalizes at or below its held-out figure.
OVERFIT_GAP = 0.05
OVERFIT_RATIO = 1.5


def _overfitted(eval_results, train_results):
  """(training accuracy, held-out accuracy) when training is far above
  held-out, else None."""
  train = (train_results or {}).get("masked_lm_accuracy")
  held = eval_results.get("masked_lm_accuracy")
  if train is None or held is None or not (math.isfinite(train) and math.isfinite(held)):
    return None
  if train - held >= OVERFIT_GAP and train >= OVERFIT_RATIO * held:
    return train, held
  return None


def _overfit_advice(config, step, dropout, eval_history):
  """What to change for a model that learned its training text."""
  advice = ["more text (records of a larger corpus: the surest fix)"]
  if dropout is not None:
    advice.append(f"more dropout (hidden_dropout_prob and attention_probs_dropout_prob in "
                  f"--bert_config_file, now {dropout:g}; 0.2 to 0.3)")
  losses = [(h["masked_lm_loss"], int(h["global_step"])) for h in eval_history or ()
            if math.isfinite(h.get("masked_lm_loss", math.nan)) and h.get("global_step")]
  best_loss, best_step = min(losses) if losses else (None, None)
  if best_step is not None and best_step < step:
    advice.append(f"fewer steps (--num_train_steps={best_step}, where the held-out "
                  f"masked-LM loss was lowest, {best_loss:.2f})")
  else:
    advice.append(f"fewer steps (below --num_train_steps={config.num_train_steps}; "
                  "--eval_every_steps shows where the held-out loss is lowest)")
  return advice + ["not more steps or a higher --learning_rate: they fit the training text "
                   "closer"]


def _not_learned_advice(config, step):
  """What to change for a model that learned nothing yet."""
  advice = []
  if step < config.num_train_steps:
    advice.append(f"the model is at step {step} of --num_train_steps="
                  f"{config.num_train_steps}: train it to the end")
  else:
    advice.append(f"train longer (more than --num_train_steps={config.num_train_steps})")
  if config.num_warmup_steps * 2 >= config.num_train_steps:
    advice.append(f"shorten the warmup (--num_warmup_steps={config.num_warmup_steps} of "
                  f"{config.num_train_steps} steps; about 10% is usual)")
  if config.learning_rate < 1e-4:
    advice.append(f"raise --learning_rate={config.learning_rate:g} (a small model or a short "
                  "run takes 5e-4 to 1e-3)")
  return advice


def warning(eval_results, vocab_size, config, train_results=None, dropout=None,
            eval_history=()):
  """One line when `eval_results["masked_lm_loss"]` is at or above
  ln(vocab_size), else None.

  Args:
    eval_results: dict of the evaluation (global_step, masked_lm_loss,
      masked_lm_accuracy, ...); without masked_lm_loss there is nothing to
      check.
    vocab_size: int, the model's vocabulary size.
    config: the run's TrainConfig (its schedule is what the line names).
    train_results: the last training metrics (masked_lm_accuracy): against
      a held-out evaluation they tell overfitting from not having learned.
    dropout: the model's hidden_dropout_prob, named in the overfitting advice.
    eval_history: the evaluations along the way (global_step,
      masked_lm_loss): the step of the lowest held-out loss is the number of
      steps the overfitting advice names.
  """
  loss = eval_results.get("masked_lm_loss")
  if loss is None or vocab_size < 2 or not math.isfinite(loss):
    return None
  chance = math.log(vocab_size)
  if loss < chance:
    return None
  where = "held-out" if config.eval_input_file else "eval (on the training data)"
  step = int(eval_results.get("global_step", 0))
  head = (f"{where} masked-LM loss {loss:.2f} at step {step} is not below {chance:.2f} = "
          f"ln(vocab_size {vocab_size:,}), the loss of a uniform guess")
  gap = _overfitted(eval_results, train_results) if config.eval_input_file else None
  if gap:
    return (f"{head}, while the training masked-LM accuracy is {gap[0]:.3f} against "
            f"{gap[1]:.3f} held out: the model learned its training text, not what carries "
            "over to new text (overfitting); " + "; ".join(
                _overfit_advice(config, step, dropout, eval_history)))
  return (f"{head}: the model has learned nothing usable about masked tokens yet; "
          + "; ".join(_not_learned_advice(config, step)))
