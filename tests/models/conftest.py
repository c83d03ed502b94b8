"""Shared by the model tests: each starts from fresh Dynamo and compile caches."""

import pytest
import torch

from parity.frontend import compiled_graph


@pytest.fixture
def fresh_compiler(tmp_path, monkeypatch):
    """Dynamo and parity's in-process caches reset, Inductor's cache in the test's own directory."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))  # never the user's cache
    torch._dynamo.reset()
    compiled_graph.reset_caches()
    yield
    torch._dynamo.reset()
