"""What a folder of pretraining records is, shared by the writer and the
readers: the TFRecord schema, the manifest beside the records, their
statistics, and naming the file behind a damaged read."""
