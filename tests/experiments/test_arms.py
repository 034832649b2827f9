"""Tests of bert_tf.experiments.arms: the --arm syntax, the JSON arms file,
the one-line errors of an unknown or shared flag, and the records and
training options an arm gives."""

import json

import pytest

from bert_tf.data.pretraining import writer
from bert_tf.experiments import arms
from bert_tf.training import objectives
from bert_tf.training import train_config


def test_an_arm_spec_gives_typed_writer_and_training_flags():
  arm = arms.Arm.parse("mask100:objective=mlm_nsp,masked_token_share=1.0,learning_rate=2e-3,"
                       "do_whole_word_mask=true,max_ngram=3")
  assert arm.name == "mask100" and arm.objective == "mlm_nsp"
  assert dict(arm.writer_flags) == {"masked_token_share": 1.0, "do_whole_word_mask": True,
                                    "max_ngram": 3}
  assert dict(arm.training_flags) == {"learning_rate": 0.002}
  assert isinstance(dict(arm.writer_flags)["max_ngram"], int)
  # Its spec reads back as the same arm.
  assert arms.Arm.parse(arm.describe()) == arm
  # The writer options: the comparison's, the objective's, then the arm's.
  options = arm.data_options(writer.DataOptions(max_seq_length=64, random_seed=7))
  assert (options.max_seq_length, options.random_seed, options.masked_token_share,
          options.max_ngram, options.do_whole_word_mask) == (64, 7, 1.0, 3, True)
  roberta = arms.Arm.parse("r:objective=mlm,dupe_factor=2").data_options(writer.DataOptions())
  assert (roberta.packing, roberta.dynamic_masking, roberta.dupe_factor) == (
      "full_sentences", True, 2)
  # A flag can undo the objective's record option: RoBERTa with static masks.
  static = arms.Arm.parse("s:objective=mlm,dynamic_masking=false").data_options(
      writer.DataOptions())
  assert not static.dynamic_masking and static.sentence_task == "none"


def test_an_objectives_option_flags_are_typed_by_its_options_dataclass():
  arm = arms.Arm.parse("e:objective=electra,generator_hidden_size=0.5,"
                       "electra_mask_rule=bert,learning_rate=1e-3")
  assert dict(arm.training_flags) == {"generator_hidden_size": 0.5,
                                      "electra_mask_rule": "bert", "learning_rate": 1e-3}
  assert arms.Arm.parse(arm.describe()) == arm
  # The TrainConfig fields: the options as the objective's options dataclass.
  assert arm.training_options() == {
      "learning_rate": 1e-3, "objective_options": objectives.ElectraOptions(
          generator_hidden_size=0.5, mask_rule="bert")}
  config = train_config.TrainConfig(input_file="x", output_dir="y", do_train=True,
                                    objective="electra", **arm.training_options())
  config.validate()
  assert config.options().generator_hidden_size == 0.5
  # Without option flags the objective takes its defaults.
  assert arms.Arm.parse("e:objective=electra").training_options() == {}
  assert "generator_hidden_size" in arms.option_flags("electra")
  assert arms.option_flags("mlm") == {}


def test_the_presets_are_arms_named_after_their_objective():
  assert arms.Arm.preset("electra") == arms.Arm("electra", "electra")
  assert arms.Arm.preset("mlm").describe() == "mlm:objective=mlm"


@pytest.mark.parametrize("spec, message", [
    ("bert", "expected NAME:objective=OBJECTIVE"),
    ("bert:masked_lm_prob=0.2", "no objective=..."),
    ("bert:objective=nsp", "objective 'nsp' is not one of mlm_nsp"),
    ("bert:objective=mlm_nsp,mask_share=1.0", "unknown flag 'mask_share' \\(writer flags: "),
    ("bert:objective=mlm_nsp,max_seq_length=128", "max_seq_length is the same for every arm"),
    ("bert:objective=mlm_nsp,seed=3", "seed is the same for every arm"),
    ("bert:objective=mlm_nsp,max_ngram=three", "max_ngram: 'three' is not an int"),
    ("bert:objective=mlm_nsp,do_whole_word_mask=maybe", "'maybe' is not true or false"),
    ("bert:objective=mlm_nsp,learning_rate", "'learning_rate' is not flag=value"),
    ("bert:objective=mlm_nsp,max_ngram=2,max_ngram=3", "max_ngram given twice"),
    ("b a:objective=mlm_nsp", "the name 'b a' must be"),
    # An objective's options are its arms' flags only.
    ("e:objective=mlm,generator_hidden_size=0.5",
     "generator_hidden_size is an option of objective electra, not of mlm"),
    ("e:objective=electra,generator_layers=2", r"generator_layers=2 must lie in \(0, 1\]"),
    ("e:objective=electra,electra_mask_rule=half", "electra_mask_rule='half' is not one of"),
    ("e:objective=electra,discriminator_weight=heavy", "'heavy' is not a float"),
])
def test_a_bad_arm_is_a_one_line_error_naming_it(spec, message):
  with pytest.raises(ValueError, match=message) as error:
    arms.Arm.parse(spec)
  assert "\n" not in str(error.value) and f"--arm={spec}" in str(error.value)


def test_impossible_combinations_are_caught_before_anything_runs():
  with pytest.raises(ValueError, match="arm x: objective mlm_nsp trains on records of "
                                       "sentence_task=nsp"):
    arms.Arm.parse("x:objective=mlm_nsp,sentence_task=sop").data_options(writer.DataOptions())
  with pytest.raises(ValueError, match="arm y: --masked_token_share=0.9, "
                                       "--random_token_share=0.2"):
    arms.Arm.parse("y:objective=mlm_nsp,masked_token_share=0.9,random_token_share=0.2"
                   ).data_options(writer.DataOptions())
  with pytest.raises(ValueError, match="two arms are named 'a'"):
    arms.check_unique([arms.Arm("a", "mlm"), arms.Arm("a", "mlm_nsp")])


def test_mlm_on_bert_segment_pairs_shares_the_bert_arm_records():
  # BERT's "No NSP" arm: the masked LM alone on BERT's own records (the same
  # records as the NSP arm's, so the two share them).
  base = writer.DataOptions()
  bert = arms.Arm.parse("bert:objective=mlm_nsp").data_options(base)
  no_nsp = arms.Arm.parse("no_nsp:objective=mlm,sentence_task=nsp,packing=segment_pair,"
                          "dynamic_masking=false").data_options(base)
  assert no_nsp == bert
  with pytest.raises(ValueError, match="arm x: --sentence_task=nsp needs "
                                       "--packing=segment_pair"):
    arms.Arm.parse("x:objective=mlm,sentence_task=nsp").data_options(base)


def test_an_arms_file(tmp_path):
  path = tmp_path / "arms.json"
  path.write_text(json.dumps([
      {"name": "bert", "objective": "mlm_nsp"},
      {"name": "mask40", "objective": "mlm", "masked_lm_prob": 0.4, "num_train_steps": 500}]))
  bert, mask40 = arms.parse_arms_file(str(path))
  assert bert == arms.Arm("bert", "mlm_nsp")
  assert dict(mask40.writer_flags) == {"masked_lm_prob": 0.4}
  assert dict(mask40.training_flags) == {"num_train_steps": 500}
  path.write_text(json.dumps([{"name": "x", "objective": "mlm", "masked_lm_prob": "high"}]))
  with pytest.raises(ValueError, match=r"arms.json: arm 0 \(x\): masked_lm_prob: 'high' is "
                                       "not a float"):
    arms.parse_arms_file(str(path))
  path.write_text(json.dumps({"name": "x"}))
  with pytest.raises(ValueError, match="a non-empty JSON list of arms"):
    arms.parse_arms_file(str(path))
  path.write_text(json.dumps([{"objective": "mlm"}]))
  with pytest.raises(ValueError, match='each arm is an object with "name" and "objective"'):
    arms.parse_arms_file(str(path))


def test_keys_are_stable_and_tell_payloads_apart():
  assert arms.key_of({"a": 1, "b": [2]}) == arms.key_of({"b": [2], "a": 1})
  assert arms.key_of({"a": 1}) != arms.key_of({"a": 2})
  assert len(arms.key_of({})) == 12


def test_an_arm_that_masks_more_gets_room_for_its_predictions():
  # Wettig et al.'s 40%: 26 of 64 tokens, where the comparison's own cap
  # (ceil(0.15 x 64) = 10) would silently hold it near 15%.
  base = writer.DataOptions(max_seq_length=64, max_predictions_per_seq=10)
  mask40 = arms.Arm.parse("mask40:objective=mlm,masked_lm_prob=0.4")
  assert mask40.data_options(base).max_predictions_per_seq == 26
  assert arms.Arm.parse("bert:objective=mlm_nsp").data_options(
      base).max_predictions_per_seq == 10
  # The cap is the comparison's, not an arm flag.
  with pytest.raises(ValueError, match="max_predictions_per_seq is the same for every arm"):
    arms.Arm.parse("own:objective=mlm,masked_lm_prob=0.4,max_predictions_per_seq=20")
