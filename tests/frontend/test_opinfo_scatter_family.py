"""torch's OpInfo float32 samples of the scatter family (issue #28) through ``parity.compile`` on
every built-in backend, forward and (where the OpInfo supports autograd) backward, against
eager torch (``opinfo_helpers.check_sample``: strict, no eager fallback, the OpInfo's own
tolerance or 1e-5).

Dtypes: float32 (forward and gradients), int64 and float64 (forward). By default one float32
sample per OpInfo entry runs, drawn with a fixed seed, on one backend (the entries take the
backends in turn, so each backend runs two or three); the rest are marked ``slow`` and run
only with ``-m slow`` (469 samples per backend, 2,345 in all; docs/ops/scatter.md has the
counts). Samples
parity declines on purpose are in :data:`REFUSED`, and must be declined.
"""

import random

import pytest
import torch

from parity.conformance.hf.opinfo import samples as opinfo_samples
from parity.ir.errors import ParityError

from .opinfo_helpers import EagerFallback, check_sample
from .test_opinfo_zoo_ops import _boolean_index, _full_set_selected

BACKENDS = ("reference", "xla", "onnx", "triton", "inductor")
# OpInfo (name, variant): every entry of the family in torch's op_db
ENTRIES = (("scatter", ""), ("scatter_add", ""), ("scatter_reduce", "sum"), ("scatter_reduce", "prod"),
           ("scatter_reduce", "mean"), ("scatter_reduce", "amax"), ("scatter_reduce", "amin"),
           ("index_put", ""), ("index_copy", ""), ("index_fill", ""), ("index_add", ""), ("masked_scatter", ""))
SEED = 28


def _tensor_value(sample) -> bool:
    return isinstance(sample.args[2], torch.Tensor)


#: OpInfo → (which float32 samples parity declines, why): gradients only, so the forward-only
#: dtypes run them. Each must be declined (an eager fallback).
REFUSED = {
    "index_put": (_boolean_index, "the values' gradient grad[mask] has a data-dependent size (aten.nonzero)"),
    "index_fill": (_tensor_value, "the value's gradient calls aten._unique (a data-dependent size)"),
}


def _op_db():
    import sys
    import types
    import unittest

    sys.modules.setdefault("expecttest", types.SimpleNamespace(TestCase=unittest.TestCase))
    from torch.testing._internal.common_methods_invocations import op_db

    return op_db


def _cases():
    infos = {(o.name, o.variant_test_name): o for o in _op_db()}
    cases = []
    for n, (name, variant) in enumerate(ENTRIES):
        info = infos[(name, variant)]
        key = f"{name}.{variant}" if variant else name
        for dtype in (torch.float32, torch.int64, torch.float64):
            if dtype not in info.supported_dtypes("cpu"):
                continue
            torch.manual_seed(SEED)
            grads = dtype is torch.float32 and info.supports_autograd
            samples = opinfo_samples(info, dtype, requires_grad=grads)
            quick = random.Random(f"{SEED}:{key}").randrange(len(samples))
            for backend in BACKENDS:
                for i, sample in enumerate(samples):
                    chosen = dtype is torch.float32 and i == quick and backend == BACKENDS[n % len(BACKENDS)]
                    marks = [] if chosen else [pytest.mark.slow]
                    cases.append(pytest.param(backend, name, info, sample, chosen,
                                              id=f"{backend}-{key}-{str(dtype)[6:]}-{i}", marks=marks))
    return cases


CASES = _cases()


def pytest_generate_tests(metafunc):
    if "sample" in metafunc.fixturenames:
        full = _full_set_selected(metafunc.config)
        metafunc.parametrize("backend,name,info,sample,quick", [c for c in CASES if full or c.values[4]])


def test_scatter_family_sample_matches_eager(backend, name, info, sample, quick):
    refused, why = REFUSED.get(name, (lambda s: False, ""))
    if sample.input.dtype is torch.float32 and refused(sample):
        with pytest.raises((ParityError, EagerFallback)):
            check_sample(info, sample, backend=backend)
        pytest.skip(f"declined as listed in REFUSED: {why}")
    check_sample(info, sample, backend=backend)


def test_every_entry_of_the_family_is_covered():
    """The family's OpInfo entries in torch's op_db are exactly ENTRIES (a new variant fails)."""
    names = {"scatter", "scatter_add", "scatter_reduce", "index_put", "index_copy", "index_fill", "index_add",
             "masked_scatter"}
    assert {(o.name, o.variant_test_name) for o in _op_db() if o.name in names} == set(ENTRIES)
