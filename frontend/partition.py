"""Partitioned fallback: with ``strict=False`` only the nodes a backend cannot run go to eager torch.

When an FX graph does not translate whole, every aten node gets the verdict of
:mod:`.support` (translated alone, checked against the backend's claims). torch's
``CapabilityBasedPartitioner`` groups the nodes that run into as few subgraphs as it can
without creating cycles; each subgraph is compiled on the backend like a whole graph,
and the graph around them (the rejected nodes, plus any partition made only of views)
runs eagerly in torch. The call's one warning names each rejected aten op, its source line and why.

:class:`PartitionReport` records the split; ``parity.compile(..., strict=False)`` keeps
one per compiled graph (:func:`fallback_report`).

Example::

    >>> import torch
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> gm = make_fx(lambda x: torch.tanh(x).nonzero().float().sum() + x.sum())(torch.ones(3))
    >>> from parity.backends.registry import get_backend
    >>> why = rejected_nodes(gm, get_backend("reference"))
    >>> sorted({str(n.target) for n in why})
    ['aten.nonzero.default']
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.fx

from ..ir.graph import SourceLoc
from .claims import ClaimCheck
from .source import loc_from_stack_trace
from .support import RUNS, classify, translate_alone
from .translate import aten_name


@dataclass
class Fallback:
    """One aten node that runs in eager torch, and why."""

    aten_op: str
    loc: SourceLoc | None
    why: str


@dataclass
class PartitionReport:
    """How one FX graph was split: aten nodes on the backend, in eager torch, and the partitions."""

    kind: str
    backend: str
    on_backend: int = 0
    in_eager: int = 0
    partitions: int = 0
    fallbacks: list[Fallback] = field(default_factory=list)

    @property
    def share(self) -> float:
        """The fraction of aten nodes that run on the backend."""
        total = self.on_backend + self.in_eager
        return self.on_backend / total if total else 1.0

    def __str__(self) -> str:
        head = (f"{self.kind} graph: {self.on_backend}/{self.on_backend + self.in_eager} aten nodes on "
                f"{self.backend!r} in {self.partitions} partition(s)")
        lines = [head] + [f"  eager: {f.aten_op}" + (f" at {f.loc}" if f.loc else "") + f" ({f.why})"
                          for f in self.fallbacks]
        return "\n".join(lines)


def is_compute(node: torch.fx.Node) -> bool:
    """An aten node that computes (getitem only picks a result of one)."""
    return node.op == "call_function" and node.target is not operator.getitem


def rejected_nodes(gm: torch.fx.GraphModule, backend) -> dict[torch.fx.Node, str]:
    """Every aten node of ``gm`` that cannot run on ``backend``, with why (see :mod:`.support`)."""
    check = ClaimCheck(backend)
    rejected = {}
    for node in gm.graph.nodes:
        if is_compute(node):
            status, why = classify(translate_alone(node), backend, check)
            if status not in RUNS:
                rejected[node] = why
    return rejected


class _OperatorSupport:
    """The partitioner's question "may this node go to the backend?", from the verdicts."""

    def __init__(self, rejected: dict):
        self.rejected = rejected

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        if node.op != "call_function":
            return False
        if node.target is operator.getitem:  # goes where the node it reads from goes
            return node.args[0] not in self.rejected
        return node not in self.rejected


class _Partition(torch.nn.Module):
    """A compiled subgraph in the eager graph's calling convention (positional in, like FX out)."""

    def __init__(self, compiled: Callable[[list], list], single: bool):
        super().__init__()
        self.compiled = compiled
        self.single = single

    def forward(self, *args):
        results = self.compiled(list(args))
        return results[0] if self.single else tuple(results)


def compile_partitioned(gm: torch.fx.GraphModule, backend, kind: str,
                        compile_graph: Callable[[torch.fx.GraphModule], Callable[[list], list]],
                        rejected: dict[torch.fx.Node, str]) -> tuple[torch.fx.GraphModule, PartitionReport]:
    """``gm`` with every partition of runnable nodes replaced by ``compile_graph(partition)``.

    ``compile_graph`` takes an FX GraphModule and returns a boxed callable (list in, list
    out). Returns the split graph (call it like ``gm``) and its report.
    """
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

    report = PartitionReport(kind, backend.name)
    for node, why in rejected.items():
        report.fallbacks.append(Fallback(aten_name(node.target), loc_from_stack_trace(node.meta.get("stack_trace")),
                                         why))
    partitioner = CapabilityBasedPartitioner(gm, _OperatorSupport(rejected), allows_single_node_partition=True)
    partitions = partitioner.propose_partitions()
    split = partitioner.fuse_partitions(partitions)
    for node in split.graph.nodes:
        if node.op == "call_module":
            sub = getattr(split, node.target)
            out = sub.graph.output_node().args[0]
            single = not isinstance(out, (tuple, list))
            setattr(split, node.target, _Partition(compile_graph(sub), single))
            report.partitions += 1
            report.on_backend += sum(is_compute(n) for n in sub.graph.nodes)
        elif is_compute(node):
            report.in_eager += 1
    split.recompile()
    return split, report
