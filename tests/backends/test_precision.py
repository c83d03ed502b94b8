"""The precision tier at the backend boundary (backends/base.py compile_at, xla and onnx).

Exact stays what it was (the same call, the same bits); fast reaches only a backend that
declares it, a plugin without tiers keeps working, and the fast tier keeps NaN, ±inf and
-0.0 exactly where the IR puts them.
"""

import numpy as np
import pytest

from parity.backends.base import Backend, OpClaim, compile_at, precision_for
from parity.backends.onnx.backend import OnnxBackend
from parity.backends.onnx.lowering import to_model
from parity.backends.xla.backend import XlaBackend
from parity.ir import GraphBuilder, evaluate, f32, f64, primitives
from parity.ir.errors import ParityError
from parity.ir.precision import Precision

EXACT, FAST = Precision.EXACT, Precision.FAST


class OldPlugin(Backend):
    """A plugin written before precision tiers: compile takes (graph, device) only."""

    name = "old_plugin"
    devices = ("cpu",)

    def __init__(self):
        self.calls = []

    def claims(self):
        return {op.name: OpClaim(frozenset(op.dtypes)) for op in primitives()}

    def compile(self, graph, device):
        self.calls.append((graph.name, device))
        return lambda *arrays: evaluate(graph, arrays)


def _fma_graph(dtype=f32, n=64):
    """a * b + c: what XLA:CPU fuses into one FMA."""
    b = GraphBuilder("fma")
    x, y, z = b.input(dtype[n]), b.input(dtype[n]), b.input(dtype[n])
    return b.build([b.add(b.mul(x, y), z)])


def _fma_inputs(dtype=np.float32, n=64):
    """Products that cancel against c: the rounding of a*b is all that is left of the sum."""
    rng = np.random.default_rng(0)
    x = (1 + rng.random(n)).astype(dtype)
    y = (1 + rng.random(n)).astype(dtype)
    z = -(x.astype(np.float64) * y.astype(np.float64)).astype(dtype)
    return x, y, z


def test_parse_names_the_tiers_in_its_error():
    assert Precision.parse("fast") is FAST and Precision.parse(EXACT) is EXACT
    with pytest.raises(ParityError, match=r"precision='FAST' is not a precision tier; choose one of \['exact', 'fast'\]"):
        Precision.parse("FAST")


def test_a_plugin_without_tiers_runs_exact_when_fast_is_asked_for():
    plugin = OldPlugin()
    b = GraphBuilder("neg")
    x = b.input(f32[2])
    run = compile_at(plugin, b.build([b.neg(x)]), "cpu", FAST)  # would raise TypeError if passed precision=
    assert run(np.array([1.0, -0.0], np.float32))[0].tolist() == [-1.0, 0.0]
    assert plugin.calls == [("neg", "cpu")]
    assert precision_for(plugin, FAST) is EXACT and plugin.precisions == (EXACT,)


def test_fast_reaches_a_backend_that_declares_it_and_exact_passes_no_keyword():
    seen = []

    class Tiered(OldPlugin):
        precisions = (EXACT, FAST)

        def compile(self, graph, device, **kwargs):
            seen.append(kwargs)
            return super().compile(graph, device)

    b = GraphBuilder("neg")
    x = b.input(f32[2])
    graph = b.build([b.neg(x)])
    compile_at(Tiered(), graph, "cpu", FAST)
    compile_at(Tiered(), graph, "cpu", EXACT)
    assert seen == [{"precision": FAST}, {}]


def test_xla_exact_keeps_products_out_of_fmas_and_fast_lets_xla_fuse_them():
    graph, (x, y, z) = _fma_graph(), _fma_inputs()
    backend = XlaBackend()
    plain = backend.compile(graph)(x, y, z)
    exact = compile_at(backend, graph, "cpu", EXACT)(x, y, z)
    fast = compile_at(backend, graph, "cpu", FAST)(x, y, z)
    spec = evaluate(graph, [x, y, z])
    # exact: bit-identical to the call without a tier, and to the spec (the product rounded first)
    assert np.asarray(exact[0]).tobytes() == np.asarray(plain[0]).tobytes() == spec[0].tobytes()
    assert not spec[0].any()  # c is minus the rounded product
    # fast: the FMA keeps the product's rounding error, which the spec's sum does not see
    exact_fma = (x.astype(np.float64) * y.astype(np.float64) + z.astype(np.float64)).astype(np.float32)
    assert np.count_nonzero(exact_fma) > 32
    assert np.array_equal(np.asarray(fast[0]), exact_fma)
    assert backend.compile_count == 2  # one executable per tier: the cache key has the tier


def test_onnx_fast_lowers_logistic_to_sigmoid_and_exact_does_not():
    b = GraphBuilder("logistic")
    x = b.input(f32[4])
    graph = b.build([b.logistic(x)])
    ops = {p: [n.op_type for n in to_model(graph, precision=p).graph.node] for p in Precision}
    assert "Sigmoid" in ops[FAST] and "Sigmoid" not in ops[EXACT]
    backend = OnnxBackend()
    backend.compile(graph, "cpu", FAST)
    backend.compile(graph, "cpu", EXACT)
    assert backend.session_count == 2


SPECIALS = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 1e30, -1e30, -100.0]


def _specials_graph(dtype):
    """Ops the fast tier computes differently (logistic, a·b + c, a·b - c, x·logistic(x))."""
    b = GraphBuilder("specials")
    x, y, z = b.input(dtype[len(SPECIALS)]), b.input(dtype[len(SPECIALS)]), b.input(dtype[len(SPECIALS)])
    s = b.logistic(x)
    return b.build([s, b.add(b.mul(x, y), z), b.sub(b.mul(x, y), z), b.mul(x, s)])


@pytest.mark.parametrize("backend", [XlaBackend, OnnxBackend], ids=["xla", "onnx"])
@pytest.mark.parametrize("dtype", [f32, f64], ids=["f32", "f64"])
def test_fast_tier_keeps_nan_infinity_and_signed_zero(backend, dtype):
    x = np.array(SPECIALS, dtype.numpy)
    # no product here overflows or underflows: those are the recorded difference below
    y = np.array([1.0, 2.0, 1.0, -1.0, -1.0, 0.0, -0.0, 1.0, 1e-10, 1.0], dtype.numpy)
    z = np.array([0.0, 1.0, np.inf, 0.0, -0.0, -0.0, 0.0, -np.inf, 1.0, -0.0], dtype.numpy)
    graph = _specials_graph(dtype)
    spec = evaluate(graph, [x, y, z])
    got = compile_at(backend(), graph, "cpu", FAST)(x, y, z)
    for i, (s, g) in enumerate(zip(spec, got)):
        g = np.asarray(g)
        assert np.array_equal(np.isnan(g), np.isnan(s)), (i, g, s)
        assert np.array_equal(np.isinf(g) & (g > 0), np.isinf(s) & (s > 0)), (i, g, s)
        assert np.array_equal(np.isinf(g) & (g < 0), np.isinf(s) & (s < 0)), (i, g, s)
        zeros = s == 0
        assert np.array_equal(np.signbit(g[zeros]), np.signbit(s[zeros])) and (g[zeros] == 0).all(), (i, g, s)


@pytest.mark.parametrize("dtype", [f32, f64], ids=["f32", "f64"])
def test_xla_fast_does_not_round_a_product_to_inf_or_zero_inside_an_fma(dtype):
    """The fast tier's one recorded difference in special values (docs/conformance.md): a
    product that overflows, or underflows to a signed zero, is not rounded inside an FMA, so
    a·b + c is what float64 arithmetic rounded once gives, where the IR (and exact) give the
    rounded product's NaN or +0."""
    big = float(np.sqrt(dtype.finfo.max)) * 4
    b = GraphBuilder("fma")
    x, y, z = b.input(dtype[3]), b.input(dtype[3]), b.input(dtype[3])
    graph = b.build([b.add(b.mul(x, y), z)])
    tiny = float(dtype.finfo.tiny)  # normal operands whose product is below half the smallest subnormal
    x = np.array([big, -tiny, 2.0], dtype.numpy)
    y = np.array([big, 2.0 ** -60, 3.0], dtype.numpy)
    z = np.array([-np.inf, 0.0, 1.0], dtype.numpy)
    spec = evaluate(graph, [x, y, z])[0]
    exact = np.asarray(compile_at(XlaBackend(), graph, "cpu", EXACT)(x, y, z)[0])
    fast = np.asarray(compile_at(XlaBackend(), graph, "cpu", FAST)(x, y, z)[0])
    assert np.isnan(spec[0]) and np.isnan(exact[0]) and fast[0] == -np.inf  # inf - inf in the IR
    assert not np.signbit(spec[1]) and not np.signbit(exact[1]) and np.signbit(fast[1]) and fast[1] == 0
    assert spec[2] == exact[2] == fast[2] == 7.0
