"""Capture the IR graphs ``parity.compile`` would run, with the exact arrays each received.

The capture goes through the same path as :func:`parity.compile`: TorchDynamo, then
AOTAutograd with the core decompositions, then the frontend's translation and compile of
every forward, backward or inference graph (:func:`parity.frontend.recording_backend`). Each compiled graph's executable (on the
reference backend, so the call itself runs) is wrapped to record the arrays it is called
with the first time. When inputs or parameters require grad, the captured call is
followed by a backward pass of ``Σ sum(output)`` so the backward graphs are captured too.

A backward graph reads saved activations: forward outputs. :attr:`CapturedGraph.links`
records, per backward input, which forward output it is (same memory or same bytes), so a
diff can feed the backward graph the *backend's* forward values and measure the carried
error end to end across the two graphs.

Example::

    >>> import torch
    >>> graphs = capture_graphs(lambda x: torch.tanh(x) * 2, torch.ones(3))
    >>> [(g.kind, len(g.arrays)) for g in graphs]
    [('inference', 1)]
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..frontend import recording_backend
from ..ir.graph import Graph


@dataclass
class CapturedGraph:
    """One IR graph as ``parity.compile`` translated it (before any backend's decompositions).

    ``arrays``: the graph's inputs on its first call (copies); ``links``: input position →
    (index of an earlier captured graph, its output position) for inputs that are that
    graph's outputs (a backward graph's saved activations)."""

    index: int
    kind: str  # forward | backward | inference
    graph: Graph
    arrays: list[np.ndarray]
    links: dict[int, tuple[int, int]] = field(default_factory=dict)


class _Recorder:
    """Collects the graphs and their first call's arrays, in the order they run."""

    def __init__(self):
        self.graphs: list[CapturedGraph] = []
        self._forward_outputs: dict[tuple, tuple[int, int]] = {}  # content key → (graph, output position)

    def wrap(self, compiled, kind: str):
        graph = compiled.translation.graph
        inner = compiled.executable
        slot: dict[str, Any] = {}

        def executable(*arrays):
            results = inner(*arrays)
            if "done" not in slot:
                slot["done"] = True
                self._record(kind, graph, [np.array(a, copy=True) for a in arrays], [np.asarray(r) for r in results])
            return results

        compiled.executable = executable
        return compiled

    def _record(self, kind: str, graph: Graph, arrays: list[np.ndarray], outputs: list[np.ndarray]) -> None:
        links = {}
        if kind == "backward":  # a saved activation is a forward output with the same dtype, shape and bytes
            for i, a in enumerate(arrays):
                found = self._forward_outputs.get(_content_key(a))
                if found is not None:
                    links[i] = found
        index = len(self.graphs)
        self.graphs.append(CapturedGraph(index, kind, graph, arrays, links))
        if kind == "forward":  # later forward graphs win: the latest output of that content
            self._forward_outputs.update((_content_key(o), (index, k)) for k, o in enumerate(outputs))


def _content_key(array: np.ndarray) -> tuple:
    return array.dtype.str, array.shape, hashlib.blake2b(np.ascontiguousarray(array).tobytes(), digest_size=16).digest()


def _tensors(value) -> list:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict) or hasattr(value, "values") and not isinstance(value, (str, bytes)):
        try:
            return [t for v in value.values() for t in _tensors(v)]
        except TypeError:
            return []
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def capture_graphs(fn, *args, backward: bool | None = None, dynamo_config: dict | None = None,
                   **kwargs) -> list[CapturedGraph]:
    """Run ``fn(*args, **kwargs)`` once under parity's capture and return its IR graphs.

    ``backward``: also run a backward pass (default: when any input, parameter or
    output requires grad). ``dynamo_config``: ``torch._dynamo.config`` settings for the
    capture (e.g. ``{"allow_rnn": True}``)."""
    import torch

    recorder = _Recorder()
    torch._dynamo.reset()  # a function compiled before would be served from Dynamo's cache
    compiled = torch.compile(fn, backend=recording_backend(recorder.wrap))
    with torch._dynamo.config.patch(**(dynamo_config or {})):
        out = compiled(*args, **kwargs)
        outputs = [t for t in _tensors(out) if t.is_floating_point()]
        if backward is None:
            backward = any(t.requires_grad for t in outputs)
        if backward:
            grads = [t for t in outputs if t.requires_grad]
            if grads:
                torch.stack([t.float().sum() for t in grads]).sum().backward()
    torch._dynamo.reset()
    if not recorder.graphs:
        raise ValueError("parity.diff captured no graph: the function ran no torch op that Dynamo traces")
    return recorder.graphs


__all__ = ["CapturedGraph", "capture_graphs"]
