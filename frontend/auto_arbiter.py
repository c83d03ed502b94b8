"""What ``backend="auto"`` compares a candidate's outputs on the first inputs with (frontend/auto.py).

:class:`Arbiter` holds eager torch's answer for one graph and its second answers (every
sort stable, the graph in float64), made once and shared by every candidate; a graph that
draws random numbers is compared with the first candidate that ran instead.
:func:`underflow_floors` is what a candidate is not held to at underflow scale.

Example::

    >>> from types import SimpleNamespace
    >>> floors = underflow_floors(SimpleNamespace(deviations=()), "cpu", scale=1.0)
    >>> floors[torch.float32] == torch.finfo(torch.float32).tiny * torch.finfo(torch.float32).eps
    True
"""

from __future__ import annotations

import torch

from .auto_check import eager_outputs, float64_outputs, mismatch, mismatch_past_float64, stable_outputs, underflow_scale
from .tensors import ir_dtype


class Arbiter:
    """What a candidate's outputs on the first inputs are compared with: eager torch running
    the FX graph (with its second answers: every sort stable, the graph in float64), or, for a
    graph that draws random numbers, the first candidate that ran (every one draws the same keys)."""

    def __init__(self, gm, inputs: list, start, *, random: bool):
        self.gm, self.inputs, self.start, self.random = gm, inputs, start, random
        self.name = "the first candidate that ran (the graph draws random numbers)" if random else "eager torch"
        self.want = self.ties = self.stable = self.scale = None
        self.exact: list | None | bool = False  # the float64 run: not made yet (False), failed (None)
        if not random:
            torch.random.set_rng_state(start)
            self.want, self.ties = eager_outputs(gm, inputs)
            self.stable = stable_outputs(gm, inputs)  # None without a sort free to order ties

    def mismatch(self, got, results: dict, backend, device: str) -> str | None:
        """Why ``got`` (``backend``'s outputs) is not the arbiter's answer (None: it is);
        ``results``: every candidate's."""
        if self.random:
            first = next(iter(results.values()), None)
            return mismatch(got, first) if first is not None and first is not got else None
        if self.scale is None:
            self.scale = underflow_scale(self.gm, self.inputs)
        floors = underflow_floors(backend, device, self.scale)
        why = mismatch(got, self.want, self.ties, floors)
        if why is not None and self.stable is not None and mismatch(got, self.stable, None, floors) is None:
            return None  # the same answer with ties kept in input order, as the IR's sort keeps them
        if why is not None:  # the second chance: closer to float64 than eager, or nearly
            self.exact = float64_outputs(self.gm, self.inputs) if self.exact is False else self.exact
            if self.exact is not None:
                why = mismatch_past_float64(got, self.want, self.exact, self.ties, floors)
        return why


def underflow_floors(backend, device: str, scale: float) -> dict:
    """Per float dtype, the difference from eager's outputs that ``backend``'s are not held to:
    the dtype's smallest subnormal (the spacing of its underflow range), or its smallest normal
    where the backend declares that it flushes subnormals to zero (a recorded deviation the
    contract excuses), times the graph's ``scale`` (auto_check.underflow_scale)."""
    flushed = {d.dtype for d in backend.deviations if d.flush_to_zero and d.device in (None, device)}
    floors = {}
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        info = torch.finfo(dtype)
        floors[dtype] = info.tiny * (1.0 if ir_dtype(dtype) in flushed else info.eps) * scale  # eps·tiny: η
    return floors


def short(why: str, limit: int = 160) -> str:
    return why if len(why) <= limit else why[:limit - 1] + "…"
