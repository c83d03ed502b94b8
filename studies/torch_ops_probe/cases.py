"""The probe's programs: small functions a user plausibly writes that the model zoo may not.

Each :class:`Case` is a function, a maker of its inputs, and how to judge it: ``grad`` (the
float inputs get gradients through the compiled function), ``random`` (a check of the
output's properties in place of eager's numbers), ``island`` (data-dependent: it may run as
an eager island with a warning).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

R = torch.Generator().manual_seed(0)


def rn(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=R).to(dtype)


def ri(low, high, *shape, dtype=torch.int64):
    return torch.randint(low, high, shape, generator=R, dtype=dtype)


@dataclass
class Case:
    name: str
    fn: Callable
    inputs: Callable[[], tuple]
    grad: bool = False
    random: Callable | None = None  # check(out, *inputs) -> None (raises AssertionError) for random ops
    island: bool = False
    modules: list = field(default_factory=list)


def _module(cls, *args, **kwargs):
    torch.manual_seed(0)
    return cls(*args, **kwargs)


def _gru():
    m = _module(torch.nn.GRU, 4, 6, num_layers=2, batch_first=True)
    return lambda x: m(x)[0]


def _lstm():
    m = _module(torch.nn.LSTM, 4, 6, batch_first=True, bidirectional=True)
    return lambda x: m(x)[0]


def _rnn():
    m = _module(torch.nn.RNN, 4, 5, nonlinearity="relu")
    return lambda x: m(x)[0]


def _mha():
    m = _module(torch.nn.MultiheadAttention, 8, 2, batch_first=True).eval()
    mask = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    return lambda x: m(x, x, x, attn_mask=mask, key_padding_mask=pad)[0]


def _encoder():
    m = _module(torch.nn.TransformerEncoderLayer, 8, 2, 16, dropout=0.0, batch_first=True)
    return lambda x: m(x)


def _checks():
    def dropout(out, x):
        kept = out != 0
        assert torch.allclose(out[kept], x[kept] * 2, rtol=1e-5, atol=1e-6), "kept values not scaled by 1/(1-p)"
        assert 0.3 < kept.float().mean() < 0.7, f"kept share {kept.float().mean():.2f}"

    def gumbel(out, x):
        assert torch.allclose(out.sum(-1), torch.ones(out.shape[:-1]), atol=1e-5), "rows do not sum to 1"
        assert ((out == 0) | (out == 1)).all(), "hard=True not one-hot"

    def multinomial(out, p):
        assert out.shape == (3, 4) and out.dtype == torch.int64 and ((out >= 0) & (out < 6)).all()
        for row in range(3):
            assert len(set(out[row].tolist())) == 4, "without replacement: repeats"
            assert (p[row, out[row]] > 0).all(), "drew a zero-probability class"

    def randperm(out, x):
        assert sorted(out.tolist()) == list(range(10)), f"not a permutation: {out.tolist()}"

    return dropout, gumbel, multinomial, randperm


_dropout, _gumbel, _multinomial, _randperm = _checks()


def _floor_div_forward(out, a, b):
    """The forward alone of a program whose a // b needs no gradient (eager runs it: only a
    backward through a // b fails, and nobody asks for one)."""
    assert torch.equal(out[1], a.detach() // b), "a // b differs"


def cases() -> list[Case]:
    """Every probe case, in the order of the report."""
    img = lambda: (rn(1, 2, 5, 6),)  # noqa: E731
    c = [
        Case("cdist", lambda a, b: torch.cdist(a, b), lambda: (rn(2, 5, 3), rn(2, 4, 3)), grad=True),
        Case("bucketize", lambda b, x: torch.bucketize(x, b, right=True), lambda: (torch.tensor([-1.0, 0.0, 0.5, 2.0]), rn(3, 5))),
        Case("searchsorted", lambda s, x: torch.searchsorted(s, x, side="left"),
             lambda: (torch.sort(rn(2, 6)).values, rn(2, 4))),
        Case("histc", lambda x: torch.histc(x, bins=5, min=-2, max=2), lambda: (rn(50),)),
        Case("bincount", lambda i: torch.bincount(i, minlength=7), lambda: (ri(0, 5, 20),), island=True),
        Case("cumsum_dtype", lambda x: torch.cumsum(x, 1, dtype=torch.float64), lambda: (rn(3, 6),), grad=True),
        Case("logcumsumexp", lambda x: torch.logcumsumexp(x, 1), lambda: (rn(3, 6),), grad=True),
        Case("cummax", lambda x: torch.cummax(x, 1), lambda: (rn(3, 6),), grad=True),
        Case("grid_sample", lambda x, g: F.grid_sample(x, g, align_corners=False),
             lambda: (rn(1, 2, 4, 5), torch.rand(1, 3, 3, 2, generator=R) * 2 - 1), grad=True),
        Case("interp_bilinear", lambda x: F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=False), img, grad=True),
        Case("interp_bilinear_ac", lambda x: F.interpolate(x, scale_factor=1.5, mode="bilinear", align_corners=True), img, grad=True),
        Case("interp_bicubic", lambda x: F.interpolate(x, size=(8, 4), mode="bicubic", align_corners=False), img, grad=True),
        Case("interp_bicubic_ac", lambda x: F.interpolate(x, size=(8, 4), mode="bicubic", align_corners=True), img, grad=True),
        Case("interp_antialias", lambda x: F.interpolate(x, size=(3, 3), mode="bilinear", antialias=True), img, grad=True),
        Case("unfold_fold", lambda x: F.fold(F.unfold(x, 2, padding=1, stride=1), (5, 6), 2, padding=1), img, grad=True),
        Case("pixel_shuffle", lambda x: F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2) * F.pixel_shuffle(x, 2).mean(),
             lambda: (rn(1, 8, 3, 3),), grad=True),
        Case("roll_flip_rot90", lambda x: torch.roll(x, (1, -2), (0, 1)) + torch.flip(x, (1,)) + torch.rot90(x, 2, (0, 1)),
             lambda: (rn(4, 4),), grad=True),
        Case("kthvalue", lambda x: torch.kthvalue(x, 3, dim=1), lambda: (rn(3, 7),), grad=True),
        Case("median_dim", lambda x: torch.median(x, dim=1), lambda: (rn(3, 7),), grad=True),
        Case("mode", lambda x: torch.mode(x, dim=1), lambda: (ri(0, 3, 3, 7).float(),)),
        Case("topk", lambda x: torch.topk(x, 3, dim=-1), lambda: (rn(3, 7),), grad=True),
        Case("sort_stable", lambda x: torch.sort(x, dim=-1, stable=True, descending=True),
             lambda: (ri(0, 4, 3, 8).float(),)),
        Case("argsort", lambda x: torch.argsort(x, dim=0), lambda: (rn(6, 3),)),
        Case("einsum", lambda a, b, c: torch.einsum("bij,bjk->bik", a, b) + torch.einsum("ii->i", c).sum()
             + torch.einsum("bij->j", a).sum() + torch.einsum("i,j->ij", c[0], c[1]).sum(),
             lambda: (rn(2, 3, 4), rn(2, 4, 5), rn(3, 3)), grad=True),
        Case("vector_matrix_norm", lambda x: torch.linalg.vector_norm(x, 3, dim=1) + torch.linalg.matrix_norm(x.view(2, 2, 3), "fro").sum()
             + torch.linalg.vector_norm(x, float("inf")), lambda: (rn(4, 3),), grad=True),
        Case("embedding_bag", lambda w, i, o: F.embedding_bag(i, w, o, mode="mean"),
             lambda: (rn(10, 4), ri(0, 10, 8), torch.tensor([0, 3, 3, 5])), grad=True),
        Case("ctc_loss", lambda lp, t: F.ctc_loss(lp.log_softmax(2), t, [6, 5], [3, 2]),
             lambda: (rn(6, 2, 5), ri(1, 5, 2, 3)), grad=True),
        Case("cross_entropy_ls", lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1, ignore_index=2),
             lambda: (rn(6, 5), torch.tensor([0, 2, 4, 1, 2, 3])), grad=True),
        Case("cross_entropy_probs", lambda x, p: F.cross_entropy(x, p.softmax(1)), lambda: (rn(4, 5), rn(4, 5)), grad=True),
        Case("kl_div", lambda x, y: F.kl_div(x.log_softmax(1), y.log_softmax(1), reduction="batchmean", log_target=True)
             + F.kl_div(x.log_softmax(1), y.softmax(1), reduction="sum"), lambda: (rn(3, 4), rn(3, 4)), grad=True),
        Case("pad_modes", lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect").sum() + F.pad(x, (1, 1, 2, 0), mode="replicate")
             + 0 * F.pad(x, (1, 2, 1, 1), mode="circular").sum(), img, grad=True),
        Case("where_scalars", lambda x: torch.where(x > 0, x, 0.0) + torch.where(x < 0, 1.0, -1.0), lambda: (rn(3, 4),), grad=True),
        Case("index_add_fill", lambda x, s: x.index_add(0, torch.tensor([0, 2, 0]), s, alpha=2.0).index_fill(1, torch.tensor([1]), -1.5),
             lambda: (rn(4, 3), rn(3, 3)), grad=True),
    ]
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        c.append(Case(f"scatter_reduce_{reduce}", lambda x, s, reduce=reduce: x.scatter_reduce(
            0, torch.tensor([[0, 1, 0], [2, 0, 1], [0, 0, 2]]), s, reduce, include_self=reduce != "mean"),
            lambda: (rn(3, 3), rn(3, 3)), grad=True))
    c += [
        Case("masked_scatter", lambda x, m, s: x.masked_scatter(m, s),
             lambda: (rn(3, 4), torch.rand(3, 4, generator=R) > 0.5, rn(12)), grad=True),
        Case("masked_select", lambda x: torch.masked_select(x, x > 0) * 2, lambda: (rn(3, 4),), grad=True, island=True),
        Case("nonzero", lambda x: torch.nonzero(x > 0), lambda: (rn(3, 4),), island=True),
        Case("tril_indices", lambda x: x[tuple(torch.tril_indices(4, 4, -1))], lambda: (rn(4, 4),), grad=True),
        Case("diag_family", lambda x: torch.diag(x) .sum() + torch.diagonal(x, 1) .sum() + torch.diag_embed(x[0], 1)
             + torch.diag(x[1]).sum(), lambda: (rn(5, 5),), grad=True),
        Case("block_diag_kron", lambda a, b: torch.block_diag(a, b).sum() + torch.kron(a, b), lambda: (rn(2, 2), rn(2, 3)), grad=True),
        Case("cartesian_meshgrid", lambda a, b: torch.cartesian_prod(a, b).sum(1) + torch.stack(torch.meshgrid(a, b, indexing="xy")).sum(),
             lambda: (rn(3), rn(4)), grad=True),
        Case("stft_istft", lambda x: torch.istft(torch.stft(x, 16, 4, window=torch.hann_window(16), return_complex=True),
                                                 16, 4, window=torch.hann_window(16), length=64), lambda: (rn(2, 64),), grad=True),
        Case("stft_abs", lambda x: torch.stft(x, 8, 2, window=torch.hann_window(8), return_complex=True).abs(),
             lambda: (rn(32),), grad=True),
        Case("fft_family", lambda x: torch.fft.rfft(x).abs() .sum() + torch.fft.irfft(torch.fft.fft(x).real.to(torch.complex64), 16)
             + torch.fft.fftshift(torch.fft.ifft2(x.view(4, 4).to(torch.complex64)).imag).flatten(), lambda: (rn(16),), grad=True),
        Case("polar_complex", lambda r, t: (torch.polar(r.abs(), t) * torch.complex(r, t)).angle() + torch.view_as_real(
            torch.polar(r.abs(), t).conj().resolve_conj()).sum(-1), lambda: (rn(6), rn(6)), grad=True),
        Case("nan_to_num", lambda x: torch.nan_to_num(x / (x - x.round()), nan=0.5, posinf=9.0, neginf=-9.0),
             lambda: (torch.tensor([1.0, 0.2, -3.0, 0.0, 2.5]),)),
        Case("clamp_tensors", lambda x, lo, hi: torch.clamp(x, lo, hi), lambda: (rn(4, 3), rn(4, 3) - 1, rn(3) + 1), grad=True),
        Case("lerp_addcmul", lambda a, b, c: torch.lerp(a, b, c.sigmoid()) + torch.addcmul(a, b, c, value=0.5)
             + torch.addcdiv(a, b, c.exp(), value=-2), lambda: (rn(3, 4), rn(3, 4), rn(3, 4)), grad=True),
        Case("baddbmm", lambda i, a, b: torch.baddbmm(i, a, b, beta=0.5, alpha=2.0), lambda: (rn(2, 3, 5), rn(2, 3, 4), rn(2, 4, 5)), grad=True),
        Case("logit", lambda x: torch.logit(x.sigmoid(), eps=1e-3), lambda: (rn(3, 4) * 4,), grad=True),
        Case("special_a", lambda x: torch.special.erfcx(x) + torch.special.i0(x) + torch.special.ndtr(x)
             + torch.special.log_ndtr(x) + torch.special.sinc(x), lambda: (rn(3, 5),), grad=True),
        Case("special_b", lambda p, x: torch.special.ndtri(p.sigmoid()) + torch.special.xlogy(x, p.abs())
             + torch.special.entr(p.sigmoid()), lambda: (rn(3, 5), rn(3, 5)), grad=True),
        Case("gumbel_softmax", lambda x: F.gumbel_softmax(x, tau=0.5, hard=True), lambda: (rn(4, 6),), random=_gumbel),
        Case("multinomial", lambda p: torch.multinomial(p, 4), lambda: (torch.rand(3, 6, generator=R) * (torch.arange(6) != 2),),
             random=_multinomial),
        Case("randperm", lambda x: torch.randperm(10) + x, lambda: (torch.zeros(10, dtype=torch.int64),), random=_randperm),
        Case("dropout_train", lambda x: F.dropout(x, 0.5, training=True), lambda: (rn(20, 20),), random=_dropout),
        Case("gru", _gru(), lambda: (rn(2, 5, 4),), grad=True),
        Case("lstm_bidir", _lstm(), lambda: (rn(2, 5, 4),), grad=True),
        Case("rnn_relu", _rnn(), lambda: (rn(5, 2, 4),), grad=True),
        Case("mha_masks", _mha(), lambda: (rn(2, 5, 8),), grad=True),
        Case("transformer_encoder", _encoder(), lambda: (rn(2, 5, 8),), grad=True),
        Case("sdpa_causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
             lambda: (rn(1, 2, 5, 4), rn(1, 2, 5, 4), rn(1, 2, 5, 4)), grad=True),
        Case("sdpa_bool_mask", lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
             lambda: (rn(1, 2, 5, 4), rn(1, 2, 6, 4), rn(1, 2, 6, 4), torch.rand(5, 6, generator=R) > 0.3), grad=True),
        Case("norms", lambda x: F.group_norm(x, 2) + F.instance_norm(x) + F.local_response_norm(x, 3),
             lambda: (rn(2, 4, 3, 3),), grad=True),
        Case("normalize_cosine", lambda a, b: F.normalize(a, dim=1) + torch.cosine_similarity(a, b, dim=1)[:, None],
             lambda: (rn(3, 4), rn(3, 4)), grad=True),
        Case("one_hot", lambda i: F.one_hot(i, 6) * 2, lambda: (ri(0, 6, 3, 4),)),
        Case("tensor_unfold", lambda x: x.unfold(1, 3, 2).sum(-1), lambda: (rn(2, 9),), grad=True),
        Case("as_strided", lambda x: torch.as_strided(x, (3, 3), (1, 2), 1) * 2, lambda: (rn(10),), grad=True),
        Case("new_full_like", lambda x: x.new_zeros(3, 2) + x.new_full((3, 2), 2.5) + torch.full_like(x, 7, dtype=torch.int32)
             + x, lambda: (rn(3, 2),), grad=True),
        Case("int_div_rem", lambda a, b: torch.stack([a // b, a % b, torch.div(a, b, rounding_mode="trunc"), torch.fmod(a, b),
                                                      torch.remainder(a, -3)]), lambda: (ri(-9, 9, 10), ri(1, 4, 10) * (1 - 2 * ri(0, 2, 10)))),
        Case("float_div_rem", lambda a, b: torch.stack([a // b, a % b, torch.fmod(a, b)]), lambda: (rn(10) * 5, rn(10))),
        Case("floor_div_needs_grad", lambda a, b: (a * b, a // b), lambda: (rn(6).requires_grad_(), rn(6)),
             random=_floor_div_forward),
        Case("shifts", lambda a, s: torch.stack([a << s, a >> s, torch.bitwise_right_shift(-a, s), a & 5, a ^ -a]),
             lambda: (ri(-100, 100, 8, dtype=torch.int32), ri(0, 5, 8, dtype=torch.int32))),
        Case("bool_reductions", lambda x: torch.stack([(x > 0).all(), (x > 0).any(), (x > 0).all(1).any(), (x > 5).any()]),
             lambda: (rn(3, 4),)),
        Case("isin", lambda a, b: torch.isin(a, b), lambda: (ri(0, 8, 10), ri(0, 8, 4))),
        Case("unique", lambda a: torch.unique(a, return_counts=True), lambda: (ri(0, 5, 12),), island=True),
        Case("inplace_views", _inplace_views, lambda: (rn(4, 5),), grad=True),
        Case("bf16_ops", lambda x, y: (x @ y).softmax(-1) + x.sum(1, keepdim=True), lambda: (rn(3, 4, dtype=torch.bfloat16),
                                                                                           rn(4, 4, dtype=torch.bfloat16)), grad=True),
        Case("f16_ops", lambda x: F.gelu(F.layer_norm(x, (4,))) * x.mean(), lambda: (rn(3, 4, dtype=torch.float16),), grad=True),
        Case("int8_uint8", lambda a, b: torch.stack([(a + a).to(torch.int32), (b * 3).to(torch.int32), (a.to(torch.uint8) + b).to(torch.int32),
                                                     (b >> 1).to(torch.int32), a.abs().to(torch.int32)]),
             lambda: (ri(-128, 127, 8, dtype=torch.int8), ri(0, 255, 8, dtype=torch.uint8))),
    ]
    return c


def _inplace_views(x):
    y = x * 1.0
    y[:, 1:3].mul_(2).add_(1)
    y.diagonal().zero_()
    row = y[2]
    row += y[0]
    y.t()[0].clamp_(-0.5, 0.5)
    return y
