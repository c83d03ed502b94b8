"""A backend with one fault planted at its executable's boundary.

:class:`Planted` wraps any backend (a plugin too): claims, devices, deviations and
summation are the inner backend's own, and so is the name (its saved regressions and
declared deviations meet the wrapped one). What its executables return goes through the
fault first.

Example::

    >>> import numpy as np
    >>> from parity.backends.registry import get_backend
    >>> from parity.conformance.mutants import FAULTS, Planted
    >>> from parity.conformance.runner import run
    >>> planted = Planted(get_backend("reference"), FAULTS["zeros"])
    >>> run([planted], ops="^exp$", quick=True).exit_code, planted.changed > 0
    (1, True)
"""

from __future__ import annotations

import numpy as np

from ...backends.base import Backend, Deviation, OpClaim
from ...ir.precision import Precision
from .faults import Fault, Site


class PlantedFault(RuntimeError):
    """What the ``exception`` fault raises."""


class Planted(Backend):
    """``inner`` with ``fault`` applied to every graph output (only those a node of ``op``
    produced, in ``dtypes``, when given). ``changed`` counts the outputs the fault changed
    (a fault that never changes anything is not a mutant: nothing could kill it).
    ``claim_too``: composites to claim on top of the inner backend's claims (for an inner
    backend that runs them whole, as the reference does), so a fault can sit on their results."""

    def __init__(self, inner: Backend, fault: Fault, *, op: str | None = None, dtypes=None, name: str | None = None,
                 deviations: tuple[Deviation, ...] | None = None, claim_too: tuple[str, ...] = ()):
        self.inner, self.fault, self.op, self.dtypes, self.claim_too = inner, fault, op, dtypes, tuple(claim_too)
        self.name, self.devices = name or inner.name, inner.devices
        self.deviations = inner.deviations if deviations is None else tuple(deviations)
        self.summation = getattr(inner, "summation", ())
        self.precision = getattr(inner, "precision", Precision.EXACT)  # the tier measured (tiers.AtPrecision)
        self.changed = 0
        self.broken: list[str] = []  # the fault itself raised (a bug in the fault, not a kill)

    def claims(self):
        from ...ir.ops import OP_TABLE

        return {**self.inner.claims(), **{op: OpClaim(frozenset(OP_TABLE[op].dtypes)) for op in self.claim_too}}

    def available_devices(self):
        return self.inner.available_devices()

    def compile(self, graph, device):
        from ..execute import as_array

        run = self.inner.compile(graph, device)
        producer = {v: n for n in graph.nodes for v in n.outputs}

        def planted(*arrays):
            if self.fault.plant is None:
                self.changed += 1
                raise PlantedFault(f"planted fault '{self.fault.name}' in {self.inner.name}'s executable")
            outputs = [as_array(o) for o in run(*arrays)]
            for i, v in enumerate(graph.outputs):
                node = producer.get(v)
                if self.op is not None and (node is None or node.op != self.op):
                    continue
                if self.dtypes is not None and v.type.dtype not in self.dtypes:
                    continue
                try:
                    with np.errstate(all="ignore"):  # overflow to inf is part of some faults
                        new = self.fault.plant(np.array(outputs[i]), Site(v.type.dtype, node, graph, arrays, v))
                except Exception as exc:  # noqa: BLE001 - reported by the mutation run, never a kill
                    self.broken.append(f"{type(exc).__name__}: {exc}")
                    continue
                if new is not None and _differs(outputs[i], new):
                    outputs[i] = new
                    self.changed += 1
            return outputs

        return planted


def _differs(old: np.ndarray, new) -> bool:
    new = np.asarray(new)
    if old.dtype != new.dtype or old.shape != new.shape:
        return True
    if old.dtype.kind == "f" or old.dtype.kind == "V" or old.dtype.itemsize == 2 and old.dtype.kind not in "iub":
        return old.tobytes() != new.tobytes()
    return bool((old != new).any())
