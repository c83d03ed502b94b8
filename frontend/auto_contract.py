"""What ``backend="auto"`` holds every candidate to, for both frontends (importing it needs
neither torch nor jax): the backends it never times, and how close a candidate's outputs
must be to the framework's own on the first inputs.

Example::

    >>> from parity.ir.dtypes import DType
    >>> RTOL_BY_DTYPE[DType.float32], "triton" in NEVER_AUTO
    (0.0001, True)
"""

from __future__ import annotations

from ..ir.dtypes import DType

# Backends auto never times on a device, and why.
NEVER_AUTO: dict[str, tuple[tuple[str, ...], str]] = {
    "reference": (("cpu", "cuda", "tpu"), "the spec interpreter (NumPy, float64 inside): never the fastest"),
    "triton": (("cpu",), "runs in Triton's interpreter on CPU"),
}

# |got − want| ≤ rtol·|want| + rtol·max|want| per output dtype; integers and booleans are exact.
RTOL_BY_DTYPE: dict[DType, float] = {DType.float64: 1e-9, DType.float32: 1e-4, DType.float16: 1e-2,
                                     DType.bfloat16: 2e-2}

# A float output off the anchor's (eager torch's, jax.jit's) by more than its rtol still passes
# when it is no farther from a float64 run of the same program than NOISE_FACTOR times the
# anchor's own distance from it, or NOISE_LEVEL_FACTOR times where the anchor has no correct
# digit (its error at least the float64 value's size: an analytically zero gradient, where
# every summation order gives other noise). The rule the Hugging Face zoo's checker applies
# (conformance/hf/check.py); without it BERT's, OPT's and BLOOM's backward graphs matched no
# candidate on backend="auto".
NOISE_FACTOR, NOISE_LEVEL_FACTOR = 2.0, 16.0
