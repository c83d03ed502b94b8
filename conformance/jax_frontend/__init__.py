"""The JAX frontend under the contract: each translation rule (``frontend/jax/rules``) against
JAX itself.

For every primitive with a rule there is a case set (:mod:`.registry`): dtypes, shapes and
edge values. A case runs the one primitive with ``jax.jit`` on CPU (x64 only where a 64-bit
dtype needs it), captures the same call through parity's JAX capture into IR, evaluates that
graph on the reference interpreter in float64 (the oracle) and measures JAX's result against
it under the bound of the IR op the rule emits (:mod:`.check`). A wrong rule builds a graph
that computes something else, and JAX's own result is then off that graph's oracle: that is
how the planted rule faults of :mod:`.mutants` are caught. Rows ``jax:PRIMITIVE`` in
``parity conform`` (:mod:`.rows`), in the column ``jax/cpu``.

Example::

    >>> from parity.conformance.jax_frontend.registry import cases_of
    >>> from parity.conformance.jax_frontend.check import run_case
    >>> [run_case(c).status for c in cases_of("sub") if c.name == "specials"][:1]
    ['pass']
"""
