"""Inductor's on-disk caches go to a temporary directory for these tests, never the
user's; one backend instance is shared, so each graph is compiled once per session."""

from __future__ import annotations

import pytest

from parity.backends.inductor import InductorBackend


@pytest.fixture(scope="session", autouse=True)
def inductor_cache_dir(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        path = tmp_path_factory.mktemp("torchinductor")
        mp.setenv("TORCHINDUCTOR_CACHE_DIR", str(path))
        yield path


@pytest.fixture(scope="session")
def backend() -> InductorBackend:
    return InductorBackend()
