"""Formulations of ``logistic`` for the onnx backend: accuracy against the contract and speed in ORT.

    .venv/bin/python -m bench.onnx_logistic [--rounds N] [--sizes 22,24] [--no-time] [--markdown PATH]

For each formulation (an ONNX rule for the IR's ``logistic``, lowered through parity's own
``to_model`` with the rule swapped in):

- max ULP error of the one-op graph over dense sweeps, per dtype (the conformance bound is
  4 ULP in float32/float64 and 1 ULP in float16/bfloat16, which run in float32 and round
  once): float32 on a dense grid of [-120, 40], every float32 in [-104, -87] (the results
  are subnormal or underflow there), every 7th float32 in [-20, -8] (where ORT's Sigmoid
  degrades), 1M random bit patterns, and the edge values; float64 on [-800, 800] and a dense
  grid of [-746, -700] against a long-double oracle; float16 and bfloat16 exhaustively;
- ms per call of the workload ``sigmoid(x*1.5+2)*x - sqrt(|x|)`` (float32, 4M and 16M
  elements) in raw ORT with IOBinding (inputs and output bound once), with 1 thread and all
  threads, next to the same model exported by ``torch.onnx.export`` (ORT's ``Sigmoid``).
  Rounds are interleaved (every candidate once per round, in a rotating order); the table
  gives medians after warm-up rounds.

Then ORT's profiler splits one call of the current and the chosen formulation by op type,
and the tiny ``relu(x*2+1)`` (4×4) is timed piece by piece: raw ORT vs parity's executable
vs ``parity.compile``. Not a test: tests never assert time.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import tempfile
import time
import warnings

import ml_dtypes
import numpy as np
import onnxruntime as ort

from parity.backends.onnx import lowering
from parity.backends.onnx.backend import DISABLED_OPTIMIZERS, OnnxExecutable, _session_options
from parity.backends.onnx.elementwise import logistic as current_rule
from parity.conformance.metrics import ulp_error
from parity.ir import DType, GraphBuilder, f32

# -- formulations ---------------------------------------------------------------------------

_CLAMP = 40.0  # e**40 = 2.4e17 > 2**57: 1 + e rounds to e in float32 and float64, so e / (1 + e) is 1.0


def _exact_where(ctx, x):
    """The pre-change rule, written out (ctx.where: Where on the bits, -0.0 kept)."""
    e = ctx.op("Exp", ctx.op("Neg", ctx.op("Abs", x)))
    d = ctx.op("Add", e, ctx.scalar(1))
    return ctx.where(ctx.op("GreaterOrEqual", x, ctx.scalar(0)), ctx.op("Reciprocal", d), ctx.op("Div", e, d),
                     ctx.dtype)


def _plain_where(ctx, x):
    """The same with ORT's float Where (no BitCast): logistic is never -0.0."""
    e = ctx.op("Exp", ctx.op("Neg", ctx.op("Abs", x)))
    d = ctx.op("Add", e, ctx.scalar(1))
    return ctx.op("Where", ctx.op("GreaterOrEqual", x, ctx.scalar(0)), ctx.op("Reciprocal", d), ctx.op("Div", e, d))


def _recip_mul_where(ctx, x):
    """One reciprocal: r = 1/(1+e); x < 0 gives e*r."""
    e = ctx.op("Exp", ctx.op("Neg", ctx.op("Abs", x)))
    r = ctx.op("Reciprocal", ctx.op("Add", e, ctx.scalar(1)))
    return ctx.op("Where", ctx.op("GreaterOrEqual", x, ctx.scalar(0)), r, ctx.op("Mul", e, r))


def _two_exp(ctx, x):
    """No Where: 1/(1+e**-|x|) times e**min(x, 0) (exactly 1 for x >= 0)."""
    e = ctx.op("Exp", ctx.op("Neg", ctx.op("Abs", x)))
    r = ctx.op("Reciprocal", ctx.op("Add", e, ctx.scalar(1)))
    return ctx.op("Mul", r, ctx.op("Exp", ctx.op("Min", x, ctx.scalar(0))))


def _max_step(ctx, x):
    """No Where: r * max(e, [x >= 0]) (e <= 1, so the max is 1 for x >= 0 and e below)."""
    e = ctx.op("Exp", ctx.op("Neg", ctx.op("Abs", x)))
    r = ctx.op("Reciprocal", ctx.op("Add", e, ctx.scalar(1)))
    step = ctx.cast(ctx.op("GreaterOrEqual", x, ctx.scalar(0)), ctx.dtype)
    return ctx.op("Mul", r, ctx.op("Max", e, step))


def _clamped_div(ctx, x):
    """e = e**min(x, 40); e / (1 + e). One branch: 1 + e never cancels (e > 0)."""
    e = ctx.op("Exp", ctx.op("Min", x, ctx.scalar(_CLAMP)))
    return ctx.op("Div", e, ctx.op("Add", e, ctx.scalar(1)))


def _clamped_recip_mul(ctx, x):
    """The same with e * (1/(1+e)) instead of the division."""
    e = ctx.op("Exp", ctx.op("Min", x, ctx.scalar(_CLAMP)))
    return ctx.op("Mul", e, ctx.op("Reciprocal", ctx.op("Add", e, ctx.scalar(1))))


def _sigmoid(ctx, x):
    """ORT's Sigmoid alone (out of contract below -9.7: shown for its speed)."""
    return ctx.op("Sigmoid", x)


_SIGMOID_FROM = -9.0


def _sigmoid_patched(ctx, x):
    """ORT's Sigmoid from -9 up; e/(1+e) with e = e**x below (one Where)."""
    e = ctx.op("Exp", x)
    low = ctx.op("Div", e, ctx.op("Add", e, ctx.scalar(1)))
    return ctx.op("Where", ctx.op("Less", x, ctx.scalar(_SIGMOID_FROM)), low, ctx.op("Sigmoid", x))


FORMULATIONS = {
    "current (parity rule)": (current_rule, "the rule in backends/onnx/elementwise.py now"),
    "exact_where (bits)": (_exact_where, "the rule before this change: Abs Neg Exp Add Reciprocal Div GE Where, "
                                         "Where on the bits (3 BitCast)"),
    "plain_where": (_plain_where, "the same, float Where"),
    "recip_mul_where": (_recip_mul_where, "Abs Neg Exp Add Reciprocal Mul GE Where"),
    "two_exp": (_two_exp, "Abs Neg Exp Add Reciprocal Min Exp Mul"),
    "max_step": (_max_step, "Abs Neg Exp Add Reciprocal GE Cast Max Mul"),
    "clamped_div": (_clamped_div, "Min Exp Add Div"),
    "clamped_recip_mul": (_clamped_recip_mul, "Min Exp Add Reciprocal Mul"),
    "sigmoid_patched": (_sigmoid_patched, "Exp Add Div Less Sigmoid Where"),
    "ort_sigmoid": (_sigmoid, "Sigmoid (ORT)"),
}


_EXE_CALL = "current rule, called through parity's OnnxExecutable"
_NO_OPT = "current rule, ORT graph optimizations off"


@contextlib.contextmanager
def rule(fn):
    saved = lowering.LOWERINGS["logistic"]
    lowering.LOWERINGS["logistic"] = fn
    try:
        yield
    finally:
        lowering.LOWERINGS["logistic"] = saved


def session(model, threads: int, level=None) -> ort.InferenceSession:
    options = _session_options()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if level is not None:
        options.graph_optimization_level = level
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"],
                                disabled_optimizers=DISABLED_OPTIMIZERS)


# -- accuracy -------------------------------------------------------------------------------


def _f32_sweep() -> np.ndarray:
    rng = np.random.default_rng(0)
    dense = np.linspace(-120, 40, 4_000_001).astype(np.float32)
    lo, hi = np.float32(-104).view(np.uint32), np.float32(-87).view(np.uint32)  # negative: bits grow with |x|
    under = np.arange(hi, lo + 1, dtype=np.uint32).view(np.float32)
    lo, hi = np.float32(-20).view(np.uint32), np.float32(-8).view(np.uint32)
    mid = np.arange(hi, lo + 1, 7, dtype=np.uint32).view(np.float32)
    bits = rng.integers(0, 2**32, 1_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    info = np.finfo(np.float32)
    edge = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, info.max, -info.max, info.tiny, -info.tiny,
                     info.smallest_subnormal, -info.smallest_subnormal, 88.5, -88.5, 103.9, -103.9, 17.0, 40.0, 41.0],
                    np.float32)
    return np.concatenate([dense, under, mid, bits[np.isfinite(bits)], edge])


def _f64_sweep() -> np.ndarray:
    rng = np.random.default_rng(1)
    return np.concatenate([np.linspace(-800, 800, 2_000_001), np.linspace(-746, -700, 2_000_001),
                           rng.normal(0, 10, 500_000), np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 36.7, 40.0, 41.0,
                                                                 -708.4, -745.1, 5e-324, -5e-324])])


def _all(dtype) -> np.ndarray:
    return np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(dtype)


SWEEPS = {
    DType.float32: (_f32_sweep, 4),
    DType.float64: (_f64_sweep, 4),
    DType.float16: (lambda: _all(np.float16), 1),
    DType.bfloat16: (lambda: _all(ml_dtypes.bfloat16), 1),
}


def oracle(x: np.ndarray, dtype: DType) -> np.ndarray:
    """logistic in float64 (long double for float64 inputs), the two-branch formula."""
    wide = np.longdouble if dtype is DType.float64 else np.float64
    with np.errstate(over="ignore", invalid="ignore"):
        xw = x.astype(wide)
        e = np.exp(-np.abs(xw))
        return np.where(xw >= 0, 1 / (1 + e), e / (1 + e))


def logistic_graph(dtype: DType, n: int):
    b = GraphBuilder("logistic")
    x = b.input(dtype[n])
    return b.build([b.logistic(x)])


def worst_ulp(fn, dtype: DType, x: np.ndarray | None = None) -> tuple[float, float]:
    """(max ULP error over the sweep, the x where it is)."""
    if x is None:
        x = SWEEPS[dtype][0]()
    graph = logistic_graph(dtype, x.size)
    with rule(fn):
        model = lowering.to_model(graph)
    run = OnnxExecutable(graph, "cpu", session(model, 1))
    (got,) = run(x)
    o = oracle(x, dtype).astype(np.float64)
    with np.errstate(all="ignore"):
        err = ulp_error(dtype, o, got)
    i = int(np.nanargmax(np.where(np.isnan(err), np.inf, err)))
    return float(err[i]), float(x[i])


# -- speed ----------------------------------------------------------------------------------


def chain_graph(n: int):
    b = GraphBuilder("chain")
    x = b.input(f32[n])

    def c(v):
        return b.broadcast_in_dim(b.constant(v, DType.float32), shape=[n], broadcast_dimensions=[])

    y = b.mul(b.logistic(b.add(b.mul(x, c(1.5)), c(2.0))), x)
    return b.build([b.sub(y, b.sqrt(b.abs(x)))])


def chain_torch(x):
    import torch

    return torch.sigmoid(x * 1.5 + 2) * x - torch.sqrt(torch.abs(x))


def torch_onnx_model(n: int):
    """The workload exported by torch.onnx.export (dynamo=True), as the ort anchor does."""
    import onnx
    import torch

    class M(torch.nn.Module):
        def forward(self, x):
            return chain_torch(x)

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        program = torch.onnx.export(M().eval(), (torch.zeros(n),), input_names=["in0"], output_names=["out0"],
                                    dynamo=True)
    return onnx.load_from_string(program.model_proto.SerializeToString())


def bound_call(sess: ort.InferenceSession, x: np.ndarray):
    out = np.empty_like(x)
    binding = sess.io_binding()
    binding.bind_input(sess.get_inputs()[0].name, "cpu", 0, np.float32, list(x.shape), x.ctypes.data)
    binding.bind_output(sess.get_outputs()[0].name, "cpu", 0, np.float32, list(out.shape), out.ctypes.data)

    def call():
        sess.run_with_iobinding(binding)
        return out

    call.keep = (sess, binding, out)
    return call


def interleaved(calls: dict, rounds: int, warmup: int = 2, per_round: int = 1,
                stat=statistics.median) -> dict[str, float]:
    """ms per call (median over rounds): every candidate once per round, in a rotating order.
    ``stat=None`` returns the raw per-round times."""
    names = list(calls)
    times = {k: [] for k in names}
    for r in range(warmup + rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for k in order:
            start = time.perf_counter()
            for _ in range(per_round):
                calls[k]()
            elapsed = (time.perf_counter() - start) / per_round * 1e3
            if r >= warmup:
                times[k].append(elapsed)
    return times if stat is None else {k: stat(v) for k, v in times.items()}


def op_count(model) -> int:
    return sum(1 for node in model.graph.node if node.op_type != "Constant")


def profile(model, x: np.ndarray, threads: int, runs: int = 5) -> dict[str, float]:
    """ms per call by ORT op type (ORT's profiler, median of ``runs`` calls after one warm-up)."""
    options = _session_options()
    options.intra_op_num_threads = threads
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as tmp:
        options.profile_file_prefix = os.path.join(tmp, "p")
        sess = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"],
                                    disabled_optimizers=DISABLED_OPTIMIZERS)
        call = bound_call(sess, x)
        for _ in range(runs + 1):
            call()
        with open(sess.end_profiling()) as f:
            events = json.load(f)
    per_run: dict[str, list[float]] = {}
    nodes = [e for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    by_call: dict[int, dict[str, float]] = {}
    runs_seen = [e for e in events if e.get("cat") == "Session" and e["name"] == "model_run"]
    starts = sorted(e["ts"] for e in runs_seen)
    for e in nodes:
        k = sum(1 for s in starts if s <= e["ts"]) - 1
        op = e["args"].get("op_name", "?")
        by_call.setdefault(k, {}).setdefault(op, 0.0)
        by_call[k][op] += e["dur"] / 1e3
    for k in sorted(by_call)[1:]:
        for op, ms in by_call[k].items():
            per_run.setdefault(op, []).append(ms)
    total = [sum(e["dur"] for e in runs_seen if e["ts"] == s) / 1e3 for s in starts[1:]]
    out = {op: statistics.median(v) for op, v in per_run.items()}
    out["(model_run)"] = statistics.median(total)
    return out


def tiny_pieces(calls: int = 3000, rounds: int = 9) -> dict[str, float]:
    """µs per call of relu(x*2+1) on a 4×4 float32, piece by piece (interleaved medians of
    ``rounds`` rounds of ``calls`` calls each)."""
    import torch

    import parity
    from parity.backends.onnx import OnnxBackend

    b = GraphBuilder("tiny")
    x = b.input(f32[4, 4])

    def c(v):
        return b.broadcast_in_dim(b.constant(v, DType.float32), shape=[4, 4], broadcast_dimensions=[])

    graph = b.build([b.max(b.add(b.mul(x, c(2.0)), c(1.0)), c(0.0))])
    xs = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    xt = torch.from_numpy(xs)
    model = lowering.to_model(graph)
    sess = session(model, 1)
    run = OnnxExecutable(graph, "cpu", sess)
    backend_run = OnnxBackend().compile(graph, "cpu")
    compiled = parity.compile(lambda t: torch.relu(t * 2 + 1), backend="onnx")
    compiled(xt)
    public = sess.io_binding()
    public.bind_cpu_input("in0", xs)
    public.bind_output("out0", "cpu")
    raw_binding, raw_sess = public._iobinding, sess._sess  # what OnnxExecutable calls
    options = ort.RunOptions()
    bound = bound_call(sess, xs)
    pieces = {
        "ORT session.run (numpy feed)": lambda: sess.run(None, {"in0": xs}),
        "ORT run_with_iobinding, bound once (wrapper)": bound,
        "ORT pybind run_with_iobinding, bound once": lambda: raw_sess.run_with_iobinding(raw_binding, options),
        "  + copy_outputs_to_cpu": lambda: (raw_sess.run_with_iobinding(raw_binding, options),
                                            raw_binding.copy_outputs_to_cpu()),
        "parity OnnxExecutable(numpy)": lambda: run(xs),
        "parity OnnxExecutable(torch tensor)": lambda: run(xt),
        "parity backend.compile(graph)(numpy)": lambda: backend_run(xs),
        "parity.compile(fn)(torch tensor)": lambda: compiled(xt),
        "eager torch relu(x*2+1)": lambda: torch.relu(xt * 2 + 1),
    }
    return {k: ms * 1e3 for k, ms in interleaved(pieces, rounds, warmup=1, per_round=calls).items()}


# -- main -----------------------------------------------------------------------------------


def main(argv=None) -> str:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--sizes", default="22,24", help="log2 of the element counts")
    ap.add_argument("--only", default="", help="comma-separated formulations (default: all)")
    ap.add_argument("--no-time", action="store_true")
    ap.add_argument("--no-ulp", action="store_true")
    ap.add_argument("--markdown", default="")
    args = ap.parse_args(argv)
    names = [n for n in FORMULATIONS if not args.only or n in args.only.split(",") or n.startswith("current")]
    all_threads = len(os.sched_getaffinity(0))
    lines = [f"onnxruntime {ort.__version__}, {os.cpu_count()} CPUs ({all_threads} allowed), "
             f"{time.strftime('%Y-%m-%d %H:%M')}", ""]

    def emit(s=""):
        print(s, flush=True)
        lines.append(s)

    ulps = {}
    if not args.no_ulp:
        sweeps = {d: SWEEPS[d][0]() for d in SWEEPS}
        emit("## Max ULP error of logistic over the sweeps (bound: 4 ULP f32/f64, 1 ULP f16/bf16)")
        emit()
        emit("| formulation | ONNX ops | " + " | ".join(f"{d.short} (worst x)" for d in SWEEPS) + " |")
        emit("|---|---|" + "---|" * len(SWEEPS))
        for name in names:
            fn, _ = FORMULATIONS[name]
            cells = []
            for d, x in sweeps.items():
                err, at = worst_ulp(fn, d, x)
                ulps[(name, d)] = err
                mark = "" if err <= SWEEPS[d][1] else " **over**"
                cells.append(f"{err:.3g} ({at:.4g}){mark}")
            with rule(fn):
                n_ops = op_count(lowering.to_model(logistic_graph(DType.float32, 8)))
            emit(f"| {name} | {n_ops} | " + " | ".join(cells) + " |")
        emit()
        emit("Sizes: f32 " + f"{sweeps[DType.float32].size:,}" + " points, f64 "
             + f"{sweeps[DType.float64].size:,}" + ", f16/bf16 all 65,536. Formulations: "
             + "; ".join(f"{n}: {FORMULATIONS[n][1]}" for n in names) + ".")
        emit()

    if not args.no_time:
        sizes = [1 << int(s) for s in args.sizes.split(",")]
        anchor = {n: torch_onnx_model(n) for n in sizes}
        emit("## sigmoid(x*1.5+2)*x - sqrt(|x|), float32: ms per call (raw ORT, IOBinding, interleaved medians)")
        emit()
        header = [f"{n >> 20}M {t}T" for n in sizes for t in (1, all_threads)]
        emit("| model | ONNX ops | " + " | ".join(header) + " | " + " | ".join(f"×anchor {h}" for h in header) + " |")
        emit("|---|---|" + "---|" * (2 * len(header)))
        results: dict[tuple[str, str], float] = {}
        fastest: dict[tuple[str, str], float] = {}
        counts = {}
        for n in sizes:
            x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
            models = {"torch.onnx.export (Sigmoid)": anchor[n]}
            graph = chain_graph(n)
            for name in names:
                with rule(FORMULATIONS[name][0]):
                    models[name] = lowering.to_model(graph)
            for k, m in models.items():
                counts[k] = op_count(m)
            for t in (1, all_threads):
                calls = {k: bound_call(session(m, t), x) for k, m in models.items()}
                # parity's own executable around the same session (wrapper, output recycling)
                exe = OnnxExecutable(graph, "cpu", session(models["current (parity rule)"], t))
                calls[_EXE_CALL] = lambda exe=exe: exe(x)
                calls[_NO_OPT] = bound_call(session(models["current (parity rule)"], t,
                                                    ort.GraphOptimizationLevel.ORT_DISABLE_ALL), x)
                rounds = args.rounds if n < (1 << 24) else max(5, args.rounds * 2 // 3)
                for k, v in interleaved(calls, rounds, stat=None).items():
                    results[(k, f"{n >> 20}M {t}T")] = statistics.median(v)
                    fastest[(k, f"{n >> 20}M {t}T")] = min(v)
                del calls
        counts[_EXE_CALL] = counts[_NO_OPT] = counts["current (parity rule)"]
        keys = ["torch.onnx.export (Sigmoid)", *names, _EXE_CALL, _NO_OPT]
        for table, title in ((results, None), (fastest, "The same rounds, fastest round (less exposed to a loaded machine)")):
            if title:
                emit(f"{title}:")
                emit()
                emit("| model | ONNX ops | " + " | ".join(header) + " | "
                     + " | ".join(f"×anchor {h}" for h in header) + " |")
                emit("|---|---|" + "---|" * (2 * len(header)))
            for k in keys:
                ms = [table[(k, h)] for h in header]
                rel = [table[(k, h)] / table[("torch.onnx.export (Sigmoid)", h)] for h in header]
                emit(f"| {k} | {counts[k]} | " + " | ".join(f"{v:.2f}" for v in ms) + " | "
                     + " | ".join(f"{r:.2f}" for r in rel) + " |")
            emit()

        n = sizes[0]
        x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
        emit(f"## ORT profiler: ms per call by op type, {n >> 20}M, 1 thread (median of 5 calls)")
        emit()
        profiled = {"torch.onnx.export (Sigmoid)": anchor[n]}
        for name in ("exact_where (bits)", "current (parity rule)"):
            if name in names:
                with rule(FORMULATIONS[name][0]):
                    profiled[name] = lowering.to_model(chain_graph(n))
        for k, m in profiled.items():
            prof = profile(m, x, 1)
            total = prof.pop("(model_run)")
            parts = ", ".join(f"{op} {ms:.2f}" for op, ms in sorted(prof.items(), key=lambda kv: -kv[1]))
            emit(f"- {k}: model_run {total:.2f} ms; kernels {sum(prof.values()):.2f} ms: {parts}")
        emit()

        emit("## Tiny relu(x*2+1), 4×4 float32, 1 thread: µs per call (interleaved medians of 9 rounds × 3000)")
        emit()
        emit("| piece | µs |")
        emit("|---|---|")
        for k, us in tiny_pieces().items():
            emit(f"| {k} | {us:.2f} |")
        emit()

    text = "\n".join(lines) + "\n"
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("# logistic on the onnx backend: formulations measured (bench/onnx_logistic.py)\n\n" + text)
    return text


if __name__ == "__main__":
    main()
