"""Corpus text: documents in the original format (one sentence a line, a blank
line between documents), their split by document, corpora mixed by topic and
the bundled sample corpus."""
