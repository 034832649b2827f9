"""Queries an exported BERT SavedModel: the `predict` tool.

    .venv/bin/python -m bert_tf.predict --saved_model=/models/bert/1 --text="the [MASK] was long ."

It serves every export of bert_tf: fill-mask, sentence pairs (--text_a,
--text_b), ELECTRA's replaced-token detection and a fine-tuned classifier's
classify and a tagger's tag (--signature picks one; see bert_tf/serving/predict.py).

The client lives in bert_tf/serving/predict.py, a file that needs only
tensorflow, tensorflow-text and absl, so it can be copied beside a SavedModel.
"""

from bert_tf import cli  # noqa: F401  pylint: disable=unused-import  (quiets TF's C++ log first)
from bert_tf.serving import predict as _client

define_flags = _client.define_flags


def run():
  _client.run()


if __name__ == "__main__":
  run()
