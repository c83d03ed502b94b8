"""Control flow: the IR's ``loop`` as one ONNX ``Scan`` node, its body a nested graph.

``loop(consts..., carry..., xs...)`` becomes ``Scan(carry..., xs...)``: the carries are
Scan's state variables, the ``xs`` its scan inputs and the ``ys`` its scan outputs, all along
axis 0, and with ``reverse`` every scan input and output runs backwards (``scan_*_directions``
1), so the first step reads row ``length - 1`` and writes position ``length - 1``, as the
IR's loop does. The body is lowered by the same rules as the graph around it
(``lowering.lower_graph``: legalization, views, fused patterns), so one step is compiled
once, not ``length`` times (bench/results/jax_loops.md: the unrolled 64-step LSTM ran
2.9-3.5x slower on onnxruntime than a Scan).

- **Consts** are read from the outer scope by name (ONNX subgraphs may), not passed as
  state: ORT hands a subgraph's outer values to each step as they are, where a state
  variable the body returns unchanged is an Identity per step that ORT copies into the next
  step's buffer.
- **No xs.** Scan needs a scan input: a loop without ``xs`` scans an empty ``bool[length, 0]``
  constant (no bytes), whose rows the body takes and ignores. One op for every loop, and
  ``reverse`` means the same for its ``ys``.
- **Declined** (:func:`loop_declined`, the claim's predicate; the loop is then unrolled
  by its decomposition, as on a backend that does not claim it): zero steps (ORT's Scan
  fails on an empty scan axis), complex values anywhere in it (they travel as pairs of
  real tensors here), and a body that holds, once its composites are expanded as this
  backend expands them, an op the backend has no rule for or an (op, dtype) in
  ``legalize.UNSUPPORTED``.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32
    >>> from parity.backends.onnx.lowering import to_model
    >>> body = GraphBuilder("step"); total, x = body.input(f32[2]), body.input(f32[2])
    >>> new = body.add(total, x)
    >>> b = GraphBuilder(); init, xs = b.input(f32[2]), b.input(f32[64, 2])
    >>> final, running = b.loop(init, xs, body=body.build([new, new]), length=64, num_carry=1)
    >>> [n.op_type for n in to_model(b.build([final, running])).graph.node]
    ['Scan']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from onnx import TensorProto, helper

from ...ir.graph import Graph, Node
from ...ir.ops import OP_TABLE
from ...ir.ops.control import loop_parts
from ...ir.passes import decompose
from ..claim_predicates import body_not_run
from .composites import NATIVE
from .context import OnnxNodeContext
from .emitter import value_info
from .legalize import UNSUPPORTED

Predicate = Callable[[Node], "str | None"]


def loop(ctx: OnnxNodeContext, *operands: str):
    """``Scan`` over the loop's ``xs`` (an empty constant when it has none), its body lowered by
    ``ctx.lower_graph`` with the consts bound to their outer names."""
    em, attrs = ctx.em, ctx.attrs
    body: Graph = attrs["body"]
    consts, carry, xs = loop_parts(operands, attrs)
    _, body_carry, body_rows = loop_parts(body.inputs, attrs)
    names = [em.fresh("carry") for _ in carry] + [em.fresh("row") for _ in xs]
    inputs = [value_info(name, v.type) for name, v in zip(names, [*body_carry, *body_rows])]
    env = {**dict(zip(body.inputs, consts)), **dict(zip(body.inputs[len(consts):], names))}
    scanned = list(xs)
    if not xs:  # the steps' count as the rows of an empty tensor (Scan needs a scan input)
        scanned = [em.const(np.zeros((attrs["length"], 0), np.bool_))]
        inputs.append(helper.make_tensor_value_info(em.fresh("step"), TensorProto.BOOL, [0]))
    results, nodes = em.subgraph(lambda: ctx.lower_graph(body, env))
    results = em.own_outputs(nodes, results)
    graph = helper.make_graph(nodes, em.fresh("body"), inputs,
                              [value_info(name, v.type) for name, v in zip(results, body.outputs)])
    if not results:
        return ()
    outs = em.op("Scan", *carry, *scanned, outputs=len(results), body=graph, num_scan_inputs=len(scanned),
                 **_directions(attrs["reverse"], len(scanned), len(results) - len(carry)))
    return tuple(outs) if len(results) > 1 else outs


def _directions(reverse: bool, scan_inputs: int, scan_outputs: int) -> dict[str, list[int]]:
    """Scan's direction attributes: 1 (backwards) for every scan input and output when ``reverse``."""
    if not reverse:
        return {}
    out = {"scan_input_directions": [1] * scan_inputs}
    if scan_outputs:  # an empty list attribute has no type ONNX can tell
        out["scan_output_directions"] = [1] * scan_outputs
    return out


def loop_declined(rules: Mapping[str, Any]) -> Predicate:
    """The predicate of the backend's claim on ``loop`` (``OpClaim.when``), given its rule table:
    None when ``loop`` above lowers the node, else why not (the node is then unrolled).

    Example::

        >>> from parity.ir import GraphBuilder, f64
        >>> body = GraphBuilder("step"); h = body.input(f64[2])
        >>> b = GraphBuilder(); h0 = b.input(f64[2])
        >>> node = b.build([b.loop(h0, body=body.build([body.erf(h)]), length=3, num_carry=1)]).nodes[0]
        >>> from parity.backends.onnx.lowering import LOWERINGS
        >>> loop_declined(LOWERINGS)(node)
        'its body holds erf in f64: onnxruntime 1.32 has no float64 CPU kernel for Erf and float64 has no wider type'
    """
    def declined(node: Node) -> str | None:
        if node.attrs["length"] == 0:
            return "it has zero steps, and onnxruntime's Scan fails on an empty scan axis"
        if any(v.type.dtype.is_complex for v in (*node.inputs, *node.outputs)):
            return "it carries complex values"
        return body_not_run(expanded(node.attrs["body"]), rules, UNSUPPORTED)

    def composite_declined(node: Node) -> bool:
        """A claimed composite the lowering expands all the same: a native one outside its dtypes
        or attributes (lowering.lower_node), a loop this predicate declines."""
        if node.op == "loop":
            return declined(node) is not None
        native = NATIVE.get(node.op)
        if native is None:
            return False
        in_types = [v.type for v in node.inputs]
        dtype = OP_TABLE[node.op].op_dtype(in_types, [v.type for v in node.outputs])
        return dtype not in native.dtypes or (native.fits is not None and not native.fits(node.attrs, in_types))

    def expanded(body: Graph) -> Graph:
        """``body`` with every composite expanded that the lowering would expand."""
        return decompose(body, claimed=lambda op: op in rules, declined=composite_declined)[0]

    return declined


RULES = {"loop": loop}
