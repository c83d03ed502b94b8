"""Conversion rules: ``convert`` rounded once (XLA rounds some conversions twice), and ``bitcast_convert``.

Example::

    >>> import numpy as np
    >>> from parity.ir import i64
    >>> from parity.ir.dtypes import DType
    >>> from .context import XlaNodeContext
    >>> ctx = XlaNodeContext({"dtype": DType.bool}, (i64[2],), ())
    >>> np.asarray(RULES["convert"](ctx, np.array([0, 7]))).tolist()
    [False, True]
"""

from __future__ import annotations

import numpy as np
from jax import lax

from ...ir.dtypes import DType
from .context import Rule, np_dtype

_F32_BITS = np.dtype(np.uint32)


def _to_odd_f32(x):
    """float64 → float32 rounded to odd, so that a second rounding to f16/bf16 is correct."""
    near = lax.convert_element_type(x, np.float32)
    back = lax.convert_element_type(near, np.float64)
    inexact = lax.bitwise_and(lax.ne(back, x), lax.eq(x, x))
    bits = lax.bitcast_convert_type(near, _F32_BITS)
    overshot = lax.bitwise_and(inexact, lax.gt(lax.abs(back), lax.abs(x)))
    bits = lax.select(overshot, lax.sub(bits, lax.full_like(bits, 1)), bits)  # one step toward zero
    bits = lax.select(inexact, lax.bitwise_or(bits, lax.full_like(bits, 1)), bits)
    return lax.bitcast_convert_type(bits, np.float32)


def _int64_to_odd_f64(x):
    """int64 → float64 rounded to odd: exact halves summed, TwoSum gives the sign of the error."""
    mask = lax.full_like(x, 0xFFFFFFFF)
    high = lax.convert_element_type(lax.bitwise_and(x, lax.bitwise_not(mask)), np.float64)
    low = lax.convert_element_type(lax.bitwise_and(x, mask), np.float64)
    total = lax.add(high, low)
    low_part = lax.sub(total, high)
    error = lax.add(lax.sub(high, lax.sub(total, low_part)), lax.sub(low, low_part))
    bits = lax.bitcast_convert_type(total, np.uint64)
    inexact = lax.ne(error, lax.full_like(error, 0))
    overshot = lax.bitwise_and(inexact, lax.ne(lax.sign(error), lax.sign(total)))
    bits = lax.select(overshot, lax.sub(bits, lax.full_like(bits, 1)), bits)
    bits = lax.select(inexact, lax.bitwise_or(bits, lax.full_like(bits, 1)), bits)
    return lax.bitcast_convert_type(bits, np.float64)


_NARROW = (DType.float16, DType.bfloat16)


def _convert(ctx, x):
    src, dst = ctx.in_types[0].dtype, ctx.attrs["dtype"]
    if dst.is_bool:
        return lax.ne(x, lax.full_like(x, 0))  # NaN != 0: true
    if dst in _NARROW and (src is DType.float64 or src in (DType.int32, DType.int64, DType.uint32)):
        # XLA rounds these through float32 (twice); round to odd first so the result is
        # rounded once, as the IR says.
        wide = _int64_to_odd_f64(x) if src is DType.int64 else lax.convert_element_type(x, np.float64)
        x = _to_odd_f32(wide)
    elif dst is DType.float32 and src is DType.int64:
        pass  # direct and correctly rounded
    return lax.convert_element_type(x, np_dtype(dst))


def _bitcast(ctx, x):
    return lax.bitcast_convert_type(x, np_dtype(ctx.attrs["dtype"]))


RULES: dict[str, Rule] = {"convert": _convert, "bitcast_convert": _bitcast}
