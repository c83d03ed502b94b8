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

PIN_AND_REPORT = """
import os, threading, time
from parity.conformance.worker import pin_to_slice
started = threading.Event()
early = threading.Thread(target=lambda: (started.set(), time.sleep(1)))  # a thread that exists before pinning
early.start(); started.wait()
pin_to_slice({slot}, {slots})
late = []
threading.Thread(target=lambda: late.append(sorted(os.sched_getaffinity(0)))).start()
time.sleep(0.2)
print(sorted(os.sched_getaffinity(0)), sorted(os.sched_getaffinity(early.native_id)), late[0])
"""


def _pinned(slot: int, slots: int) -> str:
    code = PIN_AND_REPORT.format(slot=slot, slots=slots)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_a_worker_pins_every_thread_it_has_and_every_one_it_starts_to_its_slice():
    cpus = sorted(os.sched_getaffinity(0))
    for slot, slots in [(0, 2), (1, 2), (3, 4), (0, 0)]:
        mine = cpu_slice(cpus, slot, slots)
        assert _pinned(slot, slots) == f"{mine} {mine} {mine}"
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
