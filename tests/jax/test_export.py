"""parity.jax.export: JAX functions (forward, value_and_grad, an optax step) written to ONNX,
StableHLO text and jax.export's serialized form, with symbolic sizes from
jax.export.symbolic_shape kept symbolic; each file runs outside parity at several sizes and
matches jax.jit within the rule of tests/jax/compare.py."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import parity.jax
from parity.conformance.jax_zoo.plain import MODELS, stage_of
from parity.frontend.export import ExportError, ExportWarning
from parity.frontend.jax import capture
from parity.frontend.jax.errors import SymbolicSizeNotSupported, UnsupportedSymbolicDim, UntranslatedPrimitive

from .compare import float64_run, mismatches

onnx = pytest.importorskip("onnx", reason="ONNX export needs onnx (pip install 'parity[onnx]')")
ort = pytest.importorskip("onnxruntime", reason="the exported files run in onnxruntime (pip install 'parity[onnx]')")

SIZES = (1, 8)  # the symbolic batch at which each file runs (traced at none of them)


def with_symbolic_batch(args):
    """``args`` as ShapeDtypeStructs whose last argument (the batch) has a symbolic leading size ``b``."""
    scope = jax.export.SymbolicScope()  # one scope, so every leaf's ``b`` is the same size

    def spec(a, symbolic):
        a = np.asarray(a)
        if not symbolic:
            return jax.ShapeDtypeStruct(a.shape, a.dtype)
        return jax.ShapeDtypeStruct(jax.export.symbolic_shape(", ".join(["b", *map(str, a.shape[1:])]),
                                                              scope=scope), a.dtype)

    *fixed, batch = args
    return (*jax.tree_util.tree_map(lambda a: spec(a, False), tuple(fixed)),
            jax.tree_util.tree_map(lambda a: spec(a, True), batch))


def resized(args, n):
    """``args`` with the batch's rows repeated or cut to ``n``."""
    *fixed, batch = args
    return (*fixed, jax.tree_util.tree_map(lambda a: np.resize(np.asarray(a), (n, *np.shape(a)[1:])), batch))


def run_onnx(path, fun, args):
    """The ONNX file at ``path`` run in plain onnxruntime on ``args``, as ``fun``'s output pytree."""
    session = ort.InferenceSession(str(path))
    leaves = [np.asarray(a) for a in jax.tree_util.tree_leaves(args)]
    outputs = session.run(None, dict(zip([i.name for i in session.get_inputs()], leaves, strict=True)))
    return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(jax.eval_shape(fun, *args)), outputs)


def file_dims(model):
    return [[d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input]


# CI: the MLP's value_and_grad (symbolic batch, ONNX; ~5 s, most of it jax.jit compiling the reference); the rest
# (measured passing) with -m matrix: the CNN's three stages among them (~25 s each on 2 cores; its weight gradients
# over the symbolic batch are CI's test_a_weight_gradient_over_the_symbolic_batch_matches_at_every_size).
SYMBOLIC = [("mlp", "gradients")]
CELLS = [pytest.param(m, s, marks=() if (m, s) in SYMBOLIC else pytest.mark.matrix)
         for m in ("mlp", "transformer_lm", "cnn") for s in ("forward", "gradients", "optax_step")]


@pytest.mark.parametrize("model_name,stage", CELLS)
def test_onnx_file_with_symbolic_batch_matches_jax_jit_at_every_size(model_name, stage, tmp_path):
    fun, args = stage_of(MODELS[model_name](), stage)
    path = tmp_path / f"{model_name}.onnx"
    model = parity.jax.export(fun, *with_symbolic_batch(args), path=path)
    batch_dims = file_dims(model)[-len(jax.tree_util.tree_leaves(args[-1])):]
    assert all(dims[0] == "b" for dims in batch_dims), batch_dims  # a dim_param, not a fixed size
    for n in SIZES:
        sized = resized(args, n)
        problems = mismatches(run_onnx(path, fun, sized), jax.jit(fun)(*sized), lambda: float64_run(fun, *sized))
        assert not problems, f"{model_name} {stage} at batch {n}:\n" + "\n".join(problems)


def test_a_bidirectional_scan_is_two_scan_nodes_that_match_at_every_size(tmp_path):
    """A forward and a ``reverse=True`` ``lax.scan`` (a bidirectional RNN) export as two ONNX
    ``Scan`` nodes, one running backwards, not as an unrolled graph, and the file matches
    jax.jit at every batch: each step's outputs and each direction's last state."""
    rng = np.random.default_rng(0)
    params = {d: {"wx": rng.standard_normal((3, 4)).astype(np.float32), "wh": 0.5 * rng.standard_normal((4, 4)).astype(np.float32)}
              for d in ("fwd", "bwd")}
    x = rng.standard_normal((2, 7, 3)).astype(np.float32)  # (batch, steps, features)

    def rnn(p, xs, reverse):
        def step(h, xt):
            h = jnp.tanh(xt @ p["wx"] + h @ p["wh"])
            return h, h
        return jax.lax.scan(step, jnp.zeros((xs.shape[1], 4), xs.dtype), xs, reverse=reverse)

    def forward(p, x):
        xs = x.transpose(1, 0, 2)
        (h_fwd, ys_fwd), (h_bwd, ys_bwd) = rnn(p["fwd"], xs, False), rnn(p["bwd"], xs, True)
        return jnp.concatenate([ys_fwd, ys_bwd], -1).transpose(1, 0, 2), h_fwd, h_bwd

    model = parity.jax.export(forward, *with_symbolic_batch((params, x)), path=tmp_path / "birnn.onnx")
    assert file_dims(model)[-1] == ["b", 7, 3]
    scans = [n for n in model.graph.node if n.op_type == "Scan"]
    assert len(scans) == 2 and len(model.graph.node) < 30, [n.op_type for n in model.graph.node]  # not unrolled
    directions = sorted(tuple(a.ints) for n in scans for a in n.attribute if a.name == "scan_input_directions")
    assert directions == [(1,)], directions  # the reverse scan runs backwards, the other forwards
    for n in (1, 5):
        sized = resized((params, x), n)
        problems = mismatches(run_onnx(tmp_path / "birnn.onnx", forward, sized), jax.jit(forward)(*sized),
                              lambda: float64_run(forward, *sized))
        assert not problems, f"batch {n}:\n" + "\n".join(problems)


def _conv_loss(strides, padding, rhs_dilation=(1, 1), transpose=False):
    def loss(w, x):
        if transpose:
            y = jax.lax.conv_transpose(x, w, strides, padding, dimension_numbers=("NCHW", "OIHW", "NCHW"))
        else:
            y = jax.lax.conv_general_dilated(x, w, strides, padding, rhs_dilation=rhs_dilation)
        return (y * y).sum()
    return loss


WEIGHT_GRADIENTS = {
    "same": _conv_loss((1, 1), "SAME"),
    "strided": _conv_loss((2, 2), "SAME"),
    "dilated, valid": _conv_loss((1, 1), "VALID", rhs_dilation=(2, 2)),
    "uneven padding": _conv_loss((2, 1), ((1, 0), (2, 1)), rhs_dilation=(1, 2)),
    "transposed": _conv_loss((2, 2), "SAME", transpose=True),  # its weight gradient has lhs dilation
}


# CI: uneven padding (strides, rhs dilation, asymmetric pads) and transposed (lhs dilation); the rest -m matrix
@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in ("uneven padding", "transposed") else pytest.mark.matrix)
                                  for n in WEIGHT_GRADIENTS])
def test_a_weight_gradient_over_the_symbolic_batch_matches_at_every_size(name, tmp_path):
    """JAX writes a convolution's weight gradient as a convolution contracting over the batch
    (its feature dim there); over a symbolic batch it is built by kernel taps
    (frontend/conv_weight_gradient.py) and exports with the batch left symbolic."""
    grad = jax.grad(WEIGHT_GRADIENTS[name])
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    model = parity.jax.export(grad, *with_symbolic_batch((w, x)), path=tmp_path / "dw.onnx")
    assert file_dims(model)[1][0] == "b"
    for n in (1, 2, 5):
        sized = resized((w, x), n)
        problems = mismatches(run_onnx(tmp_path / "dw.onnx", grad, sized), jax.jit(grad)(*sized),
                              lambda: float64_run(grad, *sized))
        assert not problems, f"{name} at batch {n}:\n" + "\n".join(problems)


def test_inputs_and_outputs_are_named_by_their_pytree_paths(tmp_path):
    def loss(params, batch):
        return jnp.sum((batch["x"] @ params["w"] + params["b"]) ** 2)

    params = {"w": jnp.ones((3, 2)), "b": jnp.zeros(2)}
    model = parity.jax.export(jax.value_and_grad(loss), params, {"x": jnp.ones((4, 3))}, path=tmp_path / "l.onnx")
    assert [i.name for i in model.graph.input] == ["params.b", "params.w", "batch.x"]
    assert [o.name for o in model.graph.output] == ["output0", "output1.b", "output1.w"]
    renamed = parity.jax.export(jax.value_and_grad(loss), params, {"x": jnp.ones((4, 3))}, path=tmp_path / "r.onnx",
                                input_names=["b", "w", "x"], output_names=["loss", "db", "dw"])
    assert [i.name for i in renamed.graph.input] == ["b", "w", "x"] and renamed.graph.output[0].name == "loss"
    with pytest.raises(ExportError, match=r"2 input names for 3 inputs .*'params.b', 'params.w', 'batch.x'"):
        parity.jax.export(jax.value_and_grad(loss), params, {"x": jnp.ones((4, 3))}, path=tmp_path / "e.onnx",
                          input_names=["w", "x"])


def test_closed_over_weights_are_constants_in_the_file(tmp_path):
    w = jnp.arange(6.0).reshape(3, 2)
    model = parity.jax.export(lambda x: jnp.tanh(x @ w), jax.ShapeDtypeStruct((5, 3), jnp.float32),
                              path=tmp_path / "c.onnx")
    assert [i.name for i in model.graph.input] == ["x"] and file_dims(model) == [[5, 3]]
    x = np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)
    got = ort.InferenceSession(str(tmp_path / "c.onnx")).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, np.tanh(x @ np.asarray(w)), rtol=1e-6)


def test_a_symbolic_size_used_as_a_number_is_computed_from_the_input(tmp_path):
    """``jnp.mean`` over a symbolic axis divides by ``dim_as_value``: the file must compute it
    from the input it gets, not bake in the traced example's size."""
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape("n, 2"), jnp.float32)
    parity.jax.export(lambda x: jnp.mean(x, axis=0) + x.shape[0], spec, path=tmp_path / "m.onnx")
    session = ort.InferenceSession(str(tmp_path / "m.onnx"))
    for n in (1, 5, 12):
        x = np.random.default_rng(n).standard_normal((n, 2)).astype(np.float32)
        np.testing.assert_allclose(session.run(None, {"x": x})[0], x.mean(0) + n, rtol=2e-6)


def test_a_strided_slice_of_a_symbolic_size_gathers_the_right_rows(tmp_path):
    """``x[::2]`` over a symbolic ``n`` is a gather of ``(n+1)//2`` rows whose clamp bound
    ``n-1`` the file computes from its input."""
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape("n, 3"), jnp.float32)
    model = parity.jax.export(lambda x: x[::2] * 2, spec, path=tmp_path / "g.onnx")
    assert file_dims(model) == [["n", 3]]
    session = ort.InferenceSession(str(tmp_path / "g.onnx"))
    for n in (1, 4, 7):
        x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
        np.testing.assert_array_equal(session.run(None, {"x": x})[0], x[::2] * 2)


def test_symbolic_sizes_in_the_captured_graph():
    b, s = jax.export.symbolic_shape("b, s")
    spec = jax.ShapeDtypeStruct((b, 2 * s + 1), jnp.float32)
    graph = capture(lambda x: (jnp.concatenate([x, x], axis=1).reshape(-1), x[:, ::2]), spec)
    assert [str(t) for t in graph.input_types] == ["f32[b,s*2+1]"]
    assert [str(v.type) for v in graph.outputs] == ["f32[b*s*4+b*2]", "f32[b,s+1]"]
    (n,) = jax.export.symbolic_shape("n")
    graph = capture(lambda x: x * 2, jax.ShapeDtypeStruct((n // 2, n % 3 + 1), jnp.float32))
    assert str(graph.input_types[0]) == "f32[n//2,n%3+1]"
    graph = capture(lambda x: x[::3], jax.ShapeDtypeStruct((n, 2), jnp.float32))
    assert str(graph.outputs[0].type) == "f32[(n+2)//3,2]"


def test_a_symbolic_size_the_ir_cannot_hold_is_refused_by_name():
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape("2, s"), jnp.float32)
    with pytest.raises(UnsupportedSymbolicDim, match=r"`min\(s, 3\)`.*uses `min`.*\n  fix: JAX writes min and max .*"
                                                     r"constraints=\(\"s >= 3\",\)"):
        capture(lambda x: x[:, 3:], spec)


def test_an_onnx_file_warns_with_the_size_facts_it_cannot_check(tmp_path):
    """With the bound declared, the slice's size is ``s-3``; ONNX cannot assert ``s >= 3``, so the
    export says so, at the caller's line."""
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape("2, s", constraints=("s >= 3",)), jnp.float32)
    with pytest.warns(ExportWarning, match=r"^parity.jax.export: the onnx file holds for sizes where these hold: "
                                           r"s must be >= 3\. onnx cannot check sizes") as record:
        model = parity.jax.export(lambda x: jax.lax.slice_in_dim(x, 3, x.shape[1], axis=1) * 2, spec,
                                  path=tmp_path / "s.onnx")
    assert record[0].filename == __file__
    assert [[d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim] for o in model.graph.output] == \
        [[2, "s-3"]]
    session = ort.InferenceSession(str(tmp_path / "s.onnx"))
    for n in (3, 7):
        x = np.arange(2 * n, dtype=np.float32).reshape(2, n)
        np.testing.assert_array_equal(session.run(None, {"x": x})[0], x[:, 3:] * 2)


def test_a_convolution_over_a_symbolic_spatial_size_is_refused_at_the_users_line(tmp_path):
    """A convolution's window runs over its spatial dims, which the IR's convolution needs static
    (a symbolic batch is fine, forward and gradients): refused naming the user's line, the
    primitive and the fix."""
    def loss(w, x):
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME").sum()  # the line named

    line = loss.__code__.co_firstlineno + 1
    specs = (jax.ShapeDtypeStruct((4, 2, 3, 3), np.float32),
             jax.ShapeDtypeStruct(jax.export.symbolic_shape("2, 2, h, 5"), np.float32))
    with pytest.raises(SymbolicSizeNotSupported) as error:
        parity.jax.export(jax.grad(loss), *specs, path=tmp_path / "conv.onnx")
    message = str(error.value)
    assert message.startswith(f"{__file__}:{line} in {loss.__qualname__}: `conv_general_dilated` on these symbolic sizes"), message
    assert "f32[2,2,h,5]" in message and "fix: give the size it names a fixed value" in message


def test_stablehlo_text_keeps_the_symbolic_batch(tmp_path):
    w = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)

    def loss(w, x):
        return jnp.mean(jnp.tanh(x @ w) ** 2)

    text = parity.jax.export(jax.value_and_grad(loss), *with_symbolic_batch((w, np.zeros((2, 6), np.float32))),
                             format="stablehlo", path=tmp_path / "loss.mlir")
    assert (tmp_path / "loss.mlir").read_text() == text
    assert "// input %arg1: x: f32[b,6]" in text and "// dynamic dims: b" in text
    assert "%arg1: tensor<?x6xf32>" in text and "stablehlo.dot_general" in text and "stablehlo.tanh" in text


def test_serialized_file_runs_in_jax_at_every_size(tmp_path):
    """format="jax": the IR's StableHLO lowering in jax.export's serialized form, which a process
    without parity deserializes and calls at any batch: a convolution and a max-pool, which the
    ONNX file cannot hold over a symbolic batch yet."""
    def forward(w, x):
        h = jax.nn.relu(jax.lax.conv_general_dilated(x, w, (1, 1), "SAME"))
        return jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 3, 3), (1, 1, 2, 2), "SAME").mean((2, 3))

    rng = np.random.default_rng(0)
    args = (rng.standard_normal((4, 2, 3, 3)).astype(np.float32), rng.standard_normal((2, 2, 6, 6)).astype(np.float32))
    parity.jax.export(forward, *with_symbolic_batch(args), format="jax", path=tmp_path / "cnn.jax")
    exported = jax.export.deserialize(bytearray((tmp_path / "cnn.jax").read_bytes()))
    assert str(exported.in_avals[1].shape) == "(b, 2, 6, 6)"
    for n in SIZES:
        sized = resized(args, n)
        got = exported.call(*sized)[0]
        problems = mismatches(got, jax.jit(forward)(*sized), lambda: float64_run(forward, *sized))
        assert not problems, f"batch {n}: " + "\n".join(problems)


def test_a_function_under_parity_jax_jit_exports_as_the_plain_function(tmp_path):
    compiled = parity.jax.jit(lambda x: jnp.tanh(x) * 3, backend="reference")
    model = parity.jax.export(compiled, jax.ShapeDtypeStruct(jax.export.symbolic_shape("n"), jnp.float32),
                              path=tmp_path / "t.onnx")
    x = np.linspace(-2, 2, 5, dtype=np.float32)
    np.testing.assert_allclose(ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0],
                               np.tanh(x) * 3, rtol=1e-6)
    with pytest.raises(ExportError, match=r"has static arguments \[1, 'n'\]: export the plain function with them "
                                          r"bound, parity.jax.export\(functools.partial"):
        parity.jax.export(parity.jax.jit(lambda x, n: x * n, static_argnums=1), jnp.ones(2), 3,
                          path=tmp_path / "s.onnx")


def test_path_and_format_must_agree(tmp_path):
    with pytest.raises(ExportError, match="names a stablehlo file, but format='onnx'"):
        parity.jax.export(jnp.sin, jnp.ones(2), path=tmp_path / "f.mlir")
    with pytest.raises(ExportError, match="exports a function"):
        parity.jax.export("sin", jnp.ones(2), path=tmp_path / "f.onnx")


def test_a_grouped_convolutions_weight_gradient_over_a_symbolic_batch_is_refused_at_the_users_line(tmp_path):
    """The weight gradient of a grouped convolution contracts over the batch in groups
    (``batch_group_count``), which the IR builds with the batch static: refused with the fix."""
    def loss(w, x):
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=2).sum()  # the line named

    line = loss.__code__.co_firstlineno + 1
    specs = (jax.ShapeDtypeStruct((4, 2, 3, 3), np.float32),
             jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, 4, 5, 5"), np.float32))
    with pytest.raises(UntranslatedPrimitive) as error:
        parity.jax.export(jax.grad(loss), *specs, path=tmp_path / "conv.onnx")
    message = str(error.value)
    assert message.startswith(f"{__file__}:{line} in {loss.__qualname__}: the JAX primitive `conv_general_dilated`"), message
    assert "batch_group_count=2 over the symbolic dims" in message and "compile it with a static batch" in message
