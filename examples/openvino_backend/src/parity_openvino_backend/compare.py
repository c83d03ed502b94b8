"""Float comparisons and classes that are right on every x86 ISA of OpenVINO's CPU plugin.

Its AVX-512 kernels (measured on an AMD EPYC with AVX-512, openvino 2026.4.1) answer ``a > b``
and ``a >= b`` true when either operand is NaN (gt[f32]:specials, ge[f32]:specials; a max
combined with ``>`` then drops NaN: reduce_window[f32]:max_specials, max_pool[f32]:specials), and
``IsFinite`` false for subnormals (is_finite[f32]:specials). Its AVX2 kernels get both right
(the same machine with ``ONEDNN_MAX_CPU_ISA=AVX2``), and Less, LessEqual, IsNaN and IsInf are
right on both. So every rule asks for ``>`` and ``>=`` here, never ``ops.greater``.
"""

from __future__ import annotations

import openvino.opset15 as ops


def greater(a, b):
    """``a > b`` as ``b < a``: false where either is NaN, on both ISAs."""
    return ops.less(b, a)


def greater_equal(a, b):
    """``a >= b`` as ``b <= a``: false where either is NaN, on both ISAs."""
    return ops.less_equal(b, a)


def is_finite(x):
    """Neither NaN nor ±inf: subnormals are finite (the AVX-512 IsFinite says they are not)."""
    return ops.logical_not(ops.logical_or(ops.is_nan(x), ops.is_inf(x)))
