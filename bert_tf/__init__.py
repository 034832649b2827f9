"""bert_tf: original BERT pretraining (masked LM with the 80/10/10 rule plus
next sentence prediction) in TensorFlow 2 / Keras 3.

Data flows one way through the modules:
text -> tokenization -> masking (pairing and masking rules) -> schema
(tf.train.Example) -> pretraining_data (TFRecord shards + manifest) ->
input_pipeline (tf.data) -> modeling -> training (checkpoints) -> export
(SavedModel).
"""

__version__ = "0.1.0"
