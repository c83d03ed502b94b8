"""Whole models and random draws in the conformance matrix (``parity conform --models``).

**Models.** Every zoo model (``conformance.models``) and mode runs through
``parity.compile`` on each backend, forward and one training step (loss, backward),
next to eager torch (:func:`.models.check.compare`). A row ``model:NAME/MODE`` has two
cases: ``forward`` (output and loss) and ``training`` (every parameter's gradient and
every buffer after the step). A case passes when every tensor meets the zoo's tolerance
``|compiled - eager| <= ATOL + RTOL·|eager|`` (:data:`RTOL`, :data:`ATOL`, the same as
tests/models); its ``max_ratio`` is the worst ``|compiled - eager| / (ATOL + RTOL·|eager|)``.
A model whose ops the backend cannot run is *unsupported* (strict mode's
``UnsupportedAtenOp``); any other exception is a failure. Models run on ``cpu`` targets.

**Agreement.** For every pair of backends that ran a model: the largest absolute
difference between their outputs, losses, gradients and buffers
(:func:`agreement`), published in the reports next to the matrix.

**Random draws.** Graphs with a fixed threefry key as input — ``random_bits``,
``uniform`` over [0, 1) (``torch.rand``'s draw) in every float dtype, ``dropout`` —
must give the *same bits* on every backend as on the reference backend (rows
``random:OP``). ``normal`` is Box–Muller (``log``, ``cos``), so backends agree to its
contract bound, not bit for bit: its row is measured against the oracle under that
bound, and whether it happened to be bit-identical is in the row's message.

Example::

    >>> from parity.conformance.selection import resolve_targets
    >>> results, pairs = random_results(resolve_targets(["reference"], ["cpu"]))
    >>> sorted({r.status for r in results}), pairs[0]["bit_identical"]
    (['pass'], True)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np

from ..ir.builder import GraphBuilder
from ..ir.dtypes import DType
from ..ir.graph import Graph
from ..ir.interpreter import evaluate
from ..ir.types import TensorType
from .case import Case
from .compare import measure

RTOL, ATOL = 1e-4, 1e-5  # the zoo's tolerances (tests/models/test_zoo.py), float32 models
KEY = np.array([0x2545F491, 0x9E3779B9], np.uint32)  # the fixed key of the random rows
MODEL_PREFIX, RANDOM_PREFIX = "model:", "random:"
_FORWARD = ("output", "loss")


def is_model_row(op: str) -> bool:
    return op.startswith(MODEL_PREFIX)


def is_random_row(op: str) -> bool:
    return op.startswith(RANDOM_PREFIX)


# -- models ----------------------------------------------------------------------------------------


def model_ops(names=None) -> list[str]:
    """The model rows, ``model:NAME/MODE``, of every zoo model (or those called ``names``)."""
    from .models import MODELS, get_model

    for name in names or ():
        try:
            get_model(name)
        except KeyError as exc:  # a usage error (the CLI's one line), naming the zoo
            raise ValueError(f"--architectures: {exc.args[0]}") from None
    return [f"{MODEL_PREFIX}{spec.name}/{mode}" for spec in MODELS if not names or spec.name in names
            for mode in spec.modes]


def model_rows(targets, progress: Callable[[str], None] | None = None, names=None):
    """(case results, pairwise agreement) of every zoo model (or those called ``names``) and
    mode on every live cpu target (:func:`model_results` per row and target)."""
    results = []
    for op in model_ops(names):
        for t in targets:
            if not t.available or t.device != "cpu":
                continue
            if progress:
                progress(f"{op} on {t.backend}")
            results += model_results(op, t.backend, t.device)
    return results, agreement(results)


def model_results(op: str, backend: str, device: str = "cpu") -> list:
    """The two cases (forward, training) of the model row ``op`` on one target; each carries
    the compiled tensors it compared in ``attachments["tensors"]`` (for :func:`agreement`)."""
    from .models import get_model
    from .results import CaseResult, error_summary

    name, _, mode = op.removeprefix(MODEL_PREFIX).partition("/")
    ids = dict(op=op, dtype="f32", backend=backend, device=device)
    try:
        comparison = _compare(get_model(name), backend, mode)
    except Exception as exc:  # noqa: BLE001 - a model that fails is a result
        status = "unsupported" if type(exc).__name__ == "UnsupportedAtenOp" else "error"
        text = error_summary(f"{type(exc).__name__}: {exc}")  # an unsupported op's line and the backend's why
        return [CaseResult(case=f"{op}[f32]:{part}", status=status, message=text,
                           max_ratio=0.0 if status == "unsupported" else np.inf, **ids)
                for part in ("forward", "training")]
    return [_model_result(comparison, part, ids) for part in ("forward", "training")]


def _compare(spec, backend: str, mode: str):
    import torch

    from ..frontend import compiled_graph
    from .models.check import compare

    torch._dynamo.reset()  # each backend captures afresh (as tests/models does per test)
    compiled_graph.reset_caches()
    return compare(spec, backend, mode)


def _model_result(comparison, part: str, ids: dict):
    from .results import CaseResult

    worst_label, worst_ratio, worst_err, compared = "", 0.0, 0.0, 0
    tensors = {}
    for label, (got, expected) in comparison.pairs.items():
        if (label in _FORWARD) != (part == "forward"):
            continue
        a, e = got.detach().double().numpy(), expected.detach().double().numpy()
        tensors[label] = a
        compared += 1
        if a.shape != e.shape:
            worst_label, worst_ratio, worst_err = label, np.inf, np.inf
            continue
        with np.errstate(all="ignore"):
            err = np.abs(a - e)
            ratio = np.where(np.isnan(a) & np.isnan(e), 0.0, err / (ATOL + RTOL * np.abs(e)))
            ratio = np.where(np.isnan(ratio), np.inf, ratio)
        r = float(ratio.max()) if ratio.size else 0.0
        if r > worst_ratio or not worst_label:
            worst_label, worst_ratio, worst_err = label, r, float(np.nanmax(err)) if err.size else 0.0
    passed = worst_ratio <= 1.0
    message = (f"worst: {worst_label}, max |compiled - eager| = {worst_err:.3g} "
               f"({worst_ratio:.3g} × the tolerance {ATOL:g} + {RTOL:g}·|eager|)")
    return CaseResult(case=f"{ids['op']}[f32]:{part}", status="pass" if passed else "fail", path="compiled",
                      max_ratio=worst_ratio, mismatches=0 if passed else 1, message="" if passed else message,
                      worst={"tensor": worst_label, "max_abs_error": worst_err, "tensors": compared},
                      attachments={"tensors": tensors}, **ids)


def agreement(results) -> list[dict]:
    """For each (model, mode) and pair of backends that ran it: max |a - b| of outputs, loss,
    gradients and buffers, from the compiled tensors the model rows' results carry (as arrays,
    or as nested lists once read back from a journal)."""
    by_row: dict[str, dict[str, dict]] = {}
    for r in results:
        if is_model_row(r.op) and r.attachments.get("tensors"):
            by_row.setdefault(r.op, {}).setdefault(r.backend, {}).update(r.attachments["tensors"])
    rows = []
    for op, by_backend in by_row.items():
        model, _, mode = op.removeprefix(MODEL_PREFIX).partition("/")
        for a, b in itertools.combinations(sorted(by_backend), 2):
            pa, pb = by_backend[a], by_backend[b]
            groups: dict[str, float] = {"output": 0.0, "loss": 0.0, "gradients": 0.0, "buffers": 0.0}
            for label in pa.keys() & pb.keys():
                x, y = np.asarray(pa[label], np.float64), np.asarray(pb[label], np.float64)
                diff = float(np.abs(x - y).max()) if x.shape == y.shape and x.size else (
                    0.0 if x.shape == y.shape else math.inf)
                key = "gradients" if label.startswith("grad ") else "buffers" if label.startswith("buffer ") else label
                groups[key] = max(groups[key], diff)
            rows.append({"model": model, "mode": mode, "a": a, "b": b, **groups})
    return rows


# -- random draws ------------------------------------------------------------------------------------


def random_graphs() -> list[tuple[str, DType, Graph, list[np.ndarray]]]:
    """(row op, dtype, graph, inputs): the random rows, each fed the fixed :data:`KEY`."""
    out = []

    def graph(name, dtype, emit, extra=()):
        b = GraphBuilder(name)
        key = b.input(TensorType(DType.uint32, (2,)))
        params = [b.input(TensorType(DType.from_numpy(a.dtype), a.shape)) for a in extra]
        out.append((f"{RANDOM_PREFIX}{name}", dtype, b.build([emit(b, key, *params)]), [KEY, *extra]))

    graph("random_bits", DType.uint32, lambda b, k: b.random_bits(k, shape=(16, 16)))
    for d in (DType.float32, DType.float16, DType.bfloat16, DType.float64):
        graph("uniform", d, lambda b, k, d=d: b.uniform(k, shape=(16, 16), dtype=d))
    for d in (DType.float32, DType.bfloat16):
        x = (np.random.default_rng(7).standard_normal((16, 16)) * 3).astype(d.numpy)
        graph("dropout", d, lambda b, k, x: b.dropout(x, k, p=0.3), (x,))
    graph("normal", DType.float32, lambda b, k: b.normal(k, shape=(16, 16), dtype=DType.float32))
    return out


def random_results(targets):
    """(case results, per-row bit-identity records) of the random rows on every live target."""
    results = []
    for op, dtype, _, _ in random_graphs():
        for t in targets:
            if t.available:
                results.append(random_result(op, dtype.short, t.instance, t.backend, t.device))
    return results, [r.attachments["record"] for r in results if "record" in r.attachments]


def random_result(op: str, dtype: str, backend, name: str, device: str):
    """The random row ``op`` in ``dtype`` (short name) on one target (``backend``, the
    instance of the column called ``name``); unless it could not run, its bit-identity
    record is in ``attachments["record"]``."""
    from .execute import NotClaimed, as_array, lower_for
    from .results import CaseResult

    _, d, graph, arrays = next(g for g in random_graphs() if g[0] == op and g[1].short == dtype)
    spec = evaluate(graph, arrays)[0]  # the reference backend's bits (the spec, rounded)
    draw = op.removeprefix(RANDOM_PREFIX)
    ids = dict(case=f"{op}[{dtype}]:key", op=op, dtype=dtype, backend=name, device=device)
    try:
        lowered, paths = lower_for(backend, graph)
        got = as_array(backend.compile(lowered, device)(*arrays)[0])  # torch's bfloat16 too
    except NotClaimed as exc:
        return CaseResult(**ids, status="unsupported", message=str(exc))
    except Exception as exc:  # noqa: BLE001
        return CaseResult(**ids, status="error", max_ratio=np.inf, message=f"{type(exc).__name__}: {str(exc)[:500]}")
    same = got.dtype == spec.dtype and got.shape == spec.shape and _same_bits(got, spec)
    differ = int(got.size if got.shape != spec.shape else np.count_nonzero(~_bitwise_equal(got, spec)))
    record = {"op": draw, "dtype": dtype, "backend": name, "device": device, "bit_identical": bool(same),
              "elements_differing": differ}
    if draw == "normal":  # agreement to the contract bound, not bit for bit (see the module docstring)
        case = Case("normal", d, lambda rng: arrays, dict(graph.nodes[0].attrs), "key")
        m = measure(case, graph, arrays, evaluate(graph, arrays, oracle=True), [got])
        return CaseResult(**ids, status="pass" if m.passed else "fail", path=paths.get(draw, ""), max_ulp=m.max_ulp,
                          max_ratio=m.max_ratio, mismatches=m.mismatches,
                          message=("" if m.passed else m.message + " ") +
                          f"bit-identical with the reference: {'yes' if same else 'no'}",
                          worst=m.worst, attachments={"record": record})
    return CaseResult(**ids, status="pass" if same else "fail", path=paths.get(draw, ""),
                      max_ratio=0.0 if same else np.inf, mismatches=differ,
                      message="" if same else f"{differ} of {spec.size} elements differ in their "
                                              f"bits from the reference backend's draw",
                      attachments={"record": record})


def _bitwise_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    return np.ascontiguousarray(a).view(width) == np.ascontiguousarray(b).view(width)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(_bitwise_equal(a, b).all())


def is_hf_row(op: str) -> bool:
    """A row of the Hugging Face zoo (``hf:NAME``)."""
    from .hf.matrix import is_hf_row as hf_row

    return hf_row(op)


def is_whole_model_row(op: str) -> bool:
    """A row of parity's zoo or of the Hugging Face zoo (both run on cpu targets only)."""
    return is_model_row(op) or is_hf_row(op)


def rows(targets, *, models: bool = True, progress=None, which: str = "zoo", architectures=None,
         anchors: bool = True) -> tuple[list, dict]:
    """The case results of the model and random rows, and the ``models`` section of a run:
    ``{"agreement": [...], "random": [...], "tolerance": {...}}``, plus ``"hf"`` (the
    Hugging Face zoo's entries and anchors, :mod:`.hf.matrix`) when ``which`` is
    ``"hf"`` or ``"all"``. With ``which`` "zoo", ``architectures`` names the zoo models to run."""
    results = []
    if which in ("zoo", "all"):
        results = random_results(targets)[0]
        if models:
            results += model_rows(targets, progress, architectures if which == "zoo" else None)[0]
    return results, hf_section(results, targets, which, architectures, progress, anchors)


def hf_section(results, targets, which: str, architectures, progress, anchors: bool) -> dict:
    """The ``models`` section of the zoo rows in ``results``; with ``which`` "hf" or "all", the
    Hugging Face zoo's rows are run here and appended to ``results``, its entries added."""
    section = section_of(results)
    if which in ("hf", "all"):
        from .hf.matrix import ANCHORS, hf_rows

        more, section["hf"] = hf_rows(targets, architectures, progress, anchors=ANCHORS if anchors else ())
        results += more
    return section


def section_of(results) -> dict:
    """The ``models`` section made from zoo rows' results: the random rows' bit-identity records
    and the models' pairwise agreement (from what each result carries in ``attachments``)."""
    return {"random": [r.attachments["record"] for r in results if "record" in r.attachments],
            "agreement": agreement(results), "tolerance": {"rtol": RTOL, "atol": ATOL}}


# -- on workers (conformance/controller.py) ----------------------------------------------------------


def row_groups(targets, names=None) -> list[tuple[tuple[str, ...], list[tuple[str, str]]]]:
    """The zoo's random and model rows as a run on workers schedules them, in the serial order:
    per row, its case ids and the live targets it runs on (model rows: cpu targets only)."""
    live = [(t.backend, t.device) for t in targets if t.available]
    groups = [((f"{op}[{dtype.short}]:key",), live) for op, dtype, _, _ in random_graphs()]
    cpu = [t for t in live if t[1] == "cpu"]
    return groups + [((f"{op}[f32]:forward", f"{op}[f32]:training"), cpu) for op in model_ops(names)]


def row_results(case_ids, backend, name: str, device: str) -> list:
    """A worker's answer for ``case_ids`` (cases of one zoo row) on one target: the cases of the
    row that the serial run makes, only those asked for."""
    op, _, rest = case_ids[0].partition("[")
    dtype = rest.partition("]")[0]
    made = [random_result(op, dtype, backend, name, device)] if is_random_row(op) else model_results(op, name, device)
    by_case = {r.case: r for r in made}
    return [by_case[i] for i in case_ids]


__all__ = ["ATOL", "KEY", "RTOL", "agreement", "is_hf_row", "is_whole_model_row", "model_results", "model_rows", "random_graphs",
           "random_result", "random_results", "row_groups", "row_results", "rows", "section_of"]
