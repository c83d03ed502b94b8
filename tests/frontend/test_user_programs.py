"""Ops users write that the model zoo does not (found by studies/torch_ops_probe): through
``parity.compile`` against eager torch, forward and gradients, on the reference interpreter
and on backends, with the edge cases each translation claims (NaN, ties, offsets, shifts past
the width)."""

import warnings

import pytest
import torch
import torch.nn.functional as F

import parity
from parity.frontend.no_derivative import NoDerivativeError

BACKENDS = ["reference", "xla", "onnx"]
# a recompile limit would run the rest of a loop of cases in eager torch: an error here, not a pass
pytestmark = pytest.mark.filterwarnings("error::parity.frontend.graph_breaks.RecompileLimitWarning")


def _same(fn, *inputs, backend, grads=True):
    """fn through parity.compile equals eager bit for bit-close: outputs and float inputs' gradients.
    Dynamo starts afresh: lambdas of one code compiled in a loop would reach its recompile limit,
    after which Dynamo runs them in eager torch (and they would match eager trivially)."""
    torch._dynamo.reset()
    ours = [t.detach().clone().requires_grad_(grads and t.is_floating_point()) for t in inputs]
    theirs = [t.detach().clone().requires_grad_(grads and t.is_floating_point()) for t in inputs]
    got, expected = parity.compile(fn, backend=backend)(*ours), fn(*theirs)
    got, expected = (got, expected) if isinstance(expected, tuple) else ((got,), (expected,))
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-6, equal_nan=True)
    floats = [(g, e) for g, e in zip(got, expected) if e.requires_grad]
    if grads and floats:
        weights = [torch.randn(e.shape) for _, e in floats]
        sum((g * w).sum() for (g, _), w in zip(floats, weights)).backward()
        sum((e * w).sum() for (_, e), w in zip(floats, weights)).backward()
        for a, b in zip(ours, theirs):
            if b.grad is not None:
                torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_diagonal_scatter_in_place_diagonals_and_their_gradients(backend):
    def writes(x):
        y = x * 1.0
        y.diagonal(-1).zero_()  # below the diagonal
        y.diagonal(2).mul_(3)  # above it
        y[1].diagonal(0, 0, 1).fill_(7.0)  # a batched 3-d slice, dims other than the last two
        return y

    _same(writes, torch.randn(3, 4, 5), backend=backend)
    _same(lambda x: torch.diagonal_scatter(x, torch.arange(8.0).view(2, 4), 1, 0, 2), torch.randn(4, 2, 5), backend=backend)
    _same(lambda x: torch.einsum("ii->i", x) * 2, torch.randn(4, 4), backend=backend)  # its backward


@pytest.mark.parametrize("backend", BACKENDS)
def test_shifts_every_overload_and_past_the_width(backend):
    a = torch.tensor([-100, -3, -1, 0, 1, 7, 100, 2**30], dtype=torch.int32)
    s = torch.tensor([0, 1, 31, 32, 40, 2, -1, 3], dtype=torch.int32)
    _same(lambda a, s: torch.stack([a << s, a >> s, a << 3, a >> 2, torch.bitwise_left_shift(a, s),
                                    torch.bitwise_right_shift(a, 5)]), a, s, backend=backend)
    u = torch.tensor([0, 1, 128, 255], dtype=torch.uint8)
    _same(lambda u: torch.stack([u >> 1, u << 1, u >> torch.tensor([0, 7, 8, 9], dtype=torch.uint8)]), u, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_kthvalue_and_median_with_nan_and_their_gradients(backend):
    x = torch.randn(4, 7)
    _same(lambda x: torch.kthvalue(x, 3, 1), x, backend=backend)
    _same(lambda x: torch.kthvalue(x, 2, 0, keepdim=True), x, backend=backend)
    _same(lambda x: torch.median(x, 1), x, backend=backend)
    _same(lambda x: torch.median(x, 0, keepdim=True), torch.randn(6, 3), backend=backend)  # even count: the lower
    y = torch.randn(3, 5)
    y[0, 3], y[0, 1], y[2, 4] = float("nan"), float("nan"), float("nan")  # the first NaN of a row is its median
    _same(lambda x: torch.median(x, 1), y, backend=backend, grads=False)
    _same(lambda x: torch.kthvalue(x, 4, 1), y, backend=backend, grads=False)
    _same(lambda x: torch.median(x, 1), torch.tensor([[3, 1, 2, 2], [5, 4, 9, 0]]), backend=backend)
    _same(lambda x: torch.median(x), x, backend=backend)  # of every element
    _same(lambda x: torch.median(x), y, backend=backend, grads=False)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cummax_cummin_indices_with_ties_and_nan(backend):
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0, 5.0, 5.0], [2.0, float("nan"), 1.0, float("nan"), 7.0, 0.0]])
    for op in (torch.cummax, torch.cummin):
        _same(lambda t, op=op: op(t, 1), x, backend=backend, grads=False)
        _same(lambda t, op=op: op(t, 0), torch.randn(5, 3), backend=backend)
        _same(lambda t, op=op: op(t, 0), torch.tensor([3, 1, 3, 0, 4, 4]), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_searchsorted_and_bucketize_both_sides_and_nan(backend):
    seq = torch.tensor([-1.0, 0.0, 0.0, 0.5, 2.0, float("nan")])
    v = torch.tensor([[-2.0, -1.0, 0.0, 0.3], [2.0, 9.0, float("nan"), 0.5]])
    for right in (False, True):
        _same(lambda s, v, right=right: torch.searchsorted(s, v, right=right), seq, v, backend=backend)
        _same(lambda b, v, right=right: torch.bucketize(v, b, right=right, out_int32=True), seq[:5], v, backend=backend)
    rows = torch.sort(torch.randn(3, 5)).values
    _same(lambda s, v: torch.searchsorted(s, v, side="right"), rows, torch.randn(3, 4), backend=backend)
    shuffled, sorter = torch.tensor([3.0, 1.0, 2.0]), torch.tensor([1, 2, 0])
    _same(lambda s, v, o: torch.searchsorted(s, v, sorter=o), shuffled, torch.tensor([0.5, 2.0, 2.5, 9.0]), sorter,
          backend=backend)
    _same(lambda v: torch.bucketize(v, torch.tensor([1, 4, 9])), torch.tensor([0, 1, 5, 9, 10]), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_tril_and_triu_indices_are_torchs(backend):
    for rows, cols, offset in ((4, 4, 0), (3, 5, -1), (5, 3, 2), (0, 3, 0)):
        _same(lambda x, r=rows, c=cols, o=offset: torch.tril_indices(r, c, o) + x, torch.zeros((), dtype=torch.int64),
              backend=backend)
        _same(lambda x, r=rows, c=cols, o=offset: torch.triu_indices(r, c, o, dtype=torch.int32) + x,
              torch.zeros((), dtype=torch.int32), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_exponential_noise_and_gumbel_softmax(backend):
    draw = parity.compile(lambda x: torch.empty_like(x).exponential_(2.5), backend=backend)
    torch.manual_seed(0)
    sample = draw(torch.zeros(20000))
    torch.manual_seed(0)
    assert torch.equal(draw(torch.zeros(20000)), sample)  # its key comes from torch's generator
    assert (sample >= 0).all() and sample.isfinite().all()
    assert abs(sample.mean().item() - 1 / 2.5) < 0.015 and abs(sample.std().item() - 1 / 2.5) < 0.015
    assert abs((sample < 0.4).float().mean().item() - (1 - torch.exp(torch.tensor(-1.0)).item())) < 0.015
    hard = parity.compile(lambda x: F.gumbel_softmax(x, tau=0.5, hard=True), backend=backend)(torch.randn(50, 6))
    assert ((hard == 0) | (hard == 1)).all() and torch.equal(hard.sum(1), torch.ones(50))


@pytest.mark.parametrize("backend", BACKENDS)
def test_cdist_gradients_every_order_and_broadcast_batches(backend):
    for p in (2.0, 1.0, 0.0, 0.5, 1.5, 3.0, float("inf")):
        a, b = torch.randn(2, 5, 3), torch.randn(2, 4, 3)
        b[0, 1] = a[0, 2]  # a zero distance: its pair adds 0, as in torch
        a[1, 0, 1] = b[1, 3, 1]  # one equal coordinate (p < 1: its term is 0)
        _same(lambda a, b, p=p: torch.cdist(a, b, p), a, b, backend=backend)
    _same(lambda a, b: torch.cdist(a, b), torch.randn(3, 1, 4, 2), torch.randn(5, 3, 2), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_multinomial_draws_in_proportion_with_and_without_replacement(backend):
    p = torch.tensor([[0.0, 1.0, 2.0, 5.0], [2.0, 2.0, 0.0, 4.0]])  # 3 classes: p * E would give 0.665, not 0.625
    many = parity.compile(lambda p: torch.multinomial(p, 8000, replacement=True), backend=backend)
    torch.manual_seed(0)
    drawn = many(p)
    torch.manual_seed(0)
    assert torch.equal(many(p), drawn) and drawn.dtype == torch.int64 and drawn.shape == (2, 8000)
    share = torch.stack([(drawn == c).float().mean(1) for c in range(4)], 1)
    assert (share - p / p.sum(1, keepdim=True)).abs().max() < 0.025, share
    without = parity.compile(lambda p: torch.multinomial(p, 2), backend=backend)
    q = torch.tensor([0.0, 1.0, 3.0, 4.0])
    firsts = []
    for _ in range(400):
        pair = without(q)
        assert pair.shape == (2,) and pair[0] != pair[1] and (pair != 0).all()
        firsts.append(pair[0].item())
    first = torch.tensor(firsts)
    assert abs((first == 3).float().mean() - 0.5) < 0.08 and abs((first == 1).float().mean() - 0.125) < 0.05


def _step_with_floor_division(a, b):
    q = a // b  # torch has no derivative for floor_divide
    return a * b, q


def test_a_floor_division_that_needs_a_gradient_names_the_users_line_and_the_fix():
    a, b = torch.randn(4, requires_grad=True), torch.randn(4)
    with warnings.catch_warnings(record=True) as caught, pytest.raises(NoDerivativeError) as info:
        warnings.simplefilter("always")
        parity.compile(_step_with_floor_division, backend="reference")(a, b)
    line = _step_with_floor_division.__code__.co_firstlineno + 1
    what, why, fix = str(info.value).splitlines()
    assert what.startswith(f"aten.floor_divide at {__file__}:{line} in _step_with_floor_division has no derivative")
    assert "backward of every output that requires grad" in why and "(a // b).detach()" in fix
    assert not [w for w in caught if "Error detected in" in str(w.message)]  # autograd's anomaly report stays quiet
    fixed = parity.compile(lambda a, b: (a * b, (a // b).detach()), backend="reference")(a, b)
    assert torch.equal(fixed[1], a.detach() // b) and torch.equal(fixed[0], a * b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_embedding_bag_gradients_every_mode_padding_empty_bags_and_sample_weights(backend):
    w, idx, offsets = torch.randn(10, 3), torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 4]), torch.tensor([0, 2, 2, 5])
    for mode in ("sum", "mean", "max"):
        for padding_idx in (None, 4):
            _same(lambda w, i, o, m=mode, p=padding_idx: F.embedding_bag(i, w, o, mode=m, padding_idx=p), w, idx, offsets,
                  backend=backend)
        _same(lambda w, i, m=mode: F.embedding_bag(i, w, mode=m), w, torch.tensor([[1, 2, 2], [7, 0, 1]]), backend=backend)
    _same(lambda w, i, o, s: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=s, padding_idx=4), w, idx, offsets,
          torch.randn(9), backend=backend)
    last = torch.cat([offsets, torch.tensor([9])])  # include_last_offset: the end of the last bag too
    for mode in ("sum", "mean", "max"):
        _same(lambda w, i, o, m=mode: F.embedding_bag(i, w, o, mode=m, include_last_offset=True), w, idx, last,
              backend=backend)
        _same(lambda w, i, o, m=mode: F.embedding_bag(i, w, o, mode=m, include_last_offset=True), w, idx, last,
              backend=backend, grads=False)  # no gradient: torch's _embedding_bag_forward_only


def test_a_cell_a_backend_declines_for_a_measured_failure_says_why():
    """inductor does not claim float rem (deviations.UNSUPPORTED: its fmod's NaN cases): a float
    ``a % b`` under strict mode names that reason, not only the dtype."""
    from parity.backends.inductor.deviations import UNSUPPORTED
    from parity.frontend.errors import UnsupportedAtenOp
    from parity.ir.dtypes import DType

    with pytest.raises(UnsupportedAtenOp) as info:
        parity.compile(lambda a, b: a % b, backend="inductor")(torch.randn(4), torch.randn(4))
    why = str(info.value).splitlines()[1]
    assert "claims the IR op 'rem' but not for dtype f32" in why and UNSUPPORTED[("rem", DType.float32)] in why


@pytest.mark.parametrize("backend", BACKENDS)
def test_grid_sample_gradients_every_mode_padding_and_corner_alignment(backend):
    x = torch.randn(2, 3, 5, 6)
    grid = torch.rand(2, 4, 7, 2) * 3 - 1.5  # past the borders too
    grid[0, 0, :4] = torch.tensor([[-1.0, -1.0], [1.0, 1.0], [0.2, -1.0], [1.0, 0.3]])  # on the borders
    for mode in ("bilinear", "nearest"):
        for padding_mode in ("zeros", "border", "reflection"):
            for align_corners in (False, True):
                _same(lambda x, g, m=mode, p=padding_mode, a=align_corners: F.grid_sample(x, g, m, p, a), x, grid,
                      backend=backend)
    # one gradient only: a fixed image (a warp's target) or a fixed grid
    _same(lambda g: F.grid_sample(x, g, align_corners=False), grid, backend=backend)
    _same(lambda x: F.grid_sample(x, grid, padding_mode="border", align_corners=True), x, backend=backend)
