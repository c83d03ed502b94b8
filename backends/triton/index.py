"""Index arithmetic for kernel bodies: where a value is read, and row-major offsets.

An :class:`Index` holds one Triton index expression per dimension of the value read;
shape and indexing ops (index_rules.py) only rewrite it.

Example::

    >>> linearize(("i", "j"), (3, 4)), strides((2, 3, 4))
    ('i * 4 + j', [12, 4, 1])
    >>> fold("(4 - 1)"), static_int("3"), static_int("x0")
    ('3', 3, None)

Dimensions may be symbolic (ir/dims.py); in kernel text a symbol ``B`` is the kernel
argument ``size_B`` (:func:`dim_text`), so one kernel serves every size::

    >>> from parity.ir import Symbol
    >>> linearize(("i", "j"), (Symbol("B"), Symbol("S") * 4)), dim_text(Symbol("S") // 2)
    ('i * (size_S*4) + j', '(size_S//2)')
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...ir.dims import DimExpr, Symbol, free_symbols, substitute

if TYPE_CHECKING:
    from .writer import KernelWriter

# A symbolic dimension's symbol B is the kernel (and host) variable size_B: no name the
# writer makes starts with it (fresh names are a short prefix and a number).
SIZE_PREFIX = "size_"
_SIZE_NAME = re.compile(rf"\b{SIZE_PREFIX}[A-Za-z0-9_]+")


def dim_text(n) -> str:
    """A dimension as a Triton/Python expression: an int as itself, an expression over
    ``size_*`` variables in parentheses (unless it is one name)."""
    if not isinstance(n, DimExpr):
        return str(n)
    text = str(substitute(n, {s: Symbol(SIZE_PREFIX + s) for s in free_symbols(n)}))
    return text if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text) else f"({text})"


def size_names(text: str) -> list[str]:
    """The ``size_*`` variables ``text`` reads, sorted."""
    return sorted(set(_SIZE_NAME.findall(text)))


@dataclass(frozen=True)
class Index:
    """Where a value is read: one expression per dim, the row-major flat offset if known,
    and the lanes that hold real data (``valid``; None: every lane of the domain)."""

    dims: tuple[str, ...]
    flat: str | None = None
    valid: str | None = None


def strides(shape: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def linearize(dims: Sequence[str], shape: Sequence[int]) -> str:
    terms = []
    for d, n, s in zip(dims, shape, strides(shape)):
        if n == 1 or d == "0":
            continue
        terms.append(d if s == 1 else f"{d} * {dim_text(s)}")
    return " + ".join(terms) if terms else "0"


def delinearize(w: KernelWriter, flat: str, shape: Sequence[int], prefix: str = "d") -> tuple[str, ...]:
    """Per-dim index variables of a row-major ``flat`` offset into ``shape``."""
    dims = []
    first = True
    for n, s in zip(shape, strides(shape)):
        if n == 1:
            dims.append("0")
            continue
        expr = flat if s == 1 else f"({flat} // {dim_text(s)})"
        if not first:
            expr = f"{expr} % {dim_text(n)}"
        first = False
        dims.append(w.let(expr, prefix))
    return tuple(dims)


def static_int(expr: str) -> int | None:
    """The value of an index expression that is a literal integer, else None."""
    return int(expr) if re.fullmatch(r"-?\d+", expr) else None


_LITERAL = re.compile(r"[-+*/%() \d]+")


def fold(expr: str) -> str:
    """An index expression without variables as its integer literal (``(4 - 1)`` → ``3``):
    Triton would see a Python int, not a tensor, and index rules test literals statically."""
    if static_int(expr) is None and _LITERAL.fullmatch(expr):
        return str(eval(expr))  # noqa: S307 - digits and arithmetic only (checked above)
    return expr
