"""Contractions: ``dot_general`` (batched tensor contraction) and ``convolution``.

``dot_general`` follows StableHLO: the result dims are the batch dims, then lhs's free
dims, then rhs's free dims. ``convolution`` is an N-d cross-correlation like
``torch.nn.functional.conv{1,2,3}d``; ``lhs_dilation`` (zeros inserted between input
elements) together with a flipped kernel gives a transposed convolution. Floats are
computed in float64 and rounded once; integer dot products wrap.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32, evaluate
    >>> b = GraphBuilder()
    >>> a, w = b.input(f32[2, 3]), b.input(f32[3])
    >>> y = b.dot_general(a, w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,),
    ...                   lhs_batch_dims=(), rhs_batch_dims=())
    >>> a_in = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> evaluate(b.build([y]), [a_in, np.ones(3, np.float32)])[0].tolist()
    [3.0, 12.0]
"""

from __future__ import annotations

import math
import string

import numpy as np

from ..dtypes import COMPLEX_DTYPES, FLOAT_DTYPES, DType
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Group, Kind, OpDef
from ..types import TensorType
from .rules import check_axes, check_dtype, is_symbolic
from .window import check_lengths, check_positive, pad_or_crop, strided_windows, windowed_size

_DOT_DTYPES = FLOAT_DTYPES + (DType.int32, DType.int64) + COMPLEX_DTYPES


def _check_same_dtype(op: str, lhs: TensorType, rhs: TensorType) -> None:
    if rhs.dtype != lhs.dtype:
        raise TypeRuleError(op, f"dtype {rhs.dtype.short} differs from lhs's {lhs.dtype.short}; insert a convert", 1)


# -- dot_general ---------------------------------------------------------------------------


def _dot_infer(types, attrs):
    op = "dot_general"
    lhs, rhs = types
    check_dtype(op, lhs, _DOT_DTYPES)
    _check_same_dtype(op, lhs, rhs)
    lc, rc = attrs["lhs_contracting_dims"], attrs["rhs_contracting_dims"]
    lb, rb = attrs["lhs_batch_dims"], attrs["rhs_batch_dims"]
    for side, t, contracting, batch in (("lhs", lhs, lc, lb), ("rhs", rhs, rc, rb)):
        check_axes(op, contracting, t.rank, f"{side}_contracting_dims")
        check_axes(op, batch, t.rank, f"{side}_batch_dims")
        if set(contracting) & set(batch):
            raise TypeRuleError(op, f"dims {sorted(set(contracting) & set(batch))} are also contracting dims",
                                f"{side}_batch_dims")
    for kind, lhs_dims, rhs_dims in (("contracting", lc, rc), ("batch", lb, rb)):
        if len(lhs_dims) != len(rhs_dims):
            raise TypeRuleError(op, f"lists {len(rhs_dims)} dims but lhs_{kind}_dims lists {len(lhs_dims)}",
                                f"rhs_{kind}_dims")
        for i, j in zip(lhs_dims, rhs_dims):
            if lhs.shape[i] != rhs.shape[j]:
                raise TypeRuleError(op, f"rhs dim {j} ({rhs.shape[j]}) does not match lhs dim {i} "
                                        f"({lhs.shape[i]}) of {lhs}: expected {lhs.shape[i]}, got "
                                        f"{rhs.shape[j]}", f"rhs_{kind}_dims")
    shape = ([lhs.shape[i] for i in lb] + [d for i, d in enumerate(lhs.shape) if i not in lc + lb]
             + [d for i, d in enumerate(rhs.shape) if i not in rc + rb])
    return (lhs.with_shape(shape),)


def _size(array: np.ndarray, dims) -> int:
    return math.prod(array.shape[i] for i in dims)


def _dot_ref(ctx, lhs, rhs):
    a = ctx.attrs
    lc, rc, lb, rb = a["lhs_contracting_dims"], a["rhs_contracting_dims"], a["lhs_batch_dims"], a["rhs_batch_dims"]
    lf = [i for i in range(lhs.ndim) if i not in lc + lb]
    rf = [i for i in range(rhs.ndim) if i not in rc + rb]
    dtype = ctx.out_types[0].dtype
    if dtype.is_integer:  # unsigned 64-bit arithmetic wraps by definition; narrowed below
        lhs, rhs = lhs.astype(np.uint64), rhs.astype(np.uint64)
    # [batch, lhs free, contracting] @ [batch, contracting, rhs free]
    batch, depth = _size(lhs, lb), _size(lhs, lc)
    left = lhs.transpose(lb + tuple(lf) + lc).reshape(batch, _size(lhs, lf), depth)
    right = rhs.transpose(rb + rc + tuple(rf)).reshape(batch, depth, _size(rhs, rf))
    with np.errstate(all="ignore"):  # inf * 0 is NaN by IEEE rules
        out = np.matmul(left, right).reshape(ctx.out_types[0].shape)
    return out.view(np.int64).astype(dtype.numpy) if dtype.is_integer else out


# -- convolution ---------------------------------------------------------------------------

_CONV_WINDOW_ATTRS = ("window_strides", "lhs_dilation", "rhs_dilation")


def _conv_infer(types, attrs):
    op = "convolution"
    lhs, rhs = types
    check_dtype(op, lhs, FLOAT_DTYPES)
    _check_same_dtype(op, lhs, rhs)
    if lhs.rank < 3:
        raise TypeRuleError(op, f"lhs must be [N, C, *spatial] with at least one spatial dim, got {lhs}", 0)
    if rhs.rank != lhs.rank:
        raise TypeRuleError(op, f"rhs must be [O, C/groups, *kernel] of lhs's rank {lhs.rank}, got {rhs}", 1)
    spatial = lhs.rank - 2
    check_lengths(op, spatial, {name: attrs[name] for name in _CONV_WINDOW_ATTRS + ("padding",)}, "spatial dim")
    groups = attrs["feature_group_count"]
    check_positive(op, {name: attrs[name] for name in _CONV_WINDOW_ATTRS} | {"feature_group_count": (groups,)})
    if any(is_symbolic(d) for d in lhs.shape[1:]):
        raise TypeRuleError(op, f"channel and spatial dims of lhs must be static, got {lhs}", 0)
    if any(is_symbolic(d) for d in rhs.shape):
        raise TypeRuleError(op, f"every dim of rhs must be static, got {rhs}", 1)
    channels, out_channels = lhs.shape[1], rhs.shape[0]
    if channels % groups or out_channels % groups:
        raise TypeRuleError(op, f"{groups} groups must divide lhs's {channels} input channels and rhs's "
                                f"{out_channels} output channels", "feature_group_count")
    if rhs.shape[1] * groups != channels:
        raise TypeRuleError(op, f"rhs dim 1 is {rhs.shape[1]} but lhs has {channels} channels in {groups} "
                                f"group(s), so it must be {channels // groups}", 1)
    if 0 in rhs.shape[2:]:
        raise TypeRuleError(op, f"kernel dims must be >= 1, got {rhs}", 1)
    out = [windowed_size(n, k, s, p, rd, ld) for n, k, s, p, ld, rd in
           zip(lhs.shape[2:], rhs.shape[2:], attrs["window_strides"], attrs["padding"],
               attrs["lhs_dilation"], attrs["rhs_dilation"])]
    return (lhs.with_shape((lhs.shape[0], out_channels, *out)),)


def _dilate(x: np.ndarray, factors) -> np.ndarray:
    """Insert ``factor - 1`` zeros between neighbours along each spatial axis (axes 2...)."""
    shape = x.shape[:2] + tuple((n - 1) * f + 1 if n else 0 for n, f in zip(x.shape[2:], factors))
    out = np.zeros(shape, x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(None, None, f) for f in factors)] = x
    return out


def _conv_ref(ctx, lhs, rhs):
    a = ctx.attrs
    groups, spatial = a["feature_group_count"], lhs.ndim - 2
    x = pad_or_crop(_dilate(lhs, a["lhs_dilation"]), ((0, 0), (0, 0)) + a["padding"], 0.0)
    # Windows over the spatial axes only ([N, C, *out, 1, 1, *kernel]), channels split by group.
    windows = strided_windows(x, (1, 1) + rhs.shape[2:], (1, 1) + a["window_strides"],
                              (1, 1) + a["rhs_dilation"])
    n, c, o = lhs.shape[0], lhs.shape[1], rhs.shape[0]
    windows = windows.reshape(n, groups, c // groups, *ctx.out_types[0].shape[2:], *rhs.shape[2:])
    kernel = rhs.reshape(groups, o // groups, *rhs.shape[1:])
    # einsum labels: n g c o name batch, group, channel, output channel; then one per spatial dim.
    pos = "".join(ch for ch in string.ascii_lowercase if ch not in "ngco")[:spatial]
    ker = pos.upper()
    with np.errstate(all="ignore"):  # inf * 0 is NaN by IEEE rules
        out = np.einsum(f"ngc{pos}{ker},goc{ker}->ngo{pos}", windows, kernel, optimize=True)
    return out.reshape(ctx.out_types[0].shape)


OPS = (
    OpDef(
        name="dot_general",
        kind=Kind.PRIMITIVE,
        operands=("lhs", "rhs"),
        attrs=(
            AttrSpec("lhs_contracting_dims", AttrKind.INTS, doc="lhs dims summed over"),
            AttrSpec("rhs_contracting_dims", AttrKind.INTS, doc="rhs dims paired with lhs_contracting_dims"),
            AttrSpec("lhs_batch_dims", AttrKind.INTS, doc="lhs dims that index independent products"),
            AttrSpec("rhs_batch_dims", AttrKind.INTS, doc="rhs dims paired with lhs_batch_dims"),
        ),
        infer=_dot_infer,
        dtypes=_DOT_DTYPES,
        accuracy=Accuracy.ACCUMULATION,
        groups=frozenset({Group.CONTRACTION, Group.NO_FUSED_ADD}),
        reference=_dot_ref,
        doc="generalized matrix product -> (batch..., lhs free..., rhs free...); same dtype in and "
            "out; ints wrap",
    ),
    OpDef(
        name="convolution",
        kind=Kind.PRIMITIVE,
        operands=("lhs", "rhs"),
        attrs=(
            AttrSpec("window_strides", AttrKind.INTS, doc="step per spatial dim (>= 1)"),
            AttrSpec("padding", AttrKind.PAIRS, doc="(low, high) zeros per spatial dim; negative crops"),
            AttrSpec("lhs_dilation", AttrKind.INTS, doc="input dilation per spatial dim (>= 1; > 1 "
                                                       "for transposed convolution)"),
            AttrSpec("rhs_dilation", AttrKind.INTS, doc="kernel dilation per spatial dim (>= 1)"),
            AttrSpec("feature_group_count", AttrKind.INT, 1, doc="groups; divides C and O"),
        ),
        infer=_conv_infer,
        dtypes=FLOAT_DTYPES,
        accuracy=Accuracy.ACCUMULATION,
        groups=frozenset({Group.CONTRACTION, Group.NO_FUSED_ADD}),
        reference=_conv_ref,
        doc="N-d cross-correlation lhs [N, C, *spatial] * rhs [O, C/groups, *kernel] -> [N, O, *out]; "
            "out = floor((dilated input + padding - dilated kernel) / stride) + 1, or 0 where the "
            "kernel does not fit",
    ),
)
