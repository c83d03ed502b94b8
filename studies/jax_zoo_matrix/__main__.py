"""Every cell of the JAX zoo (model x stage x backend) against jax.jit, with its worst error.

The verdict is tests/jax/compare.py's rule (the one tests/jax/test_zoo.py and test_models.py
assert); beside it, each cell's largest ``max|got - jit| / max|jit|`` over its float leaves,
and for every leaf past the rule's 1e-4 the float64 oracle's distances (parity's and
jax.jit's), which is how such a leaf passes. One process, cells one after another, a JSON
line per cell appended as it finishes (a long run keeps what it measured); ``--markdown``
turns the lines into the table of docs/jax.md ("Tested").

Example::

    $ TRITON_INTERPRET=1 python -m studies.jax_zoo_matrix --backends xla,onnx --out /tmp/cells.jsonl
    $ python -m studies.jax_zoo_matrix --markdown /tmp/cells.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
import traceback

BACKENDS = ("reference", "xla", "onnx", "inductor", "triton")


def cell(model: str, stage: str, backend: str) -> dict:
    """One cell's verdict, worst relative error, loose leaves and seconds (compile included)."""
    import jax
    import numpy as np

    import parity.jax
    from parity.conformance.hf.check import RTOL
    from parity.conformance.jax_zoo import program
    from tests.jax.compare import _is_key, _plain, float64_run, mismatches

    start = time.perf_counter()
    record = {"model": model, "stage": stage, "backend": backend}
    try:
        fun, args = program(model, stage)
        got = parity.jax.jit(fun, backend=backend)(*args)
        want = jax.jit(fun)(*args)
        exact: list = []

        def oracle():
            if not exact:
                exact.append(float64_run(fun, *args))
            return exact[0]

        problems = mismatches(got, want, oracle)
        paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(want)[0]]
        worst, loose = 0.0, []
        for i, (g, w) in enumerate(zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want))):
            if _is_key(w):
                continue
            g, w = _plain(g), _plain(w)
            if w.dtype.kind != "f" or g.shape != w.shape:
                continue
            finite = np.isfinite(w)
            scale = float(np.max(np.abs(np.where(finite, w, 0)), initial=0.0))
            off = float(np.max(np.abs(np.where(finite, g.astype(np.float64) - w, 0)), initial=0.0))
            worst = max(worst, off / scale) if scale else worst
            if off > RTOL * scale:
                x = np.asarray(_plain(jax.tree_util.tree_leaves(oracle())[i]), np.float64)
                loose.append({"leaf": paths[i], "rel": off / scale if scale else None,
                              "parity_from_f64": float(np.max(np.abs(np.where(finite, g - x, 0)))),
                              "jit_from_f64": float(np.max(np.abs(np.where(finite, w - x, 0)))),
                              "f64_scale": float(np.max(np.abs(np.where(finite, x, 0))))})
        record.update(verdict="fail" if problems else "pass", worst_rel=worst, problems=problems, loose=loose)
    except Exception as exc:  # noqa: BLE001 - a cell that cannot run is a row of the table
        record.update(verdict="error", error=f"{type(exc).__name__}: {exc}"[:2000], trace=traceback.format_exc()[-3000:])
    record["seconds"] = round(time.perf_counter() - start, 1)
    return record


def markdown(lines: list[dict]) -> str:
    """The table: a row per model and stage, a column per backend, verdict and worst error."""
    cells = {(r["model"], r["stage"], r["backend"]): r for r in lines}
    rows = ["| model | stage | " + " | ".join(BACKENDS) + " |", "| --- | --- |" + " --- |" * len(BACKENDS)]
    for model, stage in dict.fromkeys((r["model"], r["stage"]) for r in lines):
        out = []
        for backend in BACKENDS:
            r = cells.get((model, stage, backend))
            if r is None:
                out.append("not run")
            elif r["verdict"] != "pass":
                out.append(f"**{r['verdict']}**")
            else:
                out.append(f"{r['worst_rel']:.1e}" + (" †" if r["loose"] else ""))
        rows.append(f"| {model} | {stage} | " + " | ".join(out) + " |")
    return "\n".join(rows)


def main() -> None:
    from parity.conformance.jax_zoo import MODEL_NAMES, STAGES

    parser = argparse.ArgumentParser(prog="python -m studies.jax_zoo_matrix", description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--models", default=",".join(MODEL_NAMES))
    parser.add_argument("--stages", default=",".join(STAGES))
    parser.add_argument("--out", help="the JSON lines file to append to")
    parser.add_argument("--markdown", metavar="JSONL", help="print the table of a finished run and stop")
    args = parser.parse_args()
    if args.markdown:
        print(markdown([json.loads(line) for line in open(args.markdown)]))
        return
    with open(args.out, "a") as out:
        for backend in args.backends.split(","):
            for model in args.models.split(","):
                for stage in args.stages.split(","):
                    record = cell(model, stage, backend)
                    out.write(json.dumps(record) + "\n")
                    out.flush()
                    print(backend, model, stage, record["verdict"], record.get("worst_rel"), record["seconds"], flush=True)


if __name__ == "__main__":
    main()
