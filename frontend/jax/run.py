"""An IR graph from the JAX frontend on a backend by name, and its outputs back as ``jax.Array``s.

The graph reaches the backend as conformance hands it one: composites the backend does not
claim expanded into primitives, then ``compile_at`` at the precision asked for. A node the
backend cannot run is refused before compiling, naming the user's JAX line.

Example::

    >>> import jax.numpy as jnp, numpy as np
    >>> from parity.frontend.jax import capture
    >>> graph = capture(lambda x: x * 2.0, jnp.ones(2))
    >>> run = compile_graph("reference", graph, "cpu", Precision.EXACT)
    >>> [o.tolist() for o in to_jax(run(np.ones(2, np.float32)))]
    [[2.0, 2.0]]
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ...backends.base import Backend, compile_at
from ...backends.registry import get_backend
from ...ir.errors import UnsupportedOpError
from ...ir.graph import Graph
from ...ir.ops import node_dtype
from ...ir.passes import decompose
from ...ir.precision import Precision


def for_backend(backend: Backend, graph: Graph) -> Graph:
    """``graph`` with the composites ``backend`` does not claim expanded; refused (naming the
    user's line) at the first node it does not claim in its dtype."""
    claims = backend.claims()
    lowered, _ = decompose(graph, claimed=lambda op: op in claims)
    for node in lowered.nodes:
        claim = claims.get(node.op)
        dtype = node_dtype(node)
        if claim is None or dtype not in claim.dtypes:
            where = f"{node.loc}: " if node.loc else ""
            raise UnsupportedOpError(f"{where}the {backend.name} backend does not run {node.op} on {dtype.short}; "
                                     "choose another backend (backend='xla' runs every IR primitive)")
    return lowered


def compile_graph(name: str, graph: Graph, device: str, precision: Precision):
    backend = get_backend(name)
    return compile_at(backend, for_backend(backend, graph), device, precision)


def to_jax(outputs: Sequence) -> list[jax.Array]:
    """A backend's outputs as ``jax.Array``s: NumPy arrays copied in, torch tensors (inductor,
    triton) through DLPack without importing torch."""
    return [_to_jax(o) for o in outputs]


def _to_jax(output) -> jax.Array:
    if isinstance(output, jax.Array):
        return output
    if isinstance(output, np.ndarray):
        return jnp.asarray(output)
    try:
        return jax.dlpack.from_dlpack(output)
    except (TypeError, RuntimeError, BufferError):  # a dtype or layout DLPack does not carry
        return jnp.asarray(np.asarray(output))


def as_numpy(leaves: Sequence) -> list[np.ndarray]:
    """The call's array leaves as NumPy arrays (views of CPU jax.Arrays, no copy), in the dtypes
    jax.jit would trace them with (a Python float is float32, float64 only under x64)."""
    arrays = []
    for leaf in leaves:
        array = np.asarray(leaf if isinstance(leaf, (jax.Array, np.ndarray)) else jnp.asarray(leaf))
        canonical = jax.dtypes.canonicalize_dtype(array.dtype)
        arrays.append(array if array.dtype == canonical else array.astype(canonical))
    return arrays
