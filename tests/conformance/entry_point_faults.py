"""Test-only backend plugins that an entry point registers, as an out-of-tree plugin is
(tests/conformance/test_isolation.py writes their dist-info into a folder on the import
path). Each is the reference backend under another name, failing natively on a graph that
holds ``neg``: ``ep_segfaults`` reads address 0 (``ep_segfaults_on_matmul`` on a graph holding
``dot_general`` instead), ``ep_hangs`` sleeps forever when an input
has :data:`HANG_SIZE` elements (only ``neg[f32]:full_range`` of the quick neg cases), and
``ep_hangs_loading`` never returns its claims; ``ep_hangs`` also takes :data:`LOAD_SECONDS` to load, as a runtime slow to import does;
``ep_allocates`` asks for 1 GiB more than an isolated worker's memory cap (an address-space
reservation: it touches nothing, so without the cap it succeeds and the case passes).

With ``PARITY_TEST_BUNDLE_LOG`` set, every run of a ``neg`` graph appends
``NAME INPUTS`` (its backend, its number of inputs: one per bundled case) to that file.
"""

import ctypes
import os
import time

import numpy as np

from parity.backends.reference import ReferenceBackend
from parity.conformance.isolation import default_memory_mb

HANG_SIZE = 64
LOAD_SECONDS = 1.5  # past any quick bundle's limit at the tests' timeout_scale of 0.03 (1.1 s)


class _FailsOnNeg(ReferenceBackend):
    op = "neg"

    def fail(self, arrays) -> None:
        raise NotImplementedError

    def compile(self, graph, device: str = "cpu"):
        run = super().compile(graph, device)
        if all(n.op != self.op for n in graph.nodes):
            return run

        def failing(*arrays):
            log = os.environ.get("PARITY_TEST_BUNDLE_LOG")
            if log:
                with open(log, "a") as f:
                    f.write(f"{self.name} {len(arrays)}\n")
            self.fail(arrays)
            return run(*arrays)

        return failing


class Segfaults(_FailsOnNeg):
    name = "ep_segfaults"

    def fail(self, arrays) -> None:
        ctypes.string_at(0)


class SegfaultsOnMatmul(Segfaults):
    """Segfaults on a graph holding ``dot_general``: a zoo model's linear layer (no random row has one)."""

    name, op = "ep_segfaults_on_matmul", "dot_general"


class Hangs(_FailsOnNeg):
    name = "ep_hangs"

    def __init__(self):
        super().__init__()
        time.sleep(LOAD_SECONDS)  # a runtime slow to import: no case's time limit may count it

    def fail(self, arrays) -> None:
        while any(np.asarray(a).size == HANG_SIZE for a in arrays):
            time.sleep(0.05)


class Allocates(_FailsOnNeg):
    name = "ep_allocates"

    def fail(self, arrays) -> None:
        reserved = np.empty((default_memory_mb() + 1024) * 2**20, np.uint8)
        del reserved


class HangsLoading(ReferenceBackend):
    """Never finishes saying what it claims (a runtime that hangs enumerating its kernels)."""

    name = "ep_hangs_loading"

    def claims(self):
        log = os.environ.get("PARITY_TEST_BUNDLE_LOG")
        if log:
            with open(log, "a") as f:
                f.write(f"{self.name} claims\n")
        while True:
            time.sleep(0.05)


ENTRY_POINTS = {"ep_segfaults": "Segfaults", "ep_hangs": "Hangs", "ep_allocates": "Allocates",
                "ep_segfaults_on_matmul": "SegfaultsOnMatmul", "ep_hangs_loading": "HangsLoading"}


def write_dist_info(folder) -> None:
    """An installed distribution's metadata in ``folder``: its entry points name these plugins."""
    info = folder / "parity_fault_plugins-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: parity-fault-plugins\nVersion: 0.1\n")
    lines = [f"{name} = entry_point_faults:{attr}" for name, attr in ENTRY_POINTS.items()]
    (info / "entry_points.txt").write_text("[parity.backends]\n" + "\n".join(lines) + "\n")
