"""Symbolic sizes from torch as IR dims: ``s0*4``, ``FloorDiv(s1, 2)`` → ``s0*4``, ``s1//2``.

torch's ShapeEnv writes a symbolic size as a sympy expression; the IR's dims
(ir/dims.py) take the same + - * // % arithmetic, so :func:`sympy_dim` translates one into
the other term by term, and :func:`dim_of` does it for any size a traced value carries.

Example::

    >>> import sympy
    >>> from torch.utils._sympy.functions import FloorDiv
    >>> s0, s1 = sympy.symbols("s0 s1", integer=True, positive=True)
    >>> sympy_dim(s0 * 4 + FloorDiv(s1, 2))
    s0*4+s1//2
"""

from __future__ import annotations

import math

import torch

from ..ir.errors import ParityError
from ..ir.types import DimExpr, Symbol


class UntranslatedCase(ParityError):
    """A translation function met a case of its aten op that it does not translate (an
    argument, dtype or size it has no IR form for). :func:`fx_to_ir` reports it to the user
    as :class:`UnsupportedAtenOp` with this message as the reason."""



def dim_of(size) -> int | DimExpr:
    """An int, or an IR dim expression for a symbolic size (torch's sympy expression:
    ``s0*4``, ``FloorDiv(s1, 2)``, ``Mod(s0, 3)``)."""
    if isinstance(size, int):
        return size
    if isinstance(size, torch.SymInt):
        expr = size.node.expr
        try:
            return sympy_dim(expr)
        except UntranslatedCase as exc:
            hint = size.node.hint
            raise UntranslatedCase(f"{exc} (mark fewer dims dynamic, or compile with dynamic=False)"
                                   + (f"; its example value is {hint}" if hint is not None else "")) from None
    return int(size)


def sympy_dim(expr) -> int | DimExpr:
    """torch's sympy size expression as an IR dim: + * // % and integer powers of symbols."""
    import sympy
    from torch.utils._sympy import functions as fns

    if expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        return Symbol(str(expr))
    args = [sympy_dim(a) for a in expr.args]
    if isinstance(expr, sympy.Add):
        return sum(args[1:], args[0])
    if isinstance(expr, sympy.Mul):
        return math.prod(args[1:], start=args[0])
    if isinstance(expr, sympy.Pow) and isinstance(args[1], int) and args[1] >= 0:
        return math.prod([args[0]] * args[1], start=1)
    if isinstance(expr, (fns.FloorDiv, fns.CleanDiv)):
        return args[0] // args[1]
    if isinstance(expr, (fns.Mod, fns.PythonMod, sympy.Mod)):
        return args[0] % args[1]
    if isinstance(expr, fns.ModularIndexing):
        return args[0] // args[1] % args[2]
    raise UntranslatedCase(f"the symbolic size {expr} uses {type(expr).__name__}, which IR dims do not have "
                           "(they take + - * // %)")


def shape_of(sizes) -> tuple[int | DimExpr, ...]:
    return tuple(dim_of(s) for s in sizes)
