"""gather and the scatter family in the forms ordinary JAX programs produce (several indexed
axes, partial slices, vmapped indexing, .at[].set/add/mul/min/max/subtract, segment
reductions, searchsorted, interp, unique), and their gradients, through parity.jax.jit on
every backend against jax.jit by the rule of tests/jax/compare.py (integers exactly).

The programs run bundled, one compilation per backend (about 8 s on the triton interpreter);
a mismatch names its program."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import parity.jax
from parity.frontend.jax import capture
from parity.frontend.jax.errors import UntranslatedPrimitive
from parity.ir.errors import UnsupportedOpError

from .compare import float64_run, mismatches

_rng = np.random.default_rng(11)
X = _rng.standard_normal((4, 16), dtype=np.float32)
INTS = _rng.integers(-9, 9, (4, 5)).astype(np.int32)
ROWS, COLS = np.array([2, 0, 3, 3], np.int32), np.array([1, 15, 0, 7], np.int32)
OUT_OF_RANGE = np.array([5, -1, 2, 9], np.int32)  # -1 is normalised by jnp; 5 and 9 are out of range
SEGMENTS = np.array([0, 0, 2, 1], np.int32)
STARTS = np.array([0, 15, 7, -1], np.int32)
WINDOW = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0, 1))

PROGRAMS = {
    "take_along_argsort": lambda x, n: jnp.take_along_axis(x, jnp.argsort(x, axis=1), axis=1),
    "searchsorted": lambda x, n: jnp.searchsorted(jnp.sort(x[0]), x[1]),
    "interp": lambda x, n: jnp.interp(x[0], jnp.linspace(-3, 3, 16), x[1]),
    "interp_grad": lambda x, n: jax.grad(lambda v: jnp.interp(v[0], jnp.linspace(-3, 3, 16), v[1]).sum())(x),
    "unique": lambda x, n: jnp.unique(jnp.round(x), size=5, fill_value=0.0),
    "two_index_arrays": lambda x, n: x[ROWS, COLS],
    "two_index_arrays_grad": lambda x, n: jax.grad(lambda v: (v[ROWS, COLS] ** 2).sum())(x),
    "slice_then_index": lambda x, n: x[:, COLS],
    "set": lambda x, n: x.at[np.array([0, 2, 3])].set(x[1] * 2),
    "add_two_axes": lambda x, n: x.at[ROWS, COLS].add(1.5),
    "mul_min_max": lambda x, n: (x.at[ROWS, COLS].mul(3.0), x.at[ROWS].min(-0.5), x.at[:, COLS].max(0.25)),
    "subtract": lambda x, n: x.at[ROWS].subtract(x[0]),
    "set_out_of_range": lambda x, n: (x.at[OUT_OF_RANGE].set(x[::-1] * 2, mode="drop"),  # no two rows collide
                                      x.at[OUT_OF_RANGE[:3] % 5].set(x[:3] * 2, mode="clip")),
    # PROMISE_IN_BOUNDS out of range: JAX leaves it to the implementation; XLA drops, and so does
    # parity (the one-axis path of scatter-add and the general route alike)
    "promise_scatter_drops": lambda x, n: (
        lax.scatter_add(x, OUT_OF_RANGE[:, None], x, lax.ScatterDimensionNumbers((1,), (0,), (0,)),
                        mode="promise_in_bounds"),
        lax.scatter(x, np.array([[0, 0], [4, 1], [1, -1], [3, 15]], np.int32), x[0, :4],
                    lax.ScatterDimensionNumbers((), (0, 1), (0, 1)), mode="promise_in_bounds")),
    "ints_clip_and_max": lambda x, n: (n.at[OUT_OF_RANGE, 1].add(5, mode="clip"), n.at[ROWS[:2], 4].max(4)),
    "segment_max_min_prod": lambda x, n: (jax.ops.segment_max(x, SEGMENTS, 3), jax.ops.segment_min(x, SEGMENTS, 3),
                                          jax.ops.segment_prod(x * 0.5, SEGMENTS, 3)),
    "vmap_index": lambda x, n: jax.vmap(lambda row, k: row[k])(x, COLS),
    "vmap_dynamic_slice": lambda x, n: jax.vmap(lambda row, k: lax.dynamic_slice(row, (k,), (3,)))(x, STARTS),
    "vmap_set": lambda x, n: jax.vmap(lambda row, k: row.at[k].set(0.0))(x, COLS),
    "window_fill": lambda x, n: lax.gather(x, np.array([[0, 1], [3, 13], [1, 14], [-1, 0]], np.int32), WINDOW,
                                           (1, 3), mode="fill", fill_value=-1.0),
    "bool_and_bf16": lambda x, n: ((x > 0).at[ROWS, COLS].set(False), (x > 0).at[ROWS].max(True),
                                   x.astype(jnp.bfloat16).at[ROWS, COLS].add(jnp.bfloat16(1))),
}


def bundle(names):
    def run(x, n):
        return {name: PROGRAMS[name](x, n) for name in names}

    return run


def check(names, backend):
    fun = bundle(names)
    got = parity.jax.jit(fun, backend=backend)(X, INTS)
    want = jax.jit(fun)(X, INTS)
    problems = []
    for name in names:  # per program, so that a mismatch names it
        found = mismatches(got[name], want[name], lambda name=name: float64_run(PROGRAMS[name], X, INTS))
        problems += [f"{name}: {p}" for p in found]
    assert not problems, f"on {backend}:\n" + "\n".join(problems)


@pytest.mark.parametrize("backend", ["reference", "xla", "onnx", "inductor", "triton"])
def test_indexing_programs_match_jax_jit(backend):
    check(sorted(PROGRAMS), backend)


def test_replace_with_duplicates_writes_one_of_the_updates():
    """Which update wins is implementation-defined (XLA and the IR alike): each written element
    holds one of those aimed at it, and the others are untouched."""
    fun = lambda x: x.at[np.array([1, 1, 3])].set(jnp.array([[10.0] * 16, [20.0] * 16, [30.0] * 16]))  # noqa: E731
    got = np.asarray(parity.jax.jit(fun, backend="reference")(X))
    assert set(got[1].tolist()) <= {10.0, 20.0} and (got[3] == 30.0).all()
    np.testing.assert_array_equal(got[[0, 2]], X[[0, 2]])


def test_scatter_apply_is_refused_with_its_fix():
    dn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    fun = lambda x: lax.scatter_apply(x, np.array([[1]], np.int32), jnp.sin, dn, update_shape=(1, 16))  # noqa: E731
    with pytest.raises(UntranslatedPrimitive, match=r"lax.scatter_apply.*apply the function to the "
                                                               r"gathered values and .set them"):
        parity.jax.jit(fun, backend="reference")(X)


def test_a_general_gather_over_a_symbolic_size_is_refused_naming_the_fix():
    (b,) = jax.export.symbolic_shape("b")
    fun = lambda x: x[jnp.array([0, 1]), jnp.array([2, 3])]  # noqa: E731
    with pytest.raises(UntranslatedPrimitive, match=r"symbolic size.*export with that size concrete"):
        capture(fun, jax.ShapeDtypeStruct((b, 16), jnp.float32))


def test_a_complex_gather_meets_the_backends_dtype_error_not_a_crash():
    """The IR's gather takes no c64 yet: a gather of c64 reaches that clear refusal (the gather's
    default fill value, NaN, is made first and must not crash on a complex dtype)."""
    x = (X[:3, :4] + 1j).astype(np.complex64)
    fun = lambda x: x[jnp.array([2, 0])]  # noqa: E731
    with pytest.raises(UnsupportedOpError, match="does not run gather on c64"):
        parity.jax.jit(fun, backend="reference")(x)


@pytest.mark.parametrize("rows, dtype", [(4, "i32"), (2**16, "i64")])
def test_positions_are_int64_only_where_the_operand_outgrows_int32(rows, dtype):
    """Captured, never run: an operand of 2**32 elements needs int64 positions, a small one int32."""
    spec = jax.ShapeDtypeStruct((rows, 2**16), jnp.float32)
    graph = capture(lambda x: x[jnp.array([0, 3]), jnp.array([1, 2])], spec)
    [gather] = [n for n in graph.nodes if n.op == "gather"]
    assert gather.inputs[1].type.dtype.short == dtype
