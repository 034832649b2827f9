"""Features as a task kind: per-token hidden states of an encoder, the
extract_features tool's job (features/extract.py). It has no fine-tuning,
no head and no files of its own a comparison reads, so it implements only
what its tool calls: `default_config`, `config_for` (a FeaturesConfig),
`run` (extract.extract), `summary_lines`, and `check_outputs` (none: it
exports nothing; `export_saved_model` and `write_hf` stay the base's). It
is not `compared` (no --task spec names it) and its result_types are none.
"""

import dataclasses

from bert_tf.downstream import task


@dataclasses.dataclass(frozen=True)
class FeaturesConfig:
  """One extraction: input_file's lines to output_file's JSON lines, the
  encoder of init_checkpoint, the tokenizer of vocab_file (or
  spm_model_file), `layers` ("-1,-2": indexes from the last), windows of
  max_seq_length, batch_size examples per forward pass."""
  input_file: str = ""
  output_file: str = ""
  init_checkpoint: str = ""
  vocab_file: str = ""
  spm_model_file: str = ""
  do_lower_case: bool = True
  layers: str = "-1,-2,-3,-4"
  max_seq_length: int = 128
  batch_size: int = 32


class FeaturesKind(task.TaskKind):
  name = "features"
  compared = False
  tool = "extract_features"
  result_types = ()

  def default_config(self):
    return FeaturesConfig()

  def config_for(self, values, **options):
    if options:
      raise ValueError(f"{', '.join(options)}: not a features setting")
    return FeaturesConfig(**values)

  def check_outputs(self, config, bert_config, export_dir, hf_out, overwrite=False):
    """Nothing to export: refuses an export_dir or hf_out (the base's)."""
    super().check_outputs(config, bert_config, export_dir, hf_out, overwrite)

  def run(self, config, bert_config):
    """Writes config.output_file; {"num_examples", "init"}."""
    from bert_tf.downstream.features import extract  # pylint: disable=g-import-not-at-top
    count, described = extract.extract(
        config.input_file, config.output_file, bert_config, config.init_checkpoint,
        config.vocab_file, do_lower_case=config.do_lower_case, layers=config.layers,
        max_seq_length=config.max_seq_length, batch_size=config.batch_size,
        spm_model_file=config.spm_model_file)
    return {"num_examples": count, "init": described}

  def summary_lines(self, config, results):
    return [results["init"], f"wrote {results['num_examples']} examples to {config.output_file}"]


KIND = FeaturesKind()
