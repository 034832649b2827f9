"""What every command-line tool shares: absl flags and one-line errors.

A tool module has `define_flags(flag_values)`, a module-level `FLAGS`
(absl's global FlagValues) that its `main(argv)` reads, and a `run()` that
calls `cli.run(main, define_flags)`: its console script.

- Flags are defined when a tool runs, not when its module is imported, so
  tool modules import side by side (tests, notebooks, the quickstart) without
  clashing over the flag names they share (input_file, vocab_file, ...).
  `parse(define_flags, argv)` gives a private FlagValues for in-process use.
- Bad input ends with one line on stderr, `bert_tf.TOOL: error: MESSAGE`, and
  a non-zero exit: 2 for a bad command line (a flag that does not parse, a
  missing or contradictory flag: `app.UsageError`), 1 for a problem found
  while running (`Error`, `ValueError`, `OSError` such as a missing or
  unwritable file, a TensorFlow I/O error). Anything else is a bug and keeps
  its traceback.
- TensorFlow's start-up notices are hidden and matplotlib kept out of its
  import: `quiet_import`, which this module imports first.
"""

import dataclasses
import gc
import sys

from absl import app
from absl import flags
from absl import logging

from bert_tf.cli import quiet_import  # noqa: F401  (before TensorFlow: see its docstring)
from bert_tf.training import objectives
from bert_tf.training import train_config
from bert_tf.training.objectives import options

USAGE_EXIT = 2
ERROR_EXIT = 1


class Error(Exception):
  """A problem the user can fix; its message becomes the one-line error."""


def _user_error(e):
  if isinstance(e, (Error, ValueError, OSError)):
    return True
  tf = sys.modules.get("tensorflow")  # only if the tool imported it
  return tf is not None and isinstance(e, tf.errors.OpError)


def _one_line(e):
  message = getattr(e, "message", None) if not isinstance(e, (ValueError, OSError)) else None
  return " ".join(str(message or e).split()) or type(e).__name__


def prog_name(main):
  """`bert_tf.TOOL` for a tool's main, also when run as `python -m`."""
  module = sys.modules.get(main.__module__)
  spec = getattr(module, "__spec__", None)
  return spec.name if spec is not None else main.__module__


def fail(prog, message, code=ERROR_EXIT):
  """Writes `prog: error: message` to stderr and exits with `code`."""
  sys.stdout.flush()
  sys.stderr.write(f"{prog}: error: {message}\n")
  sys.stderr.flush()
  sys.exit(code)


def call(main, argv, prog=None):
  """Runs `main(argv)`, turning bad input into `fail(...)` (SystemExit)."""
  prog = prog or prog_name(main)
  try:
    return main(argv)
  except app.UsageError as e:
    fail(prog, f"{e} (--help lists the flags)", USAGE_EXIT)
  except Exception as e:  # pylint: disable=broad-except
    if not _user_error(e):
      raise
    fail(prog, _one_line(e), ERROR_EXIT)


def parse(define_flags, argv):
  """A private FlagValues with the tool's flags, parsed from argv (argv[0] is
  the program name). For calling a tool's main in-process."""
  flag_values = flags.FlagValues()
  define_flags(flag_values)
  flag_values(argv)
  return flag_values


def options_from_flags(cls, flag_values=None, unset_keeps_default=False, **overrides):
  """A `cls` (a dataclass of options) with each field the flag of its name.

  Fields without a flag of their name keep their default; `overrides` are
  fields given directly (a flag the tool names differently, or computes).
  flag_values: default absl's global FLAGS, where `run` defines the flags.
  unset_keeps_default: a flag whose value is None (a flag without a default,
    not given) leaves its field's default (e.g. "" for a path) instead.
  """
  flag_values = flags.FLAGS if flag_values is None else flag_values
  values = {f.name: flag_values[f.name].value for f in dataclasses.fields(cls)
            if f.name in flag_values and f.name not in overrides}
  if unset_keeps_default:
    values = {k: v for k, v in values.items() if v is not None}
  return cls(**values, **overrides)


def note_vocab_not_read(flag_values=None):
  """Logs a warning when both --vocab_file and --spm_model_file are given:
  the SentencePiece model is the vocabulary then and vocab_file is not read
  (google-research/albert's rule), so a flagfile's placeholder vocab_file
  does not pass unnoticed. Returns the warning's text, or None."""
  flag_values = flags.FLAGS if flag_values is None else flag_values
  vocab, spm = flag_values["vocab_file"].value, flag_values["spm_model_file"].value
  if not (vocab and spm):
    return None
  text = (f"--vocab_file={vocab} is not read: --spm_model_file={spm} is the vocabulary "
          f"(as in google-research/albert); drop --vocab_file")
  logging.warning("%s", text)
  return text


def model_files(flag_values=None):
  """(BertConfig, vocab file, SentencePiece model, casing) of a tool that
  reads --init_checkpoint: --bert_config_file and --vocab_file (or
  --spm_model_file), or for a transformers folder
  its config.json and tokenizer in the place of those not given
  (hf_checkpoint.model_files: one of vocab file and SentencePiece model is
  ""); casing is the folder's tokenizer's do_lower_case where
  --do_lower_case is not given, else None.

  Raises:
    app.UsageError: hf_checkpoint.model_files' one line.
  """
  flag_values = flags.FLAGS if flag_values is None else flag_values
  # TensorFlow: every tool imports this module before its flags are read.
  from bert_tf.models import hf_checkpoint  # pylint: disable=g-import-not-at-top
  spm = flag_values["spm_model_file"].value
  if spm:
    note_vocab_not_read(flag_values)
  try:  # a transformers folder --init_checkpoint holds the config and the tokenizer
    bert_config, vocab_file, spm_model_file, casing = hf_checkpoint.model_files(
        flag_values["init_checkpoint"].value, flag_values["bert_config_file"].value,
        flag_values["vocab_file"].value, spm or "")
  except ValueError as e:
    raise app.UsageError(str(e)) from None
  if flag_values["do_lower_case"].present:
    casing = None
  return bert_config, vocab_file, spm_model_file, casing


_DEFINE = {float: flags.DEFINE_float, int: flags.DEFINE_integer, bool: flags.DEFINE_bool,
           str: flags.DEFINE_string}


def define_option_flags(options_type, flag_values, module_name):
  """Defines the flags of an objective's options dataclass
  (`objectives.options.flags_of`): an enum for a field with choices, else
  the field's type, with its default and help; `--help` lists them under
  `module_name` (the calling tool's __name__)."""
  if module_name == "__main__":  # as absl names the module run with -m
    module_name = sys.argv[0]
  for flag in options.flags_of(options_type):
    if flag.choices:
      flags.DEFINE_enum(flag.name, flag.flag_default, list(flag.choices), flag.help,
                        flag_values=flag_values, module_name=module_name)
    else:
      _DEFINE[flag.kind](flag.name, flag.flag_default, flag.help, flag_values=flag_values,
                         module_name=module_name)


def _option_flag_values(options_type, flag_values, given_only=False):
  """{flag name: value} of the option flags defined that have a value (a
  flag without a default, not given, has none); given_only: only those
  given on the command line (or in a --flagfile)."""
  return {f.name: flag_values[f.name].value for f in options.flags_of(options_type)
          if f.name in flag_values and flag_values[f.name].value is not None
          and (flag_values[f.name].present or not given_only)}


def objective_options(objective, flag_values=None):
  """The options dataclass of `objective`'s family from its flags (None for
  a family without options); app.UsageError for a bad value, or for
  another objective's option flag given (it would do nothing)."""
  flag_values = flags.FLAGS if flag_values is None else flag_values
  own = objectives.options_type(objective)
  for family, options_type in objectives.OPTIONS.items():
    for name in (_option_flag_values(options_type, flag_values, given_only=True)
                 if options_type is not own else ()):
      raise app.UsageError(f"--{name} is an option of objective {family}; this run's "
                           f"objective is {objective}")
  if own is None:
    return None
  try:
    return options.from_flags(own, _option_flag_values(own, flag_values))
  except ValueError as e:
    raise app.UsageError(str(e)) from None


def objective_fields(objective, flag_values=None):
  """The TrainConfig fields of the run's objective (--objective when None):
  `objective`, `objective_options` from its option flags, and the fields
  its options set where no flag was given (ELECTRA's learning rate)."""
  flag_values = flags.FLAGS if flag_values is None else flag_values
  objective = objective or flag_values.objective
  given = {f.name for f in dataclasses.fields(train_config.TrainConfig)
           if f.name in flag_values and flag_values[f.name].present}
  return {"objective": objective, "objective_options": objective_options(objective, flag_values),
          **train_config.objective_defaults(objective, given)}


def _print_help(main, define_flags, full):
  """The tool's docstring and its own flags (absl's too with --helpfull)."""
  module = sys.modules.get(main.__module__)
  print((getattr(module, "__doc__", None) or prog_name(main)).strip() + "\n")
  print("flags:\n" + _flags_help(define_flags))
  if full:
    print("\nall flags (absl's included):\n" + flags.FLAGS.get_help())


def _flags_help(define_flags):
  """Help text of the flags `define_flags` defines."""
  flag_values = flags.FlagValues()
  define_flags(flag_values)
  return flag_values.get_help(include_special_flags=False)


def run(main, define_flags, extra_args=False):
  """The console script: defines the flags in absl's global FlagValues,
  parses sys.argv (--flagfile included) and runs `main`. -h, --help,
  --helpshort print the tool's docstring and flags and exit 0 (absl's own
  help exits 1); --helpfull adds absl's flags.

  extra_args: pass arguments that are not flags (after a `--`) on to main;
    otherwise they are a usage error.
  """
  prog = prog_name(main)
  define_flags(flags.FLAGS)

  def parser(argv):
    for arg in argv[1:]:
      if arg == "--":
        break
      if arg in ("-h", "-?", "--help", "--helpshort", "--helpfull"):
        _print_help(main, define_flags, full=arg == "--helpfull")
        sys.exit(0)
    try:
      rest = flags.FLAGS(argv)
    except flags.Error as e:
      fail(prog, f"{e} (--help lists the flags)", USAGE_EXIT)
    if len(rest) > 1 and not extra_args:
      fail(prog, f"unexpected arguments: {' '.join(rest[1:])}", USAGE_EXIT)
    return rest

  def main_then_freeze(argv):
    result = call(main, argv, prog)
    # The job is done and the process exits next: the objects of the whole
    # run (TensorFlow's modules and graphs among them) go to the collector's
    # permanent generation, so the collections of interpreter shutdown skip
    # them: 0.1 s instead of 0.75 s after importing TensorFlow. Files are
    # closed and renamed by now; atexit handlers (log flushes) still run.
    gc.freeze()
    return result

  app.run(main_then_freeze, flags_parser=parser)
