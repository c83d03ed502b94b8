"""torch's OpInfo entries, their float32 samples, and each sample as a function to compile.

The zoo's aten ops (``aten_ops.json``, :mod:`.aten_ops`) are mapped to OpInfo entries by
``scripts/build_aten_ops.py``; ``tests/frontend/test_opinfo_zoo_ops.py`` finds each mapped
entry by :func:`opinfo_id` and compiles :func:`sample_function` of its samples.

Example::

    >>> info = find_opinfo("mm")
    >>> opinfo_id(info), len(float32_samples(info)) > 0
    ('mm', True)
"""

from __future__ import annotations

import contextlib
import sys
import types
import unittest

import torch


def op_db() -> list:
    """torch's OpInfo database. Its module imports ``expecttest`` (a torch test dependency
    not installed here) only for a TestCase base class; unittest's serves the samples."""
    if "expecttest" not in sys.modules:
        try:
            import expecttest  # noqa: F401
        except ImportError:
            sys.modules["expecttest"] = types.SimpleNamespace(TestCase=unittest.TestCase)
    from torch.testing._internal.common_methods_invocations import op_db as db

    return db

def opinfo_id(info) -> str:
    """``name`` or ``name.variant`` (the key the mapping and the test use)."""
    return f"{info.name}.{info.variant_test_name}" if info.variant_test_name else info.name

def find_opinfo(key: str):
    """The OpInfo :func:`opinfo_id` names ``key``."""
    for info in op_db():
        if opinfo_id(info) == key:
            return info
    raise KeyError(key)

def float32_samples(info) -> list:
    """Every float32 CPU sample of ``info`` (gradients required where it supports autograd)."""
    return samples(info, torch.float32, requires_grad=info.supports_autograd)

def samples(info, dtype, requires_grad: bool = False) -> list:
    """Every CPU sample of ``info`` in ``dtype``: the values ``info.sample_inputs`` gives.

    Two costs of torch's sample iterator are skipped, its values kept. Outside a
    ``unittest.TestCase`` method it finds no test function to record inputs on, but looks
    for one with ``inspect.stack()``, which reads every frame's source; and it reseeds before
    each sample with ``torch.manual_seed``, which formats the call stack once per lazy device
    module (CUDA, XPU, MTIA). At pytest's collection those were most of the 2 minutes it took.
    Here each sample is drawn after the same reseed of the CPU generator, ``random`` and
    numpy (torch's ``set_rng_seed`` with its default seed, as there is no test function)."""
    import random

    import numpy as np
    from torch.testing._internal import common_utils

    out = []
    with _no_test_function_lookup():
        it = iter(info.sample_inputs("cpu", dtype, requires_grad=requires_grad, set_seed=False))
        while True:
            torch.default_generator.manual_seed(common_utils.SEED)
            random.seed(common_utils.SEED)
            np.random.seed(common_utils.SEED)
            try:
                out.append(next(it))
            except StopIteration:
                return out

@contextlib.contextmanager
def _no_test_function_lookup():
    from torch.testing._internal import common_utils
    from torch.testing._internal.opinfo import core

    saved = common_utils.extract_test_fn, core.extract_test_fn
    common_utils.extract_test_fn = core.extract_test_fn = lambda: None
    try:
        yield
    finally:
        common_utils.extract_test_fn, core.extract_test_fn = saved

def _tensors(value) -> list[torch.Tensor]:
    flat, _ = torch.utils._pytree.tree_flatten(value)
    return [t for t in flat if isinstance(t, torch.Tensor)]

def sample_function(info, sample, op=None):
    """``(fn, tensors)``: the sample as a function of its tensors (the rest held fixed),
    calling ``op`` (default ``info.op``)."""
    op = info.op if op is None else op
    flat, spec = torch.utils._pytree.tree_flatten((sample.input, list(sample.args), dict(sample.kwargs)))
    where = [i for i, v in enumerate(flat) if isinstance(v, torch.Tensor)]

    def fn(*tensors):
        values = list(flat)
        for i, t in zip(where, tensors):
            values[i] = t
        x, args, kwargs = torch.utils._pytree.tree_unflatten(values, spec)
        return op(x, *args, **kwargs)

    return fn, [flat[i] for i in where]

def differentiable(tensors) -> list[int]:
    """Positions of the floating tensors that require grad."""
    return [i for i, t in enumerate(tensors) if t.requires_grad and t.is_floating_point()]

def cotangents_for(fn, tensors) -> list[torch.Tensor]:
    """A fixed cotangent per floating output of ``fn`` (a ramp in [-1, 1], so no gradient is
    trivially a sum), computed eagerly so that tracing the gradient does not trace it."""
    with torch.no_grad():
        outs = [o for o in _tensors(fn(*tensors)) if o.is_floating_point()]
    return [torch.linspace(-1.0, 1.0, o.numel(), dtype=o.dtype).reshape(o.shape) for o in outs]

def grad_function(fn, wrt: list[int], cotangents: list[torch.Tensor]):
    """``fn``'s gradients w.r.t. the tensors at ``wrt`` for the given output cotangents
    (an input without a gradient gets zeros, as eager and compiled must agree on it)."""

    def grads(*tensors):
        outs = [o for o in _tensors(fn(*tensors)) if o.is_floating_point()]
        pairs = [(o, c) for o, c in zip(outs, cotangents) if o.requires_grad]
        got = torch.autograd.grad([o for o, _ in pairs], [tensors[i] for i in wrt], [c for _, c in pairs],
                                  allow_unused=True)
        return [torch.zeros_like(tensors[i]) if g is None else g for i, g in zip(wrt, got)]

    return grads
