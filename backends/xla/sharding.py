"""Sharded graphs on XLA: parity's mesh and partition specs as JAX ``NamedSharding``s.

A graph with a :class:`~parity.ir.sharding.GraphSharding` compiles with ``jax.jit``
``in_shardings``/``out_shardings`` built from its specs, and each ``sharding_constraint``
node lowers to ``lax.with_sharding_constraint``. XLA's SPMD partitioner propagates the
layouts through the rest of the graph and inserts the collectives (all-reduce,
all-gather, reduce-scatter, ...); parity writes none by hand. :func:`collectives`
lists the ones it inserted, read from the compiled HLO text.

The mesh takes the first ``mesh.num_devices`` devices of the platform, in JAX's order
(every process's devices after ``parity.distributed.initialize``). On CPU, simulate
devices with ``XLA_FLAGS=--xla_force_host_platform_device_count=8`` set before JAX starts.

Example::

    >>> collectives('%ar = f32[4]{0} all-reduce(f32[4]{0} %x), to_apply=%add\\n'
    ...             '%ag = f32[8]{0} all-gather-start(f32[2]{0} %y)\\n%d = f32[8]{0} all-gather-done(%ag)')
    {'all-gather': 1, 'all-reduce': 1}
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as JaxSpec

from ...ir.errors import ParityError
from ...ir.graph import Graph
from ...ir.sharding import Mesh, PartitionSpec, spec_problem
from ...ir.types import TensorType

# HLO opcodes of the collectives the SPMD partitioner inserts. Async pairs
# (``all-gather-start``/``-done``) count once, at their start.
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
               "collective-broadcast", "ragged-all-to-all")
_COLLECTIVE = re.compile(r"\s(" + "|".join(COLLECTIVES) + r")(?:-start)?\(")


class ShardedDeviceError(ParityError):
    """The mesh needs more devices than JAX has; the message says how to get them."""


def collectives(hlo_text: str) -> dict[str, int]:
    """The collective ops in compiled HLO text (``compiled.as_text()``): opcode → count."""
    return dict(sorted(Counter(m.group(1) for m in _COLLECTIVE.finditer(hlo_text)).items()))


def constraint_rule(ctx, x):
    """``sharding_constraint``: the spec resolves against the mesh :func:`compile_sharded` sets."""
    return lax.with_sharding_constraint(x, JaxSpec(*ctx.attrs["spec"].entries()))


def jax_mesh(mesh: Mesh, platform: str) -> jax.sharding.Mesh:
    """The JAX mesh over the first ``mesh.num_devices`` devices of ``platform``."""
    devices = jax.devices(platform)
    need = mesh.num_devices
    if len(devices) < need:
        hint = (f" On CPU, simulate devices by setting XLA_FLAGS=--xla_force_host_platform_device_count={need} "
                f"before JAX is imported, or run several processes (parity.distributed.initialize)."
                if platform == "cpu" else "")
        raise ShardedDeviceError(f"the mesh {mesh} needs {need} {platform} devices, but JAX sees {len(devices)}."
                                 f"{hint} Or use a smaller mesh.")
    return jax.sharding.Mesh(np.array(devices[:need]).reshape(mesh.shape), mesh.names)


def named(mesh: jax.sharding.Mesh, spec: PartitionSpec | None) -> NamedSharding:
    """The NamedSharding of a spec; an unspecified (None) input is replicated."""
    return NamedSharding(mesh, JaxSpec(*spec.entries()) if spec is not None else JaxSpec())


def compile_sharded(graph: Graph, fn, platform: str, in_types: Sequence[TensorType], options: dict):
    """``jax.jit(fn)`` lowered and compiled with the graph's shardings (inside x64 mode)."""
    sharding = graph.sharding
    mesh = jax_mesh(sharding.mesh, platform)
    for k, (t, spec) in enumerate(zip(in_types, sharding.inputs)):
        problem = spec is not None and spec_problem(spec, t, sharding.mesh)
        if problem:
            raise ParityError(f"input {k} of @{graph.name} ({t}) cannot be sharded as {spec}: {problem}")
    # fn takes the run-time zero last (backend.RUN_TIME_ZERO), replicated.
    ins = (*(named(mesh, s) for s in sharding.inputs), named(mesh, None))
    # None lets the partitioner choose an unspecified output's layout.
    outs = [None if s is None else named(mesh, s) for s in sharding.outputs]  # fn returns a list
    structs = [jax.ShapeDtypeStruct(t.shape, t.dtype.numpy, sharding=s) for t, s in zip(in_types, ins)]
    structs.append(jax.ShapeDtypeStruct((), np.int32, sharding=ins[-1]))
    with jax.enable_x64(True), jax.set_mesh(mesh):
        lowered = jax.jit(fn, in_shardings=ins, out_shardings=outs).lower(*structs)
        return lowered.compile(options)


def put_inputs(compiled, arrays: Sequence[Any]) -> list[Any]:
    """Host arrays as global arrays laid out as the executable expects (any number of processes).

    Every process passes the same full arrays; each keeps the shards of its own devices.
    """
    placed = []
    for array, sharding in zip(arrays, compiled.input_shardings[0]):
        if sharding is None:  # an input the graph never reads (jit prunes it): passed as it is
            placed.append(array)
        elif isinstance(array, jax.Array):
            placed.append(array if array.sharding == sharding else jax.device_put(array, sharding))
        else:
            host = np.asarray(array)
            placed.append(jax.make_array_from_callback(host.shape, sharding, lambda index, h=host: h[index]))
    return placed


def to_host(output: jax.Array) -> np.ndarray:
    """The whole value of a (possibly multi-process) sharded result, on every process."""
    if output.is_fully_addressable:
        return np.asarray(output)
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(output, tiled=True))
