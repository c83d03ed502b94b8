"""A traced JAX program (frontend/jax/compat.py) → an ``ir.Graph``.

The walk is JAX's own ``eval_jaxpr``: an environment from jaxpr variables to IR values,
one rule per equation from the explicit table in ``rules/``. Calls (``jit``,
``custom_jvp_call``, ``custom_vjp_call``, ``remat``) are inlined; their equations keep
their own source lines. Every node carries the user's line; an equation parity cannot
translate raises a :class:`~parity.frontend.jax.errors.JaxCaptureError` at that line.

Example::

    >>> import jax.numpy as jnp
    >>> from parity.frontend.jax.compat import trace
    >>> graph = jaxpr_to_ir(trace(lambda x: jnp.tanh(x) + 1.0, [jnp.zeros(3)]), "f")
    >>> graph.op_counts()
    {'tanh': 1, 'constant': 1, 'broadcast_in_dim': 1, 'add': 1}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ...ir.builder import GraphBuilder
from ...ir.errors import TypeRuleError
from ...ir.graph import Graph, SourceLoc, Value
from ...ir.passes.dce import dce
from ...ir.types import TensorType
from .compat import Eqn, Operand, SubProgram, Traced, body_of, is_dropped
from .context import JaxContext, Refused
from .errors import EffectNotSupported, SymbolicSizeNotSupported, TranslationBug, UntranslatedPrimitive
from .folding import folded
from .gaps import GAPS
from .rules import KEY_NATIVE, TABLE
from .rules.keys import on_key_data


def jaxpr_to_ir(traced: Traced, name: str) -> Graph:
    """The IR graph of ``traced``: its flat inputs in order, its flat outputs in order."""
    b = GraphBuilder(name)
    inputs = [b.input(t) for t in traced.in_types]
    outputs = inline_program(b, traced.body, inputs)
    graph, _ = dce(b.build(outputs))
    return graph


def program_graph(program: SubProgram, in_types: Sequence[TensorType], name: str,
                  outer: SourceLoc | None = None) -> Graph:
    """``program`` as a graph of its own on inputs of ``in_types`` (a loop's body): its
    equations keep their lines, and one JAX recorded no line for takes ``outer``."""
    b = GraphBuilder(name)
    inputs = [b.input(t) for t in in_types]
    graph, _ = dce(b.build(inline_program(b, program, inputs, outer)))
    return graph


def inline_program(b: GraphBuilder, program: SubProgram, inputs: Sequence[Value],
                   outer: SourceLoc | None = None) -> list[Value]:
    """Emit ``program``'s equations into ``b`` on ``inputs``; return its output values. An
    equation JAX recorded no user line for (inside a library's jitted helper) takes ``outer``,
    the line of the call that holds it."""
    env: dict = {}
    for var, value in program.consts:
        env[var] = b.constant(value)
    for var, value in zip(program.invars, inputs, strict=True):
        env[var] = value
    for eqn in program.eqns:
        if eqn.loc is None and outer is not None:
            eqn = replace(eqn, loc=outer)
        results = _translate_eqn(b, eqn, [_read(b, env, o) for o in eqn.operands])
        for var, value in zip(eqn.results, results, strict=True):
            if not is_dropped(var):
                env[var] = value
    return [_read(b, env, o) for o in program.outvars]


def _read(b: GraphBuilder, env: dict, operand: Operand) -> Value:
    if operand.literal is not None:
        return b.constant(operand.literal)
    return env[operand.var]


def _constant_of(value: Value):
    """The array a constant node holds, else None."""
    node = value.producer
    return np.asarray(node.attrs["value"]) if node is not None and node.op == "constant" else None


def _translate_eqn(b: GraphBuilder, eqn: Eqn, inputs: list[Value]) -> list[Value]:
    body = body_of(eqn)
    if body is not None:
        return inline_program(b, body, inputs, eqn.loc)
    rule = TABLE.get(eqn.primitive)
    if eqn.has_effects and rule is None:
        raise EffectNotSupported(eqn.primitive, eqn.loc)
    if rule is None:
        raise UntranslatedPrimitive(eqn.primitive, eqn.loc, *GAPS.get(eqn.primitive, ()))
    with b.location(eqn.loc):
        try:
            if eqn.on_keys and eqn.primitive not in KEY_NATIVE:
                eqn = on_key_data(eqn)
            ctx = JaxContext(b, eqn, lambda program, values: inline_program(b, program, values, eqn.loc),
                             lambda program, types, name: program_graph(program, types, name, eqn.loc))
            result = rule(ctx, *inputs)
        except Refused as exc:
            value = folded(eqn.primitive, [_constant_of(v) for v in inputs], eqn.params)
            if value is None:
                raise UntranslatedPrimitive(eqn.primitive, eqn.loc, str(exc)) from None
            result = b.constant(value.astype(eqn.result_types[0].dtype.numpy))
        except TypeRuleError as exc:
            if all(t.is_static for t in (*(v.type for v in inputs), *eqn.result_types)):
                raise  # a rule's bug, not a limit of the IR's symbolic sizes
            raise SymbolicSizeNotSupported(eqn.primitive, eqn.loc, exc.args[0] if exc.args else str(exc)) from None
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    for value, expected in zip(results, eqn.result_types, strict=True):
        if value.type != expected:  # a rule's bug, caught where it happens
            raise TranslationBug(f"the rule for `{eqn.primitive}` at {eqn.loc} built {value.type}, JAX's result "
                                 f"is {expected}")
    return results
