"""Random composites (ir/ops/random.py): bits against an independent Threefry and JAX.

The Threefry-2x32 below is written from the Random123 specification with Python ints
and checked against Random123's published known-answer vectors; the IR's bits must equal
it (and ``jax.random.bits``) exactly.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from parity.ir import OP_TABLE, GraphBuilder, Symbol, TypeRuleError, evaluate
from parity.ir.dtypes import FLOAT_DTYPES, DType, bf16, f16, f32, f64, i32, u32
from parity.ir.opdef import Accuracy, Group, Kind
from parity.ir.ops import random as random_ops

sys.path.insert(0, str(Path(__file__).parent))
from torch_reference import assert_ulp, decomposition, non_primitives, run_ir  # noqa: E402

MASK32 = 0xFFFFFFFF
KEYS = [(0, 0), (123, 456), (0xFFFFFFFF, 0x80000000), (0xDEADBEEF, 42)]


def threefry2x32(key: tuple[int, int], counter: tuple[int, int]) -> tuple[int, int]:
    """Threefry-2x32, 20 rounds (Random123's threefry2x32_R(20, ...)), on Python ints."""
    rot = [13, 15, 26, 6, 17, 29, 16, 24]
    ks = [key[0], key[1], key[0] ^ key[1] ^ 0x1BD11BDA]
    x = [(counter[0] + ks[0]) & MASK32, (counter[1] + ks[1]) & MASK32]
    for r in range(20):
        x[0] = (x[0] + x[1]) & MASK32
        s = rot[r % 8]
        x[1] = ((x[1] << s) | (x[1] >> (32 - s))) & MASK32
        x[1] ^= x[0]
        if r % 4 == 3:  # key injection number (r + 1) / 4
            i = (r + 1) // 4
            x[0] = (x[0] + ks[i % 3]) & MASK32
            x[1] = (x[1] + ks[(i + 1) % 3] + i) & MASK32
    return x[0], x[1]


def reference_words(key, n: int) -> tuple[np.ndarray, np.ndarray]:
    pairs = [threefry2x32(key, (0, i)) for i in range(n)]
    return (np.array([p[0] for p in pairs], np.uint32).reshape(n), np.array([p[1] for p in pairs], np.uint32).reshape(n))


def reference_bits(key, shape) -> np.ndarray:
    w0, w1 = reference_words(key, math.prod(shape))
    return (w0 ^ w1).reshape(shape)


def key_array(key) -> np.ndarray:
    return np.array(key, np.uint32)


# Random123's known-answer vectors (kat_vectors, threefry2x32 20 rounds): counter, key, result.
KAT = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x243F6A88, 0x85A308D3), (0x13198A2E, 0x03707344), (0xC4923A9C, 0x483DF7A0)),
]


@pytest.mark.parametrize("counter, key, expected", KAT)
def test_threefry_known_answers(counter, key, expected):
    assert threefry2x32(key, counter) == expected
    # The IR's Threefry (the helper random_bits is built on), on the same counter words.
    b = GraphBuilder("threefry")
    k, x0, x1 = b.input(u32[2]), b.input(u32[1]), b.input(u32[1])
    graph = b.build(list(random_ops.threefry2x32(b, k, x0, x1)))
    y0, y1 = evaluate(graph, [key_array(key), np.array([counter[0]], np.uint32), np.array([counter[1]], np.uint32)])
    assert (int(y0[0]), int(y1[0])) == expected


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("shape", [(7,), (3, 4, 5), (1,), (0,), (2, 0, 3), ()])
def test_random_bits_match_reference_and_jax(key, shape):
    bits = run_ir("random_bits", [key_array(key)], shape=shape)
    assert bits.dtype == np.uint32 and bits.shape == shape
    np.testing.assert_array_equal(bits, reference_bits(key, shape))
    jax_bits = jax.random.bits(jax.random.wrap_key_data(key_array(key), impl="threefry2x32"), shape)
    np.testing.assert_array_equal(bits, np.asarray(jax_bits))


def test_random_bits_layout():
    """Element i uses counter i whatever the shape: a shorter draw is a prefix of a longer one."""
    key = key_array((5, 6))
    long = run_ir("random_bits", [key], shape=(4, 5))
    np.testing.assert_array_equal(run_ir("random_bits", [key], shape=(7,)), long.reshape(-1)[:7])
    assert not np.array_equal(long, run_ir("random_bits", [key_array((6, 5))], shape=(4, 5)))
    assert len(np.unique(run_ir("random_bits", [key], shape=(1000,)))) == 1000


def test_random_bits_are_uint32_only_and_oracle_independent():
    graph = decomposition("random_bits", [u32[2]], shape=(3, 2))
    assert non_primitives(graph) == set()
    assert {v.type.dtype for node in graph.nodes for v in node.outputs} == {u32}
    key = key_array((1, 2))
    np.testing.assert_array_equal(run_ir("random_bits", [key], shape=(9,), oracle=True),
                                  run_ir("random_bits", [key], shape=(9,)))


def jax_uniform(key, shape, dtype: DType) -> np.ndarray:
    jkey = jax.random.wrap_key_data(key_array(key), impl="threefry2x32")
    if dtype is f64:
        with jax.enable_x64(True):
            return np.asarray(jax.random.uniform(jkey, shape, jnp.float64))
    return np.asarray(jax.random.uniform(jkey, shape, {f32: jnp.float32, f16: jnp.float16,
                                                       bf16: jnp.bfloat16}[dtype]))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("key", KEYS[:3])
def test_uniform_equals_jax(key, dtype):
    out = run_ir("uniform", [key_array(key)], shape=(4, 50), dtype=dtype)
    expected = jax_uniform(key, (4, 50), dtype)
    assert out.dtype == dtype.numpy == expected.dtype
    np.testing.assert_array_equal(out.view(np.uint8), expected.view(np.uint8))  # bit for bit
    # In oracle mode the values are the same (they are exact), carried as float64.
    np.testing.assert_array_equal(run_ir("uniform", [key_array(key)], shape=(4, 50), dtype=dtype, oracle=True),
                                  out.astype(np.float64))


def test_uniform_mantissa_method_by_hand():
    """float32: the top 23 bits m of each word, m * 2**-23; bfloat16: bits 1..7 of the low byte."""
    key = (123, 456)
    bits = reference_bits(key, (64,))
    np.testing.assert_array_equal(run_ir("uniform", [key_array(key)], shape=(64,), dtype=f32),
                                  (bits >> 9).astype(np.float32) * np.float32(2.0**-23))
    np.testing.assert_array_equal(run_ir("uniform", [key_array(key)], shape=(64,), dtype=bf16),
                                  (((bits & 0xFF) >> 1) / 128.0).astype(ml_dtypes.bfloat16))


@pytest.mark.parametrize("dtype, low, high", [(f32, -2.0, 3.0), (f64, 1e-3, 2e-3), (f16, -1.0, 1.0),
                                              (bf16, 10.0, 20.0), (f32, -1e30, 1e30)])
def test_uniform_range(dtype, low, high):
    """u * (high - low) + low in the dtype (two roundings), clamped to [low, high)."""
    key = (9, 10)
    out = run_ir("uniform", [key_array(key)], shape=(20000,), dtype=dtype, low=low, high=high)
    t = dtype.numpy
    unit = run_ir("uniform", [key_array(key)], shape=(20000,), dtype=dtype)
    lo, hi = np.asarray(low, t), np.asarray(high, t)
    with np.errstate(over="ignore"):
        expected = np.minimum(np.maximum((unit * (hi - lo)).astype(t) + lo, lo), np.nextafter(hi, lo)).astype(t)
    np.testing.assert_array_equal(out, expected)
    assert out.min() >= lo and out.max() < hi
    # It fills the range: the extremes are within 2% of the span of the bounds (bfloat16
    # keeps 7 random bits, 0.8%, and rounds near 20 to 0.125, 1.25%).
    span = float(hi) - float(lo)
    assert float(out.min()) - float(lo) < 0.02 * span and float(hi) - float(out.max()) < 0.02 * span


def test_uniform_never_reaches_high():
    """In float16 1000 + 0.999 rounds to 1001 = high (JAX returns it); the clamp keeps it below."""
    out = run_ir("uniform", [key_array((1, 1))], shape=(4000,), dtype=f16, low=1000.0, high=1001.0)
    assert set(np.unique(out).tolist()) == {1000.0, 1000.5}
    jax_out = np.asarray(jax.random.uniform(jax.random.wrap_key_data(key_array((1, 1)), impl="threefry2x32"),
                                            (4000,), jnp.float16, 1000.0, 1001.0))
    assert (jax_out == 1001.0).any()  # the case the clamp exists for


def box_muller(key, shape, dtype: DType) -> tuple[np.ndarray, np.ndarray]:
    """The documented normal, in float64 from the same uniforms; also the radius (error scale)."""
    n = math.prod(shape)
    wide = f32 if dtype in (f16, bf16) else dtype
    u = run_ir("uniform", [key_array(key)], shape=(2 * n,), dtype=wide).astype(np.float64)
    radius = np.sqrt(-2.0 * np.log(1.0 - u[:n]))
    return (radius * np.cos(2.0 * np.pi * u[n:])).reshape(shape), radius.reshape(shape)


@pytest.mark.parametrize("dtype, bound", [(f32, 9), (f64, 9), (f16, 1), (bf16, 1)], ids=lambda v: str(v))
def test_normal_is_the_documented_box_muller(dtype, bound):
    """Errors: cos(2 pi v) takes the rounding of 2 pi v (about 2 pi ULP of 1, absolute),
    plus log, sqrt and products: 9 ULPs of the radius. float16/bfloat16: computed in
    float32, rounded once."""
    out = run_ir("normal", [key_array((3, 4))], shape=(50, 40), dtype=dtype)
    expected, radius = box_muller((3, 4), (50, 40), dtype)
    assert out.dtype == dtype.numpy and np.isfinite(out.astype(np.float64)).all()
    assert_ulp(out, expected.astype(dtype.numpy), bound, scale=radius, what=f"normal {dtype.short}")


@pytest.mark.parametrize("key", KEYS[:2])
def test_normal_moments(key):
    """Sample mean and variance of 10**5 draws within 5 standard errors of 0 and 1."""
    n = 100_000
    z = run_ir("normal", [key_array(key)], shape=(n,), dtype=f32).astype(np.float64)
    assert abs(z.mean()) < 5 / math.sqrt(n)
    assert abs(z.var() - 1) < 5 * math.sqrt(2 / n)  # Var(s**2) = 2 / n for a normal sample
    assert abs((z**4).mean() / z.var() ** 2 - 3) < 5 * math.sqrt(96 / n)  # kurtosis: tails are right
    assert abs((z < 0).mean() - 0.5) < 5 * math.sqrt(0.25 / n)


def test_dropout_keep_rate_and_scaling():
    n, p = 100_000, 0.3
    key = key_array((7, 8))
    x = np.linspace(-3, 3, n, dtype=np.float32)
    out = run_ir("dropout", [x, key], p=p)
    keep = run_ir("uniform", [key], shape=(n,), dtype=f32) >= np.float32(p)  # the documented mask
    np.testing.assert_array_equal(out, np.where(keep, x * np.float32(1 / (1 - p)), np.float32(0)))
    assert abs(keep.mean() - (1 - p)) < 5 * math.sqrt(p * (1 - p) / n)
    np.testing.assert_array_equal(run_ir("dropout", [x, key], p=p), out)  # deterministic
    other = run_ir("dropout", [x, key_array((7, 9))], p=p)
    assert 0.3 < np.mean((other != 0) != (out != 0)) < 0.5  # independent masks: 2 p (1 - p) = 0.42 differ


def test_dropout_extremes_and_special_values():
    key = key_array((1, 2))
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 1.5, -2.0], np.float32)
    identity = run_ir("dropout", [x, key], p=0.0)
    np.testing.assert_array_equal(identity.view(np.uint32), x.view(np.uint32))  # bit for bit, -0.0 and NaN too
    zeros = run_ir("dropout", [x, key], p=1.0)
    np.testing.assert_array_equal(zeros.view(np.uint32), np.zeros(6, np.uint32))  # +0.0 even for NaN / inf
    # Dropped elements are 0 whatever x holds (torch's x * mask would give NaN for NaN / inf).
    big = np.full(2000, np.nan, np.float32)
    dropped = run_ir("dropout", [big, key], p=0.5)
    assert (dropped == 0).sum() + np.isnan(dropped).sum() == 2000 and 900 < (dropped == 0).sum() < 1100


@pytest.mark.parametrize("dtype", [f16, bf16, f64], ids=lambda d: d.short)
def test_dropout_narrow_and_wide_dtypes(dtype):
    """The mask depends only on key and shape; kept values are x * (1 / (1 - p)) rounded once."""
    key = key_array((4, 4))
    x = np.linspace(-4, 4, 300).astype(dtype.numpy)
    out = run_ir("dropout", [x, key], p=0.25)
    keep = run_ir("uniform", [key], shape=(300,), dtype=f32) >= 0.25
    scale = np.float64(1 / 0.75) if dtype is f64 else np.float32(1 / 0.75)
    expected = np.where(keep, (x.astype(np.float64 if dtype is f64 else np.float32) * scale).astype(dtype.numpy), 0)
    np.testing.assert_array_equal(out, expected.astype(dtype.numpy))


@pytest.mark.parametrize("op", ["random_bits", "uniform", "normal", "dropout"])
def test_table_entry_and_primitive_only_decomposition(op):
    opdef = OP_TABLE[op]
    assert opdef.kind is Kind.COMPOSITE and Group.RANDOM in opdef.groups
    assert (opdef.accuracy is Accuracy.EXACT) == (op == "random_bits")
    types = [f16[3, 5], u32[2]] if op == "dropout" else [u32[2]]
    attrs = {"p": 0.5} if op == "dropout" else {"shape": (3, 5)} | ({} if op == "random_bits" else {"dtype": f64})
    graph = decomposition(op, types, **attrs)
    assert non_primitives(graph) == set()
    assert graph.output_types == [{"random_bits": u32, "dropout": f16}.get(op, f64)[3, 5]]


def test_type_errors():
    key = key_array((1, 2))
    with pytest.raises(TypeRuleError, match=r"^random_bits \(operand 0\): the key must be u32\[2\]"):
        run_ir("random_bits", [np.zeros(2, np.int32)], shape=(3,))
    with pytest.raises(TypeRuleError, match=r"^uniform \(attribute 'dtype'\): dtype must be a float dtype"):
        run_ir("uniform", [key], shape=(3,), dtype=i32)
    with pytest.raises(TypeRuleError, match=r"^uniform \(attribute 'low'\): need finite low < high"):
        run_ir("uniform", [key], shape=(3,), dtype=f32, low=1.0, high=1.0)
    with pytest.raises(TypeRuleError, match=r"^uniform \(attribute 'low'\): need finite low < high"):
        run_ir("uniform", [key], shape=(3,), dtype=f16, low=1.0, high=1.0001)  # equal in float16
    with pytest.raises(TypeRuleError, match=r"^dropout \(attribute 'p'\): p must be in \[0, 1\]"):
        run_ir("dropout", [np.zeros(3, np.float32), key], p=1.5)
    with pytest.raises(TypeRuleError, match=r"^dropout \(operand 1\): the key must be u32\[2\]"):
        run_ir("dropout", [np.zeros(3, np.float32), np.zeros(3, np.uint32)], p=0.5)
    b = GraphBuilder()  # a symbolic dim is a shape too (a batch that changes); the count is checked when bound
    assert str(b.normal(b.input(u32[2]), shape=(Symbol("B"), 3), dtype=f32).type) == "f32[B,3]"
    with pytest.raises(TypeRuleError, match=r"^random_bits \(attribute 'shape'\): at most 2\*\*32 - 1 elements"):
        b = GraphBuilder()
        b.random_bits(b.input(u32[2]), shape=(2**16, 2**16))
