"""parity.compile(..., precision=): the tier reaches the backend, exact stays as it was, a plugin
without tiers still works (and explain says it runs exact), and every cache keys on the tier."""

import pytest
import torch

import parity
from parity.backends.base import Backend, OpClaim
from parity.backends.disk_cache import cache_key
from parity.backends.registry import register_backend, unregister_backend
from parity.backends.xla.backend import XlaBackend
from parity.frontend import compiled_graph
from parity.ir import evaluate, primitives
from parity.ir.errors import ParityError
from parity.ir.precision import Precision


def _fused(x, y, z):
    return torch.sigmoid(x) * y + z


def _inputs():
    g = torch.Generator().manual_seed(0)
    return [torch.randn(64, generator=g) for _ in range(3)]


class NoTiers(Backend):
    """A plugin as examples/plugin_template writes one: compile(graph, device), nothing more."""

    name = "no_tiers"
    devices = ("cpu",)
    compiled = 0

    def claims(self):
        return {op.name: OpClaim(frozenset(op.dtypes)) for op in primitives()}

    def compile(self, graph, device):
        NoTiers.compiled += 1
        return lambda *arrays: evaluate(graph, arrays)


@pytest.fixture
def no_tiers():
    register_backend(NoTiers())
    yield
    unregister_backend("no_tiers")


def test_fast_reaches_the_backend_and_exact_calls_it_as_before(monkeypatch):
    calls = []
    real = XlaBackend.compile

    def spy(self, graph, device="cpu", **kwargs):
        calls.append(kwargs)
        return real(self, graph, device, **kwargs)

    monkeypatch.setattr(XlaBackend, "compile", spy)
    args = _inputs()
    default = parity.compile(_fused, backend="xla")(*args)
    exact = parity.compile(_fused, backend="xla", precision="exact")(*args)
    fast = parity.compile(_fused, backend="xla", precision="fast")(*args)
    assert calls == [{}, {"precision": Precision.FAST}]  # exact: one compile, shared, without the keyword
    assert torch.equal(default, exact)
    torch.testing.assert_close(fast, exact, rtol=1e-6, atol=1e-6)
    assert sorted(key[3] for key in compiled_graph._EXECUTABLES) == ["exact", "fast"]


def test_an_unknown_tier_is_refused_before_capture():
    with pytest.raises(ParityError, match=r"precision='double' is not a precision tier; choose one of"):
        parity.compile(_fused, backend="xla", precision="double")


def test_a_plugin_without_tiers_runs_exact_and_explain_says_so(no_tiers):
    NoTiers.compiled = 0
    args = _inputs()
    compiled = parity.compile(_fused, backend="no_tiers", precision="fast")
    assert torch.equal(compiled(*args), parity.compile(_fused, backend="no_tiers")(*args))
    assert NoTiers.compiled == 1  # the fast request is the exact executable: one compile, one cache entry
    report = str(parity.explain(compiled, *args, backends=["no_tiers", "xla"]))
    assert "backend 'no_tiers': precision='fast' was asked for, and it runs 'exact': it declares only ['exact']" \
        in report
    assert "backend 'xla': precision" not in report


def test_the_disk_cache_keys_on_the_tier_and_exact_keys_are_unchanged():
    exact = cache_key("h", "xla", "cpu", ["f32[4]"], {"jax": "1"})
    assert "precision" not in exact  # entries written before tiers stay valid
    assert cache_key("h", "xla", "cpu", ["f32[4]"], {"jax": "1"}, precision=Precision.EXACT) == exact
    assert cache_key("h", "xla", "cpu", ["f32[4]"], {"jax": "1"}, precision=Precision.FAST) == \
        {**exact, "precision": "fast"}


def test_a_fast_executable_comes_back_from_disk_as_fast(tmp_path):
    args = _inputs()
    first = parity.compile(_fused, backend="onnx", precision="fast", cache_dir=str(tmp_path))(*args)
    exact = parity.compile(_fused, backend="onnx", cache_dir=str(tmp_path))(*args)
    entries = sorted(p.name for p in (tmp_path / "onnx").iterdir())
    assert len(entries) == 2  # one per tier
    compiled_graph.reset_caches()
    torch._dynamo.reset()
    again = parity.compile(_fused, backend="onnx", precision="fast", cache_dir=str(tmp_path))(*args)
    assert compiled_graph.STATS["disk_loads"] == 1 and compiled_graph.STATS["backend_compiles"] == 0
    assert torch.equal(again, first) and not torch.equal(first, exact)
