"""Complex results in conformance: each part measured in ULPs of the oracle's magnitude
(metrics.py), the published bounds (bounds.COMPLEX_BOUNDS), and the planted faults a
complex metric exists to catch: swapped parts, a conjugated result, a dropped imaginary part."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from parity.conformance import bounds_tables
from parity.conformance.metrics import abs_error, exact_mismatch, ulp_error
from parity.conformance.mutants import run_mutants
from parity.conformance.mutants.run import KILLED
from parity.ir import c64, c128

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "conformance.md"
INF, NAN = float("inf"), float("nan")
COMPLEX_FAULTS = ["swapped_parts", "conjugated", "dropped_imaginary"]


def test_each_part_is_measured_in_ulps_of_the_magnitude():
    o = np.array([3 + 4j, 1e6 + 1e-3j])  # |o| = 5: ulp(f32, 5) = 2**-21
    a = np.array([3 + (4 + 2**-21) * 1j, 1e6 + 0j], np.complex64)
    errors = ulp_error(c64, o, a)
    assert errors[0] == 1.0
    # the tiny imaginary part is dropped: 1e-3 off, 0.016 ULP of |o| = 1e6 (ulp 0.0625)
    assert errors[1] == pytest.approx(1e-3 / 0.0625 + abs(np.float32(1e6) - 1e6) / 0.0625)


def test_a_non_finite_oracle_needs_a_non_finite_result_of_any_form():
    o = np.array([complex(INF, NAN), complex(1e39, 0.0), complex(NAN, NAN), 1 + 1j])
    a = np.array([complex(NAN, NAN), complex(INF, -INF), complex(2.0, 0.0), complex(NAN, 0.0)], np.complex64)
    assert abs_error(c64, o, a).tolist() == [0.0, 0.0, INF, INF]  # 1e39 rounds to inf in f32


def test_exact_bounds_compare_each_part_bit_for_bit():
    o = np.array([complex(1.0, 0.0), complex(NAN, 2.0), complex(1.0, 2.0)])
    a = np.array([complex(1.0, -0.0), complex(NAN, 2.0), complex(2.0, 1.0)], np.complex128)
    assert exact_mismatch(c128, o, a, zero_sign=True).tolist() == [True, False, True]
    assert exact_mismatch(c128, o, a, zero_sign=False).tolist() == [False, False, True]


@pytest.mark.parametrize("backend", ["reference", "xla"])
def test_swapped_conjugated_and_dropped_parts_are_caught(backend):
    result = run_mutants([backend], ops="^(mul|div|exp|dot_general|complex|conj|reduce_sum)$", dtypes=[c64, c128],
                         faults=COMPLEX_FAULTS, sample=0)
    by_fault = {f: [m for m in result.mutants if m.fault == f] for f in COMPLEX_FAULTS}
    for fault, mutants in by_fault.items():
        assert len(mutants) >= 10, fault
        assert {m.status for m in mutants} == {KILLED}, [(m.op, m.dtype, m.status, m.message) for m in mutants]


def test_the_complex_faults_apply_to_complex_outputs_only():
    result = run_mutants(["reference"], ops="^(exp|real|complex_abs)$", faults=COMPLEX_FAULTS, sample=0)
    assert {(m.op, m.dtype) for m in result.mutants} == {("exp", "c64"), ("exp", "c128")}


def test_the_published_complex_table_is_the_generated_one():
    text = DOC.read_text(encoding="utf-8")
    published = text.split("<!-- complex-bounds:begin -->\n", 1)[1].split("<!-- complex-bounds:end -->", 1)[0]
    assert published.strip() == bounds_tables.complex_markdown_table().strip()
    assert "| mul | ≤ 2 ULP |" in published and "| complex | bit-exact |" in published
