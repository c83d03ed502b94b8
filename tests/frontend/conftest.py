"""Shared helpers: run a torch function through make_fx → fx_to_ir → the reference interpreter."""

import numpy as np
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from parity.frontend import aten_decompositions, compiled_graph, single_backend
from parity.frontend.tensors import to_array, to_torch
from parity.frontend.translate import fx_to_ir
from parity.ir import evaluate


def trace_to_ir(fn, *args, functional=False):
    """The Translation of ``fn`` traced at the aten level with parity's decomposition table.

    ``functional`` removes in-place updates first (as AOTAutograd does), e.g. batch norm's
    running statistics.
    """
    if functional:
        fn = torch.func.functionalize(fn, remove="mutations_and_views")
    gm = make_fx(fn, decomposition_table=aten_decompositions.decomposition_table())(*args)
    return fx_to_ir(gm)


def run_via_ir(fn, *args, functional=False):
    """Outputs of ``fn`` computed by the IR reference interpreter (a list of torch tensors)."""
    translation = trace_to_ir(fn, *args, functional=functional)
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    arrays = [to_array(tensors[j]) for j in translation.inputs]
    arrays += [np.array([7, 11 + i], np.uint32) for i in range(translation.num_keys)]
    results = evaluate(translation.graph, arrays)
    out = []
    for kind, *rest in translation.outputs:
        if kind == "ir":
            out.append(to_torch(results[rest[0]], translation.graph.outputs[rest[0]].type.dtype))
        elif kind == "input":
            out.append(tensors[rest[0]])
        else:
            out.append(rest[0])
    return out


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    compiled_graph.reset_caches()
    yield
    torch._dynamo.reset()


@pytest.fixture
def via_ir():
    return run_via_ir


@pytest.fixture
def to_ir():
    return trace_to_ir


@pytest.fixture
def compiled_graphs(monkeypatch):
    """The IR graphs parity.compile hands to backends during the test, in order."""
    graphs = []
    real = single_backend.compiled_executable

    def spy(graph, *rest, **kwargs):
        graphs.append(graph)
        return real(graph, *rest, **kwargs)

    monkeypatch.setattr(single_backend, "compiled_executable", spy)
    return graphs
