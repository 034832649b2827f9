"""What the tests share: tiny configs, records, vocabs, checkpoints and the
plain-Python oracles of the original code. Tests import from here only,
never from each other (tests/ is importable through its rootdir conftest)."""
