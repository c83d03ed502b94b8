"""Vendor precision tiers (backends/runtime.py VendorTier): declared by a plugin with its bounds,
chosen with precision=NAME (never by auto), certified in its own column beside exact."""

import sys
from pathlib import Path

import pytest
import torch

import parity
from parity.backends.runtime import VendorTier
from parity.cli import _tier_columns
from parity.conformance.runner import run
from parity.conformance.tiers import at_precision, column_backend
from parity.ir import DType
from parity.ir.precision import Precision
from parity.ir.usage import UsageError

sys.path.insert(0, str(Path(__file__).parents[1] / "backends"))
from runtime_plugins import BF16_COMPUTE, Bf16Device, registered  # noqa: E402


@pytest.fixture
def bf16_device():
    with registered(Bf16Device()) as backend:
        yield backend


def _cells(result):
    return {(c.backend, c.op): c for c in result.cells}


def test_the_tier_is_certified_against_its_own_bounds_beside_exact(bf16_device):
    columns = _tier_columns(["bf16_device"], "bf16-compute")
    assert [getattr(c, "name", c) for c in columns] == ["bf16_device", "bf16_device@bf16-compute"]
    assert column_backend("bf16_device@bf16-compute").precision is BF16_COMPUTE  # as a worker rebuilds the column
    with pytest.raises(UsageError, match="--precision 'bf16-compute': no backend asked for declares that tier"):
        _tier_columns(["reference"], "bf16-compute")
    result = run(columns, ops="^(tanh|exp|add)$", dtypes=[DType.float32], quick=True)
    assert result.exit_code == 0
    cells = _cells(result)
    tiered = cells[("bf16_device@bf16-compute", "tanh")]
    # bfloat16 results: ~2^15 float32 ULPs off, within the 32769 the tier promises (and far past exact's 4)
    assert tiered.status == "pass" and 16384 < tiered.max_ulp <= 32769
    assert cells[("bf16_device", "tanh")].max_ulp <= 1  # the exact column: the spec
    assert cells[("bf16_device@bf16-compute", "add")].max_ulp <= 0.5  # an op the tier does not name: exact's bound


def test_a_tier_that_promises_less_than_it_delivers_fails(bf16_device, monkeypatch):
    boastful = VendorTier("bf16-compute", {"tanh": 8}, "promises 8 ULP, computes in bfloat16")
    monkeypatch.setattr(Bf16Device, "precisions", (Precision.EXACT, boastful))
    result = run(at_precision([bf16_device], "bf16-compute"), ops="^tanh$", dtypes=[DType.float32], quick=True)
    cell = _cells(result)[("bf16_device@bf16-compute", "tanh")]
    assert result.exit_code == 1 and cell.status == "fail" and cell.max_ulp > 8


def test_precision_selects_the_tier_and_auto_never_does(bf16_device):
    x = torch.linspace(-3, 3, 50)
    exact = parity.compile(torch.tanh, backend="bf16_device", cache_dir=False)(x)
    tiered_fn = parity.compile(torch.tanh, backend="bf16_device", precision="bf16-compute", cache_dir=False)
    tiered = tiered_fn(x)
    assert bf16_device.asked == [None, BF16_COMPUTE]  # exact: no keyword; the tier: its declaration
    torch.testing.assert_close(exact, torch.tanh(x))
    torch.testing.assert_close(tiered, torch.tanh(x).bfloat16().float(), rtol=0, atol=0)
    assert "precision=bf16-compute" in repr(tiered_fn)
    with pytest.raises(UsageError, match="backend='auto' never picks one: name that backend"):
        parity.compile(torch.tanh, precision="bf16-compute")
    with pytest.raises(UsageError, match="precision='bf16' is not a precision tier.*or one the bf16_device backend "
                                         "declares: 'bf16-compute'"):
        parity.compile(torch.tanh, backend="bf16_device", precision="bf16")


def test_a_tier_names_ops_or_families_only():
    assert VendorTier("t", {"contraction": 64}, "why").ulps_for("dot_general") == 64
    with pytest.raises(ValueError, match="'tanhh' is neither an op nor an op family"):
        VendorTier("t", {"tanhh": 8}, "why")
    with pytest.raises(ValueError, match="needs its own name, not 'fast'"):
        VendorTier("fast", {"tanh": 8}, "why")
