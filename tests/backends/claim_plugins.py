"""Test plugins for claims beyond (op, dtype): predicates (OpClaim.when) and subgraph claims
(claim_subgraphs). Each runs graphs with the spec's interpreter and records every graph its
``compile`` receives, as the list of its ops, in ``compiled``.

:class:`PredicateClaims` claims every primitive, but convolution only without input dilation
and convert only to f32 or i32, and claims the composite softmax only over the last axis.
:class:`FusingClaims` claims every primitive and, through ``claim_subgraphs``, each
``dot_general`` together with the ``add`` that reads it (a linear layer's matmul and bias),
or whatever regions ``regions(graph)`` gives when set (the refusal tests).
"""

from __future__ import annotations

from parity.backends.base import Backend, OpClaim
from parity.backends.claim_predicates import attr_all_equal, result_dtypes
from parity.ir import OP_TABLE, evaluate, primitives
from parity.ir.dtypes import DType


class _Recording(Backend):
    devices = ("cpu",)

    def __init__(self):
        self.compiled: list[list[str]] = []

    def compile(self, graph, device="cpu"):
        self.compiled.append([n.op for n in graph.nodes])
        return lambda *arrays: evaluate(graph, arrays)


def _last_axis(node):
    rank = node.inputs[0].type.rank
    if node.attrs["axis"] in (-1, rank - 1):
        return None
    return f"its axis is {node.attrs['axis']}; the backend's softmax kernel runs over the last axis only"


class PredicateClaims(_Recording):
    name = "predicate_claims"

    def __init__(self, predicates: bool = True):
        super().__init__()
        self.predicates = predicates  # False: a planted fault, every predicate left off

    def claims(self):
        claims = {op.name: OpClaim(frozenset(op.dtypes)) for op in primitives()}
        if not self.predicates:
            return claims | {"softmax": OpClaim(frozenset(OP_TABLE["softmax"].dtypes))}
        return claims | {
            "convolution": OpClaim(claims["convolution"].dtypes, when=attr_all_equal("lhs_dilation", 1)),
            "convert": OpClaim(claims["convert"].dtypes, when=result_dtypes(DType.float32, DType.int32)),
            "softmax": OpClaim(frozenset(OP_TABLE["softmax"].dtypes), when=_last_axis),
        }


class FusingClaims(_Recording):
    name = "fusing_claims"

    def __init__(self):
        super().__init__()
        self.regions = None  # a callable graph -> regions, replacing the linear-layer pattern

    def claims(self):
        return {op.name: OpClaim(frozenset(op.dtypes)) for op in primitives()}

    def claim_subgraphs(self, graph):
        if self.regions is not None:
            return self.regions(graph)
        index = {id(n): i for i, n in enumerate(graph.nodes)}
        found = []
        for i, node in enumerate(graph.nodes):
            if node.op != "add":
                continue
            matmul = next((v.producer for v in node.inputs if v.producer is not None and v.producer.op == "dot_general"),
                          None)
            if matmul is not None:
                found.append({index[id(matmul)], i})
        return found
