"""Subgraph claims (backends/subgraph_claims.py): a plugin's claim_subgraphs regions reach its
compile whole, the rest of the graph around them, and a region that cannot be handed over whole
is refused naming the plugin."""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import parity
from parity.backends.base import compile_at
from parity.backends.disk_cache import compile_cached
from parity.backends.runtime import RuntimeRequest
from parity.backends.subgraph_claims import SubgraphClaimError
from parity.ir import GraphBuilder, evaluate, f32
from parity.ir.dims import Symbol

sys.path.insert(0, str(Path(__file__).parent))
from claim_plugins import FusingClaims  # noqa: E402
from runtime_plugins import registered  # noqa: E402


@pytest.fixture
def plugin():
    with registered(FusingClaims()) as backend:
        yield backend


def test_each_region_reaches_compile_whole_and_the_result_matches(plugin):
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    x = torch.randn(2, 4)
    with torch.no_grad():
        got, expected = parity.compile(mlp, backend="fusing_claims")(x), mlp(x)
        reference = parity.compile(mlp, backend="reference")(x)
    torch.testing.assert_close(got, expected)
    assert torch.equal(got, reference)  # the same spec, cut into pieces: the same bits
    assert plugin.compiled.count(["dot_general", "add"]) == 2  # each linear layer's region, exactly
    rest = [ops for ops in plugin.compiled if ops != ["dot_general", "add"]]
    assert rest and not any("dot_general" in ops for ops in rest)  # the other nodes: compiled around them


def _chain():
    """@g(x, y): 0: exp x, 1: neg 0, 2: add 0 1, 3: abs y."""
    b = GraphBuilder("g")
    x, y = b.input(f32[3]), b.input(f32[3])
    a = b.exp(x)
    return b.build([b.add(a, b.neg(a)), b.abs(y)])


@pytest.mark.parametrize("regions, why", [
    ([{0, 7}], "7 is not the index of a node (the graph has 4)"),
    ([{0, 1}, {1, 2}], "node 1 (neg) is also in region 0"),
    ([{0, 3}], "its nodes are not connected through the values they pass each other"),
    ([{0, 2}], "a value leaves it and comes back into it through nodes outside it, so it cannot run as one step"),
    ([set()], "it is empty"),
    ([["exp"]], "['exp'] is not a collection of node indices"),
])
def test_a_region_that_cannot_be_handed_over_whole_is_refused(plugin, regions, why):
    plugin.regions = lambda graph: regions
    with pytest.raises(SubgraphClaimError) as err:
        compile_at(plugin, _chain(), "cpu")
    text = str(err.value)
    shown = "a region" if why.startswith(("it is empty", "['exp']")) else f"the region {sorted(regions[-1])}"
    assert text.startswith(f"the fusing_claims backend's claim_subgraphs returned {shown} of graph @g")
    assert f"which cannot be handed over whole: {why}." in text
    assert "Fix the backend's claim_subgraphs, or compile with another backend." in text
    assert plugin.compiled == []  # refused before anything is compiled


def test_regions_and_the_rest_run_in_order(plugin):
    plugin.regions = lambda graph: [{0, 1}]  # exp and neg whole; add reads both pieces' values
    graph = _chain()
    arrays = [np.array([0.5, -1.0, 2.0], np.float32), np.array([-1.0, 0.0, 3.0], np.float32)]
    got = compile_at(plugin, graph, "cpu")(*arrays)
    assert plugin.compiled == [["exp", "neg"], ["add", "abs"]]
    for g, e in zip(got, evaluate(graph, arrays)):
        np.testing.assert_array_equal(g, e)


class _Binding(FusingClaims):
    """Binds parameters: records the parameters each piece is compiled with and what it is bound to."""

    name = "fusing_binding"
    binds_parameters = True

    def compile(self, graph, device="cpu", *, parameters=frozenset()):
        run = super().compile(graph, device)
        bound: dict = {}
        self.pieces.append((parameters, bound))

        def executable(*arrays):
            return run(*[bound[k] if k in parameters else a for k, a in enumerate(arrays)])

        executable.bind = bound.update
        return executable


def test_parameters_reach_each_piece_by_its_own_input_index():
    plugin = _Binding()
    plugin.pieces = []
    b = GraphBuilder("p")
    x, y = b.input(f32[2]), b.input(f32[2])
    graph = b.build([b.add(b.exp(x), b.neg(y))])  # 0: exp x, 1: neg y, 2: add 0 1
    plugin.regions = lambda graph: [{1, 2}]
    executable = compile_at(plugin, graph, "cpu", request=RuntimeRequest(parameters=frozenset({1})))
    assert plugin.compiled == [["exp"], ["neg", "add"]]
    (rest_parameters, _), (region_parameters, region_bound) = plugin.pieces
    assert rest_parameters == frozenset() and region_parameters == frozenset({0})  # y is the region's input 0
    y_value = np.array([1.0, 2.0], np.float32)
    executable.bind({1: y_value})
    assert region_bound[0] is y_value
    x_value = np.zeros(2, np.float32)
    np.testing.assert_array_equal(executable(x_value, None)[0], np.exp(x_value) - y_value)


def test_a_piece_gets_the_input_that_carries_a_symbolic_size_it_uses(plugin):
    b = GraphBuilder("s")
    x, bias = b.input(f32[Symbol("B"), 3]), b.input(f32[3])
    wide = b.broadcast_in_dim(b.exp(bias), shape=(Symbol("B"), 3), broadcast_dimensions=(1,))
    graph = b.build([b.add(b.neg(x), wide)])  # 0: exp, 1: broadcast to [B, 3], 2: neg, 3: add
    plugin.regions = lambda graph: [{0, 1}]  # B is in no shape of the region's own input (bias)
    executable = compile_at(plugin, graph, "cpu")
    assert plugin.compiled == [["exp", "broadcast_in_dim"], ["neg", "add"]]
    for rows in (2, 5):
        arrays = [np.arange(rows * 3, dtype=np.float32).reshape(rows, 3), np.array([0.0, 1.0, -1.0], np.float32)]
        np.testing.assert_array_equal(executable(*arrays)[0], evaluate(graph, arrays)[0])


class _Persisting(FusingClaims):
    """Declares an artifact: parity must not hand it a RegionExecutable to save."""

    name = "fusing_persisting"
    artifact_version = "1"

    def save_artifact(self, executable):
        raise AssertionError(f"save_artifact got {type(executable).__name__}")


def test_a_backend_that_claims_subgraphs_compiles_past_the_disk_cache(tmp_path):
    plugin = _Persisting()
    plugin.regions = lambda graph: [{0, 1}]
    graph = _chain()
    arrays = [np.ones(3, np.float32), np.full(3, -2.0, np.float32)]
    for _ in range(2):  # nothing kept: the second process-like call compiles again
        executable, loaded = compile_cached(graph, plugin, "cpu", str(tmp_path))
        assert not loaded
        np.testing.assert_array_equal(executable(*arrays)[1], np.full(3, 2.0, np.float32))
    assert plugin.compiled == [["exp", "neg"], ["add", "abs"]] * 2
