"""dot_general and conv_general_dilated (forward, and the transposes JAX's autodiff emits)."""

from __future__ import annotations

from ....ir.graph import Value
from ....ir.ops.rules import is_symbolic
from ....ir.ops.window import windowed_size
from ...conv_weight_gradient import weight_gradient
from ..context import JaxContext, refuse


def _accumulate_in(ctx: JaxContext, lhs: Value, rhs: Value) -> tuple[Value, Value]:
    """Both operands in the result's dtype (``preferred_element_type``): the IR contracts in one dtype."""
    return ctx.convert(lhs, ctx.out.dtype), ctx.convert(rhs, ctx.out.dtype)


def dot_general(ctx: JaxContext, lhs: Value, rhs: Value):
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = ctx.params["dimension_numbers"]
    lhs, rhs = _accumulate_in(ctx, lhs, rhs)
    return ctx.b.dot_general(lhs, rhs, lhs_contracting_dims=tuple(int(d) for d in lhs_contract),
                             rhs_contracting_dims=tuple(int(d) for d in rhs_contract),
                             lhs_batch_dims=tuple(int(d) for d in lhs_batch),
                             rhs_batch_dims=tuple(int(d) for d in rhs_batch))


def _inverse(permutation) -> tuple[int, ...]:
    inverse = [0] * len(permutation)
    for i, p in enumerate(permutation):
        inverse[p] = i
    return tuple(inverse)


def conv_general_dilated(ctx: JaxContext, lhs: Value, rhs: Value):
    """JAX's layouts (``dimension_numbers``: where batch, feature and spatial dims sit) become the
    IR's [N, C, *spatial] and [O, I, *kernel] by transposes; the result goes back to JAX's layout."""
    p = ctx.params
    padding = p["padding"]
    if isinstance(padding, str):
        refuse(f"padding {padding!r} left unresolved by JAX")
    lhs_spec, rhs_spec, out_spec = p["dimension_numbers"]
    lhs, rhs = _accumulate_in(ctx, lhs, rhs)
    lhs = _transposed(ctx, lhs, tuple(lhs_spec))
    rhs = _transposed(ctx, rhs, tuple(rhs_spec))
    groups = int(p["feature_group_count"])
    if p["batch_group_count"] != 1:
        lhs, groups = _batch_groups_as_feature_groups(ctx, lhs, int(p["batch_group_count"])), int(p["batch_group_count"])
    if is_symbolic(lhs.type.shape[1]) and groups == 1:
        out = _weight_gradient(ctx, lhs, rhs)
        return _transposed(ctx, out, _inverse(tuple(out_spec)))
    out = ctx.b.convolution(lhs, rhs, window_strides=tuple(p["window_strides"]),
                            padding=tuple((int(lo), int(hi)) for lo, hi in padding),
                            lhs_dilation=tuple(p["lhs_dilation"]), rhs_dilation=tuple(p["rhs_dilation"]),
                            feature_group_count=groups)
    return _transposed(ctx, out, _inverse(tuple(out_spec)))


def _batch_groups_as_feature_groups(ctx: JaxContext, lhs: Value, groups: int) -> Value:
    """``batch_group_count=G`` (what JAX's autodiff emits for a grouped convolution's weight
    gradient) is the same sums as ``feature_group_count=G`` once lhs's batch groups move into its
    features: XLA's batch group g is the batch rows [g·N/G, (g+1)·N/G), so lhs [N, C, *sp] becomes
    [N/G, G·C, *sp] with channel g·C + c, and output group g meets feature group g."""
    n, c, *spatial = lhs.type.shape
    if is_symbolic(n) or is_symbolic(c):
        refuse(f"batch_group_count={groups} over the symbolic dims of {lhs.type} (the weight gradient of a "
               "grouped convolution with a symbolic batch); compile it with a static batch")
    b = ctx.b
    split = b.reshape(lhs, shape=(groups, n // groups, c, *spatial))
    moved = b.transpose(split, permutation=(1, 0, *range(2, split.type.rank)))
    return b.reshape(moved, shape=(n // groups, groups * c, *spatial))


def _weight_gradient(ctx: JaxContext, lhs: Value, rhs: Value) -> Value:
    """A convolution contracting over a symbolic feature dim is JAX's weight gradient over a
    symbolic batch: lhs [C, N, *in] is the input with the batch as its features, rhs [O, N, *out]
    the output gradient, the result [C, O, *kernel]. The IR's convolution needs that dim static,
    so it is built by kernel taps (frontend/conv_weight_gradient.py), the forward's strides
    being this convolution's rhs dilation and its dilation this one's window strides."""
    p = ctx.params
    swap = (1, 0, *range(2, lhs.type.rank))
    padding = tuple((int(lo), int(hi)) for lo, hi in p["padding"])
    kernel = tuple(windowed_size(n, k, s, pad, rd, ld) for n, k, s, pad, rd, ld in zip(
        lhs.type.shape[2:], rhs.type.shape[2:], p["window_strides"], padding, p["rhs_dilation"], p["lhs_dilation"]))
    dw = weight_gradient(ctx.b, ctx.b.transpose(lhs, permutation=swap), ctx.b.transpose(rhs, permutation=swap),
                         kernel=kernel, strides=tuple(p["rhs_dilation"]), padding=padding,
                         lhs_dilation=tuple(p["lhs_dilation"]), rhs_dilation=tuple(p["window_strides"]), groups=1)
    return ctx.b.transpose(dw, permutation=swap)  # [C, O, *kernel], the convolution's [N, O, *spatial]


def _transposed(ctx: JaxContext, x: Value, permutation: tuple[int, ...]) -> Value:
    if permutation == tuple(range(len(permutation))):
        return x
    return ctx.b.transpose(x, permutation=permutation)


TABLE = {
    "dot_general": dot_general,
    "conv_general_dilated": conv_general_dilated,
}
