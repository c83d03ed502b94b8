"""Test-only plugin backends that compile several op × dtype bundles as one graph
(``compile_batch``), and misbehave only in such a batch: a graph holding more than one
op's nodes. ``batching`` is right everywhere; ``batch_wrong`` doubles a batch's first float
output (a wrong answer for one case that the bundle alone gets right); ``batch_raises``
cannot compile a batch; ``batch_segfaults`` segfaults running one. Each records the op
sets of the graphs it compiles (``COMPILED``; and, from workers, in the file
``$BATCHING_COMPILED_LOG`` names). Loaded in workers with
``--plugin batching_backend:batch_segfaults`` (this folder on the import path).
"""

import ctypes
import os

import numpy as np

from parity.backends.reference import ReferenceBackend

COMPILED: list = []  # the ops of each graph compiled, in this process


def _is_batch(graph) -> bool:
    return len({n.op for n in graph.nodes} - {"broadcast_in_dim"}) > 1


class Batching(ReferenceBackend):
    """The reference backend, three op × dtype bundles to a compilation."""

    name = "batching"
    compile_batch = 3
    fault = None

    def compile(self, graph, device: str = "cpu"):
        COMPILED.append(frozenset(n.op for n in graph.nodes))
        if os.environ.get("BATCHING_COMPILED_LOG"):  # a worker's compilations, seen from the test's process
            with open(os.environ["BATCHING_COMPILED_LOG"], "a") as f:
                f.write(" ".join(sorted({n.op for n in graph.nodes} - {"broadcast_in_dim"})) + "\n")
        batch = _is_batch(graph)
        if batch and self.fault == "raises":
            raise RuntimeError("planted: this backend cannot compile a batch")
        run = super().compile(graph, device)
        if not batch or self.fault is None:
            return run

        def faulty(*arrays):
            outputs = run(*arrays)
            if self.fault == "segfaults":
                ctypes.string_at(0)  # reads address 0: SIGSEGV
            first = next(i for i, o in enumerate(outputs) if np.asarray(o).dtype.kind == "f")
            outputs[first] = np.asarray(outputs[first]) * 2
            return outputs

        return faulty


def _named(name: str, fault: str | None) -> Batching:
    return type(name.title().replace("_", ""), (Batching,), {"name": name, "fault": fault})()


# The plugins, by the attribute ``--plugin batching_backend:ATTR`` names (factories).
def batching():
    return _named("batching", None)


def batch_wrong():
    return _named("batch_wrong", "wrong")


def batch_raises():
    return _named("batch_raises", "raises")


def batch_segfaults():
    return _named("batch_segfaults", "segfaults")
