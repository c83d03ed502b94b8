"""dot_general and convolution, on torch's batched matmul and convolution kernels.

``dot_general`` is brought to ``[batch, free, contracting] @ [batch, contracting, free]``
by transposes and reshapes, as the reference does. One case differs: a product without batch
dims whose left side is one row (a batch-1 ``Linear``, sizes known) is ``(rhs^T @ lhs^T)^T`` on
``mm``. Inductor lowers a CPU ``bmm`` with one row on the left to a multiply and a sum, and
inlines that row's pointwise producer into the sum once per output column (a GELU's erf ran
256 times per element: 14 ms a call instead of 0.3 ms). A plain ``lhs @ rhs`` on ``mm`` would
not do it, but Inductor fuses ``mm`` + a bias ``add`` into ``addmm``, whose bias joins the
accumulation (it differed from the IR's ``round(round(a @ w) + b)`` in a third of the
elements): the transposed result is no ``mm`` to that pattern, so the add stays an add. ``convolution`` with input dilation
(a transposed convolution) dilates the input with zeros first, and negative padding
crops first; torch's convolution then needs only strides, kernel dilation and groups.
float16 and bfloat16 convolutions run in float32 and round once (torch has no float16
convolution on CPU, and its bfloat16 one flushed a 2.3e-38 result to 0); a float32 sum
rounded once is within the IR's accumulation bound.
"""

from __future__ import annotations

import math

import torch

from ...ir.dtypes import DType
from .context import InductorNodeContext, carried
from .shape import pad_zeros


def dot_general(ctx: InductorNodeContext, lhs, rhs):
    a = ctx.attrs
    lc, rc, lb, rb = a["lhs_contracting_dims"], a["rhs_contracting_dims"], a["lhs_batch_dims"], a["rhs_batch_dims"]
    lf = [i for i in range(lhs.dim()) if i not in lc + lb]
    rf = [i for i in range(rhs.dim()) if i not in rc + rb]

    def size(x, dims):
        return math.prod(x.shape[i] for i in dims)

    batch, depth = size(lhs, lb), size(lhs, lc)
    rows = size(lhs, lf)
    if not lb and isinstance(rows, int) and rows == 1:  # one row, known (a SymInt is never compared: no guard)
        column = lhs.permute(*lc, *lf).reshape(depth, 1)
        return torch.mm(rhs.permute(*rf, *rc).reshape(size(rhs, rf), depth), column).t().reshape(ctx.out.shape)
    left = lhs.permute(*lb, *lf, *lc).reshape(batch, rows, depth)
    right = rhs.permute(*rb, *rc, *rf).reshape(batch, depth, size(rhs, rf))
    return torch.bmm(left, right).reshape(ctx.out.shape)


def convolution(ctx: InductorNodeContext, lhs, rhs):
    a = ctx.attrs
    spatial = lhs.dim() - 2
    wide = ctx.dtype in (DType.float16, DType.bfloat16)
    if wide:
        lhs, rhs = lhs.float(), rhs.float()
    low = [0, 0] + [lo for lo, _ in a["padding"]]
    high = [0, 0] + [hi for _, hi in a["padding"]]
    x = pad_zeros(lhs, low, high, [0, 0] + [d - 1 for d in a["lhs_dilation"]])
    out = torch.ops.aten.convolution(x, rhs, None, list(a["window_strides"]), [0] * spatial,
                                     list(a["rhs_dilation"]), False, [0] * spatial, a["feature_group_count"])
    return out.to(carried(ctx.dtype)) if wide else out


RULES = {"dot_general": dot_general, "convolution": convolution}
