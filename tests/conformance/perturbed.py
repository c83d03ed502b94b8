"""A deliberately wrong backend for the conformance tests: the reference interpreter with
chosen ops changed. Imported by the tests here and by the conftest the pytest-plugin test
writes for a separate pytest process."""

from collections.abc import Callable, Mapping

import numpy as np

from parity.backends.base import Backend, Deviation, OpClaim
from parity.conformance.mutants import Fault, Planted
from parity.ir.dtypes import DType
from parity.ir.interpreter import evaluate_node
from parity.ir.ops import primitives
from parity.ir.ops.conversion import round_float


class Perturbed(Backend):
    """Scales the float results of the ops in ``factors`` (``{op: factor}``, in the dtypes
    ``dtypes`` or all), applies ``change(op, dtype, result)`` to every result, refuses to
    compile graphs holding an op of ``broken``, does not claim ``unclaimed``."""

    def __init__(self, name: str, factors: Mapping[str, float] | None = None, *, dtypes=None,
                 change: Callable | None = None, broken=(), unclaimed=(), devices=("cpu",),
                 deviations: tuple[Deviation, ...] = ()):
        self.name, self.devices, self.deviations = name, tuple(devices), tuple(deviations)
        self.factors, self.dtypes, self.change = dict(factors or {}), dtypes, change
        self.broken, self.unclaimed = set(broken), set(unclaimed)

    def claims(self):
        return {op.name: OpClaim(frozenset(op.dtypes)) for op in primitives() if op.name not in self.unclaimed}

    def compile(self, graph, device):
        for node in graph.nodes:
            if node.op in self.broken:
                raise RuntimeError(f"no kernel for {node.op}")

        def run(*arrays):
            env = dict(zip(graph.inputs, (np.asarray(a.detach().numpy() if hasattr(a, "detach") else a)
                                          for a in arrays)))
            for node in graph.nodes:
                results = evaluate_node(node.op, [env[v] for v in node.inputs], node.attrs,
                                        [v.type for v in node.inputs], [v.type for v in node.outputs])
                for v, r in zip(node.outputs, results):
                    env[v] = self._perturb(node.op, v.type.dtype, r)
            return [env[v] for v in graph.outputs]

        return run

    def _perturb(self, op: str, dtype: DType, r: np.ndarray) -> np.ndarray:
        factor = self.factors.get(op)
        if factor is not None and dtype.is_float and (self.dtypes is None or dtype in self.dtypes):
            r = round_float(r.astype(np.float64) * factor, dtype)
        return self.change(op, dtype, r) if self.change else r


class Wrapped(Planted):
    """A real backend with one fault planted at its executable's boundary
    (:class:`parity.conformance.mutants.Planted`): every graph output that a node of ``op``
    (in ``dtypes``, or any) produced is replaced by ``fault(array, dtype, inputs)``
    (``inputs``: the executable's arguments). ``name`` defaults to the backend's (so its
    saved regressions meet the wrapped one)."""

    def __init__(self, inner: Backend, op: str, fault: Callable, *, dtypes=None, name: str | None = None,
                 deviations: tuple[Deviation, ...] | None = None, claim_too: tuple[str, ...] = ()):
        planted = Fault(f"test fault on {op}", "a test's own fault", lambda a, site: fault(a, site.dtype, site.arrays))
        super().__init__(inner, planted, op=op, dtypes=dtypes, name=name, deviations=deviations, claim_too=claim_too)


def affine(scale: float, shift: float) -> Callable:
    """A fault: ``scale·x + shift``, rounded to the output dtype."""
    def fault(a, dtype, inputs):
        return round_float(a.astype(np.float64) * scale + shift, dtype)

    return fault
