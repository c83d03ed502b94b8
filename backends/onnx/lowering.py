"""IR graph → ONNX ``ModelProto``: one rule per op, in one table.

:data:`LOWERINGS` maps every op the backend lowers to its rule (``rule(ctx, *operands)``,
see :mod:`.context`); the family modules hold the rules, grouped the way ``ir/ops`` is.
Composites without a rule are expanded by their decompositions first. Before a node is
lowered, the legalization table (:mod:`.legalize`) may widen it: its operands of the
node's dtype are cast to a wider dtype, the rule runs there, and the results are cast
back once; an (op, dtype) ORT cannot run at all raises :class:`UnsupportedOpError`.

Example::

    >>> import onnx
    >>> from parity.ir import GraphBuilder, bf16
    >>> b = GraphBuilder("twice"); x = b.input(bf16[3])
    >>> model = to_model(b.build([b.add(x, x)]))
    >>> onnx.checker.check_model(model, full_check=True)
    >>> [n.op_type for n in model.graph.node]  # ORT has no bfloat16 Add on CPU
    ['Cast', 'Add', 'Cast']
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import helper

from ...ir.dtypes import DType
from ...ir.errors import UnsupportedOpError
from ...ir.expand import decomposition
from ...ir.graph import Graph, Node
from ...ir.ops import OP_TABLE
from ...ir.passes import decompose
from ...ir.precision import Precision
from .complex_math import RULES as COMPLEX_MATH
from .complex_numbers import RULES as COMPLEX_STRUCTURAL
from .complex_numbers import Parts, carrier_type, empty_parts, is_complex_node, split, stack
from .composites import NATIVE
from .composites import RULES as COMPOSITES
from .context import OnnxNodeContext
from .control import RULES as CONTROL
from .control import loop_declined
from .elementwise import BINARY
from .elementwise import RULES as ELEMENTWISE
from .emitter import Emitter, value_info, with_subgraphs
from .fft import RULES as FFT
from .legalize import COMPUTE_IN_WIDER, UNSUPPORTED
from .recompose import recompose
from .reduction import RULES as REDUCTION
from .rotary import emit as emit_rotate_half
from .rotary import rotate_half_products
from .shape import RULES as SHAPE
from .shape import reshape_to
from .simplify import simplify

# The highest opset both the onnx package and onnxruntime 1.32 know (tests check it).
OPSET = 28

LOWERINGS = {**ELEMENTWISE, **SHAPE, **REDUCTION, **COMPOSITES, **CONTROL}

# Claims with a predicate (OpClaim.when): a node it declines is expanded by its decomposition.
CLAIM_PREDICATES = {"loop": loop_declined(LOWERINGS)}

# Rules for nodes with a complex operand or result (complex values travel as Parts:
# complex_numbers.py); the complex and fft families have no real rule at all.
COMPLEX_LOWERINGS = {**COMPLEX_STRUCTURAL, **COMPLEX_MATH, **FFT}


def to_model(graph: Graph, *, legalize: bool = True, input_names: Sequence[str] | None = None,
             output_names: Sequence[str] | None = None, precision: Precision = Precision.EXACT) -> onnx.ModelProto:
    """Lower ``graph`` to an ONNX model (inputs ``in0..``, outputs ``out0..``, or the names given),
    at the ``precision`` tier (FAST: ORT's native kernels where a rule says so).

    ``legalize=False`` skips the dtype legalization (the kernel probe uses it to find
    ORT's gaps); a model built that way may not run.
    """
    input_names = list(input_names or (f"in{i}" for i in range(len(graph.inputs))))
    output_names = list(output_names or (f"out{i}" for i in range(len(graph.outputs))))
    if len(input_names) != len(graph.inputs) or len(output_names) != len(graph.outputs):
        raise ValueError(f"@{graph.name} has {len(graph.inputs)} inputs and {len(graph.outputs)} outputs; "
                         f"got {len(input_names)} input and {len(output_names)} output names")
    if len(set(input_names + output_names)) != len(input_names) + len(output_names):
        raise ValueError(f"input and output names must be distinct: {input_names + output_names}")
    graph, _ = decompose(recompose(graph), claimed=lambda op: op in LOWERINGS or op in COMPLEX_LOWERINGS,
                         declined=declined)
    em = Emitter(reserved=input_names + output_names, precision=precision)
    env = {}
    for name, value in zip(input_names, graph.inputs):  # a complex input arrives as its carrier [..., 2]
        carrier = em.input(name, carrier_type(value.type))
        env[value] = split(em, carrier) if value.type.dtype.is_complex else carrier
    outputs = lower_graph(em, graph, env, legalize=legalize)
    _name_outputs(em, [stack(em, out) if isinstance(out, Parts) else out for out in outputs], output_names)
    proto = helper.make_graph(
        em.nodes, graph.name, em.inputs,
        [value_info(name, carrier_type(v.type)) for name, v in zip(output_names, graph.outputs)],
        initializer=em.initializers,
    )
    opsets = [helper.make_opsetid("", OPSET)]
    return simplify(helper.make_model(proto, opset_imports=opsets, producer_name="parity",
                                      ir_version=helper.find_min_ir_version_for(opsets)))


def declined(node: Node) -> bool:
    """Whether the predicate of ``node``'s claim turns it down (:data:`CLAIM_PREDICATES`)."""
    predicate = CLAIM_PREDICATES.get(node.op)
    return predicate is not None and predicate(node) is not None


def lower_graph(em: Emitter, graph: Graph, env: dict, *, legalize: bool = True) -> list:
    """Emit ``graph``'s nodes, its inputs bound to the ONNX names (or Parts) in ``env``; return
    the names of its outputs. The model's graph and each loop body (control.py) go through here,
    so a body gets the same legalization, views and fused patterns as the graph around it."""
    views = _Views(em, legalize)
    biased = _conv_bias_adds(graph, legalize)
    deferred = {conv for conv, _ in biased.values()}
    rotations = rotate_half_products(graph)
    deferred |= {node for _, _, absorbed in rotations.values() for node in absorbed}
    users = graph.users()
    unused = {v.producer for add in biased for v in add.inputs  # broadcasts of a bias that only the Conv reads
              if v.producer is not None and v.producer.op == "broadcast_in_dim" and len(users[v]) == 1
              and v not in graph.outputs}
    for node in graph.nodes:
        if node in deferred or node in unused:
            continue  # a deferred conv is emitted at its add, with the bias; a rotation at its mul
        if node in biased:
            conv, bias = biased[node]
            (out,) = lower_node(em, conv, [views.full(v, env[v]) for v in conv.inputs], legalize=legalize)
            producer = next(n for n in reversed(em.nodes) if out in n.output)
            assert producer.op_type == "Conv" and len(producer.input) == 2, producer
            producer.input.append(env[bias])
            env[node.outputs[0]] = out
        elif node in rotations:
            x, sin, _ = rotations[node]
            env[node.outputs[0]] = emit_rotate_half(em, views.full(x, env[x]), env[sin], x)
        elif node.op == "broadcast_in_dim" and views.may_stay_compact(node):
            env[node.outputs[0]] = views.broadcast(node, views.full(node.inputs[0], env[node.inputs[0]]))
        elif node.op in ELEMENTWISE and views.may_stay_compact(node):
            operands = [env[v] for v in node.inputs]
            outputs = lower_node(em, node, operands, legalize=legalize)
            views.record(node, operands, outputs)
            env.update(zip(node.outputs, outputs))
        else:
            outputs = lower_node(em, node, [views.full(v, env[v]) for v in node.inputs], legalize=legalize)
            env.update(zip(node.outputs, outputs))
    return [views.full(v, env[v]) for v in graph.outputs]


def _conv_bias_adds(graph: Graph, legalize: bool) -> dict[Node, tuple[Node, object]]:
    """``add(convolution(x, w), broadcast(bias over dim 1))`` → Conv's own bias input:
    {add node: (convolution node, bias value)}.

    Exact: ORT adds the bias to each finished float32 sum, one rounding, as the add does
    (bit-identical on 120 random shapes, 1 and 2 threads, tests/backends/onnx/test_views.py
    keeps checking), and it lets ORT fuse a following Relu into the Conv as well. Only
    float32 convolutions whose result feeds nothing but the add: a widened f16/bf16 Conv
    would add in float32 before the one rounding, where the IR rounds twice.
    """
    users = graph.users()
    found = {}
    for node in graph.nodes:
        if node.op != "add" or not _Views.may_stay_compact(node):
            continue
        for c, bb in (node.inputs, reversed(node.inputs)):
            conv, bcast = c.producer, bb.producer
            if (conv is None or conv.op != "convolution" or bcast is None or bcast.op != "broadcast_in_dim"
                    or c.type.dtype is not DType.float32 or len(users.get(c, ())) != 1 or c in graph.outputs
                    or (legalize and ("convolution", DType.float32) in COMPUTE_IN_WIDER)):
                continue
            bias = bcast.inputs[0]
            if bias.type.rank == 1 and tuple(bcast.attrs["broadcast_dimensions"]) == (1,) and conv not in (
                    f[0] for f in found.values()):
                found[node] = (conv, bias)
                break
    return found


class _Views:
    """Broadcasts left unexpanded: ONNX's elementwise ops broadcast numpy-style themselves.

    ``broadcast_in_dim`` becomes only a Reshape to its view (size-1 dims where it
    broadcasts), and an elementwise node whose operands are such views computes on the
    broadcast of their shapes, so ``x * 2.0`` reads no expanded tensor of 2.0s and
    ``exp(bias)`` runs once per bias element. Anything else gets the full tensor (one
    Expand per value, made on first need). Static shapes without zero sizes take part, and
    with symbolic sizes the broadcasts and the binary ops that are one ONNX op
    (:data:`_COMPACT_WHEN_SYMBOLIC`): a symbol may be 0 at run time, where ORT's binary ops
    broadcast as numpy does (tested) but its Expand gives 1 (``Emitter.expand`` cuts it back).
    A service's varying batch then adds a bias [N] to [B, N] with no Expand of it to B rows.
    """

    def __init__(self, em: Emitter, legalize: bool):
        self.em = em
        self.legalize = legalize
        self.shape_of: dict[str, tuple[int, ...]] = {}  # ONNX name → its shape, where smaller than the IR value's
        self.expanded: dict[str, str] = {}

    @staticmethod
    def may_stay_compact(node: Node) -> bool:
        values = (*node.inputs, *node.outputs)
        if any(v.type.dtype.is_complex or 0 in v.type.shape for v in values):
            return False
        return all(v.type.is_static for v in values) or node.op in _COMPACT_WHEN_SYMBOLIC

    def full(self, value, name: str) -> str:
        """``name`` at the IR value's full shape."""
        if name not in self.shape_of:
            return name
        if name not in self.expanded:
            dtype = value.type.dtype
            # ORT has no bfloat16 Expand: Cast around it (exact)
            wide = COMPUTE_IN_WIDER.get(("broadcast_in_dim", dtype)) if self.legalize else None
            x = name if wide is None else self.em.cast(name, wide)
            x = self.em.expand(x, self.shape_of[name], value.type.shape)
            self.expanded[name] = x if wide is None else self.em.cast(x, dtype)
        return self.expanded[name]

    def broadcast(self, node: Node, x: str) -> str:
        shape, dims = node.attrs["shape"], node.attrs["broadcast_dimensions"]
        view = [1] * len(shape)
        for i, d in enumerate(dims):
            view[d] = node.inputs[0].type.shape[i]
        ctx = OnnxNodeContext(node.attrs, (node.inputs[0].type,), (node.outputs[0].type,), em=self.em,
                              op_name=node.op)
        if view[len(view) - node.inputs[0].type.rank:] == list(node.inputs[0].type.shape):
            # Only leading size-1 dims added (a bias [N] as [1, N], a scalar): ONNX broadcasting
            # aligns shapes on the right and adds those itself, so the view is the operand as it
            # is, one Reshape fewer per bias (a decode step's per-node cost is ~1 µs in ORT).
            view = view[len(view) - node.inputs[0].type.rank:]
        name = reshape_to(ctx, x, view, node.inputs[0].type.shape)
        if tuple(view) != tuple(shape):
            if name == x:
                # The view is the operand itself: a name of its own, so that expanding the
                # broadcast never changes what the operand's name means (it may be an output).
                name = self.em.op("Identity", x)
            self.shape_of[name] = tuple(view)
        return name

    def record(self, node: Node, operands: Sequence[str], outputs: Sequence[str]) -> None:
        """Outputs of an elementwise node are as large as the broadcast of its operands."""
        shape = _broadcast_shapes([self.shape_of.get(name, v.type.shape) for v, name in zip(node.inputs, operands)])
        for v, name in zip(node.outputs, outputs):
            if shape != tuple(v.type.shape):
                self.shape_of[name] = shape


# Ops that stay compact with symbolic sizes: their rules are one ONNX op that broadcasts
# numpy-style (elementwise.BINARY) or a bit-exact Where (select), and read no shapes.
_COMPACT_WHEN_SYMBOLIC = frozenset({"broadcast_in_dim", "select", *BINARY})


def _broadcast_shapes(shapes: Sequence[Sequence]) -> tuple:
    """numpy's broadcast of shapes aligned on the right, with symbols (equal where not 1: the
    IR's operands have equal full shapes, and a view holds only their sizes and 1s)."""
    rank = max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    return tuple(next((d for d in dims if not (isinstance(d, int) and d == 1)), 1) for dims in zip(*padded))


def lower_node(em: Emitter, node: Node, operands: Sequence[str], *, legalize: bool = True) -> list[str]:
    """Emit ``node``; return the ONNX names of its results."""
    where = f" (at {node.loc})" if node.loc else ""
    in_types = tuple(v.type for v in node.inputs)
    out_types = tuple(v.type for v in node.outputs)
    if is_complex_node(in_types, out_types):
        return _lower_complex(em, node, operands, where)
    rule = LOWERINGS.get(node.op)
    if rule is None:
        raise UnsupportedOpError(f"the onnx backend has no rule for {node.op!r}{where} "
                                 f"(backends/onnx/lowering.py); use backend='reference' or 'xla'")
    if all(t.is_static and 0 in t.shape for t in out_types):
        # Every result is empty: several ORT kernels reject empty inputs (LayerNormalization,
        # RMSNormalization, Trilu's Reshape), and there is nothing to compute.
        return [em.const(np.zeros(t.shape, t.dtype.numpy)) for t in out_types]
    opdef = OP_TABLE[node.op]
    first = opdef.dtype_operand  # select's operand 0 is its bool mask: not widened
    dtype = opdef.op_dtype(in_types, out_types)
    native = NATIVE.get(node.op)
    if native is not None and (dtype not in native.dtypes
                               or native.fits is not None and not native.fits(node.attrs, in_types)):
        return _lower_decomposition(em, node, operands, legalize)
    wide = None
    if legalize:
        reason = UNSUPPORTED.get((node.op, dtype))
        if reason is not None:
            raise UnsupportedOpError(f"the onnx backend does not run {node.op!r} on {dtype.short}{where}: "
                                     f"{reason}; use backend='reference' or 'xla', or convert the operand")
        wide = COMPUTE_IN_WIDER.get((node.op, dtype))
    if wide is not None:
        widened = [i >= first and t.dtype is dtype for i, t in enumerate(in_types)]
        casts: dict[str, str] = {}
        for x, w in zip(operands, widened):
            if w and x not in casts:
                casts[x] = em.cast(x, wide)  # one Cast per value, even when it is used twice
        operands = [casts[x] if w else x for x, w in zip(operands, widened)]
        in_types = tuple(t.with_dtype(wide) if w else t for t, w in zip(in_types, widened))
        out_types = tuple(t.with_dtype(wide) if t.dtype is dtype else t for t in out_types)
    semantic = dtype if wide is not None else None
    ctx = OnnxNodeContext(node.attrs, in_types, out_types, em=em, op_name=node.op, loc=where, semantic=semantic,
                          lower_graph=lambda graph, env: lower_graph(em, graph, env, legalize=legalize))
    results = rule(ctx, *operands)
    results = list(results) if isinstance(results, tuple) else [results]
    if wide is not None:
        results = [_narrow(em, r, wide, v.type) if v.type.dtype is dtype else r for r, v in zip(results, node.outputs)]
    return results


def _lower_complex(em: Emitter, node: Node, operands: Sequence, where: str) -> list:
    """Emit a node with a complex operand or result (complex_numbers.py): complex values are Parts."""
    rule = COMPLEX_LOWERINGS.get(node.op)
    if rule is None:
        raise UnsupportedOpError(f"the onnx backend has no complex rule for {node.op!r}{where} "
                                 f"(backends/onnx/complex_numbers.py); use backend='reference' or 'xla'")
    out_types = tuple(v.type for v in node.outputs)
    if all(t.is_static and 0 in t.shape for t in out_types):  # nothing to compute (as lower_node)
        return [empty_parts(em, t) if t.dtype.is_complex else em.const(np.zeros(t.shape, t.dtype.numpy))
                for t in out_types]
    ctx = OnnxNodeContext(node.attrs, tuple(v.type for v in node.inputs), out_types, em=em, op_name=node.op,
                          loc=where)
    return [rule(ctx, *operands)]


def _lower_decomposition(em: Emitter, node: Node, operands: Sequence[str], legalize: bool) -> list[str]:
    """Emit a claimed composite through its decomposition (a dtype or attributes its ONNX op does not cover)."""
    graph = decomposition(node.op, node.attrs, [v.type for v in node.inputs],
                          out_types=[v.type for v in node.outputs], loc=node.loc)
    graph, _ = decompose(graph, claimed=lambda op: op in LOWERINGS and op != node.op)
    env = dict(zip(graph.inputs, operands))
    for inner in graph.nodes:
        env.update(zip(inner.outputs, lower_node(em, inner, [env[v] for v in inner.inputs], legalize=legalize)))
    return [env[v] for v in graph.outputs]


def _narrow(em: Emitter, x: str, wide, t) -> str:
    """Cast a widened result back, rounding once (float64 → f16/bf16 goes through round-to-odd:
    ORT's Cast would round twice, via float32)."""
    if wide is DType.float64 and t.dtype in (DType.float16, DType.bfloat16):
        ctx = OnnxNodeContext({"dtype": t.dtype}, (t.with_dtype(wide),), (t,), em=em, op_name="convert")
        return ELEMENTWISE["convert"](ctx, x)
    return em.cast(x, t.dtype)


def _name_outputs(em: Emitter, names: list[str], targets: list[str]) -> None:
    """Rename each output's producer to its target name; inputs, constants and repeats get an Identity."""
    fixed = {vi.name for vi in em.inputs} | {t.name for t in em.initializers}
    rename: dict[str, str] = {}
    for name, target in zip(names, targets):
        if name in fixed or name in rename:
            em.nodes.append(helper.make_node("Identity", [name], [target]))
        else:
            rename[name] = target
    for node in with_subgraphs(em.nodes):  # a branch may read a value renamed here
        for field in (node.input, node.output):
            for j, name in enumerate(field):
                if name in rename:
                    field[j] = rename[name]
