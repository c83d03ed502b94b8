"""What a symbolic graph relies on about its sizes, checked when the sizes are known.

A type rule that cannot decide a fact about dimension expressions (``B*4 == N*2`` for
a reshape, ``B`` being 1 or ``S`` for a broadcast) does not guess: it calls
:func:`require`, and the fact becomes a :class:`Constraint` of the graph. A graph also
carries the facts its producer assumed (``graph.assumptions``: e.g. torch's guards, a
user's ``S % 8 == 0``). ``parity.ir.shapes.graph_constraints`` lists both;
``ShapeBindings`` checks them once the inputs bind every symbol, so a violation is a
clear error, never a wrong result.

Example::

    >>> from parity.ir import Symbol
    >>> N = Symbol("N")
    >>> Constraint("divisible", N, 3, "reshape").violation({"N": 7})
    'reshape: N must be divisible by 3, but N = 7'
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from .dims import Dim, DimExpr, evaluate, free_symbols

# kind -> (holds(lhs, rhs), how the fact reads)
_KINDS = {
    "==": (lambda a, b: a == b, "{lhs} must equal {rhs}"),
    ">=": (lambda a, b: a >= b, "{lhs} must be >= {rhs}"),
    "divisible": (lambda a, b: b != 0 and a % b == 0, "{lhs} must be divisible by {rhs}"),
    "broadcast": (lambda a, b: a in (1, b), "{lhs} must be 1 or {rhs} (broadcasting)"),
}


@dataclass(frozen=True)
class Constraint:
    """``lhs KIND rhs`` for every run: kind is ``==``, ``>=``, ``divisible`` or ``broadcast``.

    ``origin`` says who relies on it (``"reshape at model.py:12"``).
    """

    kind: str
    lhs: Dim
    rhs: Dim
    origin: str = ""

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise ValueError(f"constraint kind {self.kind!r} is not one of {', '.join(_KINDS)}")
        if self.kind == "==" and isinstance(self.lhs, int) and not isinstance(self.rhs, int):
            lhs, rhs = self.rhs, self.lhs  # the expression first: "S must equal 2"
            object.__setattr__(self, "lhs", lhs)
            object.__setattr__(self, "rhs", rhs)
        if self.kind == "==":
            # lhs - rhs == k*(x % c) is the fact "x is divisible by c": say it that way.
            divisor = _as_divisibility(self.lhs - self.rhs)
            if divisor is not None:
                object.__setattr__(self, "kind", "divisible")
                object.__setattr__(self, "lhs", divisor[0])
                object.__setattr__(self, "rhs", divisor[1])

    @property
    def fact(self) -> str:
        if self.kind == ">=" and isinstance(self.lhs, int) and not isinstance(self.rhs, int):
            return f"{self.rhs} must be <= {self.lhs}"  # an upper bound reads bound last
        return _KINDS[self.kind][1].format(lhs=self.lhs, rhs=self.rhs)

    def __str__(self) -> str:
        return f"{self.fact} ({self.origin})" if self.origin else self.fact

    @property
    def symbols(self) -> frozenset[str]:
        return free_symbols(self.lhs) | free_symbols(self.rhs)

    def decided(self) -> bool | None:
        """True / False when it holds or fails for every size, None when it depends on them."""
        if isinstance(self.lhs, int) and isinstance(self.rhs, int):
            return bool(_KINDS[self.kind][0](self.lhs, self.rhs))
        if self.kind in ("==", "broadcast") and self.lhs == self.rhs or self.kind == "broadcast" and self.lhs == 1:
            return True
        if self.kind == ">=" and nonnegative(self.lhs - self.rhs):
            return True
        return None

    def violation(self, sizes: Mapping[str, int]) -> str | None:
        """None when the constraint holds at ``sizes``; else the message that says why not."""
        lhs, rhs = evaluate(self.lhs, sizes), evaluate(self.rhs, sizes)
        if _KINDS[self.kind][0](lhs, rhs):
            return None
        given = ", ".join(f"{name} = {sizes[name]}" for name in sorted(self.symbols))
        values = [f"{d} = {v}" for d, v in ((self.lhs, lhs), (self.rhs, rhs))
                  if isinstance(d, DimExpr) and str(d) not in given]
        where = f"{self.origin}: " if self.origin else ""
        return f"{where}{self.fact}, but {'; '.join([given] + values)}"

    def to_text(self) -> str:
        """The text-format line body: ``B*4 == N*2``, ``divisible(N, 3)``."""
        if self.kind in ("divisible", "broadcast"):
            return f"{self.kind}({self.lhs}, {self.rhs})"
        return f"{self.lhs} {self.kind} {self.rhs}"


def _as_divisibility(diff: Dim):
    if not isinstance(diff, DimExpr) or len(diff._terms) != 1:
        return None
    mono, _ = diff._terms[0]
    if len(mono) == 1 and mono[0][1] == 1 and mono[0][0][0] == "mod":
        _, x, c = mono[0][0]
        return x, c
    return None


# -- recording -------------------------------------------------------------------------------

_COLLECTOR: contextvars.ContextVar[list | None] = contextvars.ContextVar("parity_constraints", default=None)


def require(kind: str, lhs: Dim, rhs: Dim) -> None:
    """Called by a type rule for a fact it relies on but cannot decide. Outside
    :func:`collecting` (building a graph) it does nothing: ``shapes.graph_constraints``
    runs the type rules again to list the facts."""
    sink = _COLLECTOR.get()
    if sink is not None:
        sink.append(Constraint(kind, lhs, rhs))


@contextlib.contextmanager
def collecting() -> Iterator[list[Constraint]]:
    """The constraints that type rules :func:`require` inside the block."""
    sink: list[Constraint] = []
    token = _COLLECTOR.set(sink)
    try:
        yield sink
    finally:
        _COLLECTOR.reset(token)


def nonnegative(dim: Dim) -> bool:
    """Provably >= 0 for all sizes >= 0 of its symbols (False: negative or unknown).

    Quotients are first multiplied away (``2*(N - N//2)`` is ``N + N%2``, ir/dims.py's
    normal form); a remainder ``-k*(x%c)`` is then bounded by ``-k*(c-1)`` or by
    ``-k*x``; what is left must have no negative term.
    """
    if isinstance(dim, int):
        return dim >= 0
    for mono, _ in dim._terms:
        for atom, _ in mono:
            if atom[0] == "floordiv" and isinstance(atom[2], int) and atom[2] > 0:
                dim = dim * atom[2]
    if isinstance(dim, int):
        return dim >= 0
    for mono, coeff in dim._terms:
        if coeff < 0 and len(mono) == 1 and mono[0][1] == 1 and mono[0][0][0] == "mod" \
                and _nonnegative_atom(mono[0][0]):
            _, x, c = mono[0][0]
            rest = dim - coeff * (x % c)
            return nonnegative(rest + coeff * (c - 1)) or nonnegative(rest + coeff * x)
    return all(coeff > 0 and all(_nonnegative_atom(atom) for atom, _ in mono) if mono else coeff >= 0
               for mono, coeff in dim._terms)


def _nonnegative_atom(atom) -> bool:
    return atom[0] == "sym" or isinstance(atom[2], int) and atom[2] > 0 and nonnegative(atom[1])
