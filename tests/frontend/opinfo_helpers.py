"""Running one of torch's OpInfo samples through ``parity.compile`` and against eager torch.

:func:`check_sample` compiles the sample (as a function of its tensors, the rest held
fixed) with ``backend="reference"`` in strict mode, makes sure parity really ran it
(at least one graph translated, no Dynamo graph break that would leave part of it to
eager torch), and compares the outputs, and the gradients for a fixed cotangent where
the OpInfo supports autograd, with eager. It returns the worst error it measured
(``Measured``) so a test can assert on it; a mismatch raises AssertionError.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

import parity
from parity.conformance.hf.opinfo import (
    _tensors,
    cotangents_for,
    differentiable,
    grad_function,
    sample_function,
)
from parity.frontend import compiled_graph

DEFAULT_TOL = (1e-5, 1e-5)  # (rtol, atol) for float32 unless the OpInfo declares its own


def float32_tolerance(info) -> tuple[float, float]:
    """The OpInfo's own float32 ``(rtol, atol)`` (the widest it declares for any test), else 1e-5/1e-5."""
    from torch.testing._internal.common_device_type import toleranceOverride
    from torch.testing._internal.opinfo.core import DecorateInfo

    rtol, atol = DEFAULT_TOL
    for deco in info.decorators:
        inner = deco.decorators if isinstance(deco, DecorateInfo) else [deco]
        for d in inner:
            if isinstance(d, toleranceOverride) and torch.float32 in d.d:
                rtol, atol = max(rtol, d.d[torch.float32].rtol), max(atol, d.d[torch.float32].atol)
    return rtol, atol


class EagerFallback(AssertionError):
    """The sample did not run (wholly) in parity: nothing translated, or a Dynamo graph break."""


@dataclass
class Measured:
    """The worst absolute error of the outputs and of the gradients (None: not run)."""

    forward: float = 0.0
    backward: float | None = None


def _graph_breaks() -> int:
    from torch._dynamo.utils import counters

    return sum(counters["graph_break"].values())


def _why_eager() -> str:
    from torch._dynamo.utils import counters

    why = [" ".join(line.strip() for line in text.splitlines() if line.strip().startswith(("Explanation", "Exception")))
           for text in counters["unimplemented"]]
    return "; ".join(why) or "Dynamo gave no reason"


def _aliases_input(out: torch.Tensor, inputs) -> bool:
    storage = out.untyped_storage().data_ptr()
    return any(storage == t.untyped_storage().data_ptr() for t in inputs)


def _worst(got, expected) -> float:
    worst = 0.0
    for g, e in zip(_tensors(got), _tensors(expected)):
        if g.is_floating_point() and g.numel():
            diff = (g.detach().double() - e.detach().double()).abs()
            both_nan = torch.isnan(g) & torch.isnan(e)
            worst = max(worst, float(torch.where(both_nan, 0.0, diff.nan_to_num(nan=float("inf"))).max()))
    return worst


def _compare(got, expected, rtol, atol, what: str) -> None:
    got_t, exp_t = _tensors(got), _tensors(expected)
    assert len(got_t) == len(exp_t), f"{what}: {len(got_t)} tensors, eager gives {len(exp_t)}"
    for i, (g, e) in enumerate(zip(got_t, exp_t)):
        torch.testing.assert_close(g.detach(), e.detach(), rtol=rtol, atol=atol, equal_nan=True,
                                   msg=lambda m, i=i: f"{what} {i}: {m}")


def check_sample(info, sample, *, backward: bool = True, values: bool = True, op=None,
                 backend: str = "reference") -> Measured:
    """Compile ``sample`` of ``info`` with parity (``backend``, strict), compare with eager.

    Raises :class:`~parity.frontend.errors.UnsupportedAtenOp` (or another ParityError)
    where parity refuses a graph, :class:`EagerFallback` for an untranslated run or a
    graph break, and AssertionError for a mismatch.
    """
    from torch._dynamo.utils import counters

    rtol, atol = float32_tolerance(info)
    fn, tensors = sample_function(info, sample, op)
    tensors = [t.detach().requires_grad_(t.requires_grad) for t in tensors]
    expected = fn(*tensors)
    torch._dynamo.reset()
    compiled_graph.reset_caches()
    counters.clear()
    compiled = parity.compile(fn, backend=backend)
    got = compiled(*tensors)
    if compiled_graph.STATS["translations"] < 1:
        raise EagerFallback(f"no graph was translated: the sample ran in eager torch ({_why_eager()})")
    if _graph_breaks():
        raise EagerFallback(f"Dynamo graph breaks left part of the sample to eager: {dict(counters['graph_break'])}")
    if not values:  # torch leaves the values undefined (empty_like): shapes and dtypes only
        for g, e in zip(_tensors(got), _tensors(expected), strict=True):
            assert (g.shape, g.dtype) == (e.shape, e.dtype), f"{tuple(g.shape)} {g.dtype} for {tuple(e.shape)} {e.dtype}"
        return Measured()
    measured = Measured(forward=_worst(got, expected))
    _compare(got, expected, rtol, atol, "output")
    wrt = differentiable(tensors)
    if not (backward and info.supports_autograd and wrt):
        return measured
    cotangents = cotangents_for(fn, tensors)
    if not any(o.requires_grad for o in _tensors(expected) if o.is_floating_point()):
        return measured
    expected_grads = grad_function(fn, wrt, cotangents)(*tensors)
    got_grads = grad_function(compiled, wrt, cotangents)(*tensors)
    if compiled_graph.STATS["translations"] < 2:
        # AOTAutograd compiles no backward when every differentiable output is a view of an
        # input: it replays the view in torch, whose backward is torch's (nothing computed)
        views = all(_aliases_input(o, tensors) for o in _tensors(got) if o.is_floating_point() and o.requires_grad)
        assert views, "the backward graph was not translated, yet an output is no view of an input"
    if _graph_breaks():
        raise EagerFallback(f"graph breaks in the backward: {dict(counters['graph_break'])}")
    measured.backward = _worst(got_grads, expected_grads)
    _compare(got_grads, expected_grads, rtol, atol, "gradient")
    return measured
