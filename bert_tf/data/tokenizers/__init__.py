"""Text to ids: WordPiece and SentencePiece vocabularies and tokenizers (in
Python and as graph ops), transformers' tokenizer.json, the original's
character classes, and learning a vocabulary from a corpus."""
