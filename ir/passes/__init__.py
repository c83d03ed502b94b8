"""Graph passes. Every pass is a function ``graph -> (new_graph, changed)``.

A pass never mutates its input: when it changes nothing it returns the same graph
object and ``False``; otherwise a fresh graph (new Values and Nodes) and ``True``.
:data:`PASSES` lists the passes that need no arguments; :func:`decompose` takes the
backend's ``claimed`` predicate. :func:`run_pipeline` runs passes to a fixed point.

Example::

    >>> import functools
    >>> from parity.ir import GraphBuilder, f32
    >>> from parity.ir.passes import PASSES, decompose, run_pipeline
    >>> b = GraphBuilder()
    >>> x = b.input(f32[2])
    >>> _ = b.tanh(x)  # unused
    >>> g, changed = run_pipeline(b.build([b.exp(x)]),
    ...                           [functools.partial(decompose, claimed=lambda op: False), *PASSES.values()])
    >>> changed, g.op_counts()
    (True, {'exp': 1})
"""

from __future__ import annotations

from .cse import cse
from .dce import dce
from .decompose import DecompositionError, decompose
from .fold import FOLD_MAX_ELEMENTS, fold_constants
from .pipeline import Pass, run_pipeline

# name -> pass, in the order a standard pipeline runs them (after decompose).
PASSES: dict[str, Pass] = {
    "fold_constants": fold_constants,
    "cse": cse,
    "dce": dce,
}

__all__ = [
    "FOLD_MAX_ELEMENTS", "PASSES", "DecompositionError", "Pass", "cse", "dce", "decompose",
    "fold_constants", "run_pipeline",
]
