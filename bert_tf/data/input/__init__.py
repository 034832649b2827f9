"""tf.data input: pretraining records read as batches (masked on the fly for
dynamic-masking records), and fine-tuning batches padded to a few fixed
lengths."""
