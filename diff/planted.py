"""Planting one fault in one node, to measure (and test) how well ``parity diff`` finds it.

Four fault classes, as mutation testing defines them (:mod:`parity.conformance.mutants`),
each with the rule saying where it breaks the contract:

- ``few_ulp``: every element 8 ULP away from zero, on ops with a ULP bound (1 ULP for
  correctly rounded ops, 4 for transcendental ones);
- ``dropped_term``: the largest term of a sum, dot or max left out (mutants' own);
- ``flushed_value``: the smallest nonzero element returned as ±0 (a flush that hits a
  value it should not), on ops with a ULP or bit-exact bound;
- ``wrong_index``: every index one too high along the last axis (mutants' ``off_by_one``),
  on indexing and shape ops.

:func:`planted_runner` runs every node on the real backend except the one node, which
runs on a :class:`~parity.conformance.mutants.Planted` copy of it.

Example::

    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder(); x = b.input(f32[4]); g = b.build([b.exp(x)])
    >>> applies(FAULT_CLASSES["few_ulp"], g.nodes[0]), applies(FAULT_CLASSES["wrong_index"], g.nodes[0])
    (True, False)
"""

from __future__ import annotations

import numpy as np

from ..conformance.mutants import FAULTS, Planted
from ..conformance.mutants.faults import FLOAT, Facts, Fault, Rule, step_ulps
from ..ir.graph import Node
from ..ir.ops.conversion import round_float
from .execute import NodeRunner
from .measure import dtype_of


def _flush_smallest(a: np.ndarray, site) -> np.ndarray | None:
    if not site.dtype.is_float or not a.size:
        return None
    wide = a.astype(np.float64)
    magnitude = np.where((wide != 0) & np.isfinite(wide), np.abs(wide), np.inf)
    i = int(np.argmin(magnitude))
    if not np.isfinite(magnitude.flat[i]):
        return None
    flushed = wide.copy()
    flushed.flat[i] = np.copysign(0.0, flushed.flat[i])
    return round_float(flushed, site.dtype)


_FLOATS = frozenset({FLOAT})

#: fault class → the fault planted (the mutants' Fault objects, or ones built the same way)
FAULT_CLASSES: dict[str, Fault] = {
    "few_ulp": Fault("few_ulp", "every element 8 ULP away from zero", lambda a, site: step_ulps(a, site.dtype, 8),
                     Rule(kinds=_FLOATS, bounds=frozenset({"ulp"}))),
    "dropped_term": FAULTS["dropped_term"],
    "flushed_value": Fault("flushed_value", "the smallest nonzero element returned as ±0", _flush_smallest,
                           Rule(kinds=_FLOATS, bounds=frozenset({"ulp", "exact"}))),
    "wrong_index": FAULTS["off_by_one"],
}


def applies(fault: Fault, node: Node) -> bool:
    """Does ``fault``'s rule say it breaks the contract of ``node``'s op and dtype?"""
    if not node.outputs:
        return False
    try:
        facts = Facts.of(node.op, dtype_of(node), node.outputs[0].type.dtype, node.attrs)
    except Exception:  # noqa: BLE001 - an op the contract cannot describe with these attributes
        return False
    return fault.rule.why_not(facts) is None


def planted_runner(backend, node: Node, fault: Fault | str, device: str = "cpu") -> tuple[NodeRunner, Planted]:
    """A runner with ``fault`` in ``node`` alone (and the Planted backend, whose ``changed``
    counts the outputs the fault altered). ``backend``: a name, a Backend, or a
    :class:`NodeRunner` whose compiled executables the new runner shares."""
    fault = FAULT_CLASSES[fault] if isinstance(fault, str) else fault
    base = backend if isinstance(backend, NodeRunner) else NodeRunner(backend, device)
    planted = Planted(base.backend, fault)
    return base.with_fault(node, planted), planted


__all__ = ["FAULT_CLASSES", "applies", "planted_runner"]
