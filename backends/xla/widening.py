"""Ops XLA computes less accurately than the IR asks in their own dtype: computed wider.

:data:`WIDER_FOR_ACCURACY` maps an op name to {dtype: the wider NumPy dtype to compute
in}; the driver wraps those ops' rules with :func:`widened`, which converts the operands
of the node's dtype up, runs the rule there and rounds the result once. (ONNX's
``legalize.COMPUTE_IN_WIDER`` is another matter: dtypes onnxruntime has no kernel for.)

Example::

    >>> from parity.ir.dtypes import DType
    >>> sinh = WIDER_FOR_ACCURACY["sinh"]
    >>> sinh[DType.float32], DType.float64 in sinh
    (<class 'numpy.float64'>, False)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from jax import lax

from ...ir.dtypes import DType
from ...ir.opdef import Group
from ...ir.ops import ops_in_group, transcendental
from .context import Rule, np_dtype

# Computed in a wider type and rounded once (docs/ir.md: "floats are computed in float64
# and rounded once"). XLA expands many f16/bf16 functions in the narrow type itself
# (measured: acosh bf16 1.6 ulp, exp2 f16 13.7 ulp); f32 sinh/cosh lose 24 ulp near
# overflow, expm1 4.7 ulp, atan 5.3 ulp near 2**-10 and exp2 64 ulp (exp(x ln 2)): all
# fixed by one more width.
HALF_IN_F32 = {DType.float16: np.float32, DType.bfloat16: np.float32}
_FLOATS_UP_TO_F32 = {**HALF_IN_F32, DType.float32: np.float64}
_PRODUCTS = {DType.float16: np.float64, DType.bfloat16: np.float64, DType.float32: np.float64}
WIDER_FOR_ACCURACY: dict[str, Mapping[DType, Any]] = {
    **{name: HALF_IN_F32 for name in transcendental()},
    **{name: _FLOATS_UP_TO_F32 for name in ("sinh", "cosh", "expm1", "exp2", "atan")},
    # Products in the input type overflow (or reach inf · 0) in XLA's tree order where the
    # exact product is finite: f16/bf16/f32 full-range products measured inf and NaN. All
    # three go to float64: float32 has no more range than bfloat16, so a bf16 running
    # product computed in f32 underflowed to 0 and stayed there (cumprod bf16 full_range
    # returned 0.0 where the product was 0.407, 1.77e9, 8.7e28).
    **{name: _PRODUCTS for name in ops_in_group(Group.MULTIPLICATIVE)},
    # Sums of float16/bfloat16 accumulate in float32 (the spec sums in f64 and rounds once):
    # lax.reduce/cumsum/scatter-add add in the input type (reduce_sum f16 of 7 terms was
    # 4 ulp off, bf16 under cancellation 0.0117 for 0.0039, cumsum f16 96 for 101.4).
    **{name: HALF_IN_F32 for name in ("reduce_sum", "cumsum", "scatter")},
}


def widened(name: str, rule: Rule) -> Rule:
    """``rule`` computed in the wider dtype WIDER_FOR_ACCURACY[name] gives, then rounded once."""
    wider = WIDER_FOR_ACCURACY[name]

    def widened(ctx, *args):
        dtype = ctx.in_types[0].dtype
        if dtype not in wider:
            return rule(ctx, *args)
        # Only operands of the node's dtype: index operands (scatter's) keep theirs.
        wide = [lax.convert_element_type(a, wider[dtype]) if a.dtype == np_dtype(dtype) else a for a in args]
        return lax.convert_element_type(rule(ctx, *wide), np_dtype(dtype))

    return widened
