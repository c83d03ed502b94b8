"""Every test gets its own disk cache: the suite never writes to the user's home, and no test
(and no run) sees another's entries. parity's cache is on by default (backends/disk_cache.py)."""

import os
import tempfile

import pytest


def pytest_configure(config):
    # Code that compiles at import time (before the fixture below) still stays out of the home directory.
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="parity-test-xdg-")


@pytest.fixture(autouse=True)
def _private_disk_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path_factory.mktemp("parity-cache")))
