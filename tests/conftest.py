"""Shared test fixtures."""

import os

import pytest

# Test modules share helpers through the `helpers` package beside this file
# (tiny configs, record and checkpoint writers, the original's oracles):
# pytest puts this rootdir conftest's folder, tests/, on sys.path.

_SHARED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared")


@pytest.fixture
def shared_dir():
  """Path of ../shared beside the checkout; skips when it is absent."""
  path = os.path.normpath(_SHARED)
  if not os.path.isdir(path):
    pytest.skip(f"needs ../shared (real corpus and original vocab), not present at {path}")
  return path


def pytest_configure(config):
  config.addinivalue_line("markers", "slow: end-to-end test (a minute or more on 2 cores)")
