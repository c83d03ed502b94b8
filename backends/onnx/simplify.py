"""Peephole rewrites of a lowered ONNX model that ORT's optimizer leaves alone: fewer nodes, same bits.

ORT spends about a microsecond per node beyond its arithmetic (100 chained Reshapes of a
[64] vector: 1.1 µs each on one core), and a decode step of a small language model is
~170 nodes of tiny tensors, so node count is run time there. The lowering is rule by rule,
and rules see one IR node: these rewrites see the whole graph.

- :func:`fold_reshape_chains`: ``Reshape(Reshape(x, a), b)`` is ``Reshape(x, b)``, and so is
  ``Reshape(Unsqueeze(x), b)`` or ``Reshape(Squeeze(x), b)``. The last shape says every size
  (``allowzero=1``, and a -1 is inferred from the element count, which the first op kept).
- :func:`unflatten_linears`: torch's ``linear`` on ``[*B, K]`` is recorded as ``view`` to
  ``[M, K]``, ``addmm`` and ``view`` back to ``[*B, N]``. ONNX ``MatMul`` takes ``[*B, K]``
  against a 2-D weight itself and runs it as the same single ``[M, K] x [K, N]`` product
  (tests/backends/onnx/test_simplify.py checks the bits), so both Reshapes go, along with any
  bias ``Add`` between them whose other operand broadcasts over rows. When the Reshape after
  groups the rows otherwise (a projection split into heads, ``[M, N]`` to ``[*B, H, N/H]``),
  only the first goes: the one after reads ``[*B, N]``, the same elements in the same order.
- :func:`drop_dead_nodes`: nodes whose results nothing reads (left by the rewrites above).

Example::

    >>> import numpy as np
    >>> from onnx import helper, numpy_helper, TensorProto
    >>> shape = numpy_helper.from_array(np.array([4], np.int64), "s")
    >>> nodes = [helper.make_node("Reshape", ["x", "s"], ["a"], allowzero=1),
    ...          helper.make_node("Reshape", ["a", "s"], ["y"], allowzero=1)]
    >>> g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
    ...                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [shape])
    >>> [list(n.input) for n in simplify(helper.make_model(g)).graph.node]
    [['x', 's']]
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import onnx
from onnx import numpy_helper

from .emitter import with_subgraphs

# Binary ops through which a linear's rows stay independent, when the other operand
# broadcasts over rows (a bias): [N] or [1, N].
_ROW_WISE = frozenset({"Add", "Sub", "Mul", "Div"})


def simplify(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with the rewrites of this module applied (in place; returned for chaining)."""
    graph = model.graph
    fold_reshape_chains(graph)
    drop_dead_nodes(graph)  # a folded chain's first Reshape would count as a second reader
    unflatten_linears(model)
    drop_dead_nodes(graph)
    return model


def fold_reshape_chains(graph: onnx.GraphProto) -> None:
    """Point each Reshape of a Reshape's (Unsqueeze's, Squeeze's) result at that op's input."""
    producer = {out: node for node in graph.node for out in node.output}
    for node in graph.node:  # graph order: a chain of three folds front to back
        if node.op_type != "Reshape":
            continue
        source = producer.get(node.input[0])
        if source is None or not _allows_zero(node):
            continue
        if source.op_type in ("Unsqueeze", "Squeeze") or (source.op_type == "Reshape" and _allows_zero(source)):
            node.input[0] = source.input[0]


def unflatten_linears(model: onnx.ModelProto) -> None:
    """``Reshape([*B, K] → [M, K])``, ``MatMul`` by a 2-D weight, row-wise ops, ``Reshape(→ [*B, N])``
    becomes the MatMul on ``[*B, K]`` and the row-wise ops, where every size is static."""
    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}
    if not any(n.op_type == "MatMul" and getattr(producer.get(n.input[0]), "op_type", "") == "Reshape"
               for n in graph.node):
        return  # no candidate: skip shape inference (the conformance suite lowers thousands of models)
    shapes = _static_shapes(model)
    constants = {t.name: t for t in graph.initializer}
    readers = _readers(graph)
    outputs = {o.name for o in graph.output}
    for matmul in list(graph.node):
        if matmul.op_type != "MatMul":
            continue
        flatten = producer.get(matmul.input[0])
        weight = shapes.get(matmul.input[1])
        if flatten is None or flatten.op_type != "Reshape" or weight is None or len(weight) != 2:
            continue
        batched = shapes.get(flatten.input[0])
        flat = _constant_ints(constants, flatten.input[1])
        if batched is None or len(batched) < 3 or flat != [math.prod(batched[:-1]), batched[-1]]:
            continue
        if readers[flatten.output[0]] != [matmul] or flatten.output[0] in outputs:
            continue
        # the row-wise ops after the product, then the Reshape back to [*B, N]
        chain, last = [], matmul
        while True:
            (result,) = last.output
            if result in outputs or len(readers[result]) != 1:
                break
            reader = readers[result][0]
            other = [x for x in reader.input if x != result]
            if reader.op_type in _ROW_WISE and len(other) == 1 and _broadcasts_over_rows(shapes.get(other[0])):
                chain.append(reader)
                last = reader
                continue
            if reader.op_type == "Reshape" and reader.input[0] == result:
                target = _constant_ints(constants, reader.input[1])
                if target == [*batched[:-1], weight[1]]:
                    matmul.input[0] = flatten.input[0]
                    last.output[0] = reader.output[0]  # the last op writes the Reshape's result itself
                    graph.node.remove(reader)
                elif target is not None and _allows_zero(reader):
                    # another grouping ([*B, N] to heads [*B, H, N/H]): the Reshape stays and
                    # regroups [*B, N] itself, which holds the elements in [M, N]'s order
                    matmul.input[0] = flatten.input[0]
            break


def drop_dead_nodes(graph: onnx.GraphProto) -> None:
    """Remove nodes none of whose results is read (by a node, a subgraph or the graph's outputs)."""
    while True:
        read = {o.name for o in graph.output}
        for node in with_subgraphs(graph.node):
            read.update(node.input)
        dead = [n for n in graph.node if not any(out in read for out in n.output)]
        if not dead:
            return
        for node in dead:
            graph.node.remove(node)


def _allows_zero(node: onnx.NodeProto) -> bool:
    """Only Reshapes whose 0 means a size of 0 (the lowering's; a 0 that copies a dim does not fold)."""
    return any(a.name == "allowzero" and a.i == 1 for a in node.attribute)


def _readers(graph: onnx.GraphProto) -> dict[str, list[onnx.NodeProto]]:
    """Value name -> the nodes that read it; a value a branch reads counts its ``If`` twice
    (never a single plain reader to rewrite around)."""
    readers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
    for node in graph.node:
        for name in node.input:
            readers[name].append(node)
        inner = list(with_subgraphs([node]))[1:]
        for name in {x for n in inner for x in n.input}:
            readers[name] += [node, node]
    return readers


def _constant_ints(constants: dict, name: str) -> list[int] | None:
    tensor = constants.get(name)
    return None if tensor is None else numpy_helper.to_array(tensor).astype(np.int64).tolist()


def _broadcasts_over_rows(shape: list[int] | None) -> bool:
    return shape is not None and (len(shape) <= 1 or (len(shape) == 2 and shape[0] == 1))


def _static_shapes(model: onnx.ModelProto) -> dict[str, list[int]]:
    """Every value's shape where ONNX shape inference knows all its sizes."""
    inferred = onnx.shape_inference.infer_shapes(model).graph
    shapes = {}
    for info in (*inferred.input, *inferred.value_info, *inferred.output):
        dims = info.type.tensor_type.shape.dim
        if info.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims):
            shapes[info.name] = [d.dim_value for d in dims]
    for tensor in model.graph.initializer:
        shapes[tensor.name] = list(tensor.dims)
    return shapes
