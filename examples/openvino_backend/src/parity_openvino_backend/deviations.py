"""What OpenVINO's CPU plugin knowingly computes differently, as measured by
``parity conform --backend openvino --quick`` (openvino 2026.4.1, float32 precision hint; x86-64 AVX2, and
AVX-512 with and without ``ONEDNN_MAX_CPU_ISA=AVX2``: the same numbers).
Each starts with the bound it is held to, then the measurement and its case."""

from __future__ import annotations

from parity.backends import Deviation
from parity.ir import f32

DEVIATIONS = (
    Deviation("div", "OpenVINO rewrites x / y as x · y⁻¹ (its ConvertDivide pass): two roundings",
              "2 ulp (measured 1.22, div[f32]:specials)", dtype=f32),
)
SUMMATION = ()
