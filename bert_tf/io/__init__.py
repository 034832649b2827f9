"""The storage seam: every file-system call of the package (local paths and
gs://, on TensorFlow's file systems) goes through `file_io`, so a new backend, a
retry policy or a fault-injection test has one place to go."""
