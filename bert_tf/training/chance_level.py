"""Whether a run's masked-LM loss beat a uniform guess.

A uniform guess over the vocabulary has cross-entropy ln(vocab_size) on
every masked token (7.16 for 1,285 tokens, 10.33 for BERT's 30,522). A
freshly initialized model starts near it; an evaluation above it means
training has not yet taught the model anything about the masked tokens
(or has made it confidently wrong), most often because the run was too
short for its schedule: the warmup still under way, or a rate meant for
BERT-base over 100k+ steps on a small model. `warning` says so in one line
with the settings to change; the loop logs it at the end of a run.
"""

import math


def warning(eval_results, vocab_size, config):
  """One line when `eval_results["masked_lm_loss"]` is at or above
  ln(vocab_size), else None.

  Args:
    eval_results: dict of the evaluation (global_step, masked_lm_loss, ...);
      without masked_lm_loss there is nothing to check.
    vocab_size: int, the model's vocabulary size.
    config: the run's TrainConfig (its schedule is what the line names).
  """
  loss = eval_results.get("masked_lm_loss")
  if loss is None or vocab_size < 2 or not math.isfinite(loss):
    return None
  chance = math.log(vocab_size)
  if loss < chance:
    return None
  where = "held-out" if config.eval_input_file else "eval (on the training data)"
  step = int(eval_results.get("global_step", 0))
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
  return (f"{where} masked-LM loss {loss:.2f} at step {step} is not below {chance:.2f} = "
          f"ln(vocab_size {vocab_size:,}), the loss of a uniform guess: the model has learned "
          f"nothing usable about masked tokens yet; " + "; ".join(advice))
