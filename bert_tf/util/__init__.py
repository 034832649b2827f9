"""Package-wide foundation modules: any layer may import them, and they import
nothing of ours (tests/test_layout.py, FOUNDATION)."""
