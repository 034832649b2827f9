"""Data, by stage: text/ (corpora and their split), tokenizers/ (text -> ids),
pretraining/ (documents -> instances -> masking -> records: the writer),
records/ (what a records folder is), input/ (tf.data batches)."""
