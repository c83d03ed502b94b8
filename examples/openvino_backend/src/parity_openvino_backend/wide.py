"""int64 as pairs of int32: OpenVINO's CPU plugin computes int64 in 32 bits (even a reshape
narrows it: reshape[i64]:split), so an int64 value travels as an int32 tensor with one more
trailing dim of 2, (low word, high word), the memory of the int64 array itself read as int32
(little-endian; no copy). :data:`WIDE_RULES` holds the ops this backend runs on such pairs, each
exact: data movement on the pairs, add/sub/mul with carries, comparisons digit by digit.

Comparisons go by 16-bit digits because the CPU plugin compares int32 in float32 (eq[i32]:specials):
numbers below 2**16 are exact there. The same comparison serves int32 (:func:`compare_int32`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import openvino as ov
import openvino.opset15 as ops

from .compare import greater_equal
from .ov_types import dims, i64s, output_of, ov_type, typed_const
from .shape import RULES as SHAPE


@dataclass(frozen=True)
class _Type:
    """An out type as the shape rules read it, for the int32 pair tensor."""

    shape: tuple
    dtype: object = None


def _i32(value):
    return ops.constant(np.int32(value)).output(0)


def word(pair, k):
    """The low (k=0) or high (k=1) int32 word of a pair tensor."""
    rank = len(dims(pair)) - 1
    return ops.squeeze(ops.slice(pair, i64s([k]), i64s([k + 1]), i64s([1]), i64s([rank])), i64s([rank])).output(0)


def pack(low, high):
    return ops.concat([ops.unsqueeze(low, i64s([-1])), ops.unsqueeze(high, i64s([-1]))], -1).output(0)


def widen(x32):
    """An int32 tensor as int64 pairs (sign-extended)."""
    return pack(x32, ops.bitwise_right_shift(x32, _i32(31)))


def pair_constant(values, shape):
    return ops.constant(np.ascontiguousarray(np.asarray(values, np.int64)).reshape(-1).view(np.int32)
                        .reshape(tuple(shape) + (2,))).output(0)


def _logical_shift16(x):
    return ops.bitwise_and(ops.bitwise_right_shift(x, _i32(16)), _i32(0xFFFF))


def _digits(x32, signed_top):
    """(high 16 bits, low 16 bits) of an int32, each exact in float32; the high one signed if asked."""
    top = ops.bitwise_right_shift(x32, _i32(16)) if signed_top else _logical_shift16(x32)
    return [top, ops.bitwise_and(x32, _i32(0xFFFF))]


def _compare_digits(a_digits, b_digits, op):
    """Lexicographic comparison, most significant digit first: ``op`` in eq ne lt le gt ge."""
    equal, less = None, None
    for a, b in zip(a_digits, b_digits):
        here_less, here_equal = ops.less(a, b), ops.equal(a, b)
        less = here_less if less is None else ops.logical_or(less, ops.logical_and(equal, here_less))
        equal = here_equal if equal is None else ops.logical_and(equal, here_equal)
    return {"eq": lambda: equal, "ne": lambda: ops.logical_not(equal), "lt": lambda: less,
            "le": lambda: ops.logical_or(less, equal), "gt": lambda: ops.logical_not(ops.logical_or(less, equal)),
            "ge": lambda: ops.logical_not(less)}[op]()


def compare_int32(op):
    return lambda attrs, outs, a, b: _compare_digits(_digits(a, True), _digits(b, True), op)


def _compare64(op):
    def rule(attrs, outs, a, b):
        def digits(x):
            return _digits(word(x, 1), True) + _digits(word(x, 0), False)
        return _compare_digits(digits(a), digits(b), op)

    return rule


def _carry(a, b, s):
    """The carry out of the unsigned 32-bit sum s = a + b: bit 31 of (a & b) | ((a | b) & ~s)."""
    bits = ops.bitwise_or(ops.bitwise_and(a, b), ops.bitwise_and(ops.bitwise_or(a, b), ops.bitwise_not(s)))
    return ops.bitwise_and(ops.bitwise_right_shift(bits, _i32(31)), _i32(1))


def _add(attrs, outs, a, b):
    a0, b0 = word(a, 0), word(b, 0)
    low = ops.add(a0, b0)
    return pack(low, ops.add(ops.add(word(a, 1), word(b, 1)), _carry(a0, b0, low)))


def _negate(x):
    return _add({}, [], ops.bitwise_not(x), pair_constant(np.ones(dims(x)[:-1], np.int64), dims(x)[:-1]))


def _mul_high(a, b):
    """The high 32 bits of the unsigned 64-bit product of two int32 words, by 16-bit digits."""
    a1, a0 = _logical_shift16(a), ops.bitwise_and(a, _i32(0xFFFF))
    b1, b0 = _logical_shift16(b), ops.bitwise_and(b, _i32(0xFFFF))
    cross0, cross1 = ops.multiply(a0, b1), ops.multiply(a1, b0)  # each < 2**32: int32 bits, wrapped
    middle = ops.add(ops.add(_logical_shift16(ops.multiply(a0, b0)), ops.bitwise_and(cross0, _i32(0xFFFF))),
                     ops.bitwise_and(cross1, _i32(0xFFFF)))  # < 2**18
    high = ops.add(ops.multiply(a1, b1), ops.add(_logical_shift16(cross0), _logical_shift16(cross1)))
    return ops.add(high, ops.bitwise_right_shift(middle, _i32(16)))


def _mul(attrs, outs, a, b):
    a0, a1, b0, b1 = word(a, 0), word(a, 1), word(b, 0), word(b, 1)
    high = ops.add(ops.add(ops.multiply(a1, b0), ops.multiply(a0, b1)), _mul_high(a0, b0))
    return pack(ops.multiply(a0, b0), high)


def _on_pairs(name, extend):
    """A shape rule run on the pair tensor, with its attributes extended for the trailing dim."""
    def rule(attrs, outs, *xs):
        return SHAPE[name](extend(dict(attrs), len(outs[0].shape)), [_Type(tuple(outs[0].shape) + (2,))], *xs)

    return rule


def _extend(**more):
    def extend(attrs, rank):
        for key, tail in more.items():
            attrs[key] = list(attrs[key]) + [tail(rank)]
        return attrs

    return extend


def _gather(attrs, outs, x, idx):
    if len(dims(idx)) == len(dims(x)):  # the index is a pair tensor too: its low word (out of range is clamped)
        idx = word(idx, 0)
    idx = ops.broadcast(ops.unsqueeze(idx, i64s([-1])), i64s(dims(idx) + [2]))
    return SHAPE["gather"](attrs, outs, x, idx)


def _select(attrs, outs, condition, a, b):
    return ops.select(ops.unsqueeze(condition, i64s([-1])), a, b)


def _convert(attrs, outs, x):
    """int64 from or to another dtype; int64 to int64 as it is."""
    source, target = output_of(x).get_element_type(), outs[0].dtype
    if target.name == "int64":
        if len(dims(x)) == len(outs[0].shape) + 1:
            return ops.convert(x, source)
        if source.is_real():
            return _float_to_pair(ops.convert(x, "f32"))
        return widen(ops.convert(x, "i32"))  # bool, 8/16-bit integers: in range
    low, high = word(x, 0), word(x, 1)
    if target.is_bool:
        return ops.logical_or(ops.not_equal(low, _i32(0)), ops.not_equal(high, _i32(0)))
    if target.is_float:
        unsigned_low = ops.add(ops.convert(low, "f32"),  # low < 0 means low + 2**32 unsigned (exact test: sign bit)
                               ops.select(ops.less(low, _i32(0)), typed_const(2.0**32, _F32), typed_const(0.0, _F32)))
        value = ops.add(ops.multiply(ops.convert(high, "f32"), typed_const(2.0**32, _F32)), unsigned_low)
        # within int32 the low word alone, rounded once (the sum above cancels: -1 gave 0, convert[i64]:to_f32)
        fits = ops.equal(high, ops.bitwise_right_shift(low, _i32(31)))  # exact in float32: one side is 0 or -1
        return ops.convert(ops.select(fits, ops.convert(low, "f32"), value), ov_type(target))
    return ops.convert(low, ov_type(target))  # int32 and narrower: the low word's bits, wrapped


def _float_to_pair(x):
    """A float32, truncated toward zero, as int64 (NaN and out of range are implementation-defined)."""
    t = ops.select(ops.less(x, typed_const(0.0, _F32)), ops.ceiling(x), ops.floor(x))
    small = ops.less(ops.abs(t), typed_const(2.0**31, _F32))
    high = ops.floor(ops.divide(t, typed_const(2.0**32, _F32)))  # exact: a power of two
    rest = ops.subtract(t, ops.multiply(high, typed_const(2.0**32, _F32)))  # in [0, 2**32), a multiple of 2**8
    low = ops.convert(ops.select(greater_equal(rest, typed_const(2.0**31, _F32)),
                                 ops.subtract(rest, typed_const(2.0**32, _F32)), rest), "i32")
    as_small = widen(ops.convert(ops.select(small, t, typed_const(0.0, _F32)), "i32"))
    big = pack(low, ops.convert(ops.clamp(high, -2.0**31, 2.0**31 - 128), "i32"))
    return ops.select(ops.unsqueeze(small, i64s([-1])), as_small, big)


_F32 = ov.Type.f32

WIDE_RULES = {
    "constant": lambda attrs, outs: pair_constant(attrs["value"], outs[0].shape),
    "iota": lambda attrs, outs: pair_constant(np.broadcast_to(np.arange(outs[0].shape[attrs["dimension"]]).reshape(
        [-1 if d == attrs["dimension"] else 1 for d in range(len(outs[0].shape))]), outs[0].shape), outs[0].shape),
    "reshape": _on_pairs("reshape", _extend()),
    "broadcast_in_dim": _on_pairs("broadcast_in_dim", _extend(broadcast_dimensions=lambda rank: rank)),
    "transpose": _on_pairs("transpose", _extend(permutation=lambda rank: rank)),
    "slice": _on_pairs("slice", _extend(start_indices=lambda rank: 0, limit_indices=lambda rank: 2,
                                        strides=lambda rank: 1)),
    "concatenate": _on_pairs("concatenate", _extend()),
    "reverse": _on_pairs("reverse", _extend()),
    "gather": _gather,
    "select": _select,
    "convert": _convert,
    "add": _add,
    "sub": lambda attrs, outs, a, b: _add(attrs, outs, a, _negate(b)),
    "neg": lambda attrs, outs, x: _negate(x),
    "mul": _mul,
    **{op: _compare64(op) for op in ("eq", "ne", "lt", "le", "gt", "ge")},
    **{op: (lambda fn: lambda attrs, outs, a, b: fn(a, b))(fn)
       for op, fn in (("bitwise_and", ops.bitwise_and), ("bitwise_or", ops.bitwise_or),
                      ("bitwise_xor", ops.bitwise_xor))},
    "bitwise_not": lambda attrs, outs, x: ops.bitwise_not(x),
}
