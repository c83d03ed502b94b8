"""The order in which workers take a run's groups: the largest estimated work first.

Workers take the next group as they free up, so the run ends when the last group ends. A run
in the op database's order ended on whichever group came last: in ``parity conform --quick``
that was the random-number ops (Threefry's twenty rounds per draw, 27 s on Inductor alone),
and the other worker sat idle for 20 of those seconds. Taking the largest groups first
(longest processing time first, the classic greedy rule for identical machines) leaves the
small groups to fill in at the end.

The estimate is what a compiler has to lower: each case's graph with every composite
expanded, counted in nodes, plus a fixed :data:`CASE_NODES` a case. A whole-model group (the zoo's, the Hugging Face zoo's) counts
as :data:`MODEL_NODES` per case, more than any op group. Only the order changes: results are
still put back in the serial order, cell for cell.

Example::

    >>> from parity.conformance.opdb import all_cases
    >>> cases = {c.id: c for c in all_cases()}
    >>> case_nodes(cases["neg[f32]:random"]), case_nodes(cases["uniform[u32]:f32_unit"]) > 100
    (1, True)
"""

from __future__ import annotations

from collections.abc import Sequence

from ..ir.passes import decompose
from .case import Case

# A whole-model case (a zoo or Hugging Face row) counted in expanded IR nodes: larger than any
# op group's sum, so those groups start first.
MODEL_NODES = 100_000
MODEL_KINDS = ("zoo", "hf", "hf-anchor")
# What a case costs beyond its nodes (its own kernels, inputs, call and comparison), in nodes: a
# least-squares fit of the quick run's 30 batches, summed over its five targets, gave 0.055 s a
# case and 0.016 s a node (the fit's correlation with the measured times: 0.76; nodes alone: 0.71).
CASE_NODES = 3


def case_nodes(case: Case) -> int:
    """The nodes of ``case``'s graph once every composite is expanded (its inputs drawn, as a
    worker draws them: milliseconds). A case whose graph does not build counts 1: the estimate
    only orders the run, and the worker reports that case's error as its cell."""
    try:
        expanded, _ = decompose(case.graph(case.arrays()), lambda op: False)
    except Exception:  # noqa: BLE001 - any error is the worker's to report, never the scheduler's
        return 1
    return len(expanded.nodes)


def batch_nodes(bundles: Sequence[Sequence[Case]]) -> int:
    """The work in a batch of bundles (one group of a run): the expanded nodes of its cases, plus
    :data:`CASE_NODES` for each case."""
    return sum(case_nodes(c) + CASE_NODES for bundle in bundles for c in bundle)
