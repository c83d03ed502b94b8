"""Control flow claimed natively: ``loop`` as torch's ``while_loop`` higher-order op, rolled.

``loop(consts..., carry..., xs...)`` is traced as one ``torch.ops.higher_order.while_loop``
whose carried inputs are a 0-d int64 step counter, the carries and one buffer ``[length,
*row]`` per ``ys``, and whose additional inputs are the consts, the ``xs`` and the body's
constants of more than one element (the op takes every tensor its functions read as an
input; none is closed over). Each step takes row ``i`` of each ``xs`` (``length - 1 - i``
with ``reverse``) with a tensor index, runs the body's nodes through the same rules as the
graph around it (:func:`~.lowering.lower_node`, so every op keeps its exact lowering) and
writes each row of ``ys`` into its buffer (``index_copy``). Inductor compiles the body once
(``torch/_inductor/ir.py``, ``WhileLoop``), not ``length`` times: a 64-step LSTM's unrolled
graph took minutes to compile (bench/results/jax_loops.md).

Declined (:func:`loop_declined`, the claim's predicate; the loop is then unrolled by its
decomposition): zero steps (the buffers would be empty and the op needs at least one
step's body to agree with its carries), symbolic sizes anywhere in it, complex values, and
a body that holds, once its composites are expanded as this backend expands them, an op
the backend has no rule for or an (op, dtype) it does not claim.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32
    >>> body = GraphBuilder("step"); total, x = body.input(f32[2]), body.input(f32[2])
    >>> new = body.add(total, x)
    >>> b = GraphBuilder(); init, xs = b.input(f32[2]), b.input(f32[64, 2])
    >>> final, running = b.loop(init, xs, body=body.build([new, new]), length=64, num_carry=1)
    >>> from parity.backends.inductor.lowering import to_fx
    >>> fx = to_fx(b.build([final, running]), [(2,), (64, 2)])
    >>> [str(n.target) for n in fx.module.graph.nodes if n.op == "call_function"][:3]
    ['aten.zeros.default', 'aten.zeros.default', 'while_loop']
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch._higher_order_ops.while_loop import while_loop_op

from ...ir.graph import Graph, Node
from ...ir.ops.control import loop_parts, unrolled_size
from ...ir.passes import decompose
from ..claim_predicates import body_not_run
from .context import InductorNodeContext, as_tensor, carried, is_inline_constant

Predicate = Callable[[Node], "str | None"]


def loop(ctx: InductorNodeContext, *operands: torch.Tensor, lower_node: Callable):
    """The loop as one ``while_loop``: (counter, carries, ys buffers) carried; consts, xs and
    the body's constants passed as additional inputs; each body node through ``lower_node``."""
    attrs = ctx.attrs
    body: Graph = attrs["body"]
    length, reverse, n_carry = attrs["length"], attrs["reverse"], attrs["num_carry"]
    consts, carry, xs = loop_parts(operands, attrs)
    row_types = [v.type for v in body.outputs[n_carry:]]
    constants = [n for n in body.nodes if n.op == "constant" and not is_inline_constant(n)]
    device = operands[0].device if operands else torch.empty(0).device
    # The body's constants as values of this trace (a clone: a traced op's result, not a tensor
    # the trace holds), passed in: the op's functions may close over no tensor.
    constant_tensors = [as_tensor(n.attrs["value"], n.outputs[0].type.dtype).to(device).clone() for n in constants]
    buffers = [torch.zeros((length, *t.shape), dtype=carried(t.dtype), device=device) for t in row_types]
    counter = torch.zeros((), dtype=torch.int64, device=device)
    n_ys, n_consts, n_xs = len(buffers), len(consts), len(xs)

    def cond_fn(i, *_):
        return i < length

    def body_fn(i, *rest):
        carries, rest = rest[:n_carry], rest[n_carry:]
        bufs, rest = rest[:n_ys], rest[n_ys:]
        cs, rest = rest[:n_consts], rest[n_consts:]
        xs_, body_constants = rest[:n_xs], rest[n_xs:]
        at = ((length - 1) - i if reverse else i).reshape(1)
        rows = [torch.index_select(x, 0, at).squeeze(0) for x in xs_]
        outs = run_body(body, [*cs, *carries, *rows], dict(zip(constants, body_constants)), lower_node)
        inputs = (*carries, *bufs, *cs, *xs_, *body_constants)
        new_carries = [_fresh(o, inputs) for o in outs[:n_carry]]
        new_bufs = [torch.index_copy(b, 0, at, r.unsqueeze(0)) for b, r in zip(bufs, outs[n_carry:])]
        return (i + 1, *new_carries, *new_bufs)

    results = while_loop_op(cond_fn, body_fn, (counter, *(c.contiguous() for c in carry), *buffers),
                            (*consts, *xs, *constant_tensors))
    return tuple(results[1:])


def run_body(body: Graph, operands: Sequence[torch.Tensor], constants: Mapping[Node, torch.Tensor],
             lower_node: Callable) -> list:
    """``body``'s nodes lowered by ``lower_node`` (the backend's rules) on ``operands``; its
    outputs. A constant of more than one element is the tensor ``constants`` gives for its node."""

    env = dict(zip(body.inputs, operands))
    for node in body.nodes:
        if node in constants:
            env[node.outputs[0]] = constants[node]
            continue
        ctx = InductorNodeContext(node.attrs, tuple(v.type for v in node.inputs),
                                  tuple(v.type for v in node.outputs), op_name=node.op)
        env.update(zip(node.outputs, lower_node(ctx, node, [env[v] for v in node.inputs])))
    return [env[v] for v in body.outputs]


def _fresh(t: torch.Tensor, inputs: Sequence[torch.Tensor]) -> torch.Tensor:
    """``t`` as a carry the body may return: laid out contiguously as the carry went in, and no
    input of the step or a view of one (the op refuses outputs that alias its inputs)."""
    if t._is_view() or any(t is x for x in inputs) or not t.is_contiguous():
        return t.clone(memory_format=torch.contiguous_format)
    return t


def examples_for(module: torch.fx.GraphModule, examples: Sequence[torch.Tensor]) -> list:
    """The example inputs to compile ``module`` for: ``examples`` as they are, or, where it holds
    a ``while_loop``, as fake tensors of their static shapes in a fake mode with a shape
    environment (AOTAutograd's own fake mode for real examples has none, and the op's fake
    implementation needs one: "'NoneType' object has no attribute 'ignore_fresh_unbacked_symbols'")."""
    if not any(n.op == "call_function" and n.target is torch.ops.higher_order.while_loop
               for n in module.graph.nodes):
        return list(examples)
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    mode = FakeTensorMode(shape_env=ShapeEnv())
    return [mode.from_tensor(t, static_shapes=True) for t in examples]


# A loop whose unrolled form stays within this many IR nodes is unrolled. Measured on the LSTM
# forward in one process (docs/backends/inductor.md, "Loops"): at 8 steps (183 nodes) unrolled
# compiled faster (4.0 s against 6.6 s rolled, cold) and at 16 (359) as fast, and unrolled calls
# ran about 1.6x faster; past that the unrolled compile grows (711 nodes: 18 s, about 7 s rolled).
ROLLED_PAST_NODES = 500


def loop_declined(rules: Mapping[str, Any], unsupported: Mapping, composite_declined: Callable[[Node], bool]
                  ) -> Predicate:
    """The predicate of the backend's claim on ``loop`` (``OpClaim.when``), given its rule table,
    its unsupported (op, dtype) cells and its other composites' predicate: None when :func:`loop`
    lowers the node, else why not (the node is then unrolled)."""
    def declined(node: Node) -> str | None:
        if node.attrs["length"] == 0:
            return "it has zero steps"
        if any(v.type.dtype.is_complex for v in (*node.inputs, *node.outputs)):
            return "it carries complex values"
        if not all(v.type.is_static for v in (*node.inputs, *node.outputs)):
            return "its operands have symbolic sizes"
        body = decompose(node.attrs["body"], claimed=lambda op: op in rules, declined=expanded_anyway)[0]
        size = unrolled_size(node, len(body.nodes))
        if size <= ROLLED_PAST_NODES:
            return (f"it unrolls into {size} IR nodes, at most {ROLLED_PAST_NODES}: unrolled, it compiles about as "
                    "fast and runs faster")
        return _body_declined(body)

    def expanded_anyway(node: Node) -> bool:
        return declined(node) is not None if node.op == "loop" else composite_declined(node)

    def _body_declined(body: Graph) -> str | None:
        if not all(v.type.is_static for v in body.values()):
            return "its body has symbolic sizes"
        return body_not_run(body, rules, unsupported)

    return declined


def rules_with(lower_node: Callable) -> dict:
    """The control rules, given the backend's node lowering (lowering.py passes its own, which
    holds these rules: taking it here keeps the two modules out of an import cycle)."""
    return {"loop": functools.partial(loop, lower_node=lower_node)}
