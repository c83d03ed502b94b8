"""Contraction aten ops (the IR's ``dot_general`` and ``convolution``): mm, bmm, mv, dot,
addmm, matmul, linear, the grouped matmul of mixture-of-experts layers (``_grouped_mm``),
and convolution, forward and backward, transposed too.

A convolution's backward follows the transposition rules of the forward (as in JAX's
``conv_general_dilated`` transpose), written with IR convolutions.
"""

from __future__ import annotations

from ...ir.dtypes import DType
from ...ir.ops.rules import is_symbolic
from ..context import TranslationContext, unsupported
from ..conv_weight_gradient import weight_gradient

# -- matmuls ------------------------------------------------------------------------------


def _dot(ctx: TranslationContext, a, b, contract, batch=((), ())):
    return ctx.b.dot_general(a, b, lhs_contracting_dims=contract[0], rhs_contracting_dims=contract[1],
                             lhs_batch_dims=batch[0], rhs_batch_dims=batch[1])


def mm(ctx: TranslationContext, a, b):
    return _dot(ctx, a, b, ((1,), (0,)))


def bmm(ctx: TranslationContext, a, b):
    return _dot(ctx, a, b, ((2,), (1,)), ((0,), (0,)))


def mv(ctx: TranslationContext, a, b):
    return _dot(ctx, a, b, ((1,), (0,)))


def dot(ctx: TranslationContext, a, b):
    return _dot(ctx, a, b, ((0,), (0,)))


def addmm(ctx: TranslationContext, bias, a, b, *, beta=1, alpha=1):
    out = ctx.out
    product = mm(ctx, a, b)
    if alpha != 1:
        product = ctx.b.mul(product, ctx.full(alpha, out.dtype, out.shape))
    if beta == 0:
        return product
    bias = ctx.broadcast(ctx.convert(bias, out.dtype), out.shape)
    if beta != 1:
        bias = ctx.b.mul(bias, ctx.full(beta, out.dtype, out.shape))
    return ctx.b.add(bias, product)


def matmul(ctx: TranslationContext, a, b):
    return ctx.b.matmul(a, b)


def linear(ctx: TranslationContext, x, w, bias=None):
    if bias is None:
        bias = ctx.full(0, x.type.dtype, (w.type.shape[0],))
    return ctx.b.linear(x, w, bias)



def grouped_mm(ctx: TranslationContext, a, b, offs=None, bias=None, out_dtype=None):
    """torch's grouped matmul; ``offs`` (int32, cumulative) splits the 2-d operand's grouped dim.

    - a [S, K], b [G, K, N] (MoE experts): row s uses expert g(s) = #{offsets <= s};
    - a [K, S], b [S, N] (its weight gradient): out[g] = a[:, rows of g] @ b[rows of g];
    - a [G, M, K], b [K, N]: column n uses a[g(n)];
    - a [G, M, K], b [G, K, N] (no offs): bmm.

    Rows (columns) past ``offs[-1]`` belong to no group: they are zeros (torch leaves them
    unwritten). Every group's product is computed and the row's own is selected, so a
    NaN in one expert never reaches another's rows (G times the flops of one matmul).

    Example: offs = [2, 5] sends rows 0-1 of a [6, K] to b[0], rows 2-4 to b[1], row 5 to zeros.
    """
    if bias is not None:
        unsupported("_grouped_mm with a bias (torch does not support it either)")
    out = ctx.out
    a, b = ctx.convert(a, out.dtype), ctx.convert(b, out.dtype)
    if a.type.rank == 3 and b.type.rank == 3:
        return bmm(ctx, a, b)
    if offs is None:
        unsupported("_grouped_mm of a 2-d operand needs offs")
    dot = ctx.b.dot_general
    if a.type.rank == 2 and b.type.rank == 3:  # [S, G, N]: every row times every expert
        every = dot(a, b, lhs_contracting_dims=(1,), rhs_contracting_dims=(1,), lhs_batch_dims=(), rhs_batch_dims=())
        return _pick_group(ctx, every, offs, group_axis=1, row_axis=0)
    if a.type.rank == 3:  # [G, M, N]: every expert times every column
        every = dot(a, b, lhs_contracting_dims=(2,), rhs_contracting_dims=(0,), lhs_batch_dims=(), rhs_batch_dims=())
        return _pick_group(ctx, every, offs, group_axis=0, row_axis=2)
    return _grouped_outer(ctx, a, b, offs)


def _group_of(ctx: TranslationContext, offs, n: int):
    """i64[n]: the group of each position, #{offsets <= i} (G for positions past the last offset)."""
    groups = offs.type.shape[0]
    positions = ctx.b.iota(dtype=DType.int64, shape=(n, groups), dimension=0)
    bounds = ctx.b.broadcast_in_dim(ctx.convert(offs, DType.int64), shape=(n, groups), broadcast_dimensions=(1,))
    return ctx.b.reduce_sum(ctx.convert(ctx.b.le(bounds, positions), DType.int64), axes=(1,))


def _pick_group(ctx: TranslationContext, every, offs, group_axis: int, row_axis: int):
    """From per-group results ``every``, each row's own group (zeros past the last offset)."""
    b, shape = ctx.b, every.type.shape
    groups, rows = shape[group_axis], shape[row_axis]
    group = _group_of(ctx, offs, rows)
    picked_shape = tuple(1 if d == group_axis else s for d, s in enumerate(shape))
    out_shape = tuple(s for d, s in enumerate(shape) if d != group_axis)
    clamped = b.min(group, ctx.full(groups - 1, DType.int64, (rows,)))
    index = b.broadcast_in_dim(clamped, shape=picked_shape, broadcast_dimensions=(row_axis,))
    picked = ctx.reshape(b.gather(every, index, axis=group_axis), out_shape)
    kept = b.lt(group, ctx.full(groups, DType.int64, (rows,)))
    out_row_axis = row_axis - (row_axis > group_axis)
    kept = b.broadcast_in_dim(kept, shape=out_shape, broadcast_dimensions=(out_row_axis,))
    return b.select(kept, picked, ctx.full(0, every.type.dtype, out_shape))


def _grouped_outer(ctx: TranslationContext, a, c, offs):
    """a [K, S], c [S, N] -> [G, K, N]: each group's rows of the contraction, the others zeroed in both."""
    b = ctx.b
    (k, s), n, groups = a.type.shape, c.type.shape[1], offs.type.shape[0]
    group = _group_of(ctx, offs, s)
    member = b.eq(b.broadcast_in_dim(group, shape=(groups, s), broadcast_dimensions=(1,)),
                  b.iota(dtype=DType.int64, shape=(groups, s), dimension=0))
    a_g = b.select(b.broadcast_in_dim(member, shape=(groups, k, s), broadcast_dimensions=(0, 2)),
                   b.broadcast_in_dim(a, shape=(groups, k, s), broadcast_dimensions=(1, 2)),
                   ctx.full(0, a.type.dtype, (groups, k, s)))
    c_g = b.select(b.broadcast_in_dim(member, shape=(groups, s, n), broadcast_dimensions=(0, 1)),
                   b.broadcast_in_dim(c, shape=(groups, s, n), broadcast_dimensions=(1, 2)),
                   ctx.full(0, c.type.dtype, (groups, s, n)))
    return bmm(ctx, a_g, c_g)


# -- convolution --------------------------------------------------------------------------


def expand_ints(values, n: int) -> tuple[int, ...]:
    """A per-spatial-dim argument (stride, padding, ...) as ``n`` ints: torch allows one for all."""
    values = (values,) if isinstance(values, int) else tuple(values)
    return values * n if len(values) == 1 else values


def _spatial(x) -> tuple:
    dims = tuple(x.type.shape[2:])
    if not all(isinstance(d, int) for d in dims):
        unsupported("convolution and pooling need static spatial sizes")
    return dims


def _conv(ctx: TranslationContext, x, w, stride, padding, dilation, groups, lhs_dilation=None):
    n = x.type.rank - 2
    return ctx.b.convolution(
        x, w, window_strides=stride, padding=padding, lhs_dilation=lhs_dilation or (1,) * n,
        rhs_dilation=dilation, feature_group_count=groups)


def _add_channel_bias(ctx: TranslationContext, y, bias):
    bias = ctx.convert(bias, y.type.dtype)
    full = ctx.b.broadcast_in_dim(bias, shape=y.type.shape, broadcast_dimensions=(1,))
    return ctx.b.add(y, full)


def _flip_swap(ctx: TranslationContext, w, groups: int):
    """[O, C/G, *k] → [C, O/G, *k] reversed spatially: the kernel of the input gradient."""
    o, cg, *kernel = w.type.shape
    n = len(kernel)
    w = ctx.b.reverse(w, dimensions=tuple(range(2, 2 + n))) if n else w
    w = ctx.reshape(w, (groups, o // groups, cg, *kernel))
    w = ctx.b.transpose(w, permutation=(0, 2, 1, *range(3, 3 + n)))
    return ctx.reshape(w, (groups * cg, o // groups, *kernel))


def conv_input_grad(ctx: TranslationContext, grad, w, in_spatial, stride, padding, dilation, groups):
    """The gradient of a convolution with respect to its input (a dilated transposed conv)."""
    kernel = tuple(w.type.shape[2:])
    out_spatial = tuple(grad.type.shape[2:])
    pads = []
    for size, k, s, p, d, o in zip(in_spatial, kernel, stride, padding, dilation, out_spatial):
        span = d * (k - 1) + 1
        before = span - p - 1
        after = size + span - 1 - ((o - 1) * s + 1) - before
        pads.append((before, after))
    return _conv(ctx, grad, _flip_swap(ctx, w, groups), (1,) * len(kernel), pads, dilation, groups, stride)


def conv_weight_grad(ctx: TranslationContext, x, grad, kernel, stride, padding, dilation, groups):
    """The gradient with respect to the weight: correlate the input with the output gradient."""
    n = x.type.rank - 2
    in_spatial, out_spatial = tuple(x.type.shape[2:]), tuple(grad.type.shape[2:])
    pads = []
    for size, k, s, p, d, o in zip(in_spatial, kernel, stride, padding, dilation, out_spatial):
        span = d * (k - 1) + 1
        pads.append((p, (o - 1) * s + 1 - size + span - p - 1))
    # One grouped conv (not one conv per group: MobileNetV2's backward had 1,832 of them,
    # which XLA:CPU compiles one by one). lhs [C/G, G·N, *in], feature g·N + n holding
    # x[n, g·C/G + c]; rhs [O, N, *out] (output positions as the kernel); out [C/G, O, *k].
    batch, c_in = x.type.shape[:2]
    if is_symbolic(batch):  # a convolution would contract over the symbolic batch: by taps instead
        return weight_gradient(ctx.b, x, grad, kernel=kernel, strides=stride, padding=tuple((p, p) for p in padding),
                               lhs_dilation=(1,) * n, rhs_dilation=dilation, groups=groups)
    per_group = c_in // groups
    lhs = ctx.reshape(x, (batch, groups, per_group, *in_spatial))
    lhs = ctx.b.transpose(lhs, permutation=(2, 1, 0, *range(3, 3 + n)))
    lhs = ctx.reshape(lhs, (per_group, groups * batch, *in_spatial))
    swap = (1, 0, *range(2, 2 + n))
    y = _conv(ctx, lhs, ctx.b.transpose(grad, permutation=swap), dilation, pads, stride, groups)
    return ctx.b.transpose(y, permutation=swap)  # [O, C/G, *kernel]


def convolution(ctx: TranslationContext, x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    n = x.type.rank - 2
    stride, padding, dilation = expand_ints(stride, n), expand_ints(padding, n), expand_ints(dilation, n)
    _spatial(x)
    w = ctx.convert(w, x.type.dtype)
    if transposed:
        # a transposed conv is the input gradient of the conv whose weight is w ([C_in, C_out/G, *k])
        y = conv_input_grad(ctx, x, w, tuple(ctx.out.shape[2:]), stride, padding, dilation, groups)
    else:
        pads = tuple((p, p) for p in padding)
        y = _conv(ctx, x, w, stride, pads, dilation, groups)
    return y if bias is None else _add_channel_bias(ctx, y, bias)


def convolution_backward(ctx: TranslationContext, grad, x, w, bias_sizes, stride, padding, dilation, transposed,
                         output_padding, groups, output_mask):
    n = x.type.rank - 2
    stride, padding, dilation = expand_ints(stride, n), expand_ints(padding, n), expand_ints(dilation, n)
    in_spatial = _spatial(x)
    kernel = tuple(w.type.shape[2:])
    grad_input = grad_weight = grad_bias = None
    if transposed:
        # y = C_w^T(x), the transpose of the plain conv C_w: [N, C_out] -> [N, C_in]. Hence
        # dx = C_w(dy) (output_padding only added rows dx never reads), and dw is C_w's weight
        # gradient with input dy and output gradient x.
        if output_mask[0]:
            grad_input = _conv(ctx, grad, w, stride, tuple((p, p) for p in padding), dilation, groups)
        if output_mask[1]:
            grad_weight = conv_weight_grad(ctx, grad, x, kernel, stride, padding, dilation, groups)
    else:
        if output_mask[0]:
            grad_input = conv_input_grad(ctx, grad, w, in_spatial, stride, padding, dilation, groups)
        if output_mask[1]:
            grad_weight = conv_weight_grad(ctx, x, grad, kernel, stride, padding, dilation, groups)
    if output_mask[2]:
        grad_bias = ctx.b.reduce_sum(grad, axes=(0, *range(2, 2 + n)))
    return grad_input, grad_weight, grad_bias


TABLE = {
    "mm.default": mm, "bmm.default": bmm, "mv.default": mv, "dot.default": dot, "addmm.default": addmm,
    "matmul.default": matmul, "linear.default": linear,
    "_grouped_mm.default": grouped_mm,
    "convolution.default": convolution, "convolution_backward.default": convolution_backward,
}
