"""Errors the frontend raises. Each message answers: what failed, where, why, what to do.

Example::

    >>> from parity.ir.graph import SourceLoc
    >>> err = UnsupportedAtenOp("aten.cummax.default", SourceLoc("model.py", 7, "forward"),
    ...                         "the backend 'xla' does not claim the IR op 'cummax'", backend="xla")
    >>> print(str(err).splitlines()[0])
    aten.cummax.default at model.py:7 in forward cannot run on backend 'xla'
"""

from __future__ import annotations

from collections.abc import Mapping

from ..ir.errors import ParityError, UnsupportedOpError
from ..ir.graph import SourceLoc


class FrontendError(ParityError):
    """Base of the errors raised while capturing or translating torch code."""


class TranslationBug(FrontendError):
    """A translation produced an IR type that differs from what torch computes.

    This is a bug in parity, not in the user's code; the message names the aten op.
    """


class InternalError(FrontendError):
    """Something inside parity failed while compiling a captured graph: a bug to report.

    The message says which graph and backend, the span of the user's code it covers, the
    original error, and what to attach to a bug report.
    """

    def __init__(self, kind: str, backend: str, locs: list, cause: BaseException):
        first, last = (locs[0], locs[-1]) if locs else (None, None)
        span = f" (your code from {first} to {last})" if first else ""
        cause_text = f"{type(cause).__name__}: {cause}".strip().splitlines()
        super().__init__(
            f"parity failed to compile the {kind} graph for backend {backend!r}{span}\n"
            f"  why: an internal error, not a problem in your code: {cause_text[0] if cause_text else ''}\n"
            f"  fix: please report it with the output of parity.explain(fn, *args) and this traceback; "
            f"meanwhile try another backend or run this code without parity.compile")


class UnsupportedAtenOp(FrontendError, UnsupportedOpError):
    """An aten op that cannot run on the chosen backend (strict mode)."""

    def __init__(self, aten_op: str, loc: SourceLoc | None, why: str, *, backend: str | None,
                 alternatives: list[str] | None = None, fix: str | None = None, in_ir: bool = False):
        self.aten_op = aten_op
        self.loc = loc
        self.why = why
        self.backend = backend
        self.alternatives = alternatives
        self.in_ir = in_ir  # the IR itself has no form of it (no backend would run it), not the backend's claims
        where = f" at {loc}" if loc else " (source line unknown)"
        if backend is None:  # parity.capture / parity.export: the whole model must be in the IR
            super().__init__(
                f"{aten_op}{where} cannot be captured into parity's IR\n"
                f"  why: {why}\n"
                f"  fix: capture and export need every op in the IR: rewrite this piece (for a symbolic size, "
                f"export without dynamic_dims); parity.compile(..., strict=False) can run it eagerly instead")
            return
        # Only backends known to run this op are suggested: a missing translation fails on all of them.
        others = f"; or use a backend that runs it: {', '.join(alternatives)}" if alternatives else ""
        fix = fix or (f"pass strict=False to run only this op eagerly in torch (the rest of the graph stays on "
                      f"{backend!r}){others}")
        message = f"{aten_op}{where} cannot run on backend {backend!r}\n  why: {why}\n  fix: {fix}"
        super().__init__(message)

    def under_fullgraph(self) -> UnsupportedAtenOp:
        """This error as ``fullgraph=True`` reports it: the fix cannot be strict=False there."""
        first, why = str(self).splitlines()[:2]
        self.args = (f"{first}\n{why}\n  fix: fullgraph=True runs every op on the backend: rewrite this piece, "
                     f"or drop fullgraph=True and pass strict=False to run only this op eagerly in torch",)
        return self


class FallbackWarning(UserWarning):
    """``strict=False``: aten ops run in eager torch, not on the backend (one warning per call
    that compiled them, listing each op and its line)."""


class AutoFallbackWarning(FallbackWarning):
    """``backend="auto"``: no candidate backend matched eager torch on a graph's first inputs,
    so that graph runs in eager torch (one warning per graph, at the user's line)."""


def auto_fallback_text(kind: str, locs: list, rejected: list[tuple[str, str]]) -> str:
    """The :class:`AutoFallbackWarning` for a ``kind`` graph covering the user's lines ``locs``,
    whose candidates were each rejected for the reason paired with its name (one line each).

    Example::

        >>> print(auto_fallback_text("backward", [], [("xla", "differs from eager torch: 3 of 8 elements off"),
        ...                                          ("onnx", "failed on the first inputs: RuntimeError: ...")]))
        parity: backend='auto' runs the backward graph in eager torch: no candidate backend matched eager torch
          why: xla: differs from eager torch: 3 of 8 elements off
               onnx: failed on the first inputs: RuntimeError: ...
          fix: name a backend to run this graph on it anyway (parity.compile(..., backend='xla')); and please report ...
    """
    first, last = (locs[0], locs[-1]) if locs else (None, None)
    span = "" if first is None else f" at {first}" if first == last else f" (your code from {first} to {last})"
    why = "\n       ".join(f"{name}: {reason}" for name, reason in rejected) or "no candidate could run it"
    example = rejected[0][0] if rejected else "onnx"
    return (f"parity: backend='auto' runs the {kind} graph{span} in eager torch: no candidate backend matched eager "
            f"torch\n  why: {why}\n  fix: name a backend to run this graph on it anyway (parity.compile(..., "
            f"backend={example!r})); and please report it with the output of parity.explain(fn, *args): a conformant "
            f"backend should match eager torch here")


def dtype_not_in_ir(dtype) -> str:
    """Why a value of torch dtype ``dtype`` (complex, float8, quantized) cannot be in the IR."""
    from ..ir.dtypes import DType

    name = str(dtype).removeprefix("torch.")
    return f"parity's IR has no {name} dtype; its dtypes are {', '.join(d.short for d in DType)}"


def warning_text(aten_op: str, loc: SourceLoc | None, why: str, backend: str) -> str:
    """The one-line warning printed when strict=False falls back to eager torch for one op."""
    where = f" at {loc}" if loc else ""
    return f"parity: {aten_op}{where} runs eagerly in torch, not on backend {backend!r} ({why})"


def fallbacks_text(fallbacks: list, backend: str, nodes: Mapping[str, int] | None = None) -> str:
    """The warning for the (aten op, loc, why) of ``fallbacks`` (one per op; ``nodes``: aten
    op → its nodes in eager torch, default 1 each): :func:`warning_text` for one, a line per
    op for several, counted by :func:`eager_count_text` as ``parity.explain`` counts them.

    Example::

        >>> print(fallbacks_text([("aten.tanh.default", None, "no tanh"), ("aten.exp.default", None, "no exp")], "x",
        ...                      {"aten.tanh.default": 2, "aten.exp.default": 1}))
        parity: 2 ops (3 aten nodes) run eagerly in torch, not on backend 'x'
          aten.tanh.default (no tanh)
          aten.exp.default (no exp)
    """
    if len(fallbacks) == 1:
        return warning_text(*fallbacks[0], backend)
    counts = {op: (nodes or {}).get(op, 1) for op, _, _ in fallbacks}
    lines = [f"  {op}{f' at {loc}' if loc else ''} ({why})" for op, loc, why in fallbacks]
    return "\n".join([f"parity: {eager_count_text(counts)} run eagerly in torch, not on backend {backend!r}", *lines])


def eager_count_text(nodes: Mapping[str, int]) -> str:
    """How parity counts what ``strict=False`` runs in eager torch, in its warning and in
    ``parity.explain`` alike: the distinct aten ops, and the aten nodes they are
    (``nodes``: aten op → its nodes in eager torch).

    Example::

        >>> eager_count_text({"aten.tanh.default": 2, "aten.exp.default": 1})
        '2 ops (3 aten nodes)'
    """
    ops, total = len(nodes), sum(nodes.values())
    return f"{ops} op{'' if ops == 1 else 's'} ({total} aten node{'' if total == 1 else 's'})"
