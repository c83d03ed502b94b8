"""One conformance case laid open (``parity conform --show-case ID``): its inputs, the graph
under test, the reference interpreter's outputs (in the case's dtypes) beside the float64
oracle's, and each backend's outputs with its verdict — what a plugin author needs to see
why a cell fails without reading the runner. A JAX frontend row's case (``jax:NAME[DTYPE]:CASE``)
shows ``jax.jit``'s outputs and the row's verdict in place of the backends'.

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
from .declared import Declared
from .execute import NotClaimed, Prepared, execute, lower_for, run_case
from .jax_frontend.spec import ROW_PREFIX as FRONTEND_PREFIX
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
    """The text ``--show-case`` prints for ``case_id`` on each of ``backends`` (names or instances);
    a JAX frontend row's case (``jax:neg[f32]:random``) on its one column, ``jax/cpu``."""
    if case_id.startswith(FRONTEND_PREFIX):
        return show_frontend_case(case_id)
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


def show_frontend_case(case_id: str) -> str:
    """A JAX frontend case laid open: its inputs, the graph parity captures (the rules under test),
    the reference interpreter's and the oracle's outputs, ``jax.jit``'s, and the row's verdict; a
    refusal case: the error the capture raised and its verdict."""
    from .jax_frontend import bridge
    from .jax_frontend.check import COLUMN, DEVICE, jax_for, jax_result, run_case
    from .jax_frontend.deviations import jax_column
    from .jax_frontend.registry import find
    from .jax_frontend.spec import Refusal

    try:
        case = find(case_id)
    except KeyError as missing:
        raise UsageError(f"--show-case {case_id!r}: {missing.args[0]}") from None
    declared = Declared.of(jax_column(), DEVICE)
    result = run_case(case, declared)
    verdict = f"{COLUMN} on {DEVICE}: {result.status}" + (f", max {result.max_ulp:.3g} ULP" if result.max_ulp
                                                          is not None else "") + f" ({result.path})"
    verdict_lines = ["", verdict] + ([f"  {result.message}"] if result.message else [])
    if isinstance(case, Refusal):
        lines = [f"case {case.id} (JAX primitive {case.primitive}: the capture must refuse it with {case.error})"]
        try:
            bridge.capture(case.fun, list(case.args))
            lines.append("the capture: no error")
        except Exception as exc:  # noqa: BLE001 - the refusal is what the case shows
            lines += ["the capture refused:", *(f"  {line}" for line in f"{type(exc).__name__}: {exc}".splitlines())]
        return "\n".join(lines + verdict_lines)
    arrays = case.arrays()
    with jax_for(arrays, case.x64):
        graph = bridge.capture(case.fun, arrays)
    lines = [f"case {case.id} (JAX primitive {case.primitive}, dtype {case.dtype.short})", "", "inputs:"]
    lines += [_array(f"  input {k}", a) for k, a in enumerate(arrays)]
    lines += ["", "graph parity captures (the translation rules under test):",
              *("  " + line for line in str(graph).splitlines()), ""]
    lines += ["reference interpreter (the spec, in the case's dtypes):"]
    lines += [_array(f"  out{k}", o) for k, o in enumerate(evaluate(graph, arrays))]
    lines += ["oracle (float64; what jax.jit is measured against):"]
    lines += [_array(f"  out{k}", o) for k, o in enumerate(evaluate(graph, arrays, oracle=True))]
    lines += ["jax.jit on cpu (the row's outputs):"]
    lines += [_array(f"  out{k}", o) for k, o in enumerate(jax_result(case, arrays))]
    return "\n".join(lines + verdict_lines)


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
