"""Workers split the machine's CPUs (conformance/worker.py ``pin_to_slice``): each runs on
its slice, so the runtimes' thread pools, sized by the CPU mask, add up to the machine
instead of N times it; and the controller hands each worker its slot, a replacement the
dead worker's."""

import os
import subprocess
import sys

from parity.conformance import engine as engines
from parity.conformance import runner
from parity.conformance.controller import WorkerOptions
from parity.conformance.worker import cpu_slice
from parity.ir.dtypes import DType

from .test_workers import plugins_importable  # noqa: F401 - the fixture

# One interpreter imports pin_to_slice once; each slice is pinned in a child forked from it (a
# fresh process, as a worker is, without paying parity's import once per slice).
PIN_AND_REPORT = """
import os, sys, threading
from parity.conformance.worker import pin_to_slice

def report(slot, slots):
    started, done = threading.Event(), threading.Event()
    early = threading.Thread(target=lambda: (started.set(), done.wait()))  # a thread that exists before pinning
    early.start(); started.wait()
    pin_to_slice(slot, slots)
    late = []
    starts_later = threading.Thread(target=lambda: late.append(sorted(os.sched_getaffinity(0))))
    starts_later.start(); starts_later.join()
    print(sorted(os.sched_getaffinity(0)), sorted(os.sched_getaffinity(early.native_id)), late[0], flush=True)
    done.set(); early.join()

for pair in sys.argv[1:]:
    slot, slots = map(int, pair.split(","))
    pid = os.fork()
    if pid == 0:
        report(slot, slots)
        os._exit(0)
    assert os.waitpid(pid, 0)[1] == 0, pair
"""


def _pinned(pairs: list[tuple[int, int]]) -> list[str]:
    """What each (slot, slots) pinning gives: the process's CPUs, an earlier thread's, a later one's."""
    args = [f"{slot},{slots}" for slot, slots in pairs]
    out = subprocess.run([sys.executable, "-c", PIN_AND_REPORT, *args], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def test_a_worker_pins_every_thread_it_has_and_every_one_it_starts_to_its_slice():
    cpus = sorted(os.sched_getaffinity(0))
    pairs = [(0, 2), (1, 2), (3, 4), (0, 0)]
    mine = [cpu_slice(cpus, slot, slots) for slot, slots in pairs]
    assert _pinned(pairs) == [f"{m} {m} {m}" for m in mine]
    if len(cpus) >= 2:  # on one CPU every slice is the whole machine
        assert cpu_slice(cpus, 0, 2) != cpu_slice(cpus, 1, 2)


def test_slices_cover_the_cpus_without_overlap():
    cpus = list(range(12))
    for slots in (1, 2, 3, 5, 12):
        parts = [cpu_slice(cpus, k, slots) for k in range(slots)]
        assert sorted(c for p in parts for c in p) == cpus and all(parts)
    assert [cpu_slice([4, 6], k, 5) for k in range(5)] == [[4], [6], [4], [6], [4]]


class _Recording(engines.LocalEngine):
    specs: list = []

    def spawn(self, spec, events):
        _Recording.specs.append((spec.host, spec.slot, spec.slots))
        return super().spawn(spec, events)


def test_the_controller_gives_each_worker_its_slot_and_a_replacement_the_dead_ones(monkeypatch, plugins_importable):  # noqa: F811
    monkeypatch.setitem(engines.ENGINES, "recording", lambda hosts, job: _Recording())
    _Recording.specs = []
    hosts = (("a", ("reference",)), ("b", ("segfaults",)))
    options = WorkerOptions(workers=2, engine="recording", hosts=hosts, plugins=("faulty_backend:segfault",))
    result = runner.run(["reference", "segfaults"], ops="^(neg|abs)$", dtypes=[DType.float32], quick=True,
                        workers=options)
    assert {(c.op, c.backend): c.status for c in result.cells}[("neg", "segfaults")] == "crashed"
    first, replacements = _Recording.specs[:4], _Recording.specs[4:]
    assert first == [("a", 0, 4), ("a", 1, 4), ("b", 2, 4), ("b", 3, 4)]
    assert replacements and all(host == "b" and slot in (2, 3) and slots == 4 for host, slot, slots in replacements)
