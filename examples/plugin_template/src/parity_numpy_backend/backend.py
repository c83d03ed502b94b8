"""NumpyBackend: a complete parity backend in one lowering table of NumPy kernels.

It claims every *primitive* of the op table, in every real dtype the op accepts (complex
numbers it declines), and no composite: softmax, layer_norm, attention, dropout, ... reach it already decomposed into
primitives by parity, so it runs every op and every model of the zoo.

Compiling a graph checks it once (every node claimed, inputs typed) and returns a
:class:`NumpyExecutable` that walks the nodes in order, calling one kernel per node.

It uses the whole runtime interface (docs/plugins.md, "The runtime interface"): one option
(``check_finite``: stop at the first node that makes NaN or inf from finite operands), parameters
bound once (``bind``), tensors in
through DLPack, and its compiled form kept in parity's disk cache (the graph's text: a real
runtime would keep its own binary there).
"""

from __future__ import annotations

import numpy as np

from parity.backends import Backend, Deviation, OpClaim, declining_complex
from parity.backends.runtime import BackendOption, resolve_options
from parity.ir import OP_TABLE, parse, primitives
from parity.ir.shapes import ShapeBindings

from .kernels import KERNELS


class NumpyBackend(Backend):
    """The template backend (entry point ``numpy`` in the group ``parity.backends``)."""

    name = "numpy"
    devices = ("cpu",)
    # What this backend knowingly does differently, measured, with the reason: the conformance
    # runner reports a covered failure as a recorded deviation, and a deviation that no longer
    # happens as stale. This backend has none; an example entry would be
    # Deviation("tanh", "the runtime's float32 tanh polynomial", "5 ulp (measured 4.9)", dtype=f32)
    deviations: tuple[Deviation, ...] = ()
    # What it does not claim on purpose, with why (errors name it): complex numbers.
    declined, declined_dtypes = declining_complex("the numpy template has no complex kernels")

    # The runtime interface. What parity.compile(..., backend_options={...}) may pass (checked by parity):
    backend_options = (BackendOption("check_finite", bool, False, "raise FloatingPointError at the first node "
                                     "that makes NaN or inf from finite operands, naming it and its line"),)
    binds_parameters = True  # compile takes parameters=; the executable has bind()
    takes_dlpack = True  # inputs arrive as DLPack tensors (torch's, from parity.compile), read in place
    artifact_version = "numpy-template 1"  # save_artifact/load_artifact: kept in parity's disk cache

    def __init__(self):
        # Claim only what has a kernel: a primitive a newer parity adds shows as unsupported.
        self._claims = {op.name: OpClaim(frozenset(d for d in op.dtypes if d not in self.declined_dtypes))
                        for op in primitives() if op.name in KERNELS}

    def claims(self):
        return self._claims

    def compile(self, graph, device: str = "cpu", *, backend_options=None, parameters=frozenset()):
        # conformance compiles with no keywords: the declared defaults, no parameters
        options = resolve_options(self, backend_options)
        if device != "cpu":
            raise ValueError(f"the numpy backend runs on cpu only, not {device!r}")
        for node in graph.nodes:
            if node.op not in self._claims:
                kind = OP_TABLE[node.op].kind.value
                raise NotImplementedError(f"numpy backend: {kind} {node.op!r} is not claimed ({node.loc})")
        return NumpyExecutable(graph, options["check_finite"], parameters)

    def save_artifact(self, executable) -> bytes:
        return str(executable.graph).encode()

    def load_artifact(self, graph, device, payload, *, backend_options=None, parameters=frozenset()):
        # The bytes come from a directory only this user can write, checked by parity; still read
        # them as data (never pickle) and check they are what was asked for.
        saved = parse(payload.decode())
        if saved.content_hash() != graph.content_hash():
            raise ValueError("the numpy backend's artifact holds another graph")
        return self.compile(saved, device, backend_options=backend_options, parameters=parameters)


class NumpyExecutable:
    """One compiled graph: ``bind`` keeps the parameters (parity passes None in their places at
    each call and binds again only those that changed); a call runs every node's kernel."""

    def __init__(self, graph, check_finite: bool = False, parameters=frozenset()):
        self.graph, self.check_finite, self.parameters = graph, check_finite, frozenset(parameters)
        self._dtypes = [v.type.dtype for v in graph.inputs]
        self._bound: dict = {}  # graph input -> its bound array
        self._static = all(v.type.is_static for v in graph.values())

    def bind(self, values) -> None:
        for k, value in values.items():
            self._bound[self.graph.inputs[k]] = _as_numpy(value, self._dtypes[k])

    def __call__(self, *arrays):
        env = dict(self._bound)
        env.update({v: _as_numpy(a, d) for v, a, d in zip(self.graph.inputs, arrays, self._dtypes) if a is not None})
        # A graph with symbolic sizes (parity recaptures a function whose batch changed): each call
        # binds the symbols from its inputs' shapes, and every type and attribute is read resolved.
        sizes = None if self._static else ShapeBindings(error=ValueError)
        if sizes is not None:
            sizes.bind_inputs(self.graph, [env[v].shape for v in self.graph.inputs])
        with np.errstate(all="ignore"):  # IEEE results (inf, NaN) are results, not warnings
            for node in self.graph.nodes:
                _step(node, env, sizes)
                if self.check_finite:
                    _check_finite(node, env)
        return [env[v] for v in self.graph.outputs]


def _check_finite(node, env) -> None:
    """The ``check_finite`` option: raise if ``node`` made NaN or inf out of finite float operands."""
    def finite(v):
        return env[v].dtype.kind != "f" or bool(np.isfinite(env[v]).all())

    if all(finite(v) for v in node.inputs) and not all(finite(v) for v in node.outputs):
        raise FloatingPointError(f"numpy backend (check_finite): {node.op} at {node.loc or 'an unknown line'} "
                                 f"made NaN or inf from finite operands")


def _step(node, env, sizes=None) -> None:
    """Run one node: its kernel on its operands' arrays, results typed as the graph says (with
    symbolic sizes resolved by ``sizes``, a ShapeBindings, where the graph has them)."""
    outs = [v.type if sizes is None else sizes.resolve(v.type) for v in node.outputs]
    attrs = node.attrs if sizes is None else sizes.resolve_attrs(node.attrs, strict=True)
    result = KERNELS[node.op](attrs, outs, *[env[v] for v in node.inputs])
    for v, t, r in zip(node.outputs, outs, result if isinstance(result, tuple) else (result,)):
        env[v] = np.asarray(r).astype(t.dtype.numpy, copy=False).reshape(t.shape)


def _as_numpy(array, dtype) -> np.ndarray:
    """Graph inputs as NumPy arrays of their IR dtype: a NumPy array as it is, a DLPack tensor read
    in place (``np.from_dlpack``, no copy); bfloat16, which NumPy's DLPack does not take, via its bits."""
    if isinstance(array, np.ndarray):
        return array if array.dtype == dtype.numpy else np.asarray(array, dtype=dtype.numpy)
    if type(array).__module__.startswith("torch") and str(array.dtype) == "torch.bfloat16":
        import torch

        return array.detach().cpu().contiguous().view(torch.int16).numpy().view(dtype.numpy)
    if hasattr(array, "__dlpack__"):
        return np.from_dlpack(array)
    return np.asarray(array, dtype=dtype.numpy)
