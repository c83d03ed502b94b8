"""Every test gets its own disk cache: the suite never writes to the user's home, and no test
(and no run) sees another's entries. parity's cache is on by default (backends/disk_cache.py)."""

import os
import shutil
import tempfile

import pytest

_XDG = {}


def pytest_configure(config):
    # Code that compiles at import time (before the fixture below) still stays out of the home directory.
    _XDG["saved"] = os.environ.get("XDG_CACHE_HOME")
    _XDG["dir"] = os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="parity-test-xdg-")


def pytest_unconfigure(config):
    shutil.rmtree(_XDG.pop("dir"), ignore_errors=True)
    saved = _XDG.pop("saved")
    if saved is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = saved


@pytest.fixture(autouse=True)
def _private_disk_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path_factory.mktemp("parity-cache")))
