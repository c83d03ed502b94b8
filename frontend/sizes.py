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

import contextlib
import contextvars
import math

import torch

from ..ir.errors import ParityError
from ..ir.types import DimExpr, Symbol


class UntranslatedCase(ParityError):
    """A translation function met a case of its aten op that it does not translate (an
    argument, dtype or size it has no IR form for). :func:`fx_to_ir` reports it to the user
    as :class:`UnsupportedAtenOp` with this message as the reason."""



# Set while parity.compile translates a graph inside Dynamo's compile (a forward or inference
# graph): a guard added to the ShapeEnv there becomes one of the capture's guards.
_GUARDED_BRANCHES: contextvars.ContextVar[bool] = contextvars.ContextVar("parity_guarded_branches", default=False)


@contextlib.contextmanager
def guarded_branches():
    """Inside: a size with ``Max``/``Min`` (IR dims have neither) takes the branch its example
    values take, and a guard on that branch joins the capture's guards, so a later call that
    takes the other branch compiles again. Only where Dynamo installs the guards a compile adds:
    never in ``parity.export`` (nothing would check them) nor for a backward graph (compiled
    after the guards are built).

    Example: MPT slices its ALiBi bias ``[:, max(0, 64 - s):]``, a size ``64 - Max(0, 64 - s)``;
    with the guard ``64 - s >= 0`` it is ``s``, and one capture serves every ``s <= 64``."""
    token = _GUARDED_BRANCHES.set(True)
    try:
        yield
    finally:
        _GUARDED_BRANCHES.reset(token)


def _guarded_branch(expr, shape_env):
    """The argument of ``expr`` (a Max or Min) that its example values pick, with a guard that
    it stays the pick; raises UntranslatedCase where no guard can be installed."""
    import sympy
    from torch.utils._sympy import functions as fns

    # a frozen ShapeEnv (after its guards were built) logs a new guard and drops it: refuse there
    if not _GUARDED_BRANCHES.get() or shape_env is None or shape_env.frozen:
        raise _no_ir_dim(expr)
    args = list(expr.args)
    if not all(shape_env.has_guarding_hint(a) for a in args):  # a data-dependent size: no example to choose by
        raise UntranslatedCase(f"the symbolic size {expr} uses {type(expr).__name__} of a data-dependent size")
    hints = [int(shape_env.guarding_hint_or_throw(a)) for a in args]
    is_max = isinstance(expr, (sympy.Max, fns.Max))
    chosen = args[hints.index(max(hints) if is_max else min(hints))]
    for other in args:
        if other is not chosen:
            keeps = sympy.Ge(chosen, other) if is_max else sympy.Le(chosen, other)
            shape_env.evaluate_expr(keeps)  # true at the example: recorded as a guard
    return chosen


def dim_of(size) -> int | DimExpr:
    """An int, or an IR dim expression for a symbolic size (torch's sympy expression:
    ``s0*4``, ``FloorDiv(s1, 2)``, ``Mod(s0, 3)``; ``Max``/``Min`` under :func:`guarded_branches`)."""
    if isinstance(size, int):
        return size
    if isinstance(size, torch.SymInt):
        expr = size.node.expr
        try:
            return sympy_dim(expr, size.node.shape_env)
        except UntranslatedCase as exc:
            hint = size.node.hint
            raise UntranslatedCase(f"{exc} (mark fewer dims dynamic, or compile with dynamic=False)"
                                   + (f"; its example value is {hint}" if hint is not None else "")) from None
    return int(size)


def sympy_dim(expr, shape_env=None) -> int | DimExpr:
    """torch's sympy size expression as an IR dim: + * // % and integer powers of symbols
    (and, with the ``shape_env`` under :func:`guarded_branches`, the guarded branch of a Max or Min)."""
    import sympy
    from torch.utils._sympy import functions as fns

    if expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        return Symbol(str(expr))
    if isinstance(expr, (sympy.Max, sympy.Min, fns.Max, fns.Min)):  # torch writes its own Max and Min
        return sympy_dim(_guarded_branch(expr, shape_env), shape_env)
    args = [sympy_dim(a, shape_env) for a in expr.args]
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
    raise _no_ir_dim(expr)


def _no_ir_dim(expr) -> UntranslatedCase:
    return UntranslatedCase(f"the symbolic size {expr} uses {type(expr).__name__}, which IR dims do not have "
                            "(they take + - * // %)")


def shape_of(sizes) -> tuple[int | DimExpr, ...]:
    return tuple(dim_of(s) for s in sizes)
