"""Repros: one standalone folder per guilty node, runnable without the user's model.

Each folder holds the node as a fuzzer regression (``NAME.ir``: the node alone in the IR
text format, ``NAME.npz``: the exact bytes of the operands the backend fed it, ``NAME.json``:
where it came from and what was measured; the three files can be dropped into
``conformance/regressions/`` as they are) and ``repro.py``, which re-runs the node on the
backend and on the reference interpreter and prints both errors against the float64
oracle. ``repro.py`` exits 1 when the backend is over the contract (the fault reproduced),
0 when it is not.

Example::

    >>> import numpy as np, tempfile
    >>> from parity.ir import GraphBuilder, f32
    >>> from parity.debugger import diff_graph
    >>> b = GraphBuilder(); x = b.input(f32[2]); g = b.build([b.exp(x)])
    >>> diff_graph(g, [np.ones(2, np.float32)]).write_repro(tempfile.mkdtemp())  # nothing guilty
    []
"""

from __future__ import annotations

import argparse
import importlib
import json
import pathlib
from collections.abc import Sequence

import numpy as np

from ..conformance import regressions
from ..conformance.declared import Declared
from ..conformance.local import measure_local, single_node_graph
from ..ir.interpreter import evaluate
from .report import DiffReport

SCRIPT = '''#!/usr/bin/env python
"""Repro written by `parity diff`: {op}[{dtype}] at {loc}, on {backend}/{device}.

    python repro.py                      # on {backend}, as found
    python repro.py --backend NAME       # on another backend
    python repro.py --backend-from MOD:ATTR   # a Backend object (or factory) from an importable module

Exit status 1: the backend is over the contract on this node (reproduced); 0: it is not.
"""
import pathlib
import sys

from parity.debugger.repro import main

sys.exit(main(pathlib.Path(__file__).resolve().parent, sys.argv[1:]))
'''


def write_repros(report: DiffReport, directory, limit: int = 10) -> list[pathlib.Path]:
    """Write a folder per guilty node whose operands the report kept (at most ``limit``);
    return the folders, guiltiest first."""
    directory = pathlib.Path(directory)
    written = []
    for rank, row in enumerate(report.guilty(), 1):
        if len(written) >= limit:
            break
        operands, node = report.kept.get(row.key), report.nodes.get(row.key)
        if operands is None or node is None:
            continue
        graph = single_node_graph(node)
        name = f"{report.backend}-{row.op}-{row.dtype}-{graph.content_hash()[:8]}"
        folder = directory / f"{rank:02d}-{row.key}-{row.op}"
        meta = {"op": row.op, "dtype": row.dtype, "backend": report.backend, "device": report.device,
                "status": "fail" if row.verdict == "bug" else row.verdict,
                "found": {"by": "parity diff", "node": row.key, "graph_kind": row.kind, "loc": row.loc},
                "error": {"max_ratio": row.to_json()["local_ratio"], "max_ulp": row.to_json()["local_ulp"],
                          "bound": row.bound, "message": row.message, "worst": row.to_json()["worst"]},
                "note": "found by parity diff; open until the backend is fixed"}
        regressions.save(name, graph, operands, meta, directory=folder)
        (folder / "repro.py").write_text(SCRIPT.format(op=row.op, dtype=row.dtype, loc=row.loc or "(unknown line)",
                                                       backend=report.backend, device=report.device),
                                         encoding="utf-8")
        written.append(folder)
    return written


def load(folder) -> regressions.Regression:
    """The regression a repro folder holds."""
    found = sorted(pathlib.Path(folder).glob("*.ir"))
    if len(found) != 1:
        raise FileNotFoundError(f"{folder} should hold exactly one .ir file, found {len(found)}")
    return regressions.load(found[0])


def rerun(folder, backend, device: str | None = None) -> dict:
    """Run the repro in ``folder`` on ``backend`` (a Backend object) and on the reference
    interpreter; both measured against the float64 oracle under the node's contract."""
    from .execute import as_host_array, lower_node_graph

    case = load(folder)
    device = device or case.meta.get("device", "cpu")
    lowered = lower_node_graph(backend, case.graph)
    got = [as_host_array(o) for o in backend.compile(lowered, device)(*case.arrays)]
    mine = measure_local(case.graph, case.arrays, got, Declared.of(backend, device))
    spec = measure_local(case.graph, case.arrays, evaluate(case.graph, case.arrays))
    return {"op": case.meta["op"], "dtype": case.meta["dtype"], "nodes": len(case.graph.nodes),
            "lowered_nodes": len(lowered.nodes), "backend": backend.name,
            "backend_ulp": mine.max_ulp, "backend_ratio": float(mine.max_ratio), "backend_passed": mine.passed,
            "spec_ulp": spec.max_ulp, "spec_ratio": float(spec.max_ratio), "spec_passed": spec.passed,
            "reproduced": not mine.passed}


def _backend_from(target: str):
    module, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module), attr or "BACKEND")
    return value() if callable(value) and not hasattr(value, "compile") else value


def main(folder, argv: Sequence[str] = ()) -> int:
    """``repro.py``'s command line (see the script's docstring)."""
    from ..backends.registry import get_backend

    case = load(folder)
    parser = argparse.ArgumentParser(description=f"re-run the {case.meta['op']} node parity diff found")
    parser.add_argument("--backend", default=case.meta.get("backend", "reference"))
    parser.add_argument("--backend-from", metavar="MODULE:ATTR", help="a Backend object or factory to run on")
    parser.add_argument("--device", default=case.meta.get("device", "cpu"))
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(list(argv))
    backend = _backend_from(args.backend_from) if args.backend_from else get_backend(args.backend)
    result = rerun(folder, backend, args.device)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        bound = case.meta.get("error", {}).get("bound", "its contract")
        print(case.graph.to_text(locations=False))
        print(f"found at: {case.meta.get('found', {}).get('loc') or '(unknown line)'}")
        print(f"backend {result['backend']}: {_figure(result['backend_ulp'])} ULP, "
              f"{_figure(result['backend_ratio'])}x its bound ({bound})"
              f" -> {'OVER the contract: reproduced' if result['reproduced'] else 'within the contract'}")
        print(f"spec (reference interpreter): {_figure(result['spec_ulp'])} ULP, "
              f"{_figure(result['spec_ratio'])}x its bound")
    return 1 if result["reproduced"] else 0


def _figure(v) -> str:
    return "—" if v is None else "inf" if not np.isfinite(v) else f"{v:.3g}"

