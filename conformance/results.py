"""What a conformance run produces: per-case results, cells of the matrix, the state of
each declared deviation, and the run that holds them (:func:`.runner.run` builds it).

A *cell* is op × dtype × backend × device; its status is one of :data:`STATUS_ORDER`,
worst first (a row of the matrix shows its worst cell).

Example::

    >>> cell = Cell("exp", "f32", "reference", "cpu", PASS, cases=3, passed=3)
    >>> STATUS_ORDER.index(cell.status) > STATUS_ORDER.index(FAIL)
    True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..backends.base import Backend

# Cell statuses, worst first (a row of the matrix shows its worst cell). A case that killed
# its worker or ran past its time limit (conformance/controller.py) is CRASHED or TIMED_OUT:
# worse than a failure, since the backend gave no answer at all.
CRASHED, TIMED_OUT = "crashed", "timed out"
FAIL, DEVIATION, PASS, UNSUPPORTED, NOT_RUN = "fail", "deviation", "pass", "unsupported", "not run"
STATUS_ORDER = (CRASHED, TIMED_OUT, FAIL, DEVIATION, PASS, UNSUPPORTED, NOT_RUN)
#: A CaseResult status: the backend claims the op in the case's dtype, but its claim's predicate
#: (OpClaim.when) declines the case's node. Neither a failure nor a pass; a cell of only such
#: cases is UNSUPPORTED, with the predicate's reason.
DECLINED = "declined"
#: CaseResult statuses that no declared deviation ever excuses.
NEVER_EXCUSED = ("error", CRASHED, TIMED_OUT)

def error_summary(text: str, limit: int = 600) -> str:
    """An error's first line, joined by its ``why:`` line where it has one (the reason a backend
    gave for not running an op), as one line for a case's message.

    Example::

        >>> error_summary("UnsupportedAtenOp: aten.x at m.py:3 cannot run on backend 'b'\\n  why: no x\\n  fix: y")
        "UnsupportedAtenOp: aten.x at m.py:3 cannot run on backend 'b'; why: no x"
    """
    lines = text.splitlines() or [""]
    why = next((line.strip() for line in lines[1:] if line.strip().startswith("why:")), None)
    return (f"{lines[0]}; {why}" if why else lines[0])[:limit]


@dataclass
class CaseResult:
    """One case on one (backend, device)."""

    case: str
    op: str
    dtype: str
    backend: str
    device: str
    status: str  # pass | fail | error | unsupported | declined | crashed | timed out
    path: str = ""  # native | extern | decomposed
    max_ulp: float | None = None
    max_ratio: float = 0.0
    max_rel: float | None = None
    mismatches: int = 0
    message: str = ""
    worst: dict = field(default_factory=dict)
    malformed: bool = False  # outputs of the wrong number, shape or dtype (no deviation excuses it)
    # Measured again with subnormals flushed to zero (only for a failing case of a dtype the
    # backend declares flush-to-zero in): whether it passes then, and its max ULP.
    flushed_passed: bool | None = None
    flushed_ulp: float | None = None
    # A digest of the outputs the backend gave (dtype, shape and bytes of each): two devices
    # that give the same digest on the same case gave bit-identical outputs (conformance/merge.py).
    output_hash: str = ""
    # What a zoo row gives the run's ``models`` section beside its verdict (conformance/zoo.py):
    # a model row's compiled tensors (pairwise agreement), a random row's bit-identity record.
    # Never shown in a cell; a journal keeps it, so a resumed run's section is whole.
    attachments: dict = field(default_factory=dict)


@dataclass
class Cell:
    """op × dtype × backend × device, aggregated over its cases."""

    op: str
    dtype: str
    backend: str
    device: str
    status: str
    cases: int = 0
    passed: int = 0
    failed: int = 0
    unsupported: int = 0
    declined: int = 0  # cases the claim's predicate turned down (never counted as passed)
    path: str = ""
    max_ulp: float | None = None
    max_ratio: float = 0.0
    worst_case: str = ""
    worst: dict = field(default_factory=dict)
    message: str = ""
    deviation: dict | None = None  # the declared deviation covering this cell, if any
    explained_by: list[dict] = field(default_factory=list)  # the deviations that explain its failures
    # Explained by flush-to-zero: the max ULP that remains once subnormals are flushed (what
    # the matrix shows; max_ulp keeps the raw figure).
    flush_to_zero: bool = False
    flushed_ulp: float | None = None
    hashes: dict[str, str] = field(default_factory=dict)  # case id → output_hash of its case result


@dataclass
class DeviationCheck:
    backend: str
    op: str
    dtype: str | None
    device: str | None
    reason: str
    max_error: str
    state: str  # recorded | stale | not checked | invalid
    cells: list[str] = field(default_factory=list)
    problem: str = ""  # why an invalid deviation explains nothing


@dataclass
class Target:
    backend: str
    device: str
    available: bool
    instance: Backend | None = None
    error: str = ""  # the backend could not be loaded


@dataclass
class ConformanceRun:
    targets: list[Target]
    cells: list[Cell]
    deviations: list[DeviationCheck]
    type_rules: list[dict]
    cases: int
    elapsed_s: float
    options: dict
    # --models: {"agreement": [...], "random": [...], "tolerance": {...}} (conformance/zoo.py)
    models: dict = field(default_factory=dict)
    # A merged run (conformance/merge.py): per (backend, op, dtype) run on more than one
    # device or machine, whether their outputs were bit-identical, agree within the contract, or not.
    device_agreement: list[dict] = field(default_factory=list)

    @property
    def unexpected_failures(self) -> list[Cell]:
        return [c for c in self.cells if c.status == FAIL]

    @property
    def crashed(self) -> list[Cell]:
        """Cells whose case killed its worker or ran past its time limit."""
        return [c for c in self.cells if c.status in (CRASHED, TIMED_OUT)]

    @property
    def stale_deviations(self) -> list[DeviationCheck]:
        return [d for d in self.deviations if d.state == "stale"]

    @property
    def invalid_deviations(self) -> list[DeviationCheck]:
        return [d for d in self.deviations if d.state == "invalid"]

    @property
    def type_rule_failures(self) -> list[dict]:
        return [t for t in self.type_rules if not t["ok"]]

    @property
    def exit_code(self) -> int:
        bad = (self.unexpected_failures or self.crashed or self.stale_deviations or self.invalid_deviations
               or self.type_rule_failures)
        return 1 if bad else 0

    def summary(self) -> dict[str, dict[str, int]]:
        """Per "backend/device": number of cells in each status, and of cases."""
        out: dict[str, dict[str, int]] = {}
        for t in self.targets:
            out[f"{t.backend}/{t.device}"] = {s: 0 for s in STATUS_ORDER} | {"cases": 0, "cases_passed": 0}
        for c in self.cells:
            row = out[f"{c.backend}/{c.device}"]
            row[c.status] += 1
            row["cases"] += c.cases
            row["cases_passed"] += c.passed
        return out


#: CaseResult.path of a whole-model case (conformance/hf) that failed within a deviation recorded
#: for it with its measured number (conformance/hf/matrix.py: DEVIATIONS); never an exception.
RECORDED = "recorded deviation"

#: ``progress(done, total, what)``: how a run reports progress (the CLI draws a bar with it).
ProgressFn = Callable[[int, int, str], None]
