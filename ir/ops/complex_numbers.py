"""Complex numbers: building them from parts, taking them apart, and their polar form.

``complex`` pairs two float tensors (f32 → c64, f64 → c128); ``real``, ``imag`` and
``conj`` take a complex tensor apart again; ``complex_abs`` (the magnitude |z|, computed
without overflow like C's ``hypot``) and ``angle`` (``atan2(imag, real)`` in (-π, π]) are
its polar form. The arithmetic ops that accept complex operands (add, sub, mul, div, neg,
exp, log, sqrt, select, the shape ops, dot_general, ...) list ``COMPLEX_DTYPES`` among their
dtypes; docs/ir.md, "Complex numbers", names them.

The reference computes in complex128 and rounds each part once to the output's part dtype.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, evaluate, f32
    >>> b = GraphBuilder()
    >>> re, im = b.input(f32[2]), b.input(f32[2])
    >>> z = b.complex(re, im)
    >>> g = b.build([b.complex_abs(z), b.imag(b.conj(z))])
    >>> [a.tolist() for a in evaluate(g, [np.array([3.0, 0.0], np.float32), np.array([4.0, -1.0], np.float32)])]
    [[5.0, 1.0], [-4.0, 1.0]]
"""

from __future__ import annotations

import numpy as np

from ..dtypes import COMPLEX_DTYPES, DType
from ..opdef import Accuracy, Kind, OpDef
from .rules import binary, unary
from .unary import elementwise_groups, ieee_reference

_PARTS = (DType.float32, DType.float64)


def _to_complex(t: DType) -> DType:
    return t.complex_dtype


def _to_part(t: DType) -> DType:
    return t.real_dtype


def _complex_ref(re, im):
    out = np.empty(re.shape, np.complex128)
    out.real, out.imag = re, im  # not re + 1j*im: 1j*inf would make the real part NaN
    return out


def _complex_op(name, operands, reference, infer, dtypes, accuracy, doc) -> OpDef:
    return OpDef(
        name=name,
        kind=Kind.PRIMITIVE,
        operands=operands,
        infer=infer,
        dtypes=dtypes,
        accuracy=accuracy,
        groups=elementwise_groups(accuracy),
        reference=ieee_reference(reference),
        doc=doc,
    )


_E, _CR, _T = Accuracy.EXACT, Accuracy.CORRECTLY_ROUNDED, Accuracy.TRANSCENDENTAL

OPS = (
    _complex_op("complex", ("real", "imag"), _complex_ref, binary("complex", _PARTS, _to_complex), _PARTS, _E,
                "real + i·imag: f32 parts give c64, f64 parts give c128; NaN and inf parts stay as they are"),
    _complex_op("real", ("z",), np.real, unary("real", COMPLEX_DTYPES, _to_part), COMPLEX_DTYPES, _E,
                "the real part (c64 → f32, c128 → f64)"),
    _complex_op("imag", ("z",), np.imag, unary("imag", COMPLEX_DTYPES, _to_part), COMPLEX_DTYPES, _E,
                "the imaginary part (c64 → f32, c128 → f64)"),
    _complex_op("conj", ("z",), np.conjugate, unary("conj", COMPLEX_DTYPES), COMPLEX_DTYPES, _E,
                "complex conjugate: the imaginary part negated (its -0.0 included)"),
    _complex_op("complex_abs", ("z",), np.abs, unary("complex_abs", COMPLEX_DTYPES, _to_part), COMPLEX_DTYPES,
                _T, "|z| = hypot(real, imag) without overflow; inf if either part is ±inf, even with a NaN "
                "(the transcendental class, as libm's hypot: a scaled square root is not correctly rounded)"),
    _complex_op("angle", ("z",), np.angle, unary("angle", COMPLEX_DTYPES, _to_part), COMPLEX_DTYPES, _T,
                "the argument atan2(imag, real) in [-π, π]; angle(-1 - 0i) = -π"),
)
