"""Tests of the end-of-training warning (bert_tf.training.chance_level): a
model that learned its training text (training masked-LM accuracy far
above held-out) is told apart from one that learned nothing, and each is
told what fits its failure."""

from bert_tf.training import chance_level
from bert_tf.training import loop


def config(**kw):
  fields = dict(input_file="x", output_dir="y", num_train_steps=1000, num_warmup_steps=100,
                learning_rate=1e-3, eval_input_file="held.tfrecord")
  fields.update(kw)
  return loop.TrainConfig(**fields)


def test_overfitting_is_told_from_not_having_learned():
  # The run: a small corpus, training accuracy 0.218 against 0.071
  # held out, the held-out loss above a uniform guess.
  held = {"masked_lm_loss": 9.6, "masked_lm_accuracy": 0.071, "global_step": 1000}
  line = chance_level.warning(held, 1285, config(), {"masked_lm_accuracy": 0.218}, 0.1)
  assert "\n" not in line
  assert line.startswith("held-out masked-LM loss 9.60 at step 1000 is not below 7.16")
  assert "training masked-LM accuracy is 0.218 against 0.071 held out" in line
  assert "overfitting" in line
  assert "more text" in line and "now 0.1" in line and "fewer steps" in line
  # Nothing that makes it worse.
  assert "train longer" not in line and "raise --learning_rate" not in line
  # Both low: not learned, the advice to train longer and at a higher rate.
  line = chance_level.warning(held, 1285, config(learning_rate=5e-5),
                              {"masked_lm_accuracy": 0.075}, 0.1)
  assert "learned nothing usable" in line and "overfitting" not in line
  assert "train longer (more than --num_train_steps=1000)" in line
  assert "raise --learning_rate=5e-05" in line
  assert "more text" not in line


def test_the_step_of_the_lowest_held_out_loss_is_the_steps_advised():
  held = {"masked_lm_loss": 9.6, "masked_lm_accuracy": 0.05, "global_step": 1000}
  history = [{"global_step": 250, "masked_lm_loss": 7.9},
             {"global_step": 500, "masked_lm_loss": 7.4},
             {"global_step": 750, "masked_lm_loss": 8.3}, dict(held)]
  line = chance_level.warning(held, 1285, config(), {"masked_lm_accuracy": 0.4}, 0.1, history)
  assert "fewer steps (--num_train_steps=500, where the held-out masked-LM loss was lowest, " \
         "7.40)" in line
  # Lowest at the end: no earlier step to name.
  line = chance_level.warning(held, 1285, config(), {"masked_lm_accuracy": 0.4}, 0.1,
                              [dict(held)])
  assert "fewer steps (below --num_train_steps=1000;" in line


def test_a_gap_within_the_margins_or_no_held_out_file_is_not_overfitting():
  held = {"masked_lm_loss": 9.6, "masked_lm_accuracy": 0.10, "global_step": 1000}
  # 0.14 against 0.10: below the ratio; 0.06 against 0.03: below the gap.
  for train, held_acc in ((0.14, 0.10), (0.06, 0.03)):
    line = chance_level.warning(dict(held, masked_lm_accuracy=held_acc), 1285, config(),
                                {"masked_lm_accuracy": train})
    assert "overfitting" not in line and "train longer" in line, (train, held_acc)
  # Evaluated on the training data, the two cannot be told apart.
  line = chance_level.warning(held, 1285, config(eval_input_file=""),
                              {"masked_lm_accuracy": 0.5})
  assert line.startswith("eval (on the training data)") and "overfitting" not in line
  # A loss below a uniform guess: no warning, whatever the gap.
  assert chance_level.warning(dict(held, masked_lm_loss=7.0), 1285, config(),
                              {"masked_lm_accuracy": 0.5}) is None
