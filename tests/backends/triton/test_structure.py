"""Shape and indexing ops, folded into index arithmetic: bit-exact against the
interpreter, on every dtype class, with empty and size-1 dims, negative padding,
out-of-range (clamped) gather indices and clamped dynamic starts.
"""

from __future__ import annotations

import numpy as np
import pytest

from parity.ir import DType

from .conftest import assert_exact, graph_of, native, run

f32, i8, i64, u32, bf16 = DType.float32, DType.int8, DType.int64, DType.uint32, DType.bfloat16
_RNG = np.random.default_rng(0)


def _data(dtype: DType, shape):
    if dtype.is_bool:
        return _RNG.random(shape) < 0.5
    if dtype.is_float:
        x = _RNG.normal(size=shape) * 10
        x.reshape(-1)[:3] = [np.nan, -0.0, np.inf][: x.size]
        return x.astype(dtype.numpy)
    info = dtype.iinfo
    return _RNG.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype.numpy)


def _check(backend, fn, *arrays, kernels=None):
    graph = graph_of(fn, *(DType.from_numpy(a.dtype)[a.shape] for a in arrays))
    got, exe = run(backend, graph, list(arrays))
    for g, w in zip(got, native(graph, list(arrays))):
        assert_exact(g, w)
    if kernels is not None:
        assert exe.kernels_per_call == kernels
    return exe


_DTYPES = [f32, bf16, i8, u32, DType.bool]

SHAPE_CASES = {
    "reshape": lambda b, x: b.reshape(x, shape=(4, 6)),
    "reshape_split": lambda b, x: b.reshape(x, shape=(2, 3, 2, 2)),
    "transpose": lambda b, x: b.transpose(x, permutation=(2, 0, 1)),
    "broadcast": lambda b, x: b.broadcast_in_dim(x, shape=(5, 2, 3, 4), broadcast_dimensions=(1, 2, 3)),
    "slice": lambda b, x: b.slice(x, start_indices=(1, 0, 1), limit_indices=(2, 3, 4), strides=(1, 2, 2)),
    "slice_empty": lambda b, x: b.slice(x, start_indices=(1, 2, 0), limit_indices=(1, 3, 4), strides=(1, 1, 1)),
    "reverse": lambda b, x: b.reverse(x, dimensions=(0, 2)),
    "concatenate": lambda b, x: b.concatenate(x, b.reverse(x, dimensions=(1,)), x, dimension=1),
    "transpose_of_slice": lambda b, x: b.transpose(
        b.slice(x, start_indices=(0, 1, 0), limit_indices=(2, 3, 4), strides=(1, 1, 3)), permutation=(1, 2, 0)),
}


@pytest.mark.parametrize("dtype", _DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("case", sorted(SHAPE_CASES))
def test_shape_ops(backend, case, dtype):
    _check(backend, SHAPE_CASES[case], _data(dtype, (2, 3, 4)), kernels=None)


def test_chain_of_shape_ops_is_one_kernel_without_copies(backend):
    exe = _check(backend, lambda b, x: b.exp(b.reshape(b.transpose(b.reverse(x, dimensions=(1,)),
                                                                   permutation=(2, 1, 0)), shape=(12, 2))),
                 _data(f32, (2, 3, 4)), kernels=1)
    (src,) = exe.kernel_sources.values()
    assert src.count("tl.load") == 1 and src.count("tl.store") == 1


@pytest.mark.parametrize("dtype", [f32, i8, DType.bool], ids=lambda d: d.short)
def test_pad_with_negative_and_interior_padding(backend, dtype):
    x = _data(dtype, (2, 3, 4))
    fill = _data(dtype, ())
    _check(backend, lambda b, a, v: b.pad(a, v, edge_padding_low=(1, -1, 0), edge_padding_high=(0, 2, -1),
                                          interior_padding=(1, 0, 2)), x, fill)
    # a size-1 result dim that lands in the padding or in the data
    _check(backend, lambda b, a, v: b.pad(a, v, edge_padding_low=(-1, 0, 0), edge_padding_high=(0, 0, 0),
                                          interior_padding=(0, 0, 0)), x, fill)
    _check(backend, lambda b, a, v: b.pad(a, v, edge_padding_low=(1, 0, 0), edge_padding_high=(-2, 0, 0),
                                          interior_padding=(0, 0, 0)), x, fill)


def test_iota_wraps_and_rounds(backend):
    _check(backend, lambda b: (b.iota(dtype=i8, shape=(300,)), b.iota(dtype=bf16, shape=(2, 300), dimension=1),
                               b.iota(dtype=u32, shape=(3, 2), dimension=0)))


@pytest.mark.parametrize("dtype", [f32, bf16, i64, DType.bool], ids=lambda d: d.short)
def test_gather_clamps_out_of_range_indices(backend, dtype):
    x = _data(dtype, (2, 3, 4))
    idx = _RNG.integers(-2, 6, size=(2, 5, 4)).astype(np.int8)
    _check(backend, lambda b, a, i: b.gather(a, i, axis=1), x, idx)
    _check(backend, lambda b, a, i: b.gather(a, i, axis=0), x, np.array([[[1]]], np.uint32))


def test_gather_from_an_empty_axis_gives_zeros(backend):
    _check(backend, lambda b, a, i: b.gather(a, i, axis=0), np.zeros((0, 3), np.float32), np.zeros((2, 3), np.int64))


@pytest.mark.parametrize("starts", [(1, 5, -2), (0, 0, 0), (-9, 1, 9)])
def test_dynamic_slice_and_update_clamp_their_starts(backend, starts):
    x = _data(f32, (2, 3, 4))
    s = [np.int32(v) for v in starts]
    _check(backend, lambda b, a, *ss: b.dynamic_slice(a, *ss, slice_sizes=(1, 2, 3)), x, *s)
    u = _data(f32, (1, 2, 2))
    _check(backend, lambda b, a, up, *ss: b.dynamic_update_slice(a, up, *ss), x, u, *[np.int64(v) for v in starts])
    _check(backend, lambda b, a, up, *ss: b.dynamic_update_slice(a, up, *ss), x, np.zeros((0, 2, 2), np.float32),
           *s)


@pytest.mark.parametrize("dtype", [f32, bf16, i8, DType.float64], ids=lambda d: d.short)
def test_reduce_window(backend, dtype):
    x = _data(dtype, (2, 3, 5))
    if dtype.is_float:
        x = np.where(np.isnan(x.astype(np.float64)), 1, x).astype(dtype.numpy)
    for kind in ("max", "sum"):
        if kind == "sum" and dtype.is_integer:
            x = (x // 8).astype(dtype.numpy)  # exact sums
        fn = lambda b, a, kind=kind: b.reduce_window(  # noqa: E731
            a, kind=kind, window_dimensions=(1, 2, 3), window_strides=(1, 1, 2), padding=((0, 0), (1, 0), (1, 1)),
            window_dilations=(1, 1, 2))
        graph = graph_of(fn, dtype[x.shape])
        (got,), _ = run(backend, graph, [x])
        (want,) = native(graph, [x])
        if kind == "sum" and dtype.is_float:  # an accumulation: bound n·ε·Σ|terms| with n = 3·2 window terms
            absum = native(graph_of(fn, dtype[x.shape]), [np.abs(x)])[0].astype(np.float64)
            err = np.abs(got.astype(np.float64) - want.astype(np.float64))
            assert (err <= 6 * float(dtype.finfo.eps) * absum + float(dtype.finfo.smallest_subnormal)).all()
        else:
            assert_exact(got, want, f"reduce_window {kind} {dtype.short}")


def test_reduce_window_with_padding_only_window(backend):
    # size-1 dims whose only window position lies in the padding reduce to the identity
    x = _data(f32, (1, 4))
    _check(backend, lambda b, a: b.reduce_window(a, kind="max", window_dimensions=(1, 2), window_strides=(1, 2),
                                                 padding=((1, 0), (0, 0)), window_dilations=(1, 1)), x)


# -- size-1 dims and static indices (found by parity fuzz) -----------------------------------
# A size-1 dim drops out of the flat offset, so a load may have a scalar pointer under a
# block mask, a store a scalar pointer for a block value; an index may fold to a literal.

@pytest.mark.parametrize("dtype", [u32, DType.float16], ids=lambda d: d.short)
def test_pad_past_a_size_one_dim_reads_the_fill(backend, dtype):
    x, fill = np.array([39], dtype.numpy), np.array(4, dtype.numpy)
    graph = graph_of(lambda b, a, v: b.pad(a, v, edge_padding_low=(0,), edge_padding_high=(2,),
                                           interior_padding=(0,)), dtype[1], dtype[()])
    (got,), _ = run(backend, graph, [x, fill])
    assert_exact(got, np.array([39, 4, 4], dtype.numpy))


def test_pad_of_a_single_element_under_a_mask(backend):
    # every result lane is padding (cropped low edge, interior gaps): the masked load never lands
    graph = graph_of(lambda b, a, v: b.pad(a, v, edge_padding_low=(-1, 0), edge_padding_high=(2, 2),
                                           interior_padding=(1, 1)), DType.float16[1, 1], DType.float16[()])
    (got,), _ = run(backend, graph, [np.array([[-2.41]], np.float16), np.array(3.967, np.float16)])
    assert_exact(got, np.full((2, 3), 3.967, np.float16))


def test_iota_read_at_a_literal_index(backend):
    # slice [1:2] of reverse(iota(4)) reads iota at the literal index (3 - 1)
    graph = graph_of(lambda b: b.slice(b.reverse(b.iota(dtype=f32, shape=(4,)), dimensions=(0,)),
                                       start_indices=(1,), limit_indices=(2,), strides=(1,)))
    (got,), _ = run(backend, graph, [])
    assert_exact(got, np.array([2.0], np.float32))


def test_concatenate_of_empty_pieces_and_of_size_one_pieces(backend):
    _check(backend, lambda b, a: b.concatenate(a, a, a, dimension=0), np.zeros((0, 1), np.int64))
    x = np.array([[7.5]], np.float32)
    graph = graph_of(lambda b, a: b.concatenate(a, b.neg(a), dimension=1), f32[1, 1])
    (got,), _ = run(backend, graph, [x])
    assert_exact(got, np.array([[7.5, -7.5]], np.float32))


@pytest.mark.parametrize("kind", ["max", "sum"])
def test_reduce_window_of_one_element_without_padding(backend, kind):
    x = np.array([-1.5], bf16.numpy)
    graph = graph_of(lambda b, a: b.reduce_window(a, kind=kind, window_dimensions=(1,), window_strides=(1,),
                                                  padding=((0, 0),), window_dilations=(1,)), bf16[1])
    (got,), _ = run(backend, graph, [x])
    assert_exact(got, x)


def test_deeply_nested_index_rewrites_stay_valid_python(backend):
    # 250 reverses in a row each wrap the index in "(n - ...)": without binding deep
    # expressions to variables the kernel file is rejected by Python's parser
    # ("too many nested parentheses", seen on MobileNetV2's backward).
    def chain(b, x):
        for _ in range(250):
            x = b.reverse(x, dimensions=(0,))
        return b.add(x, x)

    graph = graph_of(chain, DType.float32[16])
    x = np.arange(16, dtype=np.float32)
    (got,), _ = run(backend, graph, [x])
    np.testing.assert_array_equal(got, x + x)


def test_concatenating_hundreds_of_pieces_stays_valid_python(backend):
    # A concatenate picks its piece with nested tl.where: 250 pieces nested 250 deep.
    graph = graph_of(lambda b, *xs: b.concatenate(*xs, dimension=0), *[DType.float32[2]] * 250)
    xs = [np.full(2, i, np.float32) for i in range(250)]
    (got,), _ = run(backend, graph, xs)
    np.testing.assert_array_equal(got, np.concatenate(xs))
