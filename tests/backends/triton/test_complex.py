"""Complex numbers on the Triton backend, against the reference interpreter.

Complex values run as float pairs (complex_pairs.py): the exact ops must match the
interpreter bit for bit on special parts (±inf, NaN, -0.0), the rounded ones within their
bound in ULPs of |o| (conformance/metrics.py), with their special values exact. exp, log,
sqrt and the FFTs are extern torch calls on the pair. Graphs are small: the interpreter
runs every kernel with NumPy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from parity.conformance.metrics import ulp_error
from parity.ir import DType, GraphBuilder, Symbol, c64, c128, evaluate, f64

from .conftest import assert_exact

NAN, INF = np.nan, np.inf
# parts: every pairing of a special and an ordinary part, with -0.0 on each side
_RE = [INF, -INF, NAN, 0.0, -0.0, 1.5, -2.0, 0.0, -0.0, 3.0, INF, NAN]
_IM = [0.0, -0.0, 1.0, INF, -INF, NAN, -0.0, -0.0, 0.0, -4.0, NAN, NAN]
DTYPES = pytest.mark.parametrize("dtype", [c64, c128], ids=["c64", "c128"])


def _z(dtype, re, im) -> np.ndarray:
    z = np.zeros(len(re), dtype.numpy)
    z.real, z.imag = re, im  # (not re + 1j*im: 1j*inf makes the real part NaN)
    return z


SPECIALS = _RE, _IM
ORDINARY = [2.0, 0.5, -1.25, 3.0, 1e-3, -2.0, 1.0, 4.0, -0.5, 7.0, 0.25, -3.0], \
           [-1.0, 3.0, 0.75, 0.0, 1.0, -2.0, 1.0, -0.5, 1e-3, 2.0, -8.0, 0.5]


def _check_exact(got, want, names, inputs=()):
    for name, g, w in zip(names, got, want):
        g = g.numpy()
        if np.iscomplexobj(w):
            assert_exact(g.real, w.real, f"{name} (real part)", inputs=inputs)
            assert_exact(g.imag, w.imag, f"{name} (imaginary part)", inputs=inputs)
        else:
            assert_exact(g, w, name, inputs=inputs)


@DTYPES
def test_exact_ops_keep_special_parts(backend, dtype):
    part = dtype.real_dtype
    b = GraphBuilder("complex_exact")
    z, w = b.input(dtype[12]), b.input(dtype[12])
    re, im = b.input(part[12]), b.input(part[12])
    pred = b.input(DType.bool[12])
    zero = b.constant(np.zeros((), dtype.numpy))
    outs = {
        "complex": b.complex(re, im), "real": b.real(z), "imag": b.imag(z), "conj": b.conj(z), "neg": b.neg(z),
        "add": b.add(z, w), "sub": b.sub(z, w), "select": b.select(pred, z, w), "eq": b.eq(z, w), "ne": b.ne(z, z),
        "convert": b.convert(z, dtype=c128 if dtype is c64 else c64), "convert_real": b.convert(re, dtype=dtype),
        "transpose_reverse": b.reverse(b.transpose(b.reshape(z, shape=[3, 4]), permutation=[1, 0]), dimensions=[0]),
        "pad": b.pad(z, zero, edge_padding_low=[1], edge_padding_high=[2], interior_padding=[1]),
        "concatenate_slice": b.concatenate(b.slice(z, start_indices=[1], limit_indices=[9], strides=[3]), w,
                                           dimension=0),
        "broadcast": b.broadcast_in_dim(z, shape=[2, 12], broadcast_dimensions=[1]),
    }
    graph = b.build(list(outs.values()))
    inputs = [_z(dtype, *SPECIALS), _z(dtype, *reversed(SPECIALS)), np.array(_IM, part.numpy),
              np.array(_RE, part.numpy), np.arange(12) % 3 == 0]
    got = backend.compile(graph, "cpu")(*inputs)
    _check_exact(got, evaluate(graph, inputs), list(outs), inputs)


@DTYPES
def test_rounded_ops_within_their_bounds_and_specials_as_the_interpreter(backend, dtype):
    b = GraphBuilder("complex_rounded")
    z, w = b.input(dtype[12]), b.input(dtype[12])
    outs = {"mul": b.mul(z, w), "div": b.div(z, w), "complex_abs": b.complex_abs(z), "angle": b.angle(z)}
    graph = b.build(list(outs.values()))
    run = backend.compile(graph, "cpu")
    # float formulas, fused: one pointwise kernel per output shape (the pairs [12,2], the parts [12])
    assert run.externs_per_call == 0 and run.kernels_per_call == 2
    # bounds (conformance/bounds.py): mul 2, div 5 ULP of |o|; complex_abs, angle 4 (transcendental)
    bounds = {"mul": 2, "div": 5, "complex_abs": 4, "angle": 4}
    rng = np.random.default_rng(0)
    wide = (rng.standard_normal(12) * 10.0 ** rng.integers(-30, 30, 12), rng.standard_normal(12))
    for x, y in [(_z(dtype, *ORDINARY), _z(dtype, *wide)), (_z(dtype, *wide), _z(dtype, *ORDINARY))]:
        got, want = run(x, y), evaluate(graph, [x, y], oracle=True)
        for name, g, o in zip(outs, got, want):
            worst = float(np.max(ulp_error(dtype if name in ("mul", "div") else dtype.real_dtype, o, g.numpy())))
            assert worst <= bounds[name], (name, worst)
        if dtype is c64:  # in float64, rounded once: NumPy's complex128 formulas, the interpreter's bits
            _check_exact(got[:2], evaluate(graph, [x, y])[:2], ["mul", "div"], [x, y])
    # special parts: |z| is inf beside a NaN, angle(-1 - 0i) = -π, signed zeros; a zero divisor
    # gives the interpreter's (NumPy's) infinities and NaNs
    x = _z(dtype, *SPECIALS)
    y = _z(dtype, [0.0, -0.0, 2.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1e-30, -0.0, 1.0, 1.0],
           [0.0, 0.0, 0.0, -0.0, 0.0, 0.0, 1.0, -3.0, 0.0, -0.0, 0.0, 0.0])
    _check_exact(run(x, y), evaluate(graph, [x, y]), list(outs), [x, y])


def test_angle_and_abs_of_axes_are_exact(backend):
    b = GraphBuilder("complex_axes")
    z = b.input(c64[6])
    graph = b.build([b.angle(z), b.complex_abs(z)])
    x = _z(c64, [-1.0, -1.0, 0.0, 0.0, 3.0, -0.0], [-0.0, 0.0, 2.0, -2.0, 4.0, -0.0])
    angle, magnitude = (t.numpy() for t in backend.compile(graph, "cpu")(x))
    assert angle.tolist() == [np.float32(-math.pi), np.float32(math.pi), np.float32(math.pi / 2),
                              np.float32(-math.pi / 2), np.float32(math.atan2(4, 3)), np.float32(-math.pi)]
    assert magnitude.tolist() == [1.0, 1.0, 2.0, 2.0, 5.0, 0.0]


@DTYPES
def test_exp_log_sqrt_within_their_bounds(backend, dtype):
    # c64: float64 formulas in one kernel; c128: extern calls (torch in complex128)
    b = GraphBuilder("complex_transcendental")
    z = b.input(dtype[12])
    outs = {"exp": b.exp(z), "log": b.log(z), "sqrt": b.sqrt(z)}
    graph = b.build(list(outs.values()))
    run = backend.compile(graph, "cpu")
    assert (run.kernels_per_call, run.externs_per_call) == ((1, 0) if dtype is c64 else (0, 3))
    bounds = {"exp": 4, "log": 4, "sqrt": 4}  # transcendental 4; sqrt's complex bound 4 (bounds.py)
    # log(1.0000001 + 0i): torch's complex64 log loses its real part (the inductor backend's finding)
    # exp(800 - 0i) = inf - 0i (not inf·sin(-0) = NaN), exp(-800 + 2i) = -0 + 0i; |z|² of the
    # largest and smallest float32 parts overflows and underflows in float32
    x = _z(dtype, [1.0000001, -2.0, 0.0, -0.0, 2e38, 1e-3, -1.0, 800.0, 1e-30, -1e-45, 1.0, -800.0],
           [0.0, -0.0, 1.0, 0.0, -3e38, 2.0, 0.0, -0.0, -1e-30, 1.0, 1e-7, 2.0])
    got, want = run(x), evaluate(graph, [x], oracle=True)
    for name, g, o in zip(outs, got, want):
        worst = float(np.max(ulp_error(dtype, o, g.numpy())))
        assert worst <= bounds[name], (name, worst)
    # the parts that are zeros (signed: the branch cut, exp's zero imaginary parts) or infinite: as
    # the interpreter (elsewhere a part may be off by its share of |o|: log(1 + 1e-7i)'s real part)
    for name, g, w in zip(outs, run(x), evaluate(graph, [x])):
        specials = 0
        for part in ("real", "imag"):
            got, want = getattr(g.numpy(), part), getattr(w, part)
            special = (want == 0) | np.isinf(want)
            specials += special.sum()
            assert_exact(got[special], want[special], f"{name} ({part} part)", inputs=[x[special]])
        assert specials >= 4, name


def _fft_bound(dtype, o: np.ndarray, n: int, axes) -> np.ndarray:
    # (1 + ⌈log₂ n⌉)·ε·‖o‖₂ over the transformed axes (conformance/bounds.py, FFT_BOUND)
    norm = np.sqrt(np.sum(np.abs(o) ** 2, axis=axes, keepdims=True))
    return (1 + math.ceil(math.log2(max(n, 1)))) * float(dtype.real_dtype.finfo.eps) * norm


@DTYPES
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_ffts_are_extern_calls_within_their_bound(backend, dtype, norm):
    part = dtype.real_dtype
    b = GraphBuilder("ffts")
    z, x = b.input(dtype[3, 6, 5]), b.input(part[3, 6, 5])
    spectrum = b.rfft(x, ndims=2, norm=norm)
    outs = [b.fft(z, ndims=1, norm=norm), b.ifft(z, ndims=2, norm=norm), spectrum,
            b.irfft(spectrum, ndims=2, length=5, norm=norm), b.mul(b.fft(z, ndims=1, norm=norm), z)]
    graph = b.build(outs)
    run = backend.compile(graph, "cpu")
    assert "extern fft (torch)" in run.explain() and "extern irfft (torch)" in run.explain()
    rng = np.random.default_rng(1)
    zs = _z(dtype, *rng.standard_normal((2, 90))).reshape(3, 6, 5)
    xs = rng.standard_normal((3, 6, 5)).astype(part.numpy)
    got, want = run(zs, xs), evaluate(graph, [zs, xs], oracle=True)
    for i, (g, o, n, axes) in enumerate(zip(got, want, [5, 30, 30, 30, 5], [(-1,), (-2, -1), (-2, -1), (-2, -1), (-1,)])):
        g = g.numpy()
        assert g.shape == o.shape and g.dtype == (part.numpy if i == 3 else dtype.numpy)
        if i == 4:  # fft then mul: fft's bound times |z|, plus mul's rounding
            continue
        err = np.abs(g.astype(np.complex128) - o)
        assert (err <= _fft_bound(dtype, o, n, axes)).all(), (i, float(np.max(err)))


def test_fft_of_an_empty_batch(backend):
    b = GraphBuilder("fft_empty")
    z = b.input(c64[0, 4])
    graph = b.build([b.fft(z, ndims=1, norm="backward"), b.rfft(b.real(z), ndims=1, norm="backward")])
    got = backend.compile(graph, "cpu")(np.zeros((0, 4), np.complex64))
    assert [tuple(g.shape) for g in got] == [(0, 4), (0, 3)]


@DTYPES
def test_complex_graph_with_symbolic_dims_gets_one_kernel_set(tmp_path, dtype):
    # the pair graph's ops all take sizes at run time (slices, reshapes, concatenations of
    # symbolic dims; the extern FFT reads them from its tensors): one generation for every size
    from parity.backends.triton import TritonBackend, TritonOptions

    fresh = TritonBackend(TritonOptions(interpret=True, cache_dir=tmp_path))
    B, S = Symbol("B"), Symbol("S")
    b = GraphBuilder("complex_symbolic")
    z, w = b.input(dtype[B, S, 4]), b.input(dtype[4])
    y = b.mul(z, b.broadcast_in_dim(b.conj(w), shape=[B, S, 4], broadcast_dimensions=[2]))
    f = b.fft(b.add(b.exp(y), b.div(y, b.sqrt(y))), ndims=1, norm="ortho")
    graph = b.build([b.reduce_sum(f, axes=[1]), b.complex_abs(f),
                     b.reshape(b.transpose(f, permutation=[1, 0, 2]), shape=[S, B * 4])])
    run = fresh.compile(graph, "cpu")
    assert run.generic and run.fallback is None
    rng = np.random.default_rng(3)
    for rows, seq in [(1, 1), (2, 7), (3, 0)]:
        zs = _z(dtype, *rng.standard_normal((2, rows * seq * 4))).reshape(rows, seq, 4)
        ws = _z(dtype, *rng.standard_normal((2, 4)))
        for g, o in zip(run(zs, ws), evaluate(graph, [zs, ws], oracle=True)):
            g = g.numpy()
            assert g.shape == o.shape
            scale = max(float(np.max(np.abs(o), initial=0.0)), 1.0)
            assert float(np.max(np.abs(g - o), initial=0.0)) <= 64 * float(dtype.real_dtype.finfo.eps) * scale
    assert fresh.generations == 1


def test_complex_inputs_and_outputs_cross_without_conversion_errors(backend):
    import torch

    b = GraphBuilder("complex_io")
    z = b.input(c128[2])
    graph = b.build([z, b.real(z)])
    run = backend.compile(graph, "cpu")
    t = torch.tensor([1 + 2j, -3j], dtype=torch.complex128)
    out, re = run(t)
    assert out.dtype == torch.complex128 and out.tolist() == t.tolist() and re.tolist() == [1.0, -0.0]
    with pytest.raises(Exception, match="expected c128"):
        run(t.to(torch.complex64))
    # torch's lazy conjugate (a conj bit, no copy) is an input like any other
    out, re = run(t.conj())
    assert out.tolist() == t.conj().tolist() and re.tolist() == [1.0, -0.0]


def test_complex128_abs_neither_overflows_nor_underflows(backend):
    b = GraphBuilder("complex_abs_range")
    z = b.input(c128[4])
    graph = b.build([b.complex_abs(z)])
    x = _z(c128, [1e300, -3e-300, 1e-320, 1.7e308], [1e300, 4e-300, 0.0, -1.0])
    (got,) = backend.compile(graph, "cpu")(x)
    want = evaluate(graph, [x], oracle=True)[0]
    assert np.isfinite(got.numpy()).all() and (got.numpy() > 0).all()
    assert float(np.max(ulp_error(f64, want, got.numpy()))) <= 4


@DTYPES
def test_dot_general_is_two_real_contractions_within_the_accumulation_bound(backend, dtype):
    # [a, b]·[c, -d] and [a, b]·[d, c] over the parts stacked on the last contracted axis: two dot
    # kernels; an outer product (nothing contracted) takes four products per part
    b = GraphBuilder("complex_dot")
    x, y = b.input(dtype[2, 3, 4, 5]), b.input(dtype[2, 5, 4, 6])
    batched = b.dot_general(x, y, lhs_contracting_dims=[2, 3], rhs_contracting_dims=[2, 1], lhs_batch_dims=[0],
                            rhs_batch_dims=[0])
    outer = b.dot_general(b.slice(x, start_indices=[0, 0, 0, 0], limit_indices=[1, 3, 1, 1], strides=[1, 1, 1, 1]),
                          b.slice(y, start_indices=[0, 0, 0, 0], limit_indices=[1, 1, 1, 6], strides=[1, 1, 1, 1]),
                          lhs_contracting_dims=[], rhs_contracting_dims=[], lhs_batch_dims=[], rhs_batch_dims=[])
    graph = b.build([batched, outer])
    rng = np.random.default_rng(2)
    xs = _z(dtype, *rng.standard_normal((2, 120))).reshape(2, 3, 4, 5)
    ys = _z(dtype, *rng.standard_normal((2, 240))).reshape(2, 5, 4, 6)
    run = backend.compile(graph, "cpu")
    assert run.explain().count(": dot grid=") == 2 + 4
    got = [g.numpy() for g in run(xs, ys)]
    want = evaluate(graph, [xs, ys], oracle=True)
    terms = evaluate(graph, [np.abs(xs).astype(dtype.numpy), np.abs(ys).astype(dtype.numpy)], oracle=True)
    eps = float(dtype.real_dtype.finfo.eps)
    for g, o, s, n in zip(got, want, terms, [2 * 20, 2]):  # n: real terms per part
        err = np.maximum(np.abs(g.real - o.real), np.abs(g.imag - o.imag))
        assert (err <= n * eps * s.real).all(), float(np.max(err / (n * eps * s.real)))


def test_cuda_source_of_a_complex_graph_is_valid_python():
    # no GPU here: the CUDA module of the pair graph parses, computes c64's formulas with
    # libdevice in float64 and calls torch for the FFT and c128's exp
    import ast

    from parity.backends.triton.complex_pairs import to_pairs
    from parity.backends.triton.program import module_source
    from parity.backends.triton.schedule import Options, Scheduler

    b = GraphBuilder("complex_cuda")
    z, w = b.input(c64[8]), b.input(c128[8])
    graph = b.build([b.log(b.exp(b.mul(z, b.conj(z)))), b.fft(b.sqrt(z), ndims=1, norm="ortho"), b.exp(w)])
    source = module_source(Scheduler(to_pairs(graph), Options(), cuda=True).plan(), cuda=True)
    ast.parse(source)
    assert "from triton.language.extra import libdevice" in source
    assert all(f"libdevice.{fn}(" in source for fn in ("exp", "log", "sin", "cos", "atan2"))
    assert "X.fft(" in source and "X.complex_exp(" in source and "X.complex_log(" not in source
