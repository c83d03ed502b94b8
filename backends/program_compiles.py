"""Whether a backend compile is for a user's program, which a later process compiles again.

A frontend's compile (``parity.compile``, ``parity.jax.jit``) is for a program that the user
runs again in the next process; a conformance case's graph is compiled once and never again.
A backend whose compiler keeps caches across processes may fill them only for the first kind:
the inductor backend's static graphs fill Inductor's FX graph cache only then, since filling
costs each compile ~7% (docs/backends/inductor.md). The frontend marks its compiles with
:func:`for_a_program`; a backend reads :func:`compiling_for_a_program` in the thread that asks
for the compile (a context variable: a compile thread of the backend's own does not see it).

Example::

    >>> compiling_for_a_program()
    False
    >>> with for_a_program():
    ...     compiling_for_a_program()
    True
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

_FOR_A_PROGRAM = contextvars.ContextVar("parity_compiling_for_a_program", default=False)


@contextlib.contextmanager
def for_a_program() -> Iterator[None]:
    """Backend compiles inside this block are for a user's program (a frontend's)."""
    token = _FOR_A_PROGRAM.set(True)
    try:
        yield
    finally:
        _FOR_A_PROGRAM.reset(token)


def compiling_for_a_program() -> bool:
    """Whether the compile asked for now is a frontend's, for a user's program."""
    return _FOR_A_PROGRAM.get()
