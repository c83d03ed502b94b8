"""Find onnxruntime's CPU kernel gaps by trying: every primitive case, lowered without legalization.

Run it after an onnxruntime upgrade and compare with backends/onnx/legalize.py:

    python tests/backends/onnx/probe_kernels.py

Prints one line per (op, dtype) that ORT cannot build or run, with ORT's reason. Not a
test (its name does not start with test_); tests/backends/onnx/test_legalize.py checks
that every gap it finds is in the legalization table.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from cases import cases, primitive_names  # noqa: E402

from parity.backends.onnx.backend import OnnxBackend, OnnxExecutable, make_session  # noqa: E402
from parity.backends.onnx.lowering import to_model  # noqa: E402
from parity.ir import OP_TABLE  # noqa: E402


def run_unlegalized(case) -> str | None:
    """None if ORT builds and runs the case's model as lowered, else ORT's first error line."""
    try:
        session = make_session(to_model(case.graph, legalize=False))
        OnnxExecutable(case.graph, "cpu", session)(*case.inputs)
    except Exception as exc:  # the point is to collect them
        return str(exc).splitlines()[0][:160]
    return None


def gaps(ops=None) -> dict[tuple[str, object], str]:
    """(op, dtype) -> reason, for every case that fails without legalization."""
    found = {}
    for op in ops or primitive_names():
        if op in OnnxBackend.declined:  # declined with a reason: no kernel to probe
            continue
        for dtype in OP_TABLE[op].dtypes:
            if dtype in OnnxBackend.declined_dtypes or dtype.is_complex:  # complex: float kernels on its parts
                continue
            for case in cases(op, dtype):
                error = run_unlegalized(case)
                if error is not None:
                    found[(op, dtype)] = f"{case.label}: {error}"
                    break
    return found


if __name__ == "__main__":
    for (op, dtype), reason in gaps(sys.argv[1:] or None).items():
        print(f"{op:24s} {dtype.short:5s} {reason}")
