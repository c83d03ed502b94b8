"""``backend="auto"`` across a graph's shapes: a pick made for one shape of a graph carries over
to the same graph captured again at symbolic sizes (automatic dynamic's second capture), so a
decode loop or a varying batch never pays a race per new size.

A graph's *family* is what stays when its sizes change: the kind (forward, backward, inference),
the device, precision tier and budget, the candidate backends, and the ATen ops it runs in order
(the size arithmetic a symbolic trace adds, ``sym_size`` and Python's operators on sizes, left
out). The first race of a family keeps each candidate's median time; a later graph of the family
takes the pick without racing, or, when the pick cannot serve changing sizes (a backend that
compiles once per concrete shape, :attr:`Backend.compiles_per_shape`), the fastest raced
candidate that can. Picks are kept in this process; the symbolic graph's own pick then goes to
the disk cache as any pick does (frontend/auto.py), so the next process reads it directly.

Example::

    >>> import torch
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> static = make_fx(lambda x: torch.relu(x).sum())(torch.ones(3))
    >>> dynamic = make_fx(lambda x: torch.relu(x).sum(), tracing_mode="symbolic")(torch.ones(5))
    >>> graph_ops(static) == graph_ops(dynamic)
    True
"""

from __future__ import annotations

import hashlib
import json
import operator

import torch

# size queries and the assertions a symbolic trace adds: not part of what the graph computes
_SIZE_OPS = frozenset({"aten.sym_size.int", "aten.sym_numel.default", "aten.sym_stride.int",
                       "aten.sym_storage_offset.default", "aten.sym_is_contiguous.default",
                       "aten._assert_scalar.default", "aten.sym_constrain_range_for_size.default"})

# family key -> {"pick": name, "medians": {name: seconds}} of the family's first decided race
_FAMILIES: dict[str, dict] = {}


def graph_ops(gm: torch.fx.GraphModule) -> list[str]:
    """The ATen ops ``gm`` runs, in order, without size queries and arithmetic on sizes."""
    ops = []
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        name = str(node.target) if isinstance(node.target, torch._ops.OpOverload) else None
        if name is not None and name not in _SIZE_OPS:
            ops.append(name)
    return ops


def family_key(gm: torch.fx.GraphModule, kind: str, options, budget_s: float, candidates: list[str]) -> str:
    """The identity a graph keeps when only its sizes change (see the module doc)."""
    text = json.dumps([kind, options.device, options.precision.value, budget_s, sorted(candidates), graph_ops(gm)])
    return hashlib.sha256(text.encode()).hexdigest()


def is_symbolic(graph) -> bool:
    """Whether the IR ``graph`` takes an input with a symbolic dim."""
    return not all(v.type.is_static for v in graph.inputs)


def carried_pick(family: str, names: list[str]) -> tuple[str | None, str]:
    """The pick the family's race made, if it is among ``names`` (the candidates left for this
    graph); else the fastest of ``names`` that race timed; (None, "") when it knows none of them."""
    known = _FAMILIES.get(family)
    if known is None:
        return None, ""
    if known["pick"] in names:
        return known["pick"], f"carried over from this graph's race at its first shape ({known['pick']})"
    timed = [n for n in names if n in known["medians"]]
    if not timed:
        return None, ""
    best = min(timed, key=known["medians"].get)
    return best, (f"the fastest at this graph's first shape that serves every size (that race picked "
                  f"{known['pick']}, which is not a candidate here)")


def remember_family(family: str, record) -> None:
    """Keep the family's first decided race: ``record`` is its AutoChoice."""
    if record.choice is None or family in _FAMILIES:
        return
    medians = {c.name: c.median_s for c in record.candidates if c.median_s is not None}
    _FAMILIES[family] = {"pick": record.choice, "medians": medians}


def forget_families() -> None:
    """Drop every carried pick (tests)."""
    _FAMILIES.clear()
