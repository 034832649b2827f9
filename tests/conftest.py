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
  config.addinivalue_line("markers", "soak: many minutes (a kill sweep); runs with --soak")


def pytest_addoption(parser):
  parser.addoption("--soak", action="store_true", default=False,
                   help="also run the soak tests (kill sweeps of compare_objectives and on "
                   "gs://: many minutes each)")


def pytest_collection_modifyitems(config, items):
  if config.getoption("--soak"):
    return
  skip = pytest.mark.skip(reason="soak test (many minutes: a kill sweep, whose bench's counts "
                          "are in docs/reliability.md): run with --soak")
  for item in items:
    if "soak" in item.keywords:
      item.add_marker(skip)
