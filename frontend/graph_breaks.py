"""Graph breaks under ``strict=True``: Dynamo ran part of the function in eager torch.

``strict=True`` promises that every op parity captures runs on the chosen backend. Dynamo
may still split a function (a data-dependent shape such as ``nonzero``, an unsupported
Python construct) and run the code between its graphs in eager torch, which no
translation error reports. :func:`watch_breaks` wraps parity's Dynamo backend: each graph
that ends at a break carries Dynamo's reason and the user's stack, and in strict mode the
first compile of each break warns once (:class:`GraphBreakWarning`) with what failed,
where, why and what to do. ``parity.explain`` lists every break without compiling.

Example::

    >>> reason = "Dynamic shape operator\\n  Explanation: Operator `aten.nonzero.default`'s output shape depends"
    >>> short_reason(reason)
    "Dynamic shape operator: Operator `aten.nonzero.default`'s output shape depends"
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from ..ir.graph import SourceLoc


class GraphBreakWarning(UserWarning):
    """Under ``strict=True``, part of a compiled function runs in eager torch (a Dynamo graph break)."""


def short_reason(reason: str) -> str:
    """Dynamo's reason without its hints: the headline and its 'Explanation:' line."""
    lines = [line.strip() for line in (reason or "").splitlines() if line.strip()]
    if not lines:
        return ""
    explanation = [line[len("Explanation:"):].strip() for line in lines if line.startswith("Explanation:")]
    return lines[0] + (f": {explanation[0]}" if explanation else "")


def user_loc(stack) -> SourceLoc | None:
    """The last frame of Dynamo's user stack (a list of FrameSummary)."""
    if not stack:
        return None
    frame = stack[-1]
    return SourceLoc(frame.filename, frame.lineno, frame.name)


def watch_breaks(backend: Callable, strict: bool, backend_name: str) -> Callable:
    """``backend`` (a Dynamo backend), warning under ``strict`` for each graph that ends at a
    graph break, once per break location."""
    if not strict:
        return backend
    seen: set = set()

    def watched(gm, example_inputs):
        reason = getattr(gm, "compile_subgraph_reason", None)
        if reason is not None and getattr(reason, "graph_break", False):
            loc = user_loc(getattr(reason, "user_stack", None))
            key = (str(loc), short_reason(reason.reason))
            if key not in seen:
                seen.add(key)
                warnings.warn(break_message(short_reason(reason.reason), loc, backend_name), GraphBreakWarning,
                              stacklevel=2)
        return backend(gm, example_inputs)

    return watched


def break_message(reason: str, loc: SourceLoc | None, backend_name: str) -> str:
    where = f"at {loc}" if loc else "(Dynamo names no line)"
    return (f"parity.compile(strict=True): Dynamo split the function {where}; the code there runs in eager "
            f"torch, not on {backend_name!r}\n  why: {reason}\n  fix: rewrite that code without it (e.g. "
            "static shapes instead of a data-dependent one), or pass strict=False to accept eager pieces; "
            "parity.explain(fn, *args) lists every break")
