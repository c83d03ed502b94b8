"""The xla backend's half of the disk cache: XLA executables serialized by JAX.

An entry is the compiled executable itself (``jax.experimental.serialize_executable``),
so a warm process neither traces, lowers nor compiles: loading hands the executable to
the backend's in-process cache under the key :meth:`XlaBackend._compiled` looks up, and
the :class:`~.backend.XlaExecutable` built next finds it there. Only static, unsharded
graphs are persisted (a symbolic graph compiles per input size, at call time).
"""

from __future__ import annotations

import pickle

import jax
from jax.experimental.serialize_executable import deserialize_and_load, serialize

from ...ir.precision import Precision
from ..base import compile_at
from .backend import XlaExecutable, executable_key, jax_device


class XlaPersister:
    native_code = True  # machine code for this CPU, its loops split for this CPU count

    def build(self, backend, graph, device: str, precision: Precision = Precision.EXACT):
        executable: XlaExecutable = compile_at(backend, graph, device, precision)
        if graph.sharding is not None or executable._last is None:
            return executable, None
        try:
            blob, in_tree, out_tree = serialize(executable._last[1])
        except Exception:  # JAX cannot serialize every executable: this one runs, uncached
            # An XLA:CPU executable with a sort that has already run (the backend's in-process
            # cache hands it back when another function compiled the same graph without a cache
            # directory) raises "UNIMPLEMENTED: `LessThan` is not serializable"; a fresh compile
            # of it serializes. Met on Mixtral's top-k under backend="auto" after its xla test.
            return executable, None
        return executable, pickle.dumps((blob, in_tree, out_tree))

    def load(self, backend, graph, device: str, payload: bytes, precision: Precision = Precision.EXACT):
        blob, in_tree, out_tree = pickle.loads(payload)
        target = jax_device(device)
        with jax.enable_x64(True):
            compiled = deserialize_and_load(blob, in_tree, out_tree, backend=target.platform,
                                            execution_devices=[target])
        key = executable_key(graph.content_hash(), device, graph.input_types, precision)
        backend._executables.get_or_build(key, lambda: compiled)
        return compile_at(backend, graph, device, precision)
