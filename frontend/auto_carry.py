"""``backend="auto"`` across a graph's shapes: a pick made for one shape of a graph carries over
to the same graph captured again at other sizes (automatic dynamic's symbolic recapture, or a
graph compiled per shape), so a decode loop or a varying batch never pays a race per new size.

A graph's *family* is what stays when its sizes change: the kind (forward, backward, inference),
the device, precision tier and budget, the machine that timed the race, the candidate backends,
and the ATen ops it runs in order (the size queries a symbolic trace adds, ``sym_size`` and
Python's operators on sizes, left out). The first decided race of a family names its pick; a
later graph of the family takes it without a race when it is still a candidate there (a backend
that compiles per concrete shape, :attr:`Backend.compiles_per_shape`, is not one for a graph
with symbolic dims: frontend/auto.py). Family picks live in auto's in-process store beside the
exact picks, so they last as long as the process; the recaptured graph's own pick goes to the
disk cache as any pick does, so the next process reads it directly.

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
FAMILY = "family"  # a family key's first field: never equal to an exact pick's key (frontend/auto.py)
_SIZE_OPS = frozenset({"aten.sym_size.int", "aten.sym_numel.default", "aten.sym_stride.int",
                       "aten.sym_storage_offset.default", "aten.sym_is_contiguous.default",
                       "aten._assert_scalar.default", "aten.sym_constrain_range_for_size.default"})

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


def family_key(gm: torch.fx.GraphModule, kind: str, options, budget_s: float, candidates: list[str],
               machine: dict) -> str:
    """The identity a graph keeps when only its sizes change (see the module doc)."""
    text = json.dumps([FAMILY, kind, options.device, options.precision.value, budget_s, machine, sorted(candidates),
                       graph_ops(gm)])
    return hashlib.sha256(text.encode()).hexdigest()


def is_symbolic(graph) -> bool:
    """Whether the IR ``graph`` takes an input with a symbolic dim."""
    return not all(v.type.is_static for v in graph.inputs)


def carried_pick(store: dict, family: str, names: list[str]) -> tuple[str | None, str]:
    """The pick the family's first race made, and where it came from, if it is among ``names``
    (the candidates left for this graph); else (None, "")."""
    pick = store.get(family)
    if pick is None or pick not in names:
        return None, ""
    return pick, f"carried over from this graph's race at another shape ({pick})"


def remember_family(store: dict, family: str, name: str) -> None:
    """Keep the family's first decided pick."""
    store.setdefault(family, name)
