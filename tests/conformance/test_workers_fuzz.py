"""``parity fuzz --workers N`` (conformance/controller.py's fuzz_results): the same graphs,
counts and findings (shrunk graphs included) as the serial fuzzer for a fixed seed, through
the same controller and journal as ``parity conform``, resumable."""

import dataclasses

from parity.conformance import fuzz
from parity.conformance.controller import WorkerOptions, fuzz_results
from parity.conformance.plugins import load_plugins

from .test_workers import plugins_importable  # noqa: F401 - the fixture

PLUGIN = "faulty_backend:add_off"
BACKENDS = ["reference", "add_off"]


def _findings(report):
    return [dataclasses.asdict(f) for f in report.findings]


def test_fuzz_findings_on_workers_equal_the_serial_findings_and_resume(plugins_importable, tmp_path):  # noqa: F811
    load_plugins((PLUGIN,))  # the controller's copy (parity fuzz --plugin does this)
    serial = fuzz.run(16, seed=5, backends=BACKENDS, save=False)
    assert serial.findings and {f.backend for f in serial.findings} == {"add_off"}
    assert sum(not f.duplicate for f in serial.findings) >= 2  # composites that add inside (norms, logsumexp)
    journal = tmp_path / "fuzz.jsonl"
    options = WorkerOptions(workers=2, plugins=(PLUGIN,), journal=str(journal))
    parallel = fuzz.run(16, seed=5, backends=BACKENDS, save=False, results_for=fuzz_results(options))
    assert _findings(parallel) == _findings(serial)
    assert parallel.backends == serial.backends and parallel.ops == serial.ops and not parallel.crashes

    lines = journal.read_text().splitlines()
    assert len(lines) == 1 + 16 * len(BACKENDS)  # the run's header, then every graph on every backend
    journal.write_text("\n".join(lines[:1 + 10]) + "\n")  # a controller killed after 10 results
    resumed = fuzz.run(16, seed=5, backends=BACKENDS, save=False,
                       results_for=fuzz_results(WorkerOptions(workers=1, plugins=(PLUGIN,), journal=str(journal),
                                                              resume=True)))
    assert _findings(resumed) == _findings(serial) and resumed.backends == serial.backends
    assert len(journal.read_text().splitlines()) == len(lines)  # only the missing results were run and written
