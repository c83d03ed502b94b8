"""``pytest --parity-backend NAME``: the conformance suite as tests in a backend author's CI.

Registered as a ``pytest11`` entry point by parity (so it is active wherever parity is
installed; it adds nothing unless ``--parity-backend`` is given), or loaded by hand with
``-p parity.conformance.pytest_plugin``. For every backend named and every device it
lists, it adds one test per op × dtype cell of the conformance matrix (the op database
and the fuzzer regressions; ``--parity-quick`` as ``parity conform --quick``), one per
random draw that must be bit-identical, with ``--parity-models`` one per zoo model and
mode, and a last test per backend that fails on stale deviations. Test ids read
``parity[numpy/cpu]::exp[f32]``, so ``-k`` selects ops.

A cell that passes passes; a failure the backend declares as a deviation is an
``xfail`` (with the deviation's reason); an op or dtype the backend does not claim is a
skip that says so, as is an absent device (never a pass); anything else fails with the
worst element, its case and the bound.

Options: ``--parity-backend NAME`` (repeatable), ``--parity-device D`` (repeatable),
``--parity-quick``, ``--parity-ops REGEX``, ``--parity-dtype T`` (repeatable),
``--parity-models`` (``--parity-architectures A,B``: only these zoo models), ``--mutants`` (or ``--parity-mutants``: mutation testing instead of the
cells, one test per fault class, ``--parity-mutant-sample N`` cells per class).
"""

from __future__ import annotations

from collections import defaultdict

import pytest

_GROUP = "parity conformance"


def pytest_addoption(parser):
    group = parser.getgroup("parity", _GROUP)
    group.addoption("--parity-backend", action="append", default=[], metavar="NAME",
                    help="run the parity conformance suite against this registered backend (repeatable)")
    group.addoption("--parity-device", action="append", default=[], metavar="D",
                    help="only these devices of the backend (repeatable; default: every device it lists)")
    group.addoption("--parity-quick", action="store_true",
                    help="edge cases and one other case per op and dtype (as parity conform --quick)")
    group.addoption("--parity-ops", metavar="REGEX", help="only ops whose name matches (re.search)")
    group.addoption("--parity-dtype", action="append", default=[], metavar="T",
                    help="only cases of these dtypes, e.g. f32 (repeatable)")
    group.addoption("--parity-models", action="store_true",
                    help="also the model zoo through parity.compile (forward and training step)")
    group.addoption("--parity-architectures", metavar="A,B",
                    help="with --parity-models: only these zoo models (mlp, cnn, ...), as parity conform --architectures")
    group.addoption("--parity-mutants", "--mutants", action="store_true", dest="parity_mutants",
                    help="mutation testing instead of the cells: one test per fault class planted at the backend's "
                         "executable boundary, failing on every surviving mutant; the kill rates are summarised")
    group.addoption("--parity-mutant-sample", type=int, default=8, metavar="N",
                    help="with --mutants: at most N op × dtype cells per fault class, one per op (0: all)")


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselect, so they apply to these tests too
def pytest_collection_modifyitems(session, config, items):
    names = config.getoption("parity_backend")
    if not names:
        return
    suite = ConformanceSuite.from_parent(session, name="parity", nodeid="parity")
    for item in suite.collect():
        config.hook.pytest_itemcollected(item=item)
        items.append(item)


class ConformanceSuite(pytest.Collector):
    """The cells of every (backend, device) asked for, as test items."""

    def collect(self):
        from ..ir.dtypes import DType
        from . import selection

        config = self.config
        dtypes = [DType.from_short(d) for d in config.getoption("parity_dtype")]
        cases = selection.select_cases(ops=config.getoption("parity_ops"), dtypes=dtypes,
                                    quick=config.getoption("parity_quick"))
        groups = defaultdict(list)
        for case in cases:
            groups[(case.op, case.dtype.short)].append(case)
        targets = selection.resolve_targets(config.getoption("parity_backend"), config.getoption("parity_device") or None)
        _check_architectures(config)
        state = _State()
        if not (config.getoption("parity_ops") or dtypes):  # the whole database: ANY_OP deviations can be stale
            state.whole = set(groups)
        config.stash[_MUTANTS] = state.mutants
        for t in targets:
            label = f"{t.backend}/{t.device}"
            if config.getoption("parity_mutants"):
                from .mutants import FAULTS

                for name in FAULTS:
                    yield MutantsItem.from_parent(self, name=f"{label}::mutants::{name}", target=t, state=state,
                                                  fault=name)
                continue
            for (op, dtype), members in groups.items():
                yield CellItem.from_parent(self, name=f"{label}::{op}[{dtype}]", target=t, key=(op, dtype),
                                           cases=members, state=state)
            yield ExtraItem.from_parent(self, name=f"{label}::random draws", target=t, state=state, kind="random")
            if config.getoption("parity_models"):
                yield ExtraItem.from_parent(self, name=f"{label}::model zoo", target=t, state=state, kind="models")
            yield DeviationsItem.from_parent(self, name=f"{label}::stale deviations", target=t, state=state)


def _check_architectures(config) -> None:
    """An unknown --parity-architectures name stops the run before any cell, naming the zoo."""
    names = config.getoption("parity_architectures")
    if not names:
        return
    if not config.getoption("parity_models"):
        raise pytest.UsageError("--parity-architectures chooses zoo models: add --parity-models")
    from .zoo import model_ops

    try:
        model_ops(names.split(","))
    except ValueError as exc:  # "--architectures: no zoo model named 'x'; the zoo has ..."
        raise pytest.UsageError(f"--parity-{str(exc).removeprefix('--')}") from None


class _State:
    """Cells measured so far in this session (the stale-deviation check reads them), the
    mutants judged (the terminal summary reads them), and the results of isolated targets."""

    def __init__(self):
        self.cells = []
        self.claims = {}
        self.mutants = []
        self.whole: set | None = None  # every (op, dtype) cell of an unfiltered database (None: filtered)
        self.isolated: dict[str, bool] = {}  # backend → whether its cells run on a worker
        self.apart: dict[tuple, dict] = {}  # (backend, device) → (op, dtype) → its cases' results

    def isolated_results(self, first: CellItem) -> dict:
        """(op, dtype) → case results of every selected cell of ``first``'s target, run on one
        worker process the first time one of them asks (conformance/isolation.py): a segfault,
        a hang or an allocation past the memory cap in the plugin's runtime is a crashed or
        timed-out cell naming the case, and the pytest session goes on."""
        from .controller import Group, WorkerOptions, run_groups, worker_spec
        from .isolation import case_seconds, default_memory_mb

        t = first.target
        key = (t.backend, t.device)
        if key not in self.apart:
            items = [i for i in first.session.items if isinstance(i, CellItem) and i.target is t]
            groups = [Group(tuple(c.id for c in i.cases), (key,), seconds=tuple(case_seconds(c) for c in i.cases))
                      for i in items]
            config = first.config
            dtypes = list(config.getoption("parity_dtype"))
            memory = default_memory_mb()
            spec = worker_spec((), memory, config.getoption("parity_ops"), dtypes, config.getoption("parity_quick"))
            header = {"ops": config.getoption("parity_ops"), "dtypes": sorted(dtypes),
                      "quick": config.getoption("parity_quick"), "targets": [list(key)],
                      "cases": sum(len(g.case_ids) for g in groups)}
            found: dict = defaultdict(list)
            for result in run_groups(groups, WorkerOptions(memory_mb=memory), spec, header):
                found[(result.op, result.dtype)].append(result)
            self.apart[key] = found
        return self.apart[key]


_MUTANTS = pytest.StashKey[list]()


class _CellFailure(Exception):
    pass


class _TargetItem(pytest.Item):
    def __init__(self, *, target, state, **kwargs):
        super().__init__(**kwargs)
        self.target, self.state = target, state

    def _need_device(self):
        if not self.target.available:
            pytest.skip(f"not run: {self.target.error or f'device {self.target.device} is absent here'}")

    def _judge(self, cell):
        """pass / xfail (declared deviation) / skip (unsupported) / fail, from one cell."""
        self.state.cells.append(cell)
        if cell.status == "pass":
            return
        if cell.status == "unsupported":
            pytest.skip(f"unsupported: {cell.message}")
        if cell.status == "deviation":
            reason = (cell.deviation or {}).get("reason", "")
            pytest.xfail(f"recorded deviation: {reason} (max {cell.max_ulp} ulp)")
        raise _CellFailure(_describe(cell))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, _CellFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, self.name


class CellItem(_TargetItem):
    """One op × dtype cell on one (backend, device): all its cases, bundled as the runner does."""

    def __init__(self, *, key, cases, **kwargs):
        super().__init__(**kwargs)
        self.key, self.cases = key, cases

    def runtest(self):
        from .execute import Prepared, run_bundle
        from .isolation import isolated
        from .verdicts import cells_for

        self._need_device()
        t = self.target
        apart = self.state.isolated.get(t.backend)
        if apart is None:  # asked once per backend (it reads the entry points)
            apart = self.state.isolated[t.backend] = bool(isolated([t]))
        if apart:  # a plugin found by entry point: its cells run on a worker, as in parity conform
            results = self.state.isolated_results(self)[self.key]
        else:
            claims = self.state.claims.setdefault(t.backend, t.instance.claims())
            results = run_bundle(t.instance, t.device, [Prepared(c) for c in self.cases], claims)
        self._judge(cells_for([self.key], [t], results)[0])


class ExtraItem(_TargetItem):
    """The random draws (bit-identical with the reference backend) or the model zoo."""

    def __init__(self, *, kind, **kwargs):
        super().__init__(**kwargs)
        self.kind = kind

    def runtest(self):
        from . import zoo
        from .verdicts import cells_for

        self._need_device()
        if self.kind == "random":
            results = zoo.random_results([self.target])[0]
        else:
            names = self.config.getoption("parity_architectures")
            results = zoo.model_rows([self.target], names=names.split(",") if names else None)[0]
        keys = list(dict.fromkeys((r.op, r.dtype) for r in results))
        cells = cells_for(keys, [self.target], results, cpu_only=zoo.is_model_row)
        problems = []
        for cell in cells:
            self.state.cells.append(cell)
            if cell.status in ("fail",):
                problems.append(_describe(cell))
        if problems:
            raise _CellFailure("\n".join(problems))
        if all(c.status == "unsupported" for c in cells):
            pytest.skip(f"unsupported: {cells[0].message if cells else ''}")


class DeviationsItem(_TargetItem):
    """Fails when a deviation the backend declares no longer happens in the cells run here, or
    can explain nothing (no number in ULPs; flush-to-zero without a dtype)."""

    def runtest(self):
        from .verdicts import check_deviations
        from .zoo import is_whole_model_row

        self._need_device()
        mine = [c for c in self.state.cells if c.backend == self.target.backend and c.device == self.target.device]
        # "*" deviations are judged only when every op cell ran (not under -k or --parity-ops),
        # and no deviation over whole-model rows, which meet the zoo's own tolerance
        whole = self.state.whole is not None and self.state.whole <= {(c.op, c.dtype) for c in mine}
        checks = check_deviations([self.target], mine, whole=whole,
                                  applies=lambda op: not is_whole_model_row(op)) if mine else []
        stale = [d for d in checks if d.state == "stale"]
        invalid = [d for d in checks if d.state == "invalid"]
        if stale or invalid:
            raise _CellFailure("\n".join(
                [f"stale deviation: {d.op} {d.dtype or 'all dtypes'} on {d.device or 'all devices'} ({d.reason}) "
                 f"no longer happens in {', '.join(d.cells)}; remove it" for d in stale]
                + [f"invalid deviation: {d.op} {d.dtype or 'all dtypes'}: {d.problem}" for d in invalid]))


class MutantsItem(_TargetItem):
    """One fault class planted in a seeded sample of the cells it applies to: fails on every
    survivor, with its op, cases and error (parity.conformance.mutants)."""

    def __init__(self, *, fault, **kwargs):
        super().__init__(**kwargs)
        self.fault = fault

    def runtest(self):
        from ..ir.dtypes import DType
        from .mutants import run_mutants
        from .mutants.run import SURVIVED

        self._need_device()
        config, t = self.config, self.target
        result = run_mutants([t.instance], devices=[t.device], ops=config.getoption("parity_ops"),
                             dtypes=[DType.from_short(d) for d in config.getoption("parity_dtype")],
                             faults=[self.fault], sample=config.getoption("parity_mutant_sample"))
        self.state.mutants += result.mutants
        survivors = [m for m in result.mutants if m.status == SURVIVED]
        if survivors:
            raise _CellFailure("\n".join(
                f"{self.fault} survived on {m.op}[{m.dtype}] (cases {', '.join(m.cases)}): {m.message}"
                for m in survivors))
        if not any(m.status == "killed" for m in result.mutants):
            pytest.skip(f"no cell of {t.backend}/{t.device} where '{self.fault}' applies and changes an output")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    mutants = config.stash.get(_MUTANTS, [])
    if not mutants:
        return
    rates = {}
    for m in mutants:
        if m.status in ("killed", "survived"):
            k, n = rates.get((m.fault, f"{m.backend}/{m.device}"), (0, 0))
            rates[(m.fault, f"{m.backend}/{m.device}")] = (k + (m.status == "killed"), n + 1)
    terminalreporter.section("parity mutants: kill rate per fault class")
    for (fault, target), (k, n) in rates.items():
        terminalreporter.write_line(f"{target:>20}  {fault:<22} {k}/{n} killed")
    killed = sum(k for k, _ in rates.values())
    total = sum(n for _, n in rates.values())
    terminalreporter.write_line(f"killed {killed} of {total} planted faults")


def _describe(cell) -> str:
    lines = [f"{cell.op}[{cell.dtype}] on {cell.backend}/{cell.device}: {cell.failed} of {cell.cases} cases fail"]
    if cell.max_ulp is not None:
        lines.append(f"  max error {cell.max_ulp:.4g} ULP ({cell.max_ratio:.3g} × the bound)")
    if cell.worst_case:
        lines.append(f"  worst case: {cell.worst_case}")
    if cell.worst:
        w = cell.worst
        lines.append(f"  at output {w.get('output')} index {w.get('index')}: expected {w.get('expected')}, "
                     f"got {w.get('got')} (bound: {w.get('bound', '')})")
    if cell.message:
        lines.append(f"  {cell.message[:600]}")
    if ":" in cell.op:  # a model or random-draw row (conformance/zoo.py)
        lines.append(f"  reproduce: parity conform --backend {cell.backend} --ops '^$' --models")
    else:
        lines.append(f"  reproduce: parity conform --backend {cell.backend} --ops '^{cell.op}$' --dtype {cell.dtype}")
    return "\n".join(lines)
