"""The JAX frontend: a traced JAX program (a jaxpr) → parity IR, run on any backend.

What :func:`parity.jax.jit` runs. ``compat`` holds every contact with JAX's internals;
``translate`` walks the jaxpr through the rule table in ``rules/``; ``run`` compiles the
IR graph on a backend by name; ``auto`` races the installed backends; ``export`` writes the
graph as a file (:func:`parity.jax.export`). This package never
imports torch (a JAX user need not have it loaded), nor any specific backend.

Example::

    >>> import jax.numpy as jnp
    >>> from parity.frontend.jax import capture
    >>> capture(lambda x: jnp.exp(x) * 2.0, jnp.ones(2)).op_counts()
    {'exp': 1, 'constant': 1, 'broadcast_in_dim': 1, 'mul': 1}
"""

from __future__ import annotations

__all__ = ["capture"]


def capture(fun, *args):
    """The IR graph of ``fun(*args)`` (arrays, flat): what parity.jax.jit compiles."""
    from .compat import trace
    from .translate import jaxpr_to_ir

    return jaxpr_to_ir(trace(fun, args), getattr(fun, "__name__", "jax_fn").replace("<lambda>", "lambda"))
