"""JAX → ONNX: ``parity.jax.export`` against jax2onnx (a peer measured, never a dependency).

The models of conformance/jax_zoo/plain.py (an MLP, a CNN, a causal transformer LM), a Flax NNX
MLP with LayerNorm, and three recurrent models over 20 steps (input 16, hidden 32): an LSTM as one
``lax.scan``, a bidirectional LSTM (a forward and a ``reverse=True`` scan) and a Flax NNX
``nnx.RNN`` over an ``nnx.LSTMCell`` (an ``nnx.scan``), each as a forward, ``jax.value_and_grad`` of its loss, and one optax
Adam step, are exported by both tools with a symbolic batch ``b`` (and, where that fails,
with the example's fixed batch). Each file runs in plain onnxruntime at the example's
batch (and at batch 1 and 8 when the batch is symbolic) and is compared with jax.jit and with
a float64 run of the same JAX function (the oracle): the error is
``max|got − float64| / max|float64|`` over every output leaf, beside jax.jit's own; a file
passes when every leaf matches jax.jit by tests/jax/compare.py's rule (the contract the
JAX frontend's tests use). Also: export seconds (one call, warm process), file size, and how
the file holds loops: its ``Scan``/``Loop`` nodes (at any depth) against its top-level nodes
and the nodes inside their bodies (a model with a scan whose file has none was unrolled).

jax2onnx is installed into the worktree's venv only (``pip install 'jax2onnx==0.17.*'`` with
torch, jax, jaxlib, onnx and onnxruntime pinned); no test imports it.

    $ python -m studies.jax_export [--only mlp,nnx_mlp] [--out table.md]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
import traceback
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import onnxruntime as ort

import parity.jax
from parity.conformance.jax_zoo.plain import MODELS, STAGES, Model, stage_of
from tests.jax.compare import float64_run, mismatches

EXTRA_SIZES = (1, 8)  # batches a file with a symbolic batch also runs at


def nnx_mlp() -> Model:
    """A Flax NNX MLP with LayerNorm and GELU, as (state, batch) functions (nnx.split)."""
    from flax import nnx

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.up = nnx.Linear(6, 16, rngs=rngs)
            self.norm = nnx.LayerNorm(16, rngs=rngs)
            self.down = nnx.Linear(16, 4, rngs=rngs)

        def __call__(self, x):
            return self.down(nnx.gelu(self.norm(self.up(x))))

    graphdef, state = nnx.split(MLP(nnx.Rngs(0)))
    state = jax.tree_util.tree_map(jnp.asarray, nnx.to_pure_dict(state))
    x = jax.random.normal(jax.random.key(3), (5, 6))
    batch = {"x": x, "y": jax.nn.one_hot(jnp.arange(5) % 4, 4)}

    def forward(params, b):
        model = nnx.merge(graphdef, nnx.State(params) if hasattr(nnx, "State") else params)
        return model(b["x"])

    def loss(params, b):
        return -(jax.nn.log_softmax(forward(params, b)) * b["y"]).sum(-1).mean()

    return Model("nnx_mlp", loss, forward, state, batch)


FEATURES, HIDDEN, STEPS, CLASSES, BATCH = 16, 32, 20, 4, 5  # the recurrent models' sizes


def _sequence_batch(seed):
    k = jax.random.split(jax.random.key(seed))
    return {"x": jax.random.normal(k[0], (BATCH, STEPS, FEATURES)),
            "y": jax.nn.one_hot(jax.random.randint(k[1], (BATCH,), 0, CLASSES), CLASSES)}


def _lstm_params(key):
    k = jax.random.split(key, 3)
    scale = 1 / np.sqrt(HIDDEN)
    return {"wx": scale * jax.random.normal(k[0], (FEATURES, 4 * HIDDEN)),
            "wh": scale * jax.random.normal(k[1], (HIDDEN, 4 * HIDDEN)), "b": jnp.zeros(4 * HIDDEN)}


def _lstm_scan(p, x, reverse=False):
    """The hidden states of an LSTM over ``x`` (batch, steps, features), one ``lax.scan``, time-major."""
    def step(carry, xt):
        h, c = carry
        i, f, g, o = jnp.split(xt @ p["wx"] + h @ p["wh"] + p["b"], 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    zeros = jnp.zeros((x.shape[0], HIDDEN), x.dtype)  # the batch may be symbolic
    _, hs = jax.lax.scan(step, (zeros, zeros), x.transpose(1, 0, 2), reverse=reverse)
    return hs.transpose(1, 0, 2)


def _cross_entropy(forward):
    return lambda p, b: -(jax.nn.log_softmax(forward(p, b)) * b["y"]).sum(-1).mean()


def lstm() -> Model:
    """An LSTM (``lax.scan`` over 20 steps) whose last hidden state feeds a linear head."""
    k = jax.random.split(jax.random.key(20), 2)
    params = {"cell": _lstm_params(k[0]), "head": 0.3 * jax.random.normal(k[1], (HIDDEN, CLASSES))}

    def forward(p, b):
        return _lstm_scan(p["cell"], b["x"])[:, -1] @ p["head"]

    return Model("lstm", _cross_entropy(forward), forward, params, _sequence_batch(21))


def bilstm() -> Model:
    """A bidirectional LSTM: a forward scan and a ``reverse=True`` scan, their hidden states
    concatenated per step, averaged over time into a linear head."""
    k = jax.random.split(jax.random.key(22), 3)
    params = {"fwd": _lstm_params(k[0]), "bwd": _lstm_params(k[1]),
              "head": 0.3 * jax.random.normal(k[2], (2 * HIDDEN, CLASSES))}

    def forward(p, b):
        hs = jnp.concatenate([_lstm_scan(p["fwd"], b["x"]), _lstm_scan(p["bwd"], b["x"], reverse=True)], axis=-1)
        return hs.mean(1) @ p["head"]

    return Model("bilstm", _cross_entropy(forward), forward, params, _sequence_batch(23))


def nnx_lstm() -> Model:
    """A Flax NNX ``nnx.RNN`` over an ``nnx.LSTMCell`` (an ``nnx.scan``) and a linear head on the
    last step, as (state, batch) functions like nnx_mlp (the zoo's nnx_lstm returns the module's
    state too and takes gradients with nnx.value_and_grad: another signature)."""
    from flax import nnx

    class Sequence(nnx.Module):
        def __init__(self, rngs):
            self.rnn = nnx.RNN(nnx.LSTMCell(FEATURES, HIDDEN, rngs=rngs))
            self.head = nnx.Linear(HIDDEN, CLASSES, rngs=rngs)

        def __call__(self, x):
            zeros = jnp.zeros((x.shape[0], HIDDEN), x.dtype)
            return self.head(self.rnn(x, initial_carry=(zeros, zeros))[:, -1])

    # the parameters are the arguments; the rest of the module's state (the cell's nnx.Rngs, a
    # PRNG key and count the given initial carry leaves unused) is closed over
    graphdef, params, rest = nnx.split(Sequence(nnx.Rngs(0)), nnx.Param, ...)
    state = jax.tree_util.tree_map(jnp.asarray, nnx.to_pure_dict(params))

    def forward(p, b):
        return nnx.merge(graphdef, nnx.State(p) if hasattr(nnx, "State") else p, rest)(b["x"])

    return Model("nnx_lstm", _cross_entropy(forward), forward, state, _sequence_batch(24))


def flat(fun, args):
    """``fun`` as a function of the flat leaves of ``args`` returning a flat tuple (what jax2onnx takes)."""
    tree = jax.tree_util.tree_structure(args)

    def flat_fun(*leaves):
        return tuple(jax.tree_util.tree_leaves(fun(*jax.tree_util.tree_unflatten(tree, leaves))))

    return flat_fun


def specs(args, symbolic: bool):
    """``args``, or ShapeDtypeStructs whose batch (the last argument) has the symbolic leading
    size ``b``: what both exporters are given."""
    if not symbolic:
        return args
    scope = jax.export.SymbolicScope()
    *fixed, batch = args
    fixed_specs = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype), tuple(fixed))
    batch_specs = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(
        jax.export.symbolic_shape(", ".join(["b", *map(str, np.shape(a)[1:])]), scope=scope), np.asarray(a).dtype), batch)
    return (*fixed_specs, batch_specs)


def export_parity(fun, args, symbolic, path):
    parity.jax.export(fun, *specs(args, symbolic), path=path)


def export_jax2onnx(fun, args, symbolic, path):
    import jax2onnx

    leaves = jax.tree_util.tree_leaves(specs(args, symbolic))
    jax2onnx.to_onnx(flat(fun, args), leaves, return_mode="file", output_path=path)


EXPORTERS = {"parity": export_parity, "jax2onnx": export_jax2onnx}


def resized(args, n):
    *fixed, batch = args
    return (*fixed, jax.tree_util.tree_map(lambda a: np.resize(np.asarray(a), (n, *np.shape(a)[1:])), batch))


def relative_error(got_leaves, exact_leaves) -> float:
    worst = 0.0
    for g, x in zip(got_leaves, exact_leaves):
        g, x = np.asarray(g, np.float64), np.asarray(x, np.float64)
        scale = float(np.max(np.abs(x), initial=0.0)) or 1.0
        worst = max(worst, float(np.max(np.abs(g - x), initial=0.0)) / scale)
    return worst


def check(path, fun, args, symbolic) -> tuple[bool, float, float, str]:
    """(pass, worst relative error vs float64 of the file, of jax.jit, first problem) over the sizes."""
    session = ort.InferenceSession(path)
    names = [i.name for i in session.get_inputs()]
    ok, ours, theirs, first = True, 0.0, 0.0, ""
    base = np.shape(jax.tree_util.tree_leaves(args[-1])[0])[0]
    for n in (base, *EXTRA_SIZES) if symbolic else (base,):
        sized = resized(args, n)
        leaves = [np.asarray(a) for a in jax.tree_util.tree_leaves(sized)]
        if len(names) != len(leaves):  # an exporter dropped an unused input: feed by position of the rest
            raise RuntimeError(f"the file has {len(names)} inputs for {len(leaves)} leaves")
        outputs = session.run(None, dict(zip(names, leaves)))
        want = jax.jit(fun)(*sized)
        exact = float64_run(fun, *sized)
        got = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(want), outputs)
        problems = mismatches(got, want, exact)
        if problems and ok:
            ok, first = False, f"batch {n}: {problems[0]}"
        ours = max(ours, relative_error(outputs, jax.tree_util.tree_leaves(exact)))
        theirs = max(theirs, relative_error(jax.tree_util.tree_leaves(want), jax.tree_util.tree_leaves(exact)))
    return ok, ours, theirs, first


def loop_nodes(path) -> str:
    """How the file holds loops: its ``Scan`` and ``Loop`` nodes (at any depth) against its
    top-level nodes, and the nodes inside their bodies; ``0 / n`` for a model with a scan
    means the tool unrolled it."""
    import onnx

    def walk(graph):
        for node in graph.node:
            yield node
            for attr in node.attribute:
                for sub in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)):
                    yield from walk(sub)

    graph = onnx.load(path, load_external_data=False).graph
    every = list(walk(graph))
    loops = [n.op_type for n in every if n.op_type in ("Scan", "Loop")]
    kinds = " + ".join(f"{loops.count(k)} {k}" for k in ("Scan", "Loop") if k in loops) or "0"
    inner = len(every) - len(graph.node)
    return f"{kinds} / {len(graph.node):,}" + (f" (+{inner:,} in bodies)" if inner else "")


def short(exc: BaseException, path: str = "") -> str:
    """The exception's first line, without onnxruntime's status prefix and with the file's path
    as "(the file)", cut to 150 characters."""
    line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    line = re.sub(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ", "", line).replace(path or "\0", "(the file)")
    text = f"{type(exc).__name__}: {line}"
    return text[:150].replace("|", "/")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="also write the table to this file (results.md holds it with its reading)")
    parser.add_argument("--only", default=None, help="comma-separated model names")
    opts = parser.parse_args(argv)
    models = {**MODELS, "nnx_mlp": nnx_mlp, "lstm": lstm, "bilstm": bilstm, "nnx_lstm": nnx_lstm}
    names = opts.only.split(",") if opts.only else list(models)
    rows = []
    tmp = tempfile.mkdtemp()
    warnings.simplefilter("ignore")
    for exporter, export in EXPORTERS.items():  # warm-up: each tool's imports and plugin registration
        export(lambda p, b: jnp.tanh(b["x"] @ p), (np.ones((3, 2), np.float32), {"x": np.ones((4, 3), np.float32)}),
               True, os.path.join(tmp, f"warm_{exporter}.onnx"))
    for name in names:
        model = models[name]()
        for stage in STAGES:
            fun, args = stage_of(model, stage)
            for exporter, export in EXPORTERS.items():
                for symbolic in (True, False):
                    path = os.path.join(tmp, f"{name}_{stage}_{exporter}_{symbolic}.onnx")
                    try:
                        start = time.perf_counter()
                        export(fun, args, symbolic, path)
                        seconds = time.perf_counter() - start
                    except Exception as exc:  # noqa: BLE001 - a tool's failure is a result here
                        rows.append((name, stage, exporter, "b" if symbolic else "fixed", "no export", short(exc),
                                     "", "", "", "", ""))
                        continue
                    try:
                        ok, ours, theirs, first = check(path, fun, args, symbolic)
                        verdict = "pass" if ok else "FAIL"
                    except Exception as exc:  # noqa: BLE001
                        ok, ours, theirs, first, verdict = False, float("nan"), float("nan"), short(exc, path), "no run"
                        traceback.print_exc(limit=1)
                    rows.append((name, stage, exporter, "b" if symbolic else "fixed", verdict, first,
                                 "" if np.isnan(ours) else f"{ours:.2e}", "" if np.isnan(theirs) else f"{theirs:.2e}", f"{seconds:.2f}", f"{os.path.getsize(path):,}", loop_nodes(path)))
                    print(" | ".join(map(str, rows[-1])), flush=True)
                    if symbolic and ok:
                        break  # the fixed-batch export adds nothing when the symbolic one passed
    header = ("| model | stage | exporter | batch | ORT | first problem | rel. err. vs f64 | jax.jit's | export s | bytes | Scan/Loop / nodes |\n"
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
    table = header + "".join("| " + " | ".join(map(str, r)) + " |\n" for r in rows)
    print(table)
    if opts.out:
        with open(opts.out, "w") as f:
            f.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
