"""Test-only plugin backends that fail the way native runtimes do, for one op only.

Each is the reference backend under another name, except that running a graph holding
``neg`` segfaults (through ctypes), aborts, calls ``os._exit``, loops forever, or
allocates far past any worker memory cap. ``flaky`` segfaults only the first time (a
marker file named by ``PARITY_TEST_FLAKY_MARKER`` remembers it); ``slow`` is right but
pauses on every graph; ``segfaults_on_matmul`` segfaults on a graph holding ``dot_general``
(a zoo model's linear layer; no random row and no ``neg`` case holds one); ``add_off`` never
crashes but answers wrongly: its float ``add`` results are scaled by 1 + 2**-8 (fuzzer
findings to compare). Loaded in workers with
``--plugin faulty_backend:segfault`` (this folder on the import path).
"""

import ctypes
import functools
import os
import pathlib
import time

from parity.backends.reference import ReferenceBackend

FAULTY_OP = "neg"


def _segfault():
    ctypes.string_at(0)  # reads address 0: SIGSEGV


def _abort():
    os.abort()


def _exit():
    os._exit(7)


def _hang():
    while True:
        time.sleep(0.05)


def _allocate():
    blocks = [bytearray(2**30) for _ in range(64)]  # 64 GiB, touched by bytearray's zeroing
    return len(blocks)


def _flaky():
    marker = pathlib.Path(os.environ["PARITY_TEST_FLAKY_MARKER"])
    if not marker.exists():
        marker.write_text("crashed once")
        _segfault()


def _pause():
    time.sleep(0.4)


class Faulty(ReferenceBackend):
    """The reference backend, with ``fault()`` called when a graph holding ``op`` (or, with
    ``every_op``, any graph) runs."""

    def __init__(self, name: str, fault, every_op: bool = False, op: str = FAULTY_OP):
        super().__init__()
        self.name, self.fault, self.every_op, self.op = name, fault, every_op, op

    def compile(self, graph, device: str = "cpu"):
        run = super().compile(graph, device)
        if not self.every_op and all(n.op != self.op for n in graph.nodes):
            return run

        def faulty(*arrays):
            self.fault()
            return run(*arrays)

        return faulty


# The plugins, by the attribute ``--plugin faulty_backend:ATTR`` names (factories: called once per process).
segfault = functools.partial(Faulty, "segfaults", _segfault)
aborts = functools.partial(Faulty, "aborts", _abort)
exits = functools.partial(Faulty, "exits", _exit)
hangs = functools.partial(Faulty, "hangs", _hang)
allocates = functools.partial(Faulty, "allocates", _allocate)
flaky = functools.partial(Faulty, "flaky", _flaky)
segfaults_on_matmul = functools.partial(Faulty, "segfaults_on_matmul", _segfault, op="dot_general")
slow = functools.partial(Faulty, "slow", _pause, every_op=True)  # right, but slow: a run to interrupt


def add_off():
    from perturbed import Perturbed  # this folder is on the import path wherever the plugin loads

    return Perturbed("add_off", {"add": 1 + 2**-8})
