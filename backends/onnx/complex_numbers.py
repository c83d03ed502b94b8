"""Complex values in ONNX graphs: a complex tensor is carried as its two float parts.

ONNX has no complex element type that onnxruntime computes with, so a complex tensor of
shape S is a float tensor of shape ``S + [2]`` (real, imaginary) at the model's inputs and
outputs (the executable converts NumPy/torch complex arrays to and from that view without
copying), and inside the graph a pair of float tensors of shape S, :class:`Parts`: most
rules then run the backend's own real rule once per part (shape ops, add, select,
reduce_sum, ...), with nothing to slice apart between nodes.

A complex rule is ``rule(ctx, *operands)``; ``ctx`` carries the node's IR (complex) types
and each complex operand arrives as :class:`Parts`. It returns :class:`Parts` for a
complex result, a name for a real one. The arithmetic that rounds (mul, div, exp, log,
sqrt, complex_abs, angle) is in :mod:`.complex_math`, the transforms in :mod:`.fft`.

Example::

    >>> from parity.ir import c64
    >>> from .emitter import Emitter
    >>> em = Emitter()
    >>> z = split(em, em.input("z", carrier_type(c64[3])))
    >>> [n.op_type for n in em.nodes], str(carrier_type(c64[3]))
    (['Gather', 'Gather'], 'f32[3,2]')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ...ir.dtypes import DType
from ...ir.types import TensorType
from .context import OnnxNodeContext
from .elementwise import RULES as ELEMENTWISE
from .emitter import Emitter
from .legalize import COMPUTE_IN_WIDER
from .reduction import RULES as REDUCTION
from .shape import RULES as SHAPE


class Parts(NamedTuple):
    """A complex value inside the graph: the ONNX names of its real and imaginary parts."""

    re: str
    im: str


def carrier_type(t: TensorType) -> TensorType:
    """The float type that carries complex ``t`` at a model's boundary: shape ``S + [2]``."""
    return TensorType(t.dtype.real_dtype, (*t.shape, 2)) if t.dtype.is_complex else t


def split(em: Emitter, carrier: str) -> Parts:
    """The parts of a carrier (``[..., 2]``)."""
    index = [em.const(np.array(i, np.int64)) for i in (0, 1)]
    return Parts(*(em.op("Gather", carrier, i, axis=-1) for i in index))


def stack(em: Emitter, parts: Parts) -> str:
    """The carrier (``[..., 2]``) of ``parts``."""
    last = em.ints([-1])
    return em.op("Concat", *(em.op("Unsqueeze", p, last) for p in parts), axis=-1)


def part_ctx(ctx: OnnxNodeContext, op_name: str | None = None, **changes) -> OnnxNodeContext:
    """``ctx`` with every complex type replaced by its part type (for a real rule)."""
    def real(types):
        return tuple(t.with_dtype(t.dtype.real_dtype) if t.dtype.is_complex else t for t in types)

    return OnnxNodeContext(changes.get("attrs", ctx.attrs), real(changes.get("in_types", ctx.in_types)),
                           real(changes.get("out_types", ctx.out_types)), em=ctx.em,
                           op_name=op_name or ctx.op_name, loc=ctx.loc)


REAL_RULES = {**ELEMENTWISE, **SHAPE, **REDUCTION}


def _per_part(op: str) -> Callable:
    """The real rule of ``op`` run on the real parts, then on the imaginary parts (operands
    that are not complex, select's mask, go to both): exact for every op that moves values
    or treats the parts independently (add and reduce_sum round each part as the real op)."""
    real_rule = REAL_RULES[op]

    def rule(ctx: OnnxNodeContext, *xs):
        rctx = part_ctx(ctx)
        for t in ctx.in_types:  # a rule widened for its part dtype would need legalization here
            assert not t.dtype.is_complex or (op, t.dtype.real_dtype) not in COMPUTE_IN_WIDER, (op, t.dtype)
        return Parts(*(real_rule(rctx, *(x[k] if isinstance(x, Parts) else x for x in xs)) for k in (0, 1)))

    rule.__name__ = f"per_part_{op}"
    return rule


PER_PART = ("neg", "add", "sub", "select", "reshape", "broadcast_in_dim", "transpose", "slice", "concatenate",
            "pad", "reverse", "reduce_sum")


def _constant(ctx: OnnxNodeContext) -> Parts:
    value = np.asarray(ctx.attrs["value"])
    part = ctx.out.dtype.real_dtype.numpy
    return Parts(ctx.em.const(value.real.astype(part)), ctx.em.const(value.imag.astype(part)))


def _convert(ctx: OnnxNodeContext, x) -> Parts:
    src, dst = ctx.in_types[0].dtype, ctx.attrs["dtype"]
    if not dst.is_complex:  # the type rule refuses it first: kept for a graph built around it
        raise ctx.unsupported(f"convert from {src.short} to {dst.short} drops the imaginary part; take real")
    part = dst.real_dtype
    if src.is_complex:  # each part rounded once (c128 → c64) or moved
        return Parts(*(p if src.real_dtype is part else ctx.cast(p, part) for p in x))
    # A real x → x + 0i: the real part is the real convert (through the dtype ORT computes
    # the source in, which is exact: bfloat16 → float32, int8 → int32, bool → uint8).
    wide = COMPUTE_IN_WIDER.get(("convert", src))
    if wide is not None:
        x, src = ctx.cast(x, wide), wide
    rctx = OnnxNodeContext({"dtype": part}, (ctx.in_types[0].with_dtype(src),), (ctx.out.with_dtype(part),),
                           em=ctx.em, op_name="convert", loc=ctx.loc)
    return Parts(ELEMENTWISE["convert"](rctx, x), ctx.full(0.0, ctx.out.with_dtype(part)))


def _eq(ctx: OnnxNodeContext, x: Parts, y: Parts) -> str:
    """Both parts equal (NaN equals nothing)."""
    return ctx.op("And", ctx.op("Equal", x.re, y.re), ctx.op("Equal", x.im, y.im))


def _ne(ctx: OnnxNodeContext, x: Parts, y: Parts) -> str:
    return ctx.op("Not", _eq(ctx, x, y))


def _complex(ctx: OnnxNodeContext, re: str, im: str) -> Parts:
    return Parts(re, im)


def _real(ctx: OnnxNodeContext, z: Parts) -> str:
    return ctx.op("Identity", z.re)


def _imag(ctx: OnnxNodeContext, z: Parts) -> str:
    return ctx.op("Identity", z.im)


def _conj(ctx: OnnxNodeContext, z: Parts) -> Parts:
    return Parts(z.re, ctx.op("Neg", z.im))  # Neg flips the sign bit: -0.0 and NaN included


def _dot_general(ctx: OnnxNodeContext, x: Parts, y: Parts) -> Parts:
    """(A + Bi)(C + Di) = (AC - BD) + (AD + BC)i: four real dot_generals, each part one more
    rounding (the IR's complex bound counts it: |A_k C_k| + |B_k D_k| <= |a_k||b_k|)."""
    rctx = part_ctx(ctx)
    dot = REDUCTION["dot_general"]
    ac, bd, ad, bc = (dot(rctx, p, q) for p, q in ((x.re, y.re), (x.im, y.im), (x.re, y.im), (x.im, y.re)))
    return Parts(ctx.op("Sub", ac, bd), ctx.op("Add", ad, bc))


RULES: dict[str, Callable] = {
    **{op: _per_part(op) for op in PER_PART},
    "constant": _constant, "convert": _convert, "eq": _eq, "ne": _ne, "dot_general": _dot_general,
    "complex": _complex, "real": _real, "imag": _imag, "conj": _conj,
}


def is_complex_node(in_types, out_types) -> bool:
    return any(t.dtype.is_complex for t in (*in_types, *out_types))


def empty_parts(em: Emitter, t: TensorType) -> Parts:
    """An empty complex result."""
    zeros = em.const(np.zeros(t.shape, t.dtype.real_dtype.numpy))
    return Parts(zeros, zeros)


DTYPES = (DType.complex64, DType.complex128)
