"""Errors the frontend raises. Each message answers: what failed, where, why, what to do.

Example::

    >>> from parity.ir.graph import SourceLoc
    >>> err = UnsupportedAtenOp("aten.cummax.default", SourceLoc("model.py", 7, "forward"),
    ...                         "the backend 'xla' does not claim the IR op 'cummax'", backend="xla")
    >>> print(str(err).splitlines()[0])
    aten.cummax.default at model.py:7 in forward cannot run on backend 'xla'
"""

from __future__ import annotations

from ..ir.errors import ParityError, UnsupportedOpError
from ..ir.graph import SourceLoc


class FrontendError(ParityError):
    """Base of the errors raised while capturing or translating torch code."""


class TranslationBug(FrontendError):
    """A translation produced an IR type that differs from what torch computes.

    This is a bug in parity, not in the user's code; the message names the aten op.
    """


class UnsupportedAtenOp(FrontendError, UnsupportedOpError):
    """An aten op that cannot run on the chosen backend (strict mode)."""

    def __init__(self, aten_op: str, loc: SourceLoc | None, why: str, *, backend: str | None):
        self.aten_op = aten_op
        self.loc = loc
        self.why = why
        self.backend = backend
        where = f" at {loc}" if loc else " (source line unknown)"
        if backend is None:  # parity.capture / parity.export: the whole model must be in the IR
            super().__init__(
                f"{aten_op}{where} cannot be captured into parity's IR\n"
                f"  why: {why}\n"
                f"  fix: capture and export need every op in the IR: rewrite this piece (for a symbolic size, "
                f"export without dynamic_dims); parity.compile(..., strict=False) can run it eagerly instead")
            return
        others = ""
        try:
            from ..backends.registry import backend_names

            rest = [n for n in backend_names() if n != backend]
            if rest:
                others = f" or another backend ({', '.join(rest)})"
        except Exception:  # the registry is optional for the message
            pass
        message = (
            f"{aten_op}{where} cannot run on backend {backend!r}\n"
            f"  why: {why}\n"
            f"  fix: pass strict=False to run this piece eagerly in torch{others}"
        )
        super().__init__(message)


def warning_text(aten_op: str, loc: SourceLoc | None, why: str, backend: str) -> str:
    """The one-line warning printed when strict=False falls back to eager torch."""
    where = f" at {loc}" if loc else ""
    return f"parity: {aten_op}{where} runs eagerly in torch, not on backend {backend!r} ({why})"
