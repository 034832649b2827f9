"""bert_tf: original BERT pretraining (masked LM with the 80/10/10 rule plus
next sentence prediction) in TensorFlow 2 / Keras 3.

Data flows one way through the subpackages (a module imports only from
upstream of it):

  data/      text -> tokens (tokenization, wordpiece_vocab) -> instances
             (pairing, truncation) -> masked instances (masking) ->
             tf.train.Example (schema) -> TFRecord shards + manifest (passes
             over blocks; writer, beam) -> batches (pipeline)
  models/    config (bert_config.json) -> encoder + heads (modeling), the
             original TF1 checkpoint names (tf1_checkpoint)
  training/  batches -> losses -> gradients (optimization) -> weights and
             checkpoints (loop)
  serving/   weights -> SavedModel (export) -> answers (predict)

The top-level modules are the tools users run (`python -m bert_tf.NAME`):
each turns flags into arguments of one library call. docs/architecture.md
follows one training step and says where a new pretraining objective goes.
"""

__version__ = "0.1.0"
