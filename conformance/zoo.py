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


def model_rows(targets, progress: Callable[[str], None] | None = None):
    """(case results, comparisons) of every zoo model and mode on every live cpu target:
    :class:`..results.CaseResult` s and, per (model, mode), the
    :class:`~.models.check.Comparison` of each backend that ran (for :func:`agreement`)."""
    from .models import MODELS
    from .results import CaseResult

    results, comparisons = [], {}
    for spec in MODELS:
        for mode in spec.modes:
            op = f"{MODEL_PREFIX}{spec.name}/{mode}"
            for t in targets:
                if not t.available or t.device != "cpu":
                    continue
                if progress:
                    progress(f"{op} on {t.backend}")
                ids = dict(op=op, dtype="f32", backend=t.backend, device=t.device)
                try:
                    comparison = _compare(spec, t.backend, mode)
                except Exception as exc:  # noqa: BLE001 - a model that fails is a result
                    status = "unsupported" if type(exc).__name__ == "UnsupportedAtenOp" else "error"
                    text = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:600]
                    for part in ("forward", "training"):
                        results.append(CaseResult(case=f"{op}[f32]:{part}", status=status, message=text,
                                                  max_ratio=0.0 if status == "unsupported" else np.inf, **ids))
                    continue
                comparisons.setdefault((spec.name, mode), {})[t.backend] = comparison
                for part in ("forward", "training"):
                    results.append(_model_result(comparison, part, ids))
    return results, comparisons


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
    for label, (got, expected) in comparison.pairs.items():
        if (label in _FORWARD) != (part == "forward"):
            continue
        a, e = got.detach().double().numpy(), expected.detach().double().numpy()
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
                      worst={"tensor": worst_label, "max_abs_error": worst_err, "tensors": compared}, **ids)


def agreement(comparisons: dict) -> list[dict]:
    """For each (model, mode) and pair of backends: max |a - b| of outputs, loss, gradients, buffers."""
    rows = []
    for (model, mode), by_backend in comparisons.items():
        for a, b in itertools.combinations(sorted(by_backend), 2):
            pa, pb = by_backend[a].pairs, by_backend[b].pairs
            groups: dict[str, float] = {"output": 0.0, "loss": 0.0, "gradients": 0.0, "buffers": 0.0}
            for label in pa.keys() & pb.keys():
                x, y = pa[label][0].detach().double(), pb[label][0].detach().double()
                diff = float((x - y).abs().max()) if x.shape == y.shape and x.numel() else (
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
    from .execute import NotClaimed, lower_for
    from .results import CaseResult

    results, records = [], []
    for op, dtype, graph, arrays in random_graphs():
        spec = evaluate(graph, arrays)[0]  # the reference backend's bits (the spec, rounded)
        name = op.removeprefix(RANDOM_PREFIX)
        for t in targets:
            if not t.available:
                continue
            ids = dict(case=f"{op}[{dtype.short}]:key", op=op, dtype=dtype.short, backend=t.backend, device=t.device)
            try:
                lowered, paths = lower_for(t.instance, graph)
                got = np.asarray(t.instance.compile(lowered, t.device)(*arrays)[0])
            except NotClaimed as exc:
                results.append(CaseResult(**ids, status="unsupported", message=str(exc)))
                continue
            except Exception as exc:  # noqa: BLE001
                results.append(CaseResult(**ids, status="error", max_ratio=np.inf,
                                          message=f"{type(exc).__name__}: {str(exc)[:500]}"))
                continue
            same = got.dtype == spec.dtype and got.shape == spec.shape and _same_bits(got, spec)
            differ = int(got.size if got.shape != spec.shape else np.count_nonzero(~_bitwise_equal(got, spec)))
            records.append({"op": name, "dtype": dtype.short, "backend": t.backend, "device": t.device,
                            "bit_identical": bool(same), "elements_differing": differ})
            if name == "normal":  # agreement to the contract bound, not bit for bit (see the module docstring)
                case = Case("normal", dtype, lambda rng: arrays, dict(graph.nodes[0].attrs), "key")
                m = measure(case, graph, arrays, evaluate(graph, arrays, oracle=True), [got])
                results.append(CaseResult(**ids, status="pass" if m.passed else "fail", path=paths.get(name, ""),
                                          max_ulp=m.max_ulp, max_ratio=m.max_ratio, mismatches=m.mismatches,
                                          message=("" if m.passed else m.message + " ") +
                                          f"bit-identical with the reference: {'yes' if same else 'no'}",
                                          worst=m.worst))
                continue
            results.append(CaseResult(**ids, status="pass" if same else "fail", path=paths.get(name, ""),
                                      max_ratio=0.0 if same else np.inf, mismatches=differ,
                                      message="" if same else f"{differ} of {spec.size} elements differ in their "
                                                              f"bits from the reference backend's draw"))
    return results, records


def _bitwise_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    return np.ascontiguousarray(a).view(width) == np.ascontiguousarray(b).view(width)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(_bitwise_equal(a, b).all())


def is_whole_model_row(op: str) -> bool:
    """A row of parity's zoo or of the Hugging Face zoo (both run on cpu targets only)."""
    from .hf.matrix import is_hf_row

    return is_model_row(op) or is_hf_row(op)


def rows(targets, *, models: bool = True, progress=None, which: str = "zoo", architectures=None,
         anchors: bool = True) -> tuple[list, dict]:
    """The case results of the model and random rows, and the ``models`` section of a run:
    ``{"agreement": [...], "random": [...], "tolerance": {...}}``, plus ``"hf"`` (the
    Hugging Face zoo's entries and anchors, :mod:`.hf.matrix`) when ``which`` is
    ``"hf"`` or ``"all"``."""
    results, section = [], {"random": [], "agreement": [], "tolerance": {"rtol": RTOL, "atol": ATOL}}
    if which in ("zoo", "all"):
        results, section["random"] = random_results(targets)
        if models:
            more, comparisons = model_rows(targets, progress)
            results += more
            section["agreement"] = agreement(comparisons)
    if which in ("hf", "all"):
        from .hf.matrix import ANCHORS, hf_rows

        more, section["hf"] = hf_rows(targets, architectures, progress, anchors=ANCHORS if anchors else ())
        results += more
    return results, section


__all__ = ["ATOL", "KEY", "RTOL", "agreement", "is_whole_model_row", "model_rows", "random_graphs", "random_results",
           "rows"]
