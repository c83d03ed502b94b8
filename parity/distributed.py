"""Several processes, one mesh: ``parity.distributed.initialize`` over ``jax.distributed``.

Every process runs the same program. After :func:`initialize`, JAX sees the devices of
all processes, so a mesh of ``num_processes × local devices`` spans them and
``parity.compile(..., backend="xla", mesh=...)`` runs one sharded step across them;
each process passes the same full inputs and gets the full results back.

Example (two processes on one machine, 4 simulated CPU devices each)::

    # process i of 2, started with XLA_FLAGS=--xla_force_host_platform_device_count=4
    import parity
    parity.distributed.initialize("127.0.0.1:12345", num_processes=2, process_id=i)
    mesh = parity.Mesh({"data": 8})
"""

from __future__ import annotations

from collections.abc import Sequence

from .backends.registry import import_extra

__all__ = ["initialize", "is_initialized", "process_count", "process_index", "shutdown"]


def initialize(coordinator_address: str, num_processes: int, process_id: int, *,
               local_device_ids: int | Sequence[int] | None = None, timeout_s: int = 300) -> None:
    """Join the group of ``num_processes`` processes coordinated at ``coordinator_address``.

    Process 0 serves the coordinator at ``host:port``; the others connect to it. Call it
    once per process, before anything else uses JAX devices. Raises after ``timeout_s``
    seconds if the group does not assemble. (A thin wrapper of ``jax.distributed.initialize``.)
    """
    jax = _jax()
    jax.distributed.initialize(coordinator_address=coordinator_address, num_processes=num_processes,
                               process_id=process_id, local_device_ids=local_device_ids,
                               initialization_timeout=timeout_s)


def is_initialized() -> bool:
    """Whether :func:`initialize` has run in this process (and :func:`shutdown` has not)."""
    jax = _jax()
    return jax.distributed.is_initialized()


def process_index() -> int:
    """This process's id in the group (0 when not distributed)."""
    jax = _jax()
    return jax.process_index()


def process_count() -> int:
    """The number of processes in the group (1 when not distributed)."""
    jax = _jax()
    return jax.process_count()


def shutdown() -> None:
    """Leave the group (waits for the others at the coordinator)."""
    jax = _jax()
    jax.distributed.shutdown()


def _jax():
    """jax, or an error naming ``pip install 'parity[xla]'`` (it is the xla backend's stack)."""
    return import_extra("jax", "xla", "parity.distributed")
