"""An IR graph from the JAX frontend on a backend by name, and its outputs back as ``jax.Array``s.

The graph takes the torch frontend's path to a backend (frontend/executables.py): composites
the backend does not claim expanded, ``backend.compile`` at the precision asked for with the
user's ``backend_options``, and the executable cache, in this process and on disk (a second
process loads it). A node the backend cannot run is refused before compiling, naming the
user's JAX line. A backend that ``takes_dlpack`` gets NumPy arrays, which speak DLPack (as
``parity conform`` hands them); JAX arguments have no parameters to bind once.

Example::

    >>> import jax.numpy as jnp, numpy as np
    >>> from parity.frontend.jax import capture
    >>> graph = capture(lambda x: x * 2.0, jnp.ones(2))
    >>> run = compile_graph("reference", graph, "cpu", Precision.EXACT)
    >>> [o.tolist() for o in to_jax(run(np.ones(2, np.float32)))]
    [[2.0, 2.0]]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ...backends.base import Backend, declined_by_predicate
from ...backends.registry import get_backend
from ...backends.runtime import RuntimeRequest
from ...ir.errors import UnsupportedOpError
from ...ir.graph import Graph
from ...ir.ops import node_dtype
from ...ir.precision import Precision
from ..executables import compiled_executable, prepare
from .unrolled import warn_unrolled_loops


def check_claims(backend: Backend, graph: Graph) -> None:
    """Refuse ``graph`` (prepared for ``backend``), naming the user's line, at its first node
    ``backend`` does not claim in its dtype."""
    claims = backend.claims()
    for node in graph.nodes:
        claim = claims.get(node.op)
        dtype = node_dtype(node)
        declined = declined_by_predicate(claims, node)
        if claim is None or dtype not in claim.dtypes or declined is not None:
            where = f"{node.loc}: " if node.loc else ""
            why = f" (its claim's predicate declines this node: {declined})" if declined is not None else ""
            raise UnsupportedOpError(f"{where}the {backend.name} backend does not run {node.op} on {dtype.short}{why}; "
                                     "choose another backend (backend='xla' runs every IR primitive)")
        for value in node.attrs.values():
            if isinstance(value, Graph):  # a loop the backend runs rolled: its body runs on it too
                check_claims(backend, value)


def compile_graph(name: str, graph: Graph, device: str, precision: Precision, *, cache_dir: str | None = None,
                  backend_options: Mapping | None = None):
    """``graph`` compiled on the backend ``name`` (an executable on NumPy arrays), from the
    executable cache where it is there; ``backend_options`` resolved already (runtime_options)."""
    backend = get_backend(name)
    warn_unrolled_loops(graph, backend)
    prepared = prepare(graph, backend)
    check_claims(backend, prepared)
    return compiled_executable(prepared, backend, device, cache_dir, precision=precision,
                               request=RuntimeRequest(dict(backend_options or {})))


# NumPy arrays become jax.Arrays in one call of a jitted identity: JAX's C++ dispatch moves
# each argument in about a microsecond, where jnp.asarray / jax.device_put take tens of
# microseconds an array (measured: 6 small arrays 86 µs against 570 µs). XLA copies a
# parameter it returns (nothing donated), so the result never aliases the backend's buffer.
_ON_DEVICE = jax.jit(lambda *arrays: arrays)


def to_jax(outputs: Sequence) -> list[jax.Array]:
    """A backend's outputs as ``jax.Array``s: NumPy arrays copied in (all in one call), torch
    tensors (inductor, triton) through DLPack without importing torch."""
    converted = [_to_jax(o) for o in outputs]
    numpy_at = [i for i, o in enumerate(converted) if isinstance(o, np.ndarray)]
    if numpy_at:
        for i, array in zip(numpy_at, _ON_DEVICE(*(converted[i] for i in numpy_at))):
            converted[i] = array
    return converted


def _to_jax(output) -> jax.Array | np.ndarray:
    """``output`` as a jax.Array, or as a NumPy array that :func:`to_jax` moves with the rest."""
    if isinstance(output, (jax.Array, np.ndarray)):
        return output
    try:
        return jax.dlpack.from_dlpack(output)
    except (TypeError, RuntimeError, BufferError):  # a dtype or layout DLPack does not carry
        return np.asarray(output)


def as_numpy(leaves: Sequence) -> list[np.ndarray]:
    """The call's array leaves as NumPy arrays (views of CPU jax.Arrays, no copy), in the dtypes
    jax.jit would trace them with (a Python float is float32, float64 only under x64)."""
    arrays = []
    for leaf in leaves:
        array = np.asarray(leaf if isinstance(leaf, (jax.Array, np.ndarray)) else jnp.asarray(leaf))
        canonical = jax.dtypes.canonicalize_dtype(array.dtype)
        arrays.append(array if array.dtype == canonical else array.astype(canonical))
    return arrays
