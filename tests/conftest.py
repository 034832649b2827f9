"""Shared test fixtures."""

import os
import sys

import pytest

_TESTS = os.path.dirname(os.path.abspath(__file__))
# Test modules mirror the package's folders and share small helpers across
# them (tiny configs, record and checkpoint writers): import them by name.
for _sub in ("data", "models", "training", "serving", "experiments"):
  sys.path.insert(0, os.path.join(_TESTS, _sub))

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
