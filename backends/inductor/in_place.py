"""Outputs written into the input they update: a static KV cache's new value, in the cache.

A frontend that writes an output back into an input after the call (AOTAutograd's
``cache.copy_(new_cache)``, frontend/input_updates.py) may offer the executable to compute it
there instead (``InductorExecutable.in_place``). The traced ATen graph then ends in
``copy_(input, output)`` and no longer returns that output (:func:`write_into_inputs`).
AOTAutograd keeps such a mutation inside the graph it hands Inductor, and Inductor's
reinplacing pass turns ``copy_(cache, index_put(cache, ...))`` into one ``index_put_`` on
the cache: one position written per decode step, where the functional graph copied the
whole cache into a new buffer (and the frontend copied it back). The IR's scatter is lowered
as an ``index_put`` for this (indexing.py). Where a later node still reads the input's old
value, Inductor keeps the copy, and the result is the same.

Example::

    >>> from parity.ir import GraphBuilder, f32, i64
    >>> b = GraphBuilder(); cache = b.input(f32[4, 2]); at = b.input(i64[1, 2]); row = b.input(f32[1, 2])
    >>> writable_outputs(b.build([b.scatter(cache, at, row, axis=0, reduce="replace")]))
    {0: 0}
    >>> writable_outputs(b.build([b.neg(cache)]))
    {}
"""

from __future__ import annotations

import torch

from ...ir.graph import Graph

# IR ops whose result is their first operand with some elements replaced
_UPDATES = frozenset({"scatter", "dynamic_update_slice"})


def writable_outputs(graph: Graph) -> dict[int, int]:
    """``{output k: input i}``: output ``k`` is a scatter (or dynamic update slice) into graph
    input ``i``, returned once. What a caller may ask to have written in place; a graph with
    none compiles as it always has."""
    inputs = {v: i for i, v in enumerate(graph.inputs)}
    made_by = {v: node for node in graph.nodes for v in node.outputs}
    found = {}
    for k, v in enumerate(graph.outputs):
        node = made_by.get(v)
        if node is not None and node.op in _UPDATES and node.inputs[0] in inputs and graph.outputs.count(v) == 1:
            found[k] = inputs[node.inputs[0]]
    return found


def write_into_inputs(module: torch.fx.GraphModule, writes: dict[int, int]) -> torch.fx.GraphModule:
    """``module`` (a traced graph: placeholders, then one output tuple) with output ``k`` copied
    into placeholder ``i`` for each ``writes[k] = i`` at the end, and no longer returned (the
    others keep their order)."""
    if not writes:
        return module
    graph = module.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    output = next(n for n in graph.nodes if n.op == "output")
    values = list(output.args[0])
    with graph.inserting_before(output):
        for k, i in sorted(writes.items()):
            value = values[k]
            if value.target is torch.ops.aten.clone.default and value.args[0].op != "placeholder":
                value = value.args[0]  # trace()'s contiguous layout: copy_ lays the value out anyway
            graph.call_function(torch.ops.aten.copy_.default, (placeholders[i], value))
    output.args = (tuple(v for k, v in enumerate(values) if k not in writes),)
    graph.eliminate_dead_code()
    graph.lint()
    module.recompile()
    return module
