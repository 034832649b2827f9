"""Each flag several tools share is defined once (bert_tf/cli/shared_flags.py)
with one help text: read from every tool's define_flags into a fresh
FlagValues, a flag name that two tools define with two help texts fails,
unless the name means something of its own in a tool (listed here, why)."""

import collections
import importlib
import pathlib

from absl import flags

PACKAGE = pathlib.Path(__file__).resolve().parent.parent.parent / "bert_tf"

# Names that each tool gives its own meaning (an input, an output, a size
# in its own units): no shared help text could say what they are.
PER_TOOL_NAMES = {
    "input_file": "text, records or an example file, by tool",
    "output_file": "records or feature lines", "output_dir": "each tool's own outputs",
    "export_dir": "the SavedModel of each tool's model",
    "hf_out": "the transformers folder of each tool's model",
    "train_file": "a TSV, a SQuAD JSON, or split_corpus' output",
    "corpus": "the corpus each tool reads", "heldout_every": "split or tag by tool",
    "batch_size": "quickstart's training batch vs extract_features' forward pass",
    "vocab_size": "the vocab built, by tool", "dupe_factor": "masked copies, by tool",
    "bert_config_template": "what is set in the copy differs by tool",
    "do_train": "pretraining, or fine-tuning (which can also evaluate a fine-tuned model)",
    "do_eval": "pretraining's held-out records vs fine-tuning's dev file",
    "do_predict": "GLUE's test file vs SQuAD's predict file",
    "overwrite": "what is replaced, by tool",
    "max_seq_length": "records' length, a window, or the export's longest input",
    "max_predictions_per_seq": "written into records vs read from them",
    "num_train_steps": "compare_objectives' budget of every objective",
    "save_checkpoints_steps": "a checkpoint vs run_squad's model file",
}
# (tool, name): a tool where a shared name means something else.
OWN_MEANING = {
    ("build_vocab", "vocab_file"): "its output",
    ("build_vocab", "spm_model_file"): "its output",
    ("compare_objectives", "vocab_file"): "empty: built from the corpus",
    ("compare_objectives", "bert_config_file"): "a size; its vocab_size is set",
    ("compare_objectives", "seed"): "also of the data written",
    ("compare_objectives", "seeds"): "fine-tuning seeds of every task",
    ("inspect_records", "vocab_file"): "the records' vocab, also a tokenizer.json",
    ("inspect_records", "spm_model_file"): "the records' SentencePiece model",
    ("run_pretraining", "init_checkpoint"): "a warm start of the whole pretrainer",
    ("distill", "init_checkpoint"): "run_pretraining's",
    **{("run_squad", name): "the original's TPU flags, accepted and unused" for name in (
        "use_tpu", "tpu_name", "tpu_zone", "gcp_project", "master", "num_tpu_cores",
        "iterations_per_loop")},
}


def _tools():
  return sorted(p.stem for p in PACKAGE.glob("*.py")
                if "\ndef define_flags(" in p.read_text(encoding="utf-8"))


def _helps():
  """{flag name: {help text: [tools]}} over every tool's own flags."""
  helps = collections.defaultdict(lambda: collections.defaultdict(list))
  for tool in _tools():
    flag_values = flags.FlagValues()
    importlib.import_module(f"bert_tf.{tool}").define_flags(flag_values)
    for name, flag in flag_values._flags().items():  # pylint: disable=protected-access
      if name == flag.name and (tool, name) not in OWN_MEANING:
        helps[name][flag.help].append(tool)
  return helps


def test_the_tools_are_read():
  helps = _helps()
  assert {"run_pretraining", "finetune", "run_squad", "export_saved_model"} <= {
      tool for tools in helps["bert_config_file"].values() for tool in tools}
  assert len(helps["spm_model_file"]) == 1 and len(helps["learning_rate"]) == 1


def test_a_shared_flag_has_one_help_text():
  drift = {name: dict(texts) for name, texts in _helps().items()
           if len(texts) > 1 and name not in PER_TOOL_NAMES}
  assert not drift, ("flags defined with different help texts (define them once in "
                     f"bert_tf/cli/shared_flags.py): {drift}")


def test_the_exceptions_are_real():
  # A listed exception that no longer differs is taken off the list.
  helps = _helps()
  assert all(len(helps[name]) > 1 for name in PER_TOOL_NAMES), [
      name for name in PER_TOOL_NAMES if len(helps[name]) <= 1]
