"""Complex numbers on onnx, against the reference interpreter.

Complex values travel as float parts (backends/onnx/complex_numbers.py) and every rounding
op computes in float64 (complex_math.py), so on operands with special parts (±inf, NaN,
-0.0, subnormals, |z| near 1) the c64 results match the interpreter bit for bit (NaNs as
NaNs, zeros with their sign). c128 ones are held within their contract bound
(``parity conform`` measures both across the opdb).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from parity.backends.onnx.backend import OnnxBackend
from parity.ir import GraphBuilder, ParityError, c64, c128, evaluate, f32

NAN, INF = np.nan, np.inf
RE = np.array([INF, -INF, 0.0, -0.0, 1.0000001, -1e-45, NAN, 3.0, 0.9999999, -2.0, 1e30, -0.0], np.float32)
IM = np.array([0.0, -0.0, -0.0, INF, 0.0, 1.0, INF, -4.0, 1e-20, -0.0, 1e30, 0.0], np.float32)
D = np.array([2 - 1j, 0.5 + 3j, -1.25 + 0.75j, 3 + 0j, 1j, -2 - 2j, 1 + 1j, 0j, 1e-45j, INF + 0j,
              -1e-38 + 1e-45j, 4 - 0.5j])  # (3 - 4i) / 0 is (inf, -inf): numpy divides each part by +0.0
OPS = ("neg", "conj", "real", "imag", "complex_abs", "angle", "exp", "log", "sqrt", "mul", "div", "add", "eq")

BACKEND = OnnxBackend()


def _graph(dtype):
    b = GraphBuilder("complex")
    z, w = b.input(dtype[12]), b.input(dtype[12])
    binary = {"mul", "div", "add", "eq"}
    outs = [getattr(b, op)(z, w) if op in binary else getattr(b, op)(z) for op in OPS]
    return b.build(outs)


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if np.iscomplexobj(want):
        return _same(got.real, want.real) and _same(got.imag, want.imag)
    if want.dtype == bool:
        return bool((got == want).all())
    nan = np.isnan(want)
    return bool((np.isnan(got) == nan).all() and (got[~nan] == want[~nan]).all()
                and (np.signbit(got[~nan]) == np.signbit(want[~nan])).all())


def _operands(dtype):
    z = np.empty(12, dtype.numpy)
    z.real, z.imag = RE, IM
    return z, D.astype(dtype.numpy)


def _ulps(got, want, dtype):
    """Each part's error in ULPs of |want| (the IR's complex measure), finite elements only."""
    want = np.asarray(want, np.complex128)
    part = np.finfo(dtype.real_dtype.numpy)
    scale = np.maximum(np.abs(want), part.tiny)
    with np.errstate(invalid="ignore"):
        err = np.maximum(np.abs(got.real - want.real), np.abs(got.imag - want.imag))
    finite = np.isfinite(want)
    return float((err[finite] / (scale[finite] * part.eps)).max(initial=0.0))


def test_complex64_ops_match_the_interpreter_bit_for_bit_on_special_parts():
    graph = _graph(c64)
    z, w = _operands(c64)
    got = BACKEND.compile(graph, "cpu")(z, w)
    want = evaluate(graph, [z, w])
    assert [op for op, g, e in zip(OPS, got, want) if not _same(g, e)] == []


def test_complex128_ops_on_special_parts():
    # exact ops bit for bit; the rounding ones within 4 ULP of |o| (their contract bound)
    graph = _graph(c128)
    z, w = _operands(c128)
    got = BACKEND.compile(graph, "cpu")(z, w)
    want = evaluate(graph, [z, w])
    for op, g, e in zip(OPS, got, want):
        if op in ("neg", "conj", "real", "imag", "add", "eq", "div", "mul"):
            assert _same(g, e), op
        else:  # the same non-finite elements, the finite ones close
            assert (np.isfinite(g) == np.isfinite(e)).all(), op
            assert _ulps(np.asarray(g, np.complex128), e, c128) <= 4, op


def test_log_near_the_unit_circle_keeps_its_real_part():
    # log|z| for |z| = 1 + 1e-18 is 5e-19: log of a rounded |z| gives 0 (~1e7 ULP of |o| ~ 1e-9)
    z = np.array([1 + 1e-9j, 0.6 + 0.8j, 1 - 1e-12 + 1.4e-6j], np.complex128)
    b = GraphBuilder("log")
    x = b.input(c128[3])
    graph = b.build([b.log(x)])
    (got,) = BACKEND.compile(graph, "cpu")(z)
    (want,) = evaluate(graph, [z])
    assert _ulps(got, want, c128) <= 4


def test_complex_graph_boundary_takes_numpy_and_torch_and_returns_complex_arrays():
    b = GraphBuilder("boundary")
    re, im = b.input(f32[2, 3]), b.input(f32[2, 3])
    z = b.complex(re, im)
    graph = b.build([z, b.transpose(z, permutation=(1, 0)), b.mul(z, b.conj(z))])
    run = BACKEND.compile(graph, "cpu")
    r, i = np.arange(6, dtype=np.float32).reshape(2, 3), -np.ones((2, 3), np.float32)
    got = run(r, i)
    want = evaluate(graph, [r, i])
    assert all(_same(g, e) for g, e in zip(got, want))
    b = GraphBuilder("neg")
    x = b.input(c64[2, 3])
    run = BACKEND.compile(b.build([b.neg(x)]), "cpu")
    t = torch.complex(torch.tensor(r), torch.tensor(i))
    (from_torch,) = run(t.conj())  # a lazily conjugated tensor: its values, not its memory
    assert from_torch.dtype == np.complex64 and _same(from_torch, -np.conj(r + 1j * i).astype(np.complex64))
    with pytest.raises(ParityError, match=r"input 0 of @neg has dtype complex128, expected c64; convert it"):
        run(np.zeros((2, 3), np.complex128))
    with pytest.raises(ParityError, match=r"input 0 of @neg has shape \[3, 2\], expected c64\[2,3\]"):
        run(np.zeros((3, 2), np.complex64))


@pytest.mark.parametrize("op, n", [("fft", 8), ("fft", 7), ("ifft", 100), ("fft", 4099), ("ifft", 1)])
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
@pytest.mark.parametrize("dtype", [c64, c128], ids=["c64", "c128"])
def test_fft_within_its_bound_for_powers_of_two_and_not(op, n, norm, dtype):
    # (1 + ceil(log2 n))·ε·‖o‖₂ per part (docs/conformance.md); sizes that are not powers of
    # two go through Bluestein (fft.py), ORT's own DFT is 3-100× past this bound there (c128)
    rng = np.random.default_rng(n)
    z = (rng.standard_normal((2, n)) + 1j * rng.standard_normal((2, n))).astype(dtype.numpy)
    b = GraphBuilder(op)
    x = b.input(dtype[2, n])
    graph = b.build([getattr(b, op)(x, ndims=1, norm=norm)])
    (got,) = BACKEND.compile(graph, "cpu")(z)
    want = np.asarray(evaluate(graph, [z], oracle=True)[0], np.complex128)
    eps = np.finfo(dtype.real_dtype.numpy).eps
    bound = (1 + math.ceil(math.log2(n))) * eps * np.linalg.norm(want, axis=-1, keepdims=True)
    err = np.maximum(np.abs(got.real - want.real), np.abs(got.imag - want.imag))
    assert (err <= bound).all(), float((err / bound).max())


def test_rfft_irfft_over_two_axes_round_trip_against_the_interpreter():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 6, 10))
    b = GraphBuilder("rfft2")
    v = b.input(c128.real_dtype[3, 6, 10])
    spectrum = b.rfft(v, ndims=2, norm="ortho")
    graph = b.build([spectrum, b.irfft(spectrum, ndims=2, length=10, norm="ortho"),
                     b.irfft(b.input(c128[3, 6, 5]), ndims=2, length=9, norm="forward")])
    half = rng.standard_normal((3, 6, 5)) + 1j * rng.standard_normal((3, 6, 5))  # imag of bins 0 ignored
    got = BACKEND.compile(graph, "cpu")(x, half)
    want = evaluate(graph, [x, half])
    for g, e in zip(got, want):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=0, atol=1e-13 * np.abs(e).max())


def test_the_conformance_suite_passes_every_complex_and_fft_cell():
    # the opdb's complex cases (every op taking c64/c128, specials included) and the
    # transforms on every size (1 to 65536): nothing fails, nothing is excused
    from parity.conformance.runner import run

    result = run(["onnx"], devices=["cpu"], dtypes=[c64, c128], quick=True)
    ffts = run(["onnx"], devices=["cpu"], ops="^(fft|ifft|rfft|irfft)$")
    cells = [c for r in (result, ffts) for c in r.cells if c.status != "not run"]
    assert len(cells) >= 60
    assert [(c.op, c.dtype, c.status) for c in cells if c.status != "pass"] == []


def test_a_complex_graph_round_trips_through_the_disk_cache(tmp_path):
    from parity.backends.disk_cache import compile_cached

    b = GraphBuilder("spectrum")
    x = b.input(c64[2, 12])
    spectrum = b.fft(x, ndims=1, norm="ortho")
    graph = b.build([spectrum, b.complex_abs(spectrum)])
    z = (np.arange(24).reshape(2, 12) * (1 - 0.5j)).astype(np.complex64)
    first, loaded = compile_cached(graph, OnnxBackend(), "cpu", str(tmp_path))
    again, reloaded = compile_cached(graph, OnnxBackend(), "cpu", str(tmp_path))
    assert not loaded and reloaded  # the second one is the stored model, not lowered again
    want = evaluate(graph, [z])
    for a, c, e in zip(first(z), again(z), want):
        assert _same(a, c) and a.dtype == e.dtype
        np.testing.assert_allclose(c, e, rtol=1e-6, atol=1e-5)


def test_an_exported_complex_model_passes_the_checker_and_runs_in_plain_onnxruntime(tmp_path):
    import onnx
    import onnxruntime as ort

    b = GraphBuilder("spectrum")
    x = b.input(c128[3, 7])
    graph = b.build([b.sqrt(b.ifft(x, ndims=1, norm="forward"))])
    model = BACKEND.export(graph, tmp_path / "spectrum.onnx", input_names=["z"], output_names=["root"])
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    z = np.exp(1j * np.arange(21.0)).reshape(3, 7) * np.arange(1, 22).reshape(3, 7)
    carrier = np.stack([z.real, z.imag], -1)  # the model's complex carrier: [..., 2]
    session = ort.InferenceSession(str(tmp_path / "spectrum.onnx"), providers=["CPUExecutionProvider"])
    (root,) = session.run(None, {"z": carrier})
    assert root.shape == (3, 7, 2) and root.dtype == np.float64
    (want,) = evaluate(graph, [z])
    np.testing.assert_allclose(root[..., 0] + 1j * root[..., 1], want, rtol=1e-13)
