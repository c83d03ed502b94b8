"""The aten translations added for issue #17: forward and backward through
``parity.compile`` (AOTAutograd) against eager torch, on the reference backend and on
xla/onnx; the pinned list of Core ATen ops that stay untranslated."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

import parity
from parity.frontend import coverage
from parity.frontend.tensors import to_array
from parity.frontend.translate import fx_to_ir
from parity.ir import evaluate

RTOL, ATOL = 1e-4, 1e-5
# Core ATen ops with no exact static-shape IR form (docs/frontend.md says why for each)
UNTRANSLATABLE = ["aten._local_scalar_dense.default", "aten.nonzero.default", "aten.resize_.default"]


def _compiled_vs_eager(fn, *inputs, backend="reference", grads=True, rtol=RTOL, atol=ATOL):
    """fn through parity.compile equals eager: the result and, for float inputs, the gradients."""
    ours = [t.detach().clone().requires_grad_(grads and t.is_floating_point()) for t in inputs]
    theirs = [t.detach().clone().requires_grad_(grads and t.is_floating_point()) for t in inputs]
    got, expected = parity.compile(fn, backend=backend)(*ours), fn(*theirs)
    torch.testing.assert_close(got, expected, rtol=rtol, atol=atol)
    if grads and expected.requires_grad:
        weight = torch.randn_like(expected)
        (got * weight).sum().backward()
        (expected * weight).sum().backward()
        for a, b in zip(ours, theirs):
            if b.grad is not None:
                torch.testing.assert_close(a.grad, b.grad, rtol=rtol, atol=atol)


def _untraced(fn, *args):
    """fn's outputs through the IR, traced without decompositions (as torch.export graphs keep core ops)."""
    translation = fx_to_ir(make_fx(fn)(*args))
    return [torch.from_numpy(r) for r in evaluate(translation.graph, [to_array(a) for a in args])]


def test_core_aten_gaps_are_only_the_documented_untranslatable_ops():
    assert coverage()["core_missing"] == UNTRANSLATABLE


@pytest.mark.parametrize("backend", ["reference", "xla", "onnx"])
def test_histc_counts_exactly(backend):
    x = torch.randn(300)
    x[:4] = torch.tensor([float("nan"), 1.0, -1.0, 5.0])  # NaN and out-of-range are not counted; max is
    got = parity.compile(lambda t: torch.histc(t, bins=7, min=-1, max=1), backend=backend)(x)
    assert torch.equal(got, torch.histc(x, bins=7, min=-1, max=1))
    y = torch.randn(50)
    assert torch.equal(parity.compile(lambda t: torch.histc(t, bins=5), backend=backend)(y), torch.histc(y, bins=5))
    same = torch.full((4,), 2.0)  # one value: the range widens to [1, 3]
    assert parity.compile(lambda t: torch.histc(t, bins=4), backend=backend)(same).tolist() == [0, 0, 4, 0]


def _grouped_reference(a, w, offs):
    out = torch.zeros(a.shape[0], w.shape[2], dtype=torch.float64)
    start = 0
    for g, end in enumerate(offs.tolist()):
        out[start:end] = a[start:end].double() @ w[g].double()
        start = end
    return out


@pytest.mark.parametrize("backend", ["reference", "xla"])
def test_grouped_mm_forward_and_backward_match_eager_and_zero_the_unrouted_rows(backend):
    offs = torch.tensor([3, 3, 7, 11], dtype=torch.int32)  # an empty group; rows 11, 12 in none
    a = torch.randn(13, 16, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(4, 16, 8, dtype=torch.bfloat16, requires_grad=True)
    out = parity.compile(lambda a, w, o: torch._grouped_mm(a, w, offs=o), backend=backend)(a, w, offs)
    a2, w2 = a.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    expected = torch._grouped_mm(a2, w2, offs=offs)
    torch.testing.assert_close(out[:11], expected[:11])
    assert torch.equal(out[11:], torch.zeros(2, 8, dtype=torch.bfloat16))
    # one rounding to bfloat16 (8 significant bits) of a float32 sum of exact products: within half a
    # bfloat16 ULP of the float64 product, plus float32's accumulation (2^-20 of the value is ample)
    want = _grouped_reference(a, w, offs)
    half_ulp = torch.exp2(torch.floor(torch.log2(want.abs().clamp_min(2.0**-126))) - 8)
    assert ((out.double() - want).abs() <= half_ulp + want.abs() * 2.0**-20).all()
    grad = torch.randn(13, 8, dtype=torch.bfloat16)
    grad[11:] = 0  # torch leaves those rows unwritten: their gradient is not comparable
    (out * grad).sum().backward()
    (expected * grad).sum().backward()
    torch.testing.assert_close(a.grad[:11], a2.grad[:11])
    torch.testing.assert_close(w.grad, w2.grad)


@pytest.mark.parametrize("ord", [2, 1, math.inf, -math.inf, 0, 3, 0.5, -1.5])
def test_vector_norm_every_order(ord):
    x = torch.randn(3, 4, 5)
    x[0, 0, 0] = 0.0
    for dim in (None, 1, (0, 2)):
        _compiled_vs_eager(lambda t: torch.linalg.vector_norm(t, ord, dim=dim), x, grads=ord not in (0, -1.5))


@pytest.mark.parametrize("backend", ["reference", "onnx"])
def test_normalize_cosine_similarity_and_weight_norm_train(backend):
    _compiled_vs_eager(lambda t: F.normalize(t, dim=1), torch.randn(3, 4), backend=backend)
    _compiled_vs_eager(lambda a, b: F.cosine_similarity(a, b), torch.randn(3, 4), torch.randn(3, 4), backend=backend)
    for dim, g in ((0, torch.randn(4, 1, 1)), (2, torch.randn(1, 1, 2))):
        _compiled_vs_eager(lambda v, g: torch._weight_norm(v, g, dim), torch.randn(4, 3, 2), g, backend=backend)


def test_assertions_emit_nothing():
    def f(x):
        torch._assert_async(x.sum() > -1e9, "never fails")
        return x * 2

    assert torch.equal(parity.compile(f, backend="reference")(torch.ones(3)), torch.full((3,), 2.0))
    g = lambda t: torch.ops.aten._assert_tensor_metadata(t, dtype=torch.float32) or t + 1  # noqa: E731
    assert torch.equal(_untraced(g, torch.ones(2))[0], torch.full((2,), 2.0))


@pytest.mark.parametrize("kwargs", [dict(stride=2, padding=1), dict(stride=2, padding=1, output_padding=1),
                                    dict(stride=3, dilation=2, groups=2, output_padding=1)])
def test_transposed_convolution_backward(kwargs):
    groups = kwargs.get("groups", 1)
    x, w, b = torch.randn(2, 4, 5, 6), torch.randn(4, 6 // groups, 3, 3), torch.randn(6)
    _compiled_vs_eager(lambda x, w, b: F.conv_transpose2d(x, w, b, **kwargs), x, w, b)
    _compiled_vs_eager(lambda x, w: F.conv_transpose1d(x, w, stride=2), torch.randn(2, 4, 5), torch.randn(4, 3, 3))


@pytest.mark.parametrize("backend", ["reference", "xla"])
def test_distances_forward_and_backward(backend):
    for p in (2, 1, 0, math.inf, 3.5):
        for n, m in ((5, 6), (30, 27)):  # 30 rows: torch's matmul form for p = 2
            a, b = torch.randn(2, n, 4), torch.randn(2, m, 4)
            _compiled_vs_eager(lambda a, b: torch.cdist(a, b, p), a, b, backend=backend, grads=False, atol=1e-4)
        _compiled_vs_eager(lambda a: F.pdist(a, p), torch.randn(6, 3), backend=backend, grads=False)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_padding_forward_untraced_and_backward(mode):
    for pad, shape in (((2, 1), (2, 3, 5)), ((2, 1, 0, 3), (2, 3, 4, 5)), ((1, 1, 2, 0, 1, 2), (1, 2, 3, 4, 5))):
        x = torch.randn(*shape)
        assert torch.equal(_untraced(lambda t: F.pad(t, pad, mode=mode), x)[0], F.pad(x, pad, mode=mode))
        _compiled_vs_eager(lambda t: F.pad(t, pad, mode=mode), x)


@pytest.mark.parametrize("backend", ["reference", "onnx"])
def test_masked_scatter_forward_and_backward(backend):
    x, mask = torch.randn(3, 4), torch.rand(3, 4) > 0.5
    _compiled_vs_eager(lambda x, s: x.masked_scatter(mask, s), x, torch.randn(15), backend=backend)
    _compiled_vs_eager(lambda x, s: x.masked_scatter(mask[0], s), x, torch.randn(3, 5), backend=backend)


def test_one_dimensional_pools_untraced():
    x = torch.randn(2, 3, 9)
    assert torch.allclose(_untraced(lambda t: F.avg_pool1d(t, 3, 2, 1), x)[0], F.avg_pool1d(x, 3, 2, 1))
    assert torch.allclose(_untraced(lambda t: F.adaptive_avg_pool1d(t, 4), x)[0], F.adaptive_avg_pool1d(x, 4))


def test_adaptive_avg_pool_backward_and_col2im():
    _compiled_vs_eager(lambda t: F.adaptive_avg_pool2d(t, (3, 2)), torch.randn(2, 3, 7, 5))
    _compiled_vs_eager(lambda t: F.adaptive_avg_pool2d(t, (7, 3)), torch.randn(3, 5, 4))
    _compiled_vs_eager(lambda t: F.adaptive_avg_pool3d(t, (2, 3, 4)), torch.randn(1, 2, 5, 6, 7))
    for kwargs in (dict(kernel_size=(2, 2)), dict(kernel_size=(2, 3), stride=2, padding=1, dilation=(1, 2))):
        cols = F.unfold(torch.randn(2, 3, 6, 7), **kwargs)
        assert torch.equal(_untraced(lambda c: F.fold(c, (6, 7), **kwargs), cols)[0], F.fold(cols, (6, 7), **kwargs))


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample(mode, padding_mode, align_corners):
    x, grid = torch.randn(2, 3, 5, 6), torch.rand(2, 4, 7, 2) * 3 - 1.5
    grid[0, 0, :2] = torch.tensor([[-1.0, -1.0], [1.0, 1.0]])
    got = parity.compile(lambda x, g: F.grid_sample(x, g, mode, padding_mode, align_corners), backend="reference")(x, grid)
    torch.testing.assert_close(got, F.grid_sample(x, grid, mode, padding_mode, align_corners), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode):
    w, idx, offsets = torch.randn(10, 3), torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 2, 2, 5])
    for padding_idx in (None, 4):
        f = lambda w, i, o: F.embedding_bag(i, w, o, mode=mode, padding_idx=padding_idx)  # noqa: E731
        torch.testing.assert_close(parity.compile(f, backend="reference")(w, idx, offsets), f(w, idx, offsets))
        raw = lambda w, i, o: torch.ops.aten._embedding_bag(w, i, o, False, ["sum", "mean", "max"].index(mode),  # noqa: E731
                                                            False, None, False, -1 if padding_idx is None else 4)
        for got, expected in zip(_untraced(raw, w, idx, offsets), raw(w, idx, offsets)):
            torch.testing.assert_close(got.to(expected.dtype), expected)


def test_randperm_is_a_permutation_drawn_from_the_key():
    f = parity.compile(lambda x: x[torch.randperm(50)], backend="reference")
    x = torch.arange(50.0)
    torch.manual_seed(3)
    first = f(x)
    torch.manual_seed(3)
    assert torch.equal(f(x), first)  # the key comes from torch's generator
    assert sorted(first.tolist()) == x.tolist() and not torch.equal(first, x)
    translation = fx_to_ir(make_fx(lambda: torch.randperm(7, dtype=torch.int32))())
    (perm,) = evaluate(translation.graph, [np.array([7, 11], np.uint32)])
    assert perm.dtype == np.int32 and sorted(perm.tolist()) == list(range(7))


def test_native_batch_norm_legit_and_atan2_out_and_strides():
    x = torch.randn(4, 3, 5)
    op = torch.ops.aten._native_batch_norm_legit
    rm, rv = torch.randn(3), torch.rand(3) + 0.5
    got = _untraced(lambda t, m, v: op.default(t, None, None, m, v, False, 0.1, 1e-5)[0], x, rm, rv)
    for g, e in zip(got, op.default(x, None, None, rm, rv, False, 0.1, 1e-5)[:1]):
        torch.testing.assert_close(g, e)
    a, b = torch.randn(5), torch.randn(5)
    torch.testing.assert_close(_untraced(lambda a, b: torch.atan2(a, b, out=torch.empty(5)), a, b)[0], torch.atan2(a, b))
    # symbolic sizes: the stride of a [s0, s1] tensor along dim 0 is the symbol s1
    stride = lambda y: (torch.ops.aten.sym_stride.int(y, 0), torch.ops.aten.sym_storage_offset(y))  # noqa: E731
    t = fx_to_ir(make_fx(stride, tracing_mode="symbolic")(torch.randn(3, 4)))
    (kind, name), _ = t.outputs
    assert kind == "sym" and t.symbols[name] == (0, 1)
