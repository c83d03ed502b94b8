"""Translation rules that have more to them than a name: each case runs through
parity.jax.jit on the reference interpreter (the spec) against jax.jit, by the rule of
tests/jax/compare.py; exact results (indices, selections, integers) must be equal."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import parity.jax

from .compare import float64_run, mismatches

# numpy, not jax.random: a jnp operation at import compiles with XLA at pytest's collection
_rng = np.random.default_rng(7)
X4 = _rng.standard_normal((2, 7, 6, 3), dtype=np.float32)
TIES = np.round(_rng.standard_normal((1, 6, 5, 2), dtype=np.float32))  # many equal maxima in a window


def maxpool(x, window, stride, padding):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, *window, 1), (1, *stride, 1), padding)


CASES = {
    # max-pooling's gradient (select_and_scatter_add): overlapping windows, SAME padding, ties
    "maxpool_grad_overlap_same": (lambda x: jax.grad(lambda v: (maxpool(v, (3, 3), (2, 2), "SAME") ** 2).sum())(x),
                                  (X4,)),
    "maxpool_grad_ties": (lambda x: jax.grad(lambda v: maxpool(v, (2, 2), (1, 1), "VALID").sum())(x), (TIES,)),
    "minpool": (lambda x: lax.reduce_window(x, jnp.inf, lax.min, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"), (X4,)),
    "avgpool_grad": (lambda x: jax.grad(lambda v: lax.reduce_window(v, 0.0, lax.add, (1, 3, 2, 1), (1, 2, 2, 1),
                                                                     "SAME").sum())(x), (X4,)),
    # grouped, dilated, strided convolution and both its gradients (lhs_dilation in the input's)
    "conv_grads": (lambda x, w: jax.grad(lambda a, b: jnp.tanh(lax.conv_general_dilated(
        a, b, (2, 1), ((1, 0), (2, 1)), rhs_dilation=(1, 2), dimension_numbers=("NHWC", "HWIO", "NHWC"),
        feature_group_count=1)).sum(), argnums=(0, 1))(x, w), (X4, _rng.standard_normal((2, 3, 3, 4), dtype=np.float32))),
    "conv_groups_forward": (lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=3,
                                                                  dimension_numbers=("NCHW", "OIHW", "NCHW")),
                            (X4.transpose(0, 3, 1, 2), _rng.standard_normal((6, 1, 2, 2), dtype=np.float32))),
    # grouped convolutions' gradients: the weight's is a convolution with batch_group_count=groups
    # (2 channels a group, where a wrong grouping shows, and depthwise)
    "conv_grouped_grads": (lambda x, w, dw: jax.grad(lambda a, b, c: jnp.tanh(lax.conv_general_dilated(
        a, b, (2, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=3)).sum()
        + jnp.sin(lax.conv_general_dilated(a, c, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                           feature_group_count=6)).sum(), argnums=(0, 1, 2))(x, w, dw),
        (_rng.standard_normal((3, 5, 4, 6), dtype=np.float32), _rng.standard_normal((3, 2, 2, 6), dtype=np.float32),
         _rng.standard_normal((2, 2, 1, 12), dtype=np.float32))),
    # gather / scatter-add: negative and out-of-range indices in each mode
    "take_fill_out_of_range": (lambda x: jnp.take(x, jnp.array([0, -1, 9, 2]), axis=1, mode="fill",
                                                  fill_value=-3.0), (X4[0, :, :, 0],)),
    "take_clip": (lambda x: jnp.take(x, jnp.array([[5, -4], [1, 0]]), axis=0, mode="clip"), (X4[0, :, :, 0],)),
    "index_grad": (lambda x: jax.grad(lambda v: (v[jnp.array([1, 1, 3, 6])] ** 3).sum())(x), (X4[0, :, :, 0],)),
    "take_along_axis_and_grad": (lambda x, i: jax.value_and_grad(lambda v: jnp.take_along_axis(
        jax.nn.log_softmax(v), i[..., None], axis=-1).sum())(x), (X4[:, :5, 0, :], np.array([[0, 2, 1, 2, 0],
                                                                                       [1, 1, 2, 0, 7]], np.int32))),
    # sorting: ties, -0.0 against 0.0, ±inf and NaN; argsort carries an iota along; top_k on an inner axis
    "sort_argsort_top_k": (lambda x, i: (jnp.sort(x), jnp.argsort(x), jnp.argsort(x, axis=0), lax.top_k(x, 3),
                                         lax.top_k(x, 1, axis=0), jnp.sort(i), lax.top_k(i, 2)),
                           (np.array([[3., 0., -0., np.nan, 1., 1., -np.inf, np.inf],
                                      [2., 2., 2., 1., 5., -1., 0., 7.]], np.float32),
                            np.array([[5, 3, 3, 1, 9, 0, 2, 2]], np.int32))),
    # several keys: lax.sort(num_keys=2) carrying a third operand, jnp.lexsort on columns (ties in each key)
    "sort_two_keys_lexsort": (lambda x, i: (lax.sort((x[0], i, x[1]), num_keys=2), jnp.lexsort((x[1], i), axis=0),
                                            jnp.lexsort((x.T, jnp.round(x.T)), axis=0)),
                              (np.array([[3., 1., 1., 2., 1., 3., -1., 1.], [5., 2., 0., 1., 7., 7., 0., 2.]], np.float32),
                               np.array([2, 1, 1, 0, 3, 1, 1, 1], np.int32))),
    # loops and branches
    "scan_reverse_two_carries": (lambda xs: lax.scan(lambda c, x: ((c[0] * 0.5 + x, c[1] + x.sum()), c[0] - x),
                                                     (jnp.zeros(3), 0.0), xs, reverse=True), (X4[0, :, 0, :],)),
    "cond": (lambda x: lax.cond(x.sum() > 0, lambda v: jnp.sin(v), lambda v: v * 3.0, x), (X4[0, 0, 0],)),
    "switch": (lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, jnp.exp], x), (np.int32(2), X4[0, 0, 0])),
    # elementwise with JAX's own semantics
    "integer_pow": (lambda x: (x ** 5, x ** -3, lax.integer_pow(x, 0)), (X4[0, 0],)),
    "round_half_away": (lambda x: (lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
                                   lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)),
                        (np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -3.7], np.float32),)),
    "pow_int_exponent": (lambda x, n: x ** n, (np.abs(X4[0, 0]) + np.float32(0.5), np.int32(3))),
    "argmax_cumsum_reverse": (lambda x: (jnp.argmax(x, axis=1), lax.cumsum(x, axis=0, reverse=True)), (X4[0, 0],)),
    "dynamic_update_slice": (lambda x, i: lax.dynamic_update_slice(x, jnp.ones((2, 2)), (i, jnp.int32(1))),
                             (X4[0, :, :, 0], np.int32(4))),
    "split_concat_pad_rev": (lambda x: jnp.concatenate([jnp.flip(p, 0) for p in jnp.split(
        jnp.pad(x, ((1, 2), (0, 3))), 3, axis=1)], axis=0), (X4[0, :, :, 0],)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_matches_jax_jit(name):
    fun, args = CASES[name]
    got = parity.jax.jit(fun, backend="reference")(*args)
    want = jax.jit(fun)(*args)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        if not jnp.issubdtype(w.dtype, jnp.floating):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    problems = mismatches(got, want, float64_run(fun, *args))
    assert not problems, f"{name}:\n" + "\n".join(problems)
