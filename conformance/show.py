"""One conformance case laid open (``parity conform --show-case ID``): its inputs, the graph
under test, the reference interpreter's outputs (in the case's dtypes) beside the float64
oracle's, and each backend's outputs with its verdict — what a plugin author needs to see
why a cell fails without reading the runner.

Example::

    >>> text = show_case("neg[f32]:random", ["reference"])
    >>> print(text.splitlines()[0])
    case neg[f32]:random (op neg, dtype f32)
    >>> "reference on cpu: pass" in text
    True
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ..backends.base import Backend
from ..backends.registry import get_backend
from ..ir.interpreter import evaluate
from ..ir.usage import UsageError
from .execute import NotClaimed, Prepared, execute, lower_for, run_case
from .selection import select_cases

#: Elements printed per array; a larger one is summarised by NumPy (its edges).
SHOWN_ELEMENTS = 64


def find_case(case_id: str):
    """The case of the op database (or a fuzzer regression) whose id is ``case_id``."""
    op = case_id.partition("[")[0]
    found = [c for c in select_cases(ops=f"^{re.escape(op)}$") if c.id == case_id]
    if not found:
        ids = sorted(c.id for c in select_cases(ops=f"^{re.escape(op)}$")) if op else []
        near = [i for i in ids if i.startswith(case_id.partition(":")[0] + ":")] or ids[:12]
        hint = f"; the cases of {op!r}: {', '.join(near)}" if near else (
            "; a case id reads OP[DTYPE]:NAME, as a cell's worst case or `pytest --parity-backend` names it")
        raise UsageError(f"--show-case {case_id!r}: no such case{hint}")
    return found[0]


def show_case(case_id: str, backends: Sequence[str | Backend] = ("reference",), device: str = "cpu") -> str:
    """The text ``--show-case`` prints for ``case_id`` on each of ``backends`` (names or instances)."""
    case = find_case(case_id)
    p = Prepared(case)
    lines = [f"case {case.id} (op {case.op}, dtype {case.dtype.short})",
             f"attributes: {dict(case.attrs) or 'none'}", "", "inputs:"]
    lines += [_array(f"  input {k}", a) for k, a in enumerate(p.arrays)]
    lines += ["", "graph:", *("  " + line for line in str(p.graph).splitlines()), ""]
    lines += ["reference interpreter (the spec, in the case's dtypes):"]
    lines += [_array(f"  out{k}", o) for k, o in enumerate(evaluate(p.graph, p.arrays))]
    lines += ["oracle (float64; what every backend is measured against):"]
    lines += [_array(f"  out{k}", o) for k, o in enumerate(p.oracle)]
    for b in backends:
        backend = b if isinstance(b, Backend) else get_backend(b)
        lines += ["", *_backend_lines(backend, device, p)]
    return "\n".join(lines)


def _backend_lines(backend: Backend, device: str, p: Prepared) -> list[str]:
    result = run_case(backend, device, p.case, arrays=p.arrays, graph=p.graph, oracle=p.oracle)
    head = f"{backend.name} on {device}: {result.status}"
    if result.max_ulp is not None:
        head += f", max {result.max_ulp:.3g} ULP"
    lines = [head + (f" ({result.path})" if result.path else "")]
    if result.message:
        lines.append(f"  {result.message}")
    try:
        lowered, _ = lower_for(backend, p.graph)
        outputs = execute(backend, device, lowered, p.arrays)
    except NotClaimed:
        return lines
    except Exception as exc:  # noqa: BLE001 - the backend's failure is what the user came to see
        return [*lines, f"  raised {type(exc).__name__}: {exc}"]
    return lines + [_array(f"  out{k}", o) for k, o in enumerate(outputs)]


def _array(label: str, a) -> str:
    a = np.asarray(a)
    with np.printoptions(threshold=SHOWN_ELEMENTS, precision=9, floatmode="maxprec_equal"):
        body = np.array2string(a, separator=", ", prefix=" " * 4)
    return f"{label}: {a.dtype}{list(a.shape)} =\n    {body}"
