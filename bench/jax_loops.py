"""JAX loops through ``parity.jax.jit`` against ``jax.jit``: rolled (the IR's ``loop``) and unrolled.

parity's JAX frontend translates ``lax.scan`` / ``fori_loop`` with a static trip count into
the IR's ``loop`` (frontend/jax/rules/control.py): xla and onnx run it rolled (a StableHLO
``while``, an ONNX ``Scan``), other backends unrolled, one copy of the body per step.
``--unrolled`` also times each backend on the program unrolled (the loop decomposed before
the backend sees it: what every backend ran before loops were rolled). Two workloads, forward
and ``value_and_grad``, with float32 inputs:

- ``stack``: a 12-layer Flax NNX residual MLP (LayerNorm → Linear → gelu, width 64, batch 8)
  whose layers are stacked by ``nnx.vmap`` and run by ``nnx.scan``;
- ``lstm``: an LSTM (hidden 64, input 32, batch 8) written with ``jnp``, its steps run by
  ``jax.lax.scan`` (64 steps; ``--sweep`` also 8, 16, 32, 64, 128).

Per program and backend: capture (``make_jaxpr`` + translation to IR) and backend compile in
seconds, wall and the process's CPU time (which other load does not inflate; inductor's C++
compiles run in worker processes it does not count), the IR's node count, and the steady call
(median over interleaved rounds after warm-up); for ``jax.jit``, trace + lower + compile.
``--ort-scan`` adds the LSTM forward built by hand as one ONNX ``Scan``: what a loop op would
run on onnxruntime. Every candidate's outputs are checked against ``jax.jit``'s
(bench/measure.py ``check_outputs``) before it is timed. The disk cache is off
(``PARITY_CACHE_DIR=""``) so every compile is cold. Results: bench/results/jax_loops.md.
Run from the repository root (``TRITON_INTERPRET=1`` for triton without a GPU)::

    python -m parity.bench.jax_loops --backends xla,onnx,inductor --markdown /tmp/loops.md
    python -m parity.bench.jax_loops --workloads lstm --sweep 8,16,32,64,128 --backends xla,onnx --ort-scan
    python -m parity.bench.jax_loops --workloads lstm --sweep 64 --forward-only --backends onnx --unrolled
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

FEATURES, HIDDEN, BATCH = 32, 64, 8  # the LSTM
WIDTH, LAYERS = 64, 12  # the NNX stack
PLANS = {"full": dict(rounds=7, batch_s=0.02, budget_s=1.5, min_rounds=3, warmup=1),
         "quick": dict(rounds=3, batch_s=0.002, budget_s=0.05, min_rounds=3, warmup=1)}  # a smoke run


@dataclass
class Program:
    """A pure function of float32 array leaves, and the leaves to call it with."""

    name: str
    fun: Callable
    args: tuple
    trips: int  # the loop's trip count


@dataclass
class Row:
    """One candidate's measurements of one program (None: not measured)."""

    program: str
    trips: int
    candidate: str
    nodes: int | None = None
    capture_s: float | None = None  # trace + translate (parity) or trace + lower (jax.jit)
    compile_s: float | None = None
    compile_cpu_s: float | None = None  # the process's CPU time while compiling: less moved by other load
    steady_ms: float | None = None
    steady_cpu_ms: float | None = None
    note: str = ""  # why a candidate was not timed (it failed, or its outputs were off jax.jit's)


def lstm_programs(steps: int) -> list[Program]:
    import jax
    import jax.numpy as jnp
    import numpy as np

    def loss(params, xs):
        def step(carry, x):
            h, c = carry
            i, f, g, o = jnp.split(x @ params["wx"] + h @ params["wh"] + params["b"], 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h

        zeros = jnp.zeros((BATCH, HIDDEN), jnp.float32)
        _, hs = jax.lax.scan(step, (zeros, zeros), xs)
        return (hs ** 2).mean()

    rng = np.random.default_rng(0)  # NumPy draws: no eager JAX op to compile before the measurement

    def normal(*shape, scale=1.0):
        return jnp.asarray(scale * rng.standard_normal(shape), jnp.float32)

    params = {"wx": normal(FEATURES, 4 * HIDDEN, scale=0.2), "wh": normal(HIDDEN, 4 * HIDDEN, scale=0.2),
              "b": jnp.zeros(4 * HIDDEN, jnp.float32)}
    xs = normal(steps, BATCH, FEATURES)
    return [Program(f"lstm{steps} forward", loss, (params, xs), steps),
            Program(f"lstm{steps} value_and_grad", jax.value_and_grad(loss), (params, xs), steps)]


def stack_programs(layers: int = LAYERS) -> list[Program]:
    import jax
    from flax import nnx

    class Block(nnx.Module):
        def __init__(self, rngs: nnx.Rngs):
            self.norm = nnx.LayerNorm(WIDTH, rngs=rngs)
            self.linear = nnx.Linear(WIDTH, WIDTH, rngs=rngs)

        def __call__(self, x):
            return x + nnx.gelu(self.linear(self.norm(x)))

    @nnx.split_rngs(splits=layers)
    @nnx.vmap(in_axes=(0,), out_axes=0)
    def make_blocks(rngs: nnx.Rngs) -> Block:
        return Block(rngs)

    @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
    def run_blocks(block: Block, x):
        return block(x)

    graphdef, params = nnx.split(make_blocks(nnx.Rngs(0)))

    def loss(p, x):
        return (run_blocks(nnx.merge(graphdef, p), x) ** 2).mean()

    x = jax.random.normal(jax.random.key(1), (BATCH, WIDTH))
    return [Program(f"stack{layers} forward", loss, (params, x), layers),
            Program(f"stack{layers} value_and_grad", jax.value_and_grad(loss), (params, x), layers)]


def ort_scan_lstm(steps: int) -> Callable:
    """The LSTM forward as onnxruntime would run a loop op: one ONNX ``Scan`` whose body is one
    step (written by hand here; parity's IR has no loop op to lower). Takes the program's flat
    leaves (b, wh, wx, xs: pytree order), returns [loss]. What a loop op could buy on onnx."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    from ..backends.onnx.backend import make_session

    f32 = TensorProto.FLOAT
    node = helper.make_node
    body = helper.make_graph(
        [node("MatMul", ["x", "wx"], ["xw"]), node("MatMul", ["h", "wh"], ["hw"]), node("Add", ["xw", "hw"], ["s"]),
         node("Add", ["s", "b"], ["z"]), node("Split", ["z"], ["i", "f", "g", "o"], axis=1, num_outputs=4),
         *(node("Sigmoid", [n], [f"{n}_s"]) for n in "ifo"), node("Tanh", ["g"], ["g_t"]),
         node("Mul", ["f_s", "c"], ["fc"]), node("Mul", ["i_s", "g_t"], ["ig"]), node("Add", ["fc", "ig"], ["c2"]),
         node("Tanh", ["c2"], ["c2_t"]), node("Mul", ["o_s", "c2_t"], ["h2"]), node("Identity", ["h2"], ["h_out"])],
        "step",
        [helper.make_tensor_value_info(n, f32, [BATCH, HIDDEN]) for n in ("h", "c")]
        + [helper.make_tensor_value_info("x", f32, [BATCH, FEATURES])],
        [helper.make_tensor_value_info(n, f32, [BATCH, HIDDEN]) for n in ("h2", "c2", "h_out")])
    zeros = np.zeros((BATCH, HIDDEN), np.float32)
    graph = helper.make_graph(
        [node("Scan", ["h0", "c0", "xs"], ["hT", "cT", "hs"], body=body, num_scan_inputs=1),
         node("Mul", ["hs", "hs"], ["sq"]), node("ReduceMean", ["sq"], ["loss"], keepdims=0)],
        "lstm_scan",
        [helper.make_tensor_value_info("b", f32, [4 * HIDDEN]),
         helper.make_tensor_value_info("wh", f32, [HIDDEN, 4 * HIDDEN]),
         helper.make_tensor_value_info("wx", f32, [FEATURES, 4 * HIDDEN]),
         helper.make_tensor_value_info("xs", f32, [steps, BATCH, FEATURES])],
        [helper.make_tensor_value_info("loss", f32, [])],
        [onnx.numpy_helper.from_array(zeros, "h0"), onnx.numpy_helper.from_array(zeros, "c0")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    onnx.checker.check_model(model, full_check=True)
    session = make_session(model)

    def run(b, wh, wx, xs):
        return session.run(["loss"], {"b": b, "wh": wh, "wx": wx, "xs": xs})

    return run


def measure(program: Program, backends: Sequence[str], plan: str = "full",
            by_hand: dict[str, Callable[[], Callable]] | None = None, unrolled: bool = False) -> list[Row]:
    """One program on jax.jit and each backend: compile times, checked outputs, steady times.
    ``by_hand``: more candidates, by name, each a function that builds a callable of the flat leaves.
    ``unrolled``: each backend also as "NAME unrolled", on the graph with its loops decomposed."""
    import jax
    import numpy as np

    from ..frontend.jax.compat import trace
    from ..frontend.jax.run import as_numpy, compile_graph
    from ..frontend.jax.translate import jaxpr_to_ir
    from ..ir.passes import decompose
    from ..ir.precision import Precision
    from .measure import TimingPlan, median, time_interleaved

    leaves, tree = jax.tree_util.tree_flatten(program.args)

    def flat(*ls):
        return program.fun(*jax.tree_util.tree_unflatten(tree, ls))

    start = time.perf_counter()
    lowered = jax.jit(flat).lower(*leaves)
    jax_row = Row(program.name, program.trips, "jax.jit", capture_s=time.perf_counter() - start)
    start, cpu_start = time.perf_counter(), time.process_time()
    jitted = lowered.compile()
    jax_row.compile_s, jax_row.compile_cpu_s = time.perf_counter() - start, time.process_time() - cpu_start
    want = [np.asarray(o) for o in jax.tree_util.tree_leaves(jitted(*leaves))]
    calls = {"jax.jit": lambda: jax.block_until_ready(jitted(*leaves))}

    start = time.perf_counter()
    graph = jaxpr_to_ir(trace(flat, leaves), program.name.replace(" ", "_"))
    capture_s = time.perf_counter() - start
    arrays = as_numpy(leaves)
    rows = [jax_row]
    graphs = {backend: graph for backend in backends}
    if unrolled:
        flat_graph, _ = decompose(graph, claimed=lambda op: op != "loop")  # every other composite as it was
        graphs.update({f"{backend} unrolled": flat_graph for backend in backends})
    builders = {name: lambda name=name, g=g: compile_graph(name.split()[0], g, "cpu", Precision.EXACT)
                for name, g in graphs.items()}
    for name, build in {**builders, **(by_hand or {})}.items():
        row = Row(program.name, program.trips, name)
        if name in builders:
            row.nodes, row.capture_s = len(graphs[name].nodes), capture_s
        rows.append(row)
        run = _admitted(row, build, arrays, want)
        if run is not None:
            calls[name] = lambda run=run: run(*arrays)
    cpu: dict[str, list[float]] = {}
    times = time_interleaved(calls, TimingPlan(**PLANS[plan]), cpu)
    for row in rows:
        if row.candidate in times:
            row.steady_ms = median(times[row.candidate]) * 1e3
            row.steady_cpu_ms = median(cpu[row.candidate]) * 1e3
    return rows


def _admitted(row: Row, build: Callable[[], Callable], arrays: list, want: list) -> Callable | None:
    """``build()`` timed into ``row``; the callable it builds, if its outputs match ``want``
    (else None, with the reason in ``row.note``: a failing or wrong candidate is not timed)."""
    import numpy as np

    from .measure import check_outputs

    start, cpu_start = time.perf_counter(), time.process_time()
    try:
        run = build()
        row.compile_s, row.compile_cpu_s = time.perf_counter() - start, time.process_time() - cpu_start
        got = [np.asarray(o) for o in run(*arrays)]
    except Exception as exc:  # a backend that cannot run the program is a row of the table, not a crash
        row.note = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
        return None
    wrong = check_outputs(got, want)
    if wrong:
        row.note = f"wrong: {wrong}"
        return None
    return run


def table(rows: Sequence[Row]) -> list[str]:
    lines = ["| program | candidate | IR nodes | capture s | compile s (cpu) | steady ms (cpu) | vs jax.jit |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    anchor = {r.program: r.steady_ms for r in rows if r.candidate == "jax.jit"}
    for r in rows:
        ratio = (f"{r.steady_ms / anchor[r.program]:.1f}×" if r.steady_ms and anchor.get(r.program) else "")
        lines.append(f"| {r.program} | {r.candidate} | {_num(r.nodes, '{:,}')} | {_num(r.capture_s, '{:.2f}')} | "
                     f"{_pair(r.compile_s, r.compile_cpu_s, '{:.2f}')} | {_pair(r.steady_ms, r.steady_cpu_ms, '{:.3f}')} | "
                     f"{ratio or r.note} |")
    return lines


def _num(value, fmt: str) -> str:
    return "" if value is None else fmt.format(value)


def _pair(wall, cpu, fmt: str) -> str:
    return "" if wall is None else f"{fmt.format(wall)} ({fmt.format(cpu)})"


def main(argv: Sequence[str] | None = None) -> int:
    from .measure import write_report

    parser = argparse.ArgumentParser(prog="python -m parity.bench.jax_loops", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default="stack,lstm", help="comma-separated, from: stack, lstm")
    parser.add_argument("--backends", default="xla,onnx", help="parity backends, comma-separated")
    parser.add_argument("--sweep", default="64", help="LSTM trip counts, comma-separated (default: 64)")
    parser.add_argument("--forward-only", action="store_true", help="skip the value_and_grad programs")
    parser.add_argument("--quick", action="store_true", help="a few short timing rounds (a smoke run, not a result)")
    parser.add_argument("--ort-scan", action="store_true",
                        help="also time the LSTM forward as one hand-built ONNX Scan on onnxruntime (a loop op's cost)")
    parser.add_argument("--unrolled", action="store_true",
                        help="also time each backend on the program with its loops unrolled (the loop op's decomposition)")
    parser.add_argument("--markdown", metavar="PATH", help="also write the table as Markdown")
    args = parser.parse_args(argv)
    os.environ["PARITY_CACHE_DIR"] = ""  # cold compiles: no disk cache, compiler caches in a temporary directory
    backends = [b for b in args.backends.split(",") if b]
    programs: list[Program] = []
    for workload in args.workloads.split(","):
        if workload == "stack":
            programs += stack_programs()
        elif workload == "lstm":
            programs += [p for steps in args.sweep.split(",") for p in lstm_programs(int(steps))]
        else:
            parser.error(f"unknown workload {workload!r}: choose from stack, lstm")
    if args.forward_only:
        programs = [p for p in programs if p.name.endswith("forward")]
    rows = []
    for program in programs:
        by_hand = ({"ort Scan (by hand)": lambda steps=program.trips: ort_scan_lstm(steps)}
                   if args.ort_scan and program.name.startswith("lstm") and program.name.endswith("forward") else {})
        new = measure(program, backends, "quick" if args.quick else "full", by_hand, unrolled=args.unrolled)
        rows += new
        print("\n".join(table(new)[2:]), flush=True)
    print(write_report(table(rows), args.markdown or ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
