"""``prims.fma`` (what Dynamo makes of ``addcdiv_``/``addcmul_`` in every Adam step) rounds
once, like a fused multiply-add, on every backend (frontend/aten/prims.py).

The expected values are computed exactly (``fractions.Fraction``) and rounded to the
nearest float32 / bfloat16 with ties to even, so they do not depend on any float unit.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch

import parity

BACKENDS = ["reference", "xla", "onnx", "inductor"]


def _nearest(value: Fraction, dtype: torch.dtype) -> float:
    """``value`` rounded to the nearest ``dtype`` number, ties to even (finite, in range)."""
    guess = torch.tensor(float(value), dtype=torch.float64).to(dtype)
    candidates = {float(guess)}
    for direction in (math.inf, -math.inf):
        candidates.add(float(torch.nextafter(guess, torch.tensor(direction, dtype=dtype))))
    best = min(candidates, key=lambda c: (abs(Fraction(c) - value), _odd_last_bit(c, dtype)))
    return best


def _odd_last_bit(x: float, dtype: torch.dtype) -> int:
    bits = torch.tensor(x, dtype=dtype).view(torch.int16 if dtype.itemsize == 2 else torch.int32)
    return int(bits) & 1


def _exact_fma(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    out = [_nearest(Fraction(x) * Fraction(y) + Fraction(z), a.dtype) if math.isfinite(x * y + z) else x * y + z
           for x, y, z in zip(a.tolist(), b.tolist(), c.tolist())]
    return torch.tensor(out, dtype=a.dtype)


def _cases(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Operands where one rounding and two differ, where rounding the sum to float64 first and
    then to ``dtype`` lands on a tie (double rounding), random ones, and signed zeros/infs."""
    eps = torch.finfo(dtype).eps
    one_ulp = 1 + eps
    # (1 + eps)(1 - eps) = 1 - eps**2: fused gives 1 - eps**2 + c, unfused rounds the product to 1
    a = [one_ulp, one_ulp, 3.0, -0.0, math.inf, 1.0]
    b = [1 - eps, 1 - eps, 1 / 3, 5.0, 2.0, 1.0]
    c = [-1.0, 0.5, -1.0, 0.0, 1.0, -1.0]
    if dtype is torch.float32:
        # a·b = 2**-24 + r with 0 < r < 2**-53 (found by search): 1 + a·b lies just above the tie
        # between 1 and 1 + 2**-23, but rounded to float64 it is the tie itself
        a.append(8390624 * 2.0**-23)
        b.append(16773185 * 2.0**-48)
        c.append(1.0)
    g = torch.Generator().manual_seed(0)
    rand = [torch.randn(64, generator=g, dtype=torch.float64) for _ in range(3)]
    tensors = [torch.cat([torch.tensor(v, dtype=torch.float64), r]).to(dtype) for v, r in zip((a, b, c), rand)]
    return tuple(tensors)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_fma_rounds_once_on_every_backend(backend, dtype):
    a, b, c = _cases(dtype)
    expected = _exact_fma(a, b, c)
    compiled = parity.compile(lambda x, y, z: torch.ops.prims.fma(x, y, z), backend=backend)
    got = compiled(a, b, c)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())
    # the cases do tell one rounding from two: torch's eager prims.fma kernel rounds twice
    unfused = (a * b) + c
    assert not torch.equal(unfused, expected)


def test_fma_double_rounding_case_is_a_tie_in_float64():
    """The float32 case above needs round-to-odd: rounding the exact sum to float64 first makes
    a tie that ties-to-even then rounds the wrong way."""
    a, b, c = (t[6:7] for t in _cases(torch.float32))
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    via_float64 = torch.tensor(float(exact), dtype=torch.float64).float()
    assert float(via_float64) != _nearest(exact, torch.float32)


@pytest.mark.parametrize("backend", BACKENDS)
def test_float64_fma_rounds_like_torchs_eager_kernel(backend):
    """float64 has no wider IR type: the product and the sum round once each, which is what
    torch's own CPU kernel for prims.fma computes (for every dtype)."""
    a, b, c = (t.double() for t in _cases(torch.float32))
    compiled = parity.compile(lambda x, y, z: torch.ops.prims.fma(x, y, z), backend=backend)
    expected = torch.ops.prims.fma(a, b, c)
    np.testing.assert_array_equal(compiled(a, b, c).numpy(), expected.numpy())
    np.testing.assert_array_equal(expected.numpy(), ((a * b) + c).numpy())
