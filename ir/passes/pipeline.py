"""Running passes to a fixed point, verifying after each one."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import ParityError, VerifyError
from ..graph import Graph
from ..verifier import verify as verify_graph

Pass = Callable[[Graph], tuple[Graph, bool]]

MAX_ROUNDS = 50


def run_pipeline(graph: Graph, passes: Sequence[Pass], *, verify: bool = True,
                 max_rounds: int = MAX_ROUNDS) -> tuple[Graph, bool]:
    """Run ``passes`` in order, repeatedly, until a whole round changes nothing.

    Returns ``(new graph, changed)`` like a pass. With ``verify`` the input and the
    result of every pass are verified; a failure names the pass that broke the graph.
    Bind extra arguments with ``functools.partial`` (e.g. ``partial(decompose,
    claimed=backend.claims)``).
    """
    if verify:
        _verify(graph, "before the first pass")
    changed_any = False
    for _ in range(max_rounds):
        changed_round = False
        for p in passes:
            graph, changed = p(graph)
            if verify:
                _verify(graph, f"after pass {pass_name(p)}")
            changed_round = changed_round or changed
        if not changed_round:
            return graph, changed_any
        changed_any = True
    names = ", ".join(pass_name(p) for p in passes)
    raise ParityError(f"passes [{names}] still change the graph after {max_rounds} rounds; "
                      "one of them undoes another or reports changed=True without changing anything")


def pass_name(p: Pass) -> str:
    inner = getattr(p, "func", p)  # functools.partial
    return getattr(inner, "__name__", repr(inner))


def _verify(graph: Graph, when: str) -> None:
    try:
        verify_graph(graph)
    except VerifyError as exc:
        raise VerifyError(f"{when}: {exc}") from None
