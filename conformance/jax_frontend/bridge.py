"""The one door from conformance into the JAX frontend: capture, the rule table, the traced
primitives. Nothing else in conformance imports ``parity.frontend.jax``.

Example::

    >>> import jax.numpy as jnp
    >>> sorted(primitives_reached(lambda x: jnp.exp(x) * 2.0, [jnp.ones(2)]))
    ['exp', 'mul']
"""

from __future__ import annotations

import importlib.util


def jax_available() -> bool:
    return importlib.util.find_spec("jax") is not None


def capture(fun, arrays):
    """The IR graph parity.jax.jit would compile for ``fun(*arrays)``."""
    from ...frontend.jax import capture as capture_ir

    return capture_ir(fun, *arrays)


def rule_table() -> dict:
    """The translation table (primitive name → rule), the live dict: mutants patch it."""
    from ...frontend.jax.rules import TABLE

    return TABLE


def primitives_reached(fun, arrays) -> set[str]:
    """Every primitive of ``fun(*arrays)``'s jaxpr, inside inlined calls too."""
    from ...frontend.jax.compat import body_of, trace

    found: set[str] = set()

    def walk(program):
        for eqn in program.eqns:
            found.add(eqn.primitive)
            body = body_of(eqn)
            if body is not None:
                walk(body)

    walk(trace(fun, list(arrays)).body)
    return found
