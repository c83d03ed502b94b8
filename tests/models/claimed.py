"""What a backend declines of a whole model: the zoo tests' expectations, derived from claims.

A zoo test must not keep a hand list of "backend X cannot run model Y": once a backend
gains the ops (ONNX and Triton lowering complex numbers and FFTs, say), the list would
keep excusing it. Instead the model is captured once on the reference backend (parity's
own capture, :func:`parity.frontend.recording_backend`: the same IR graphs every backend
is handed) and each node is asked of the backend's claims (:class:`ClaimCheck`, which
looks through composites). A backend that claims every node must run the model; one
that does not must refuse it in strict mode with that reason.
"""

from __future__ import annotations

import functools

import torch

from parity.backends.registry import get_backend
from parity.frontend import recording_backend
from parity.frontend.claims import ClaimCheck


def captured(run) -> tuple:
    """The IR graphs parity translates while ``run(compile)`` runs; ``compile(module)`` wraps a
    module in a ``torch.compile`` with parity's capture on the reference backend."""
    graphs = []

    def keep(compiled, kind):
        graphs.append(compiled.translation.graph)
        return compiled

    torch._dynamo.reset()
    try:
        run(lambda module: torch.compile(module, backend=recording_backend(keep)))
    finally:
        torch._dynamo.reset()
    assert graphs, "nothing was captured: the expectation would be vacuous"
    return tuple(graphs)


def why_declined(graphs, backend: str) -> str | None:
    """The first reason ``backend``'s claims give against a node of ``graphs`` (None: it claims all)."""
    check = ClaimCheck(get_backend(backend))
    return next((why for graph in graphs for node in graph.nodes if (why := check(node)) is not None), None)


@functools.cache
def zoo_graphs(name: str, mode: str) -> tuple:
    """The IR graphs of the zoo model ``name`` in ``mode``: forward and backward of its loss."""
    from parity.conformance.models import get_model
    from parity.conformance.models.check import dynamo_config

    spec = get_model(name)

    def run(compile_):
        model, inputs = spec.instantiate(0, mode)
        with dynamo_config(spec):
            spec.loss(compile_(model)(*inputs), inputs).backward()

    return captured(run)


@functools.cache
def hf_graphs(name: str) -> tuple:
    """The training forward and backward IR graphs of the Hugging Face zoo entry ``name``."""
    from parity.conformance.hf import get_architecture
    from parity.conformance.hf.check import build

    spec = get_architecture(name)

    def run(compile_):
        model = build(spec)
        model.train()
        compile_(model)(**spec.inputs()).loss.backward()

    return captured(run)
