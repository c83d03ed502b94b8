"""The torch scatter family translated onto the IR's one ``scatter`` op (frontend/aten/indexing.py),
run by the reference interpreter and compared with eager torch: every ``scatter_reduce`` mode
with and without ``include_self`` on duplicate indices, ``scatter(reduce=...)``, and
``index_put`` with a boolean mask (alone, after a slice, per-row values, accumulate), forward
and gradients through ``parity.compile``."""

import pytest
import torch

import parity
from parity.frontend.errors import UnsupportedAtenOp

from .conftest import run_via_ir, trace_to_ir

MODES = ("sum", "prod", "mean", "amax", "amin")


def _duplicates():
    """x [3, 4] and an index [5, 4] into 3 rows: every column writes some row twice or more."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(3, 4, generator=g)
    index = torch.tensor([[0, 2, 1, 1], [0, 2, 2, 1], [2, 0, 2, 1], [0, 0, 1, 1], [2, 2, 1, 0]])
    src = torch.randn(5, 4, generator=g)
    x[1, 0], src[3, 2] = float("nan"), float("-inf")  # amax/amin propagate NaN; -inf meets sums
    return x, index, src


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", MODES)
def test_scatter_reduce_float_matches_eager(reduce, include_self):
    x, index, src = _duplicates()

    def fn(x, index, src):
        return torch.scatter_reduce(x, 0, index, src, reduce, include_self=include_self)

    got, = run_via_ir(fn, x, index, src)
    torch.testing.assert_close(got, fn(x, index, src), rtol=1e-6, atol=0, equal_nan=True)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", MODES)
def test_scatter_reduce_int_is_exact(reduce, include_self):
    """Integer modes are exact; mean floors as torch does (-7 / 2 gives -4)."""
    x = torch.tensor([[-7, 3], [5, 100], [9, -2]])
    index = torch.tensor([[1, 0], [1, 0], [0, 0]])
    src = torch.tensor([[2, -9], [-6, 4], [8, 1]])

    def fn(x, index, src):
        return torch.scatter_reduce(x, 0, index, src, reduce, include_self=include_self)

    got, = run_via_ir(fn, x, index, src)
    assert torch.equal(got, fn(x, index, src))


@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_with_reduce_argument(reduce):
    x, index, src = _duplicates()
    x = x.nan_to_num()
    got = run_via_ir(lambda x, i, s: torch.scatter(x, 1, i[:, :3], s, reduce=reduce), x, index[:3], src)
    want = torch.scatter(x, 1, index[:3, :3], src, reduce=reduce)
    torch.testing.assert_close(got[0], want, rtol=1e-6, atol=0)
    got = run_via_ir(lambda x, i: torch.scatter(x, 1, i[:, :3], 2.5, reduce=reduce), x, index[:3])
    torch.testing.assert_close(got[0], torch.scatter(x, 1, index[:3, :3], 2.5, reduce=reduce), rtol=1e-6, atol=0)


def _put_mask(x, mask, values):
    y = x.clone()
    y[mask] = values
    return y


def _put_mask_after_slice(x, mask, values):
    y = x.clone()
    y[:, mask] = values
    return y


def _add_mask(x, mask, values):
    return torch.index_put(x, (mask,), values, accumulate=True)


MASK = torch.tensor([True, False, True, True, False])
MASK_2D = torch.tensor([[True, False, False, True, False], [False, False, True, False, False],
                        [True, True, False, False, False], [False, False, False, False, True]])
# (function, x, mask, values): broadcast values, one row per True, a mask after a slice, accumulate
MASKED_PUTS = {
    "scalar": (_put_mask, (4, 5, 3), MASK_2D, ()),
    "row_per_true": (_put_mask, (4, 5, 3), MASK_2D, (6, 3)),
    "after_slice": (_put_mask_after_slice, (4, 5, 3), MASK, (4, 3, 3)),
    "accumulate_broadcast": (_add_mask, (5, 2), MASK, (2,)),
    "accumulate_rows": (_add_mask, (5, 2), MASK, (3, 2)),
}


@pytest.mark.parametrize("name", sorted(MASKED_PUTS))
def test_index_put_boolean_mask_forward_and_x_gradient(name):
    """Translated whole (no graph break, forward and backward graphs). Only x's gradient: the
    values' is ``grad[mask]``, a data-dependent size (aten.nonzero) that Dynamo runs in torch."""
    from torch._dynamo.utils import counters

    from parity.frontend import compiled_graph

    fn, x_shape, mask, v_shape = MASKED_PUTS[name]
    g = torch.Generator().manual_seed(5)
    x = torch.randn(x_shape, generator=g, requires_grad=True)
    values = torch.randn(v_shape, generator=g)
    torch._dynamo.reset()
    compiled_graph.reset_caches()
    counters.clear()
    compiled = parity.compile(fn, backend="reference")
    got, want = compiled(x, mask, values), fn(x, mask, values)
    assert torch.equal(got, want)
    cotangent = torch.linspace(-1, 1, got.numel()).reshape(got.shape)
    got_grad, = torch.autograd.grad(got, x, cotangent)
    assert torch.equal(got_grad, torch.autograd.grad(want, x, cotangent)[0])
    assert compiled_graph.STATS["translations"] == 2 and not counters["graph_break"]


def test_index_put_mask_beside_an_index_tensor_is_refused_with_why():
    def fn(x, mask, rows, values):
        return torch.index_put(x, (rows, mask), values)

    x, values = torch.zeros(3, 5), torch.ones(())
    with pytest.raises(UnsupportedAtenOp, match="boolean mask beside other index tensors"):
        parity.compile(fn, backend="reference")(x, MASK, torch.tensor([0, 2, 1]), values)


def test_index_put_mask_of_the_wrong_shape_names_both_shapes():
    """torch's fake tensors let a mismatched mask through tracing; the translation says what is wrong."""
    def fn(x, mask):
        y = x.clone()
        y[mask] = 0.0
        return y

    with pytest.raises(UnsupportedAtenOp, match=r"mask of shape \[4, 4\] indexing dims 0..1 of shape \[2, 4\]"):
        parity.compile(fn, backend="reference")(torch.zeros(2, 4, 4), torch.ones(4, 4, dtype=torch.bool))


def _put_at(where):
    def put(x, values):
        y = x.clone()
        y[where] = values
        return y

    return put


def _one_index_cases():
    """``index_put`` with one index tensor (frontend/aten/indexing.py, _index_put_along): a static
    cache's ``index_copy_`` along dim 2, a 2-D index with broadcast values, negative positions,
    and accumulate onto duplicates."""
    g = torch.Generator().manual_seed(5)
    cache = torch.randn(2, 3, 7, 4, generator=g)
    return {
        "index_copy along dim 2": (lambda x, v: x.index_copy(2, torch.tensor([5, 1]), v),
                                   cache, torch.randn(2, 3, 2, 4, generator=g)),
        "2-D index, broadcast values": (_put_at((slice(None), torch.tensor([[0, 2], [4, 6]]))),
                                        cache[0], torch.randn(4, generator=g)),
        "negative positions": (_put_at((slice(None), slice(None), torch.tensor([-1, -7]))),
                               cache, torch.randn(2, 3, 2, 4, generator=g)),
        "accumulate onto duplicates": (lambda x, v: torch.index_put(x, (torch.tensor([1, 0, 1]),), v, accumulate=True),
                                       cache[0, 0], torch.randn(3, 4, generator=g)),
    }


@pytest.mark.parametrize("case", list(_one_index_cases()))
def test_index_put_with_one_index_tensor_is_one_scatter_along_its_dim(case):
    fn, x, values = _one_index_cases()[case]
    (got,) = run_via_ir(fn, x, values, functional=True)
    torch.testing.assert_close(got, fn(x, values), rtol=0, atol=1e-6 if "accumulate" in case else 0)
    ops = [n.op for n in trace_to_ir(fn, x, values, functional=True).graph.nodes]
    assert ops.count("scatter") == 1 and "transpose" not in ops  # x is scattered into as it is
